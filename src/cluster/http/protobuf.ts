// Decoding of the Kubernetes protobuf request bodies kubectl's typed clients send (`kubectl create namespace`,
// `create configmap`, `create secret`): the `k8s\0` envelope (runtime.Unknown) and the few message types those
// commands use (other kinds: protobuf-schema.ts), into the same plain JSON the rest of the server handles. Responses stay JSON (clients accept it).
import { badRequest, statusError } from '../common/api-errors.ts';
import { setOwn } from '../common/json-safety.ts';
import type { KubeObject } from '../../types/k8s.ts';
import { protobufTimeToString, ProtobufTimeRangeError } from './protobuf-time.ts';
import { decodeBySchema, protobufKinds } from './protobuf-schema.ts';
import { DecodeError, fields, type Field } from './protobuf-wire.ts';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';
const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

const str = (f: Field): string => (f.bytes ?? Buffer.alloc(0)).toString('utf8');

function mapEntry(f: Field, valueAsBase64: boolean): [string, string] {
  const b = f.bytes;
  // The entry as every encoder writes it: the key (field 1) and the value (field 2), each under 128 bytes, read
  // where they lie. Any other entry goes through fields(), whose answer for this one is the same.
  if (b !== undefined && b.length >= 4 && b[0] === 0x0a && b[1] < 0x80) {
    const keyEnd = 2 + b[1];
    if (
      keyEnd + 2 <= b.length &&
      b[keyEnd] === 0x12 &&
      b[keyEnd + 1] < 0x80 &&
      keyEnd + 2 + b[keyEnd + 1] === b.length
    ) {
      const value = valueAsBase64 ? b.toString('base64', keyEnd + 2) : b.toString('utf8', keyEnd + 2);
      return [b.toString('utf8', 2, keyEnd), value];
    }
  }
  let k = '';
  let v = '';
  for (const e of fields(f.bytes ?? Buffer.alloc(0))) {
    if (e.no === 1) k = str(e);
    else if (e.no === 2) v = valueAsBase64 ? (e.bytes ?? Buffer.alloc(0)).toString('base64') : str(e);
  }
  return [k, v];
}

function time(f: Field): string {
  let seconds = 0n;
  for (const e of fields(f.bytes ?? Buffer.alloc(0))) if (e.no === 1) seconds = e.num ?? 0n;
  return protobufTimeToString(seconds);
}

function objectMeta(buf: Buffer): KubeObject['metadata'] {
  const m: KubeObject['metadata'] = {};
  const strings: Record<number, 'name' | 'generateName' | 'namespace' | 'uid' | 'resourceVersion'> = {
    1: 'name',
    2: 'generateName',
    3: 'namespace',
    5: 'uid',
    6: 'resourceVersion',
  };
  for (const f of fields(buf)) {
    const key = strings[f.no];
    // gogo-protobuf writes empty strings for unset fields; JSON omits them.
    if (key) {
      if (str(f)) m[key] = str(f);
    } else if (f.no === 7) m.generation = Number(f.num ?? 0n);
    else if (f.no === 8) m.creationTimestamp = time(f);
    else if (f.no === 11 || f.no === 12) {
      const target = f.no === 11 ? (m.labels ??= {}) : (m.annotations ??= {});
      const [k, v] = mapEntry(f, false);
      // An own property, as JSON.parse makes it: `target[k] = v` with k `__proto__` would set the prototype.
      setOwn(target, k, v);
    } else if (f.no === 13) {
      const ref: Record<string, unknown> = {};
      for (const e of fields(f.bytes ?? Buffer.alloc(0))) {
        if (e.no === 1) ref.kind = str(e);
        else if (e.no === 3) ref.name = str(e);
        else if (e.no === 4) ref.uid = str(e);
        else if (e.no === 5) ref.apiVersion = str(e);
        else if (e.no === 6) ref.controller = e.num === 1n;
        else if (e.no === 7) ref.blockOwnerDeletion = e.num === 1n;
      }
      (m.ownerReferences ??= []).push(ref as unknown as NonNullable<KubeObject['metadata']['ownerReferences']>[number]);
    } else if (f.no === 14) (m.finalizers ??= []).push(str(f));
  }
  return m;
}

/**
 * A ConfigMap's or a Secret's map as its entries in the order of the body, repeated keys included
 * (decodeProtobufObject with `mapEntries`): the worker thread writes their JSON without building the map, and the
 * loop's JSON.parse (in slices) makes of it what setOwn one entry after another makes (a repeated key keeps its
 * first place and takes its last value).
 */
export class MapEntries {
  readonly entries: Array<[string, string]> = [];
}

/** Where a decoded map entry goes: into the map (setOwn), or onto its MapEntries. */
function putEntry(obj: KubeObject, field: string, [k, v]: [string, string], asEntries: boolean): void {
  if (asEntries) ((obj[field] ??= new MapEntries()) as MapEntries).entries.push([k, v]);
  else setOwn((obj[field] ??= {}) as Record<string, string>, k, v);
}

type BodyDecoder = (fs: Field[], obj: KubeObject, asEntries: boolean) => void;

/** Field numbers from k8s.io/api/core/v1/generated.proto. */
const DECODERS: Record<string, BodyDecoder> = {
  ConfigMap(fs, obj, asEntries) {
    for (const f of fs) {
      if (f.no === 2 || f.no === 3)
        putEntry(obj, f.no === 2 ? 'data' : 'binaryData', mapEntry(f, f.no === 3), asEntries);
      else if (f.no === 4) obj.immutable = f.num === 1n;
    }
  },
  Secret(fs, obj, asEntries) {
    for (const f of fs) {
      if (f.no === 2 || f.no === 4)
        putEntry(obj, f.no === 2 ? 'data' : 'stringData', mapEntry(f, f.no === 2), asEntries);
      else if (f.no === 3) {
        if (str(f)) obj.type = str(f);
      } else if (f.no === 5) obj.immutable = f.num === 1n;
    }
  },
  Namespace(fs, obj) {
    for (const f of fs) {
      if (f.no !== 2) continue;
      const finalizers = fields(f.bytes ?? Buffer.alloc(0))
        .filter((e) => e.no === 1)
        .map(str);
      obj.spec = finalizers.length ? { finalizers } : {};
    }
  },
};

/**
 * Decodes a protobuf request body into a plain object; with `mapEntries`, a ConfigMap's or a Secret's maps are left
 * as their MapEntries (for the worker thread to write as JSON).
 * @throws ClusterApiError 415 for kinds without a decoder here, 400 for a malformed body.
 */
export function decodeProtobufObject(body: Buffer, { mapEntries = false } = {}): KubeObject {
  try {
    if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
      throw new DecodeError('missing the k8s protobuf envelope');
    let apiVersion = '';
    let kind = '';
    let raw: Buffer = Buffer.alloc(0);
    for (const f of fields(body.subarray(4))) {
      if (f.no === 1) {
        for (const t of fields(f.bytes ?? Buffer.alloc(0))) {
          if (t.no === 1) apiVersion = str(t);
          else if (t.no === 2) kind = str(t);
        }
      } else if (f.no === 2) raw = f.bytes ?? raw;
    }
    const decode = apiVersion === 'v1' ? DECODERS[kind] : undefined;
    if (!decode) {
      // Every other served kind is decoded from the generated schema.
      const bySchema = decodeBySchema(apiVersion, kind, raw);
      if (bySchema) return bySchema;
      throw statusError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, ${PROTOBUF_MEDIA_TYPE} (protobuf for: ${protobufKinds().join(', ')}; got ${apiVersion} ${kind})`,
      );
    }
    const fs = fields(raw);
    const obj: KubeObject = { apiVersion, kind, metadata: {} };
    for (const f of fs) if (f.no === 1) obj.metadata = objectMeta(f.bytes ?? Buffer.alloc(0));
    decode(fs, obj, mapEntries);
    return obj;
  } catch (err) {
    if (err instanceof DecodeError || err instanceof ProtobufTimeRangeError)
      throw badRequest(`the protobuf body could not be decoded: ${err.message}`);
    throw err;
  }
}
