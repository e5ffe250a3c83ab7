// Time fields re-encoded as kube-apiserver stores them, wherever the schema says a field is one: metav1.Time
// (`date-time`) is parsed as RFC 3339 (fraction and offset allowed) and written back in UTC with whole seconds
// (Go truncates); metav1.MicroTime (`date-time-micro`) keeps six fractional digits, in UTC. Values that do not
// parse are left for decoding/validation to reject.
import { fieldOf, model, modelRef } from './schema.ts';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const MICRO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** Epoch seconds and the fraction digits of an RFC 3339 string, or undefined when it does not parse. */
function parse(s: string): { seconds: number; fraction: string } | undefined {
  const m = RFC3339.exec(s);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, sec, frac, zone] = m;
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z')
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)));
  const utc = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(sec));
  if (Number.isNaN(utc)) return undefined;
  return { seconds: utc / 1000 - offsetMinutes * 60, fraction: (frac ?? '').slice(1) };
}

function iso(seconds: number): string {
  return new Date(seconds * 1000).toISOString().slice(0, 19);
}

/** metav1.Time re-encoded: UTC, whole seconds. Undefined when the value is not RFC 3339. */
export function encodeTime(s: string): string | undefined {
  const p = parse(s);
  return p ? `${iso(p.seconds)}Z` : undefined;
}

/** metav1.MicroTime re-encoded: UTC, six fractional digits. Undefined unless Go's RFC3339Micro layout parses it. */
export function encodeMicroTime(s: string): string | undefined {
  if (!MICRO.test(s)) return undefined;
  const p = parse(s)!;
  return `${iso(p.seconds)}.${p.fraction}Z`;
}

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Re-encodes, in place, every Time and MicroTime field of an object of schema model `modelName`. */
export function normalizeTimes(obj: Record<string, unknown>, modelName: string): void {
  const m = model(modelName);
  if (!m) return;
  for (const key of Object.keys(obj)) {
    const f = fieldOf(m, key);
    if (f && mayHoldTimes(f[0])) obj[key] = normalizeValue(obj[key], f[0]);
  }
}

/** Whether a value of this schema type can contain a time field (computed once per type; the schema is fixed). */
const timesBelow = new Map<string, boolean>();
function mayHoldTimes(type: string): boolean {
  let known = timesBelow.get(type);
  if (known !== undefined) return known;
  // A cycle (JSONSchemaProps) counts as holding times while it is being looked at: never a wrong skip.
  timesBelow.set(type, true);
  const base = type.replace(/^(\[\]|map\[\])+/, '');
  const ref = modelRef(base);
  if (base === 'date-time' || base === 'date-time-micro') known = true;
  else
    known = ref !== undefined && Object.values(model(ref)?.f ?? {}).some((f) => f !== undefined && mayHoldTimes(f[0]));
  timesBelow.set(type, known);
  return known;
}

function normalizeValue(v: unknown, type: string): unknown {
  if (type === 'date-time') return typeof v === 'string' ? (encodeTime(v) ?? v) : v;
  if (type === 'date-time-micro') return typeof v === 'string' ? (encodeMicroTime(v) ?? v) : v;
  if (type.startsWith('[]')) return Array.isArray(v) ? v.map((x) => normalizeValue(x, type.slice(2))) : v;
  if (type.startsWith('map[]')) {
    if (isMap(v)) for (const k of Object.keys(v)) v[k] = normalizeValue(v[k], type.slice(5));
    return v;
  }
  const ref = modelRef(type);
  if (ref && isMap(v)) normalizeTimes(v, ref);
  return v;
}
