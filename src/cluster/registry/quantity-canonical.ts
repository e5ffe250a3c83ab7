// Canonical serialization of resource quantities, as kube-apiserver answers them: every Quantity is decoded
// and re-encoded by Go (resource.Quantity.String / CanonicalizeBytes), so "1024Mi" reads back as "1Gi",
// "0.5Gi" as "512Mi", "1000M" as "1G" and "1.5" as "1500m". Clients that compare quantity strings (claim
// request vs volume capacity) must see the same text here as on a real cluster.
import type { KubeObject } from '../../types/k8s.ts';
import { isQuantity } from '../../types/quantity.ts';
import { readPath } from '../common/meta.ts';

const QUANTITY_RE = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/;
const BINARY_EXP: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_EXP: Record<string, number> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX: Record<number, string> = {
  [-9]: 'n',
  [-6]: 'u',
  [-3]: 'm',
  0: '',
  3: 'k',
  6: 'M',
  9: 'G',
  12: 'T',
  15: 'P',
  18: 'E',
};
const NANO = 1_000_000_000n;
const ALREADY_CANONICAL = /^[1-9]\d{0,2}(?:[KMGTPE]i|[kMGTPE])?$/;

type Format = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/** The finest unit a quantity keeps: nano (resource.ParseQuantity), or milli (SetDefaults_ResourceList's RoundUp). */
export type QuantityScale = 'nano' | 'milli';

const MILLI_IN_NANOS = 1_000_000n;

/** A quantity's magnitude in nano units (rounded up, away from zero), its sign and its format. */
function decompose(s: string): { nanos: bigint; negative: boolean; format: Format } | undefined {
  // isQuantity also refuses absurd magnitudes ("1e99999999") before any BigInt is built.
  const m = isQuantity(s) ? QUANTITY_RE.exec(s) : null;
  if (!m) return undefined;
  const [, sign, num, suffix = ''] = m;
  const [intPart, fracPart = ''] = num.split('.');
  let format: Format = 'DecimalSI';
  let exp10 = -fracPart.length;
  let exp2 = 0;
  if (suffix in BINARY_EXP) {
    format = 'BinarySI';
    exp2 = 10 * BINARY_EXP[suffix];
  } else if (suffix in DECIMAL_EXP) {
    exp10 += DECIMAL_EXP[suffix];
  } else if (suffix !== '') {
    format = 'DecimalExponent';
    exp10 += Number(suffix.slice(1));
  }
  // The value in nano units, rounded up (away from zero) like ParseQuantity's inf.RoundUp.
  let nanos = BigInt((intPart || '0') + fracPart) << BigInt(exp2);
  if (exp10 + 9 >= 0) nanos *= 10n ** BigInt(exp10 + 9);
  else {
    const div = 10n ** BigInt(-(exp10 + 9));
    nanos = nanos / div + (nanos % div === 0n ? 0n : 1n);
  }
  return { nanos, negative: sign === '-', format };
}

/** A quantity's exact value in nano units (signed), or undefined when `s` is not a quantity: for comparisons. */
export function quantityNanos(s: unknown): bigint | undefined {
  const text = typeof s === 'number' && Number.isFinite(s) ? String(s) : s;
  const d = typeof text === 'string' ? decompose(text) : undefined;
  return d && (d.negative ? -d.nanos : d.nanos);
}

/**
 * The canonical form Go prints for a quantity string, or undefined when `s` is not a quantity (validation
 * reports it). Values are rounded up (away from zero) to nano units, like resource.ParseQuantity, or to milli
 * units, as pod resource lists are defaulted.
 */
export function canonicalQuantity(s: string, scale: QuantityScale = 'nano'): string | undefined {
  // 1 to 3 digits without a leading zero, with or without an SI suffix, is already canonical at either scale
  // ("1Gi", "500Mi", "10"): the form nearly every object carries, answered without BigInt arithmetic.
  if (ALREADY_CANONICAL.test(s)) return s;
  const d = decompose(s);
  if (!d) return undefined;
  let { nanos, format } = d;
  if (scale === 'milli' && nanos % MILLI_IN_NANOS !== 0n) nanos += MILLI_IN_NANOS - (nanos % MILLI_IN_NANOS);
  if (nanos === 0n) return '0';
  if (format === 'BinarySI' && (nanos < 1024n * NANO || nanos % NANO !== 0n)) format = 'DecimalSI';
  const prefix = d.negative ? '-' : '';
  if (format === 'BinarySI') {
    let value = nanos / NANO;
    let exponent = 0;
    while (exponent < 6 && value % 1024n === 0n) {
      value /= 1024n;
      exponent++;
    }
    return `${prefix}${value}${BINARY_SUFFIX[exponent]}`;
  }
  let mantissa = nanos;
  let exponent = -9;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  // The exponent goes down to a multiple of 3 (AsCanonicalBytes).
  const extra = ((exponent % 3) + 3) % 3;
  mantissa *= 10n ** BigInt(extra);
  exponent -= extra;
  if (format === 'DecimalExponent') return `${prefix}${mantissa}${exponent === 0 ? '' : `e${exponent}`}`;
  while (exponent > 18) {
    mantissa *= 1000n;
    exponent -= 3;
  }
  return `${prefix}${mantissa}${DECIMAL_SUFFIX[exponent]}`;
}

/** Rewrites the quantity values of `rec` (all of them, or only `keys`) into their canonical form, in place. */
function canonicalizeEntries(
  rec: Record<string, unknown>,
  keys: readonly string[] = Object.keys(rec),
  scale: QuantityScale = 'nano',
): void {
  for (const k of keys) {
    const v = rec[k];
    // JSON numbers decode into quantities too (Quantity.UnmarshalJSON parses the raw number text).
    const text = typeof v === 'number' && Number.isFinite(v) ? String(v) : v;
    if (typeof text !== 'string') continue;
    const canonical = canonicalQuantity(text, scale);
    if (canonical !== undefined) rec[k] = canonical;
  }
}

/** Rewrites the single quantities at these top-level fields (CSIStorageCapacity `capacity`) canonically, in place. */
export function canonicalizeQuantityFields(obj: KubeObject, fields: readonly string[]): void {
  canonicalizeEntries(
    obj as Record<string, unknown>,
    fields.filter((f) => obj[f] !== undefined),
  );
}

/** Rewrites every quantity value of the maps at these dotted paths into its canonical form, in place. */
export function canonicalizeQuantityMaps(obj: KubeObject, paths: readonly string[]): void {
  for (const p of paths) canonicalizeQuantities(readPath(obj, p));
}

/** Rewrites every quantity value of one map (a ResourceList) into its canonical form, in place; others are left. */
export function canonicalizeQuantities(map: unknown, scale: QuantityScale = 'nano'): void {
  if (map === null || typeof map !== 'object' || Array.isArray(map)) return;
  canonicalizeEntries(map as Record<string, unknown>, undefined, scale);
}
