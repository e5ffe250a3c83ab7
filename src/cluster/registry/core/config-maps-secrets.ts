// core/v1 ConfigMap and Secret: their registry entries, validation (data keys, base64 values, 1 MiB total,
// Secret type rules, `immutable` honoured on update) after k/k pkg/apis/core/validation, and kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, forbidden, immutable, invalid, invalidEach, record, required, tooLong, typeCheck } from '../../common/field-errors.ts';
import { isConfigMapKey } from '../../common/name-rules.ts';
import { ALL_VERBS, path, setDefault } from '../registry-helpers.ts';
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

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

function validateDataKeys(map: unknown, p: FieldPath, base64: boolean): { causes: StatusCause[]; size: number } {
  const causes = typeCheck(p, map, 'object');
  let size = 0;
  for (const [k, v] of Object.entries(record(map) ?? {})) {
    causes.push(...invalidEach(p.key(k), k, isConfigMapKey(k)));
    if (typeof v !== 'string') {
      causes.push(invalid(p.key(k), v, 'must be a string'));
      continue;
    }
    if (base64 && !BASE64_RE.test(v)) causes.push(invalid(p.key(k), '<value omitted>', 'must be base64-encoded'));
    size += base64 ? base64Size(v) : byteLength(v);
  }
  return { causes, size };
}

function immutableDataCauses(obj: KubeObject, old: KubeObject | undefined, fields: string[]): StatusCause[] {
  if (old === undefined || old.immutable !== true) return [];
  const causes: StatusCause[] = [];
  for (const f of fields) {
    if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {})) {
      causes.push(forbidden(FieldPath.root(f), 'field is immutable when `immutable` is set'));
    }
  }
  if (obj.immutable !== true) causes.push(forbidden(FieldPath.root('immutable'), 'field is immutable when `immutable` is set'));
  return causes;
}

/** ConfigMap: data/binaryData keys, no key in both, total size <= 1 MiB, `immutable` honoured on update. */
export function validateConfigMap(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const data = validateDataKeys(obj.data, FieldPath.root('data'), false);
  const bin = validateDataKeys(obj.binaryData, FieldPath.root('binaryData'), true);
  const causes = [...data.causes, ...bin.causes];
  const binKeys = record(obj.binaryData) ?? {};
  for (const k of Object.keys(record(obj.data) ?? {})) {
    // Own keys only: `k in binKeys` is true for `__proto__`, `constructor`, `toString`... of any object.
    if (Object.hasOwn(binKeys, k)) causes.push(invalid(FieldPath.root('data').key(k), k, 'duplicate of key present in binaryData'));
  }
  if (data.size + bin.size > MAX_SECRET_SIZE) causes.push(tooLong(FieldPath.root(''), MAX_SECRET_SIZE));
  causes.push(...immutableDataCauses(obj, old, ['data', 'binaryData']));
  return causes;
}

const TLS_KEYS = ['tls.crt', 'tls.key'];

/** Secret: data keys (base64 values) and stringData keys, total size <= 1 MiB, type rules, immutability. */
export function validateSecret(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const data = validateDataKeys(obj.data, FieldPath.root('data'), true);
  const stringData = validateDataKeys(obj.stringData, FieldPath.root('stringData'), false);
  const causes = [...data.causes, ...stringData.causes];
  if (data.size + stringData.size > MAX_SECRET_SIZE) causes.push(tooLong(FieldPath.root('data'), MAX_SECRET_SIZE));
  const type = obj.type ?? 'Opaque';
  const keys = new Set([...Object.keys(record(obj.data) ?? {}), ...Object.keys(record(obj.stringData) ?? {})]);
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
  defaults(o) {
    setDefault(o as Record<string, unknown>, 'type', 'Opaque');
  },
  fieldSelectors: { type: path('type') },
  columns: secretColumns,
};
