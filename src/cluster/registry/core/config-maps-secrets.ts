// core/v1 ConfigMap and Secret: their registry entries, the request conversion (base64 values decoded as Go
// decodes []byte, a 400 otherwise; Secret `stringData` merged into `data` and never stored, as
// Convert_v1_Secret_To_core_Secret does), validation (data keys, 1 MiB total, Secret type rules, `immutable`
// honoured on update) after k/k pkg/apis/core/validation, and kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  forbidden,
  immutable,
  invalid,
  invalidEach,
  record,
  required,
  tooLong,
  typeCheck,
} from '../../common/field-errors.ts';
import { base64DecodeError } from '../../common/go-base64.ts';
import { keySlice, largeMapOnce, largeMapSeen, ownKeys } from '../../common/json-safety.ts';
import { isConfigMapKey, isValidConfigMapKey } from '../../common/identifier-validation.ts';
import { setOwn } from '../../common/json-safety.ts';
import { ALL_VERBS, path, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, countKeys, nameColumn, str as cellText, type TableColumn } from '../table-columns.ts';
import { byteLength } from '../validation.ts';

/** ConfigMap/Secret payload limit (core.MaxSecretSize). */
export const MAX_SECRET_SIZE = 1024 * 1024;

/** Decoded size of a base64 value (binaryData / Secret data are base64 in JSON). */
function base64Size(v: string): number {
  const clean = v.replace(/=+$/, '');
  return Math.floor((clean.length * 3) / 4);
}

function validateDataKeys(map: unknown, p: FieldPath, base64: boolean): { causes: StatusCause[]; size: number } {
  const causes = typeCheck(p, map, 'object');
  const data = record(map);
  let size = 0;
  if (!data) return { causes, size };
  // A large body's map was looked at key by key in slices with turns between (countObjectKeysInSlices): when it
  // had nothing to say there, nothing is left to do but the size.
  const large = largeMapOnce(data);
  if (large?.configMapKeys && large.stringValues && !base64) {
    const chars = large.stringChars;
    return { causes, size: chars * 3 <= MAX_SECRET_SIZE ? chars : sumBytes(data) };
  }
  // One pass over the keys, and a path only for a key with something to say: a body may carry 300,000 keys.
  let chars = 0;
  const keys = large?.keys ?? ownKeys(data);
  keySlice(keys.length);
  for (const k of keys) {
    if (!isValidConfigMapKey(k)) {
      const errors = isConfigMapKey(k);
      if (errors.length > 0) causes.push(...invalidEach(p.key(k), k, errors));
    }
    const v = data[k];
    if (typeof v !== 'string') {
      causes.push(invalid(p.key(k), v, 'must be a string'));
      continue;
    }
    if (base64) size += base64Size(v);
    else chars += v.length;
  }
  if (!base64) {
    // UTF-8 takes 1 to 3 bytes per UTF-16 unit: the bytes are counted only when the limit could be reached.
    size = chars * 3 <= MAX_SECRET_SIZE ? chars : sumBytes(data);
  }
  return { causes, size };
}

/** The UTF-8 bytes of a map's string values. */
function sumBytes(data: Record<string, unknown>): number {
  let size = 0;
  for (const k of Object.keys(data)) {
    const v = data[k];
    if (typeof v === 'string') size += byteLength(v);
  }
  return size;
}

function immutableDataCauses(obj: KubeObject, old: KubeObject | undefined, fields: string[]): StatusCause[] {
  if (old === undefined || old.immutable !== true) return [];
  const causes: StatusCause[] = [];
  for (const f of fields) {
    if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {})) {
      causes.push(forbidden(FieldPath.root(f), 'field is immutable when `immutable` is set'));
    }
  }
  if (obj.immutable !== true)
    causes.push(forbidden(FieldPath.root('immutable'), 'field is immutable when `immutable` is set'));
  return causes;
}

/** ConfigMap: data/binaryData keys, no key in both, total size <= 1 MiB, `immutable` honoured on update. */
export function validateConfigMap(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const data = validateDataKeys(obj.data, FieldPath.root('data'), false);
  const bin = validateDataKeys(obj.binaryData, FieldPath.root('binaryData'), true);
  const causes = [...data.causes, ...bin.causes];
  const binKeys = record(obj.binaryData) ?? {};
  // Only a key of both maps is reported: nothing to look up when binaryData is empty (the usual case).
  if (Object.keys(binKeys).length > 0) {
    for (const k of Object.keys(record(obj.data) ?? {})) {
      // Own keys only: `k in binKeys` is true for `__proto__`, `constructor`, `toString`... of any object.
      if (Object.hasOwn(binKeys, k))
        causes.push(invalid(FieldPath.root('data').key(k), k, 'duplicate of key present in binaryData'));
    }
  }
  if (data.size + bin.size > MAX_SECRET_SIZE) causes.push(tooLong(FieldPath.root(''), MAX_SECRET_SIZE));
  causes.push(...immutableDataCauses(obj, old, ['data', 'binaryData']));
  return causes;
}

const TLS_KEYS = ['tls.crt', 'tls.key'];

/**
 * Decodes the base64 maps of a request body as Go decodes []byte values: the first value that does not decode is
 * the decoding error (`illegal base64 data at input byte N`); a non-string value is a type error.
 */
function decodeBase64Maps(obj: KubeObject, kind: string, fields: readonly string[]): string | undefined {
  for (const f of fields) {
    for (const v of Object.values(record(obj[f]) ?? {})) {
      if (v === null) continue;
      if (typeof v !== 'string')
        return `json: cannot unmarshal ${typeof v} into Go struct field ${kind}.${f} of type []uint8`;
      const err = base64DecodeError(v);
      if (err) return err;
    }
  }
  return undefined;
}

/** The JSON type of a value as Go's decoder names it in an UnmarshalTypeError. */
function goJsonType(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

/**
 * Decodes a ConfigMap's `data` (map[string]string) as Go does: the first value that is not a string fails
 * decoding, a 400 (`json: cannot unmarshal object into Go struct field ConfigMap.data of type string`), before
 * any validation; null is the string's zero value and left to validation. A large map's slices already said
 * whether every value is a string (largeMapSeen): then nothing is walked.
 */
function decodeStringMap(obj: KubeObject, kind: string, field: string): string | undefined {
  const map = record(obj[field]);
  if (!map) return undefined;
  const seen = largeMapSeen(map);
  if (seen?.stringValues) return undefined;
  for (const k of seen?.keys ?? Object.keys(map)) {
    const v = map[k];
    if (v !== null && typeof v !== 'string')
      return `json: cannot unmarshal ${goJsonType(v)} into Go struct field ${kind}.${field} of type string`;
  }
  return undefined;
}

/** Convert_v1_Secret_To_core_Secret: `data` decoded, then every `stringData` entry overwrites its `data` key. */
export function convertSecret(obj: KubeObject): string | undefined {
  const err = decodeBase64Maps(obj, 'Secret', ['data']);
  if (err) return err;
  const stringData = record(obj.stringData);
  for (const v of Object.values(stringData ?? {})) {
    if (typeof v !== 'string')
      return `json: cannot unmarshal ${typeof v} into Go struct field Secret.stringData of type string`;
  }
  delete obj.stringData;
  if (stringData && Object.keys(stringData).length > 0) {
    const data = { ...(record(obj.data) ?? {}) };
    // Own-property writes: a key `__proto__` is a key like any other, not the merged map's prototype.
    for (const [k, v] of Object.entries(stringData))
      setOwn(data, k, Buffer.from(v as string, 'utf8').toString('base64'));
    obj.data = data;
  }
  return undefined;
}

/** Secret: data keys, total size <= 1 MiB, type rules, immutability (stringData is already merged into data). */
export function validateSecret(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const data = validateDataKeys(obj.data, FieldPath.root('data'), true);
  const causes = [...data.causes];
  if (data.size > MAX_SECRET_SIZE) causes.push(tooLong(FieldPath.root('data'), MAX_SECRET_SIZE));
  const type = obj.type ?? 'Opaque';
  const keys = new Set(Object.keys(record(obj.data) ?? {}));
  if (type === 'kubernetes.io/tls') {
    for (const k of TLS_KEYS) if (!keys.has(k)) causes.push(required(FieldPath.root('data').key(k)));
  }
  if (old !== undefined) causes.push(...immutable(FieldPath.root('type'), type, old.type ?? 'Opaque'));
  causes.push(...immutableDataCauses(obj, old, ['data']));
  return causes;
}

const configMapColumns: TableColumn[] = [
  nameColumn,
  column('Data', 'Number of data in configmap', (o) => countKeys(o.data, o.binaryData), 0, 'integer'),
  ageColumn,
];

const secretColumns: TableColumn[] = [
  nameColumn,
  column('Type', 'The type of the secret', (o) => cellText(o.type, 'Opaque')),
  column('Data', 'The number of entries in the secret', (o) => countKeys(o.data), 0, 'integer'),
  ageColumn,
];

export const CONFIG_MAPS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  namespaced: true,
  shortNames: ['cm'],
  singular: 'configmap',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateConfigMap(o, old),
  convertFromRequest: (o) =>
    decodeStringMap(o, 'ConfigMap', 'data') ?? decodeBase64Maps(o, 'ConfigMap', ['binaryData']),
  fieldSelectors: {},
  columns: configMapColumns,
};

export const SECRETS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'secrets',
  kind: 'Secret',
  listKind: 'SecretList',
  namespaced: true,
  singular: 'secret',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateSecret(o, old),
  convertFromRequest: convertSecret,
  defaults(o) {
    setDefault(o as Record<string, unknown>, 'type', 'Opaque');
  },
  fieldSelectors: { type: path('type') },
  columns: secretColumns,
};
