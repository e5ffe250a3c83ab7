// Protobuf request bodies of every served kind, decoded from the generated schema: field types come from
// client-node's models, field numbers, embedded (inline) messages, Quantity/bytes hints and pointer-ness from
// k8s.io/api's struct tags (go-tags.generated.ts). The apimachinery wire types (Time, MicroTime, Quantity,
// IntOrString, RawExtension) are fixed messages. The result is the plain JSON object the JSON path would have
// decoded: Go's omitempty is mirrored by leaving out zero values of non-pointer scalars.
import type { KubeObject } from '../../types/k8s.ts';
import { badRequest } from '../common/api-errors.ts';
import { setOwn } from '../common/json-safety.ts';
import { GO_TAGS, type GoFieldTags } from '../schema/go-tags.generated.ts';
import { fields, readVarint, type Field as ProtoField } from './protobuf-wire.ts';
import { fieldOf, model, modelRef, rootModel } from '../schema/schema.ts';
import { RESOURCES } from '../registry/registry.ts';

/** A body that is valid protobuf but does not fit the schema (wrong wire type, bad time...). */
export class ProtoSchemaError extends Error {}

interface Slot {
  json: string;
  type: string;
  tags: GoFieldTags;
}

/** Field number -> JSON field, for the fields of `modelName` inside embedded message `inline` (0: the model itself). */
const indexes = new Map<string, Map<number, Slot>>();
function indexOf(modelName: string, inline: number): Map<number, Slot> {
  const key = `${modelName}#${inline}`;
  let idx = indexes.get(key);
  if (idx) return idx;
  idx = new Map();
  const m = model(modelName);
  for (const [json, tags] of Object.entries(GO_TAGS[modelName]?.fields ?? {})) {
    const type = fieldOf(m, json)?.[0];
    if (type === undefined || (tags.i ?? 0) !== inline) continue;
    idx.set(tags.n, { json, type, tags });
  }
  indexes.set(key, idx);
  return idx;
}

/** Embedded-message field numbers of a model (PersistentVolumeSpec's PersistentVolumeSource is 2). */
function inlineNumbers(modelName: string): Set<number> {
  const out = new Set<number>();
  for (const t of Object.values(GO_TAGS[modelName]?.fields ?? {})) if (t.i !== undefined) out.add(t.i);
  return out;
}

const bytesOf = (f: ProtoField): Buffer => f.bytes ?? Buffer.alloc(0);
const MIN_SECONDS = -62135596800; // 0001-01-01T00:00:00Z, Go's zero time
const MAX_SECONDS = 253402300799; // 9999-12-31T23:59:59Z

function signed(f: ProtoField): number {
  if (f.wire !== 0) throw new ProtoSchemaError(`field ${f.no}: expected a varint`);
  return Number(BigInt.asIntN(64, f.num ?? 0n));
}

/** A google.protobuf-style Timestamp {1: seconds, 2: nanos}; undefined for Go's zero time. */
function timeOf(f: ProtoField, micro: boolean): string | undefined {
  let seconds = 0;
  let nanos = 0;
  for (const e of fields(bytesOf(f))) {
    if (e.no === 1) seconds = signed(e);
    else if (e.no === 2) nanos = signed(e);
  }
  if ((seconds === 0 || seconds === MIN_SECONDS) && nanos === 0) return undefined;
  if (seconds < MIN_SECONDS || seconds > MAX_SECONDS || nanos < 0 || nanos > 999_999_999) {
    throw new ProtoSchemaError(`field ${f.no}: time outside of range [0,9999]`);
  }
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  return micro ? `${base}.${String(Math.floor(nanos / 1000)).padStart(6, '0')}Z` : `${base}Z`;
}

function intOrString(f: ProtoField): number | string {
  let type = 0;
  let intVal = 0;
  let strVal = '';
  for (const e of fields(bytesOf(f))) {
    if (e.no === 1) type = signed(e);
    else if (e.no === 2) intVal = signed(e);
    else if (e.no === 3) strVal = bytesOf(e).toString('utf8');
  }
  return type === 1 ? strVal : intVal;
}

/** One value of a scalar or message type; undefined when Go would leave the field out of its JSON. */
function scalar(f: ProtoField, type: string, tags: GoFieldTags, keepZero: boolean): unknown {
  switch (type) {
    case 'string':
      if (tags.q)
        return (
          fields(bytesOf(f))
            .find((e) => e.no === 1)
            ?.bytes?.toString('utf8') ?? '0'
        );
      if (f.wire !== 2) throw new ProtoSchemaError(`field ${f.no}: expected bytes`);
      return bytesOf(f).length || keepZero ? bytesOf(f).toString('utf8') : undefined;
    case 'byte':
      return bytesOf(f).toString('base64');
    case 'int32':
    case 'int64': {
      const n = signed(f);
      return n !== 0 || keepZero ? n : undefined;
    }
    case 'boolean':
      return signed(f) !== 0 || keepZero ? signed(f) !== 0 : undefined;
    case 'date-time':
    case 'date-time-micro':
      return timeOf(f, type === 'date-time-micro');
    case 'int-or-string':
      return intOrString(f);
    case 'any': {
      const raw = fields(bytesOf(f)).find((e) => e.no === 1);
      return raw ? (JSON.parse(bytesOf(raw).toString('utf8')) as unknown) : undefined;
    }
    default: {
      const ref = modelRef(type);
      if (!ref) throw new ProtoSchemaError(`field ${f.no}: no wire decoding for ${type}`);
      if (f.wire !== 2) throw new ProtoSchemaError(`field ${f.no}: expected a message`);
      return decodeMessage(bytesOf(f), ref);
    }
  }
}

/** A map entry message {1: key, 2: value}. */
function mapEntry(f: ProtoField, valueType: string, tags: GoFieldTags): [string, unknown] {
  let key = '';
  let value: unknown = valueType === 'byte' ? '' : undefined;
  for (const e of fields(bytesOf(f))) {
    if (e.no === 1) key = bytesOf(e).toString('utf8');
    else if (e.no === 2) value = scalar(e, valueType, tags, true);
  }
  return [key, value ?? (tags.q ? '0' : '')];
}

/** Decodes one message of schema model `modelName` into `out`. */
function decodeInto(buf: Buffer, modelName: string, inline: number, out: Record<string, unknown>): void {
  const idx = indexOf(modelName, inline);
  const inlines = inline === 0 ? inlineNumbers(modelName) : new Set<number>();
  for (const f of fields(buf)) {
    if (inlines.has(f.no)) {
      decodeInto(bytesOf(f), modelName, f.no, out);
      continue;
    }
    const slot = idx.get(f.no);
    if (!slot) continue; // unknown to this schema: dropped, as Go's decoder skips unknown protobuf fields
    const { json, type, tags } = slot;
    if (type.startsWith('map[]')) {
      const [k, v] = mapEntry(f, type.slice(5), tags);
      // An own property, as JSON.parse makes it: a map key `__proto__` is a plain key.
      setOwn((out[json] ??= {}) as Record<string, unknown>, k, v);
    } else if (type.startsWith('[]')) {
      const item = type.slice(2);
      const list = (out[json] ??= []) as unknown[];
      if (f.wire === 2 && (item === 'int32' || item === 'int64' || item === 'boolean')) {
        // packed repeated scalars
        const b = bytesOf(f);
        for (let pos = 0; pos < b.length;) {
          const [v, next] = readVarint(b, pos);
          pos = next;
          const n = Number(BigInt.asIntN(64, v));
          list.push(item === 'boolean' ? n !== 0 : n);
        }
      } else {
        list.push(scalar(f, item, tags, true));
      }
    } else {
      const v = scalar(f, type, tags, tags.p === 1);
      if (v !== undefined) out[json] = v;
    }
  }
}

function decodeMessage(buf: Buffer, modelName: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  decodeInto(buf, modelName, 0, out);
  return out;
}

/** The served kinds protobuf bodies can be decoded for (`v1 Pod`, `apps/v1 Deployment`...). */
export function protobufKinds(): string[] {
  return RESOURCES.filter((rt) => GO_TAGS[rootModel(rt.group, rt.version, rt.kind) ?? '']).map(
    (rt) => `${rt.group ? `${rt.group}/` : ''}${rt.version} ${rt.kind}`,
  );
}

/**
 * Decodes the raw object of a protobuf envelope by schema, or undefined when the kind has no schema.
 * @throws ClusterApiError 400 when the body does not fit the schema
 */
export function decodeBySchema(apiVersion: string, kind: string, raw: Buffer): KubeObject | undefined {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const root = rootModel(group, version, kind);
  if (!root || !GO_TAGS[root]) return undefined;
  try {
    const obj = decodeMessage(raw, root);
    return {
      apiVersion,
      kind,
      ...obj,
      metadata: (obj.metadata as KubeObject['metadata'] | undefined) ?? {},
    } as KubeObject;
  } catch (err) {
    if (err instanceof ProtoSchemaError) throw badRequest(`the protobuf body could not be decoded: ${err.message}`);
    throw err;
  }
}
