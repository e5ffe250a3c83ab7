// Validation of the embedded API server: ObjectMeta rules shared by every kind, plus Namespace, ConfigMap and
// Secret. Storage kinds live in validation-storage.ts, the rest in validation-workloads.ts; all are
// re-exported here. Each validator returns StatusCause[] with kube's reasons, messages and field paths
// (k/k pkg/apis/core/validation, apimachinery pkg/api/validation); an empty list means valid.

import type { KubeObject, ObjectMeta, StatusCause } from '../../types/k8s.ts';
import {
  FieldPath, forbidden, immutable, invalid, invalidEach, record, required, str, tooLong, typeCheck, type JsonRecord,
} from '../common/field-errors.ts';
import { isConfigMapKey, isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from '../common/name-rules.ts';

export { validatePersistentVolume, validatePersistentVolumeClaim } from './validation-storage.ts';
export { validateStorageClass } from './storage.ts';
export { validateNode, validatePod } from './validation-workloads.ts';
export { validateEvent } from './events.ts';
export { validateLease } from './coordination.ts';

/** metadata.annotations: total bytes of keys and values (TotalAnnotationSizeLimitB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;
/** ConfigMap/Secret payload limit (core.MaxSecretSize). */
export const MAX_SECRET_SIZE = 1024 * 1024;

const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

/** ValidatePathSegmentName: names that must be usable as one URL path segment. */
function pathSegmentName(name: string, prefix: boolean): string[] {
  if (prefix) return [];
  if (name === '.') return ["may not be '.'"];
  if (name === '..') return ["may not be '..'"];
  const errs: string[] = [];
  if (name.includes('/')) errs.push("may not contain '/'");
  if (name.includes('%')) errs.push("may not contain '%'");
  return errs;
}

function nameErrors(name: string, rule: 'dns1123subdomain' | 'dns1123label' | 'path', prefix: boolean): string[] {
  // A generateName prefix may end in '-' (maskTrailingDash).
  const n = prefix && name.length > 1 && name.endsWith('-') ? `${name.slice(0, -1)}a` : name;
  if (rule === 'dns1123label') return isDNS1123Label(n);
  if (rule === 'path') return pathSegmentName(n, prefix);
  return isDNS1123Subdomain(n);
}

/** Byte length as Go's len() counts it. */
const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** ValidateLabels: keys are qualified names, values label values; causes carry the whole map's path. */
export function validateLabels(labels: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, labels, 'object');
  if (typeErrs.length) return typeErrs;
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(record(labels) ?? {})) {
    causes.push(...invalidEach(p, k, isQualifiedName(k)));
    if (typeof v !== 'string') causes.push(invalid(p, v, 'must be a string'));
    else causes.push(...invalidEach(p, v, isValidLabelValue(v)));
  }
  return causes;
}

function validateAnnotations(annotations: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, annotations, 'object');
  if (typeErrs.length) return typeErrs;
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(record(annotations) ?? {})) {
    causes.push(...invalidEach(p, k, isQualifiedName(k.toLowerCase())));
    if (typeof v !== 'string') causes.push(invalid(p, v, 'must be a string'));
    else size += byteLength(k) + byteLength(v);
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) causes.push(tooLong(p, TOTAL_ANNOTATION_SIZE_LIMIT));
  return causes;
}

/** Finalizer names on core kinds: qualified names, and a name without '/' must be a standard one. */
export function validateFinalizerName(name: unknown, p: FieldPath): StatusCause[] {
  if (typeof name !== 'string') return [invalid(p, name, 'must be a string')];
  const errs = invalidEach(p, name, isQualifiedName(name));
  if (errs.length) return errs;
  if (!name.includes('/') && !STANDARD_FINALIZERS.has(name)) {
    return [invalid(p, name, 'name is neither a standard finalizer name nor is it fully qualified')];
  }
  return [];
}

function validateOwnerReferences(refs: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, refs, 'array');
  if (typeErrs.length || !Array.isArray(refs)) return typeErrs;
  const causes: StatusCause[] = [];
  const controllers: string[] = [];
  for (const raw of refs) {
    const ref = record(raw) ?? {};
    if (!str(ref.apiVersion)) causes.push(invalid(p.child('apiVersion'), ref.apiVersion ?? '', 'version must not be empty'));
    if (!str(ref.kind)) causes.push(invalid(p.child('kind'), ref.kind ?? '', 'kind must not be empty'));
    if (!str(ref.name)) causes.push(invalid(p.child('name'), ref.name ?? '', 'name must not be empty'));
    if (!str(ref.uid)) causes.push(invalid(p.child('uid'), ref.uid ?? '', 'uid must not be empty'));
    if (ref.controller === true) controllers.push(`${String(ref.kind)}/${String(ref.name)}`);
  }
  if (controllers.length > 1) {
    causes.push(invalid(p, refs, `Only one reference can have Controller set to true. Found "true" in references for ${controllers.join(' and ')}`));
  }
  return causes;
}

/**
 * ValidateObjectMeta: name (or generateName) by `nameRule`, namespace presence by scope, labels, annotations
 * (qualified keys, 256 KiB total), ownerReferences and finalizer names. Update-only rules (immutable name/uid,
 * no new finalizers while deleting) are the store's.
 */
export function validateObjectMeta(
  meta: ObjectMeta,
  namespaced: boolean,
  nameRule: 'dns1123subdomain' | 'dns1123label' | 'path',
): StatusCause[] {
  const p = FieldPath.root('metadata');
  const m = (record(meta) ?? {}) as JsonRecord;
  const causes: StatusCause[] = [];
  const name = m.name;
  const generateName = m.generateName;
  if (generateName !== undefined && generateName !== '') {
    if (typeof generateName !== 'string') causes.push(invalid(p.child('generateName'), generateName, 'must be a string'));
    else causes.push(...invalidEach(p.child('generateName'), generateName, nameErrors(generateName, nameRule, true)));
  }
  if (name === undefined || name === '') {
    if (!generateName) causes.push(required(p.child('name'), 'name or generateName is required'));
  } else if (typeof name !== 'string') {
    causes.push(invalid(p.child('name'), name, 'must be a string'));
  } else {
    causes.push(...invalidEach(p.child('name'), name, nameErrors(name, nameRule, false)));
  }
  const ns = m.namespace;
  if (namespaced) {
    if (ns === undefined || ns === '') causes.push(required(p.child('namespace')));
    else if (typeof ns !== 'string') causes.push(invalid(p.child('namespace'), ns, 'must be a string'));
    else causes.push(...invalidEach(p.child('namespace'), ns, isDNS1123Label(ns)));
  } else if (ns !== undefined && ns !== '') {
    causes.push(forbidden(p.child('namespace'), 'not allowed on this type'));
  }
  if (typeof m.generation === 'number' && m.generation < 0) {
    causes.push(invalid(p.child('generation'), m.generation, 'must be greater than or equal to 0'));
  }
  causes.push(...validateLabels(m.labels, p.child('labels')));
  causes.push(...validateAnnotations(m.annotations, p.child('annotations')));
  causes.push(...validateOwnerReferences(m.ownerReferences, p.child('ownerReferences')));
  const finalizers = m.finalizers;
  causes.push(...typeCheck(p.child('finalizers'), finalizers, 'array'));
  if (Array.isArray(finalizers)) for (const f of finalizers) causes.push(...validateFinalizerName(f, p.child('finalizers')));
  return causes;
}

// -------------------------------------------------------------------------------------------- Namespace

const NAMESPACE_PHASES = ['Active', 'Terminating'];

/** Namespace: spec.finalizers are qualified names; status.phase Active|Terminating. */
export function validateNamespace(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = record(obj.spec);
  const finalizers = spec?.finalizers;
  causes.push(...typeCheck(FieldPath.root('spec', 'finalizers'), finalizers, 'array'));
  if (Array.isArray(finalizers)) {
    for (const f of finalizers) causes.push(...validateFinalizerName(f, FieldPath.root('spec', 'finalizers')));
  }
  const phase = record(obj.status)?.phase;
  if (phase !== undefined && phase !== '' && !NAMESPACE_PHASES.includes(phase as string)) {
    causes.push({ reason: 'FieldValueNotSupported', field: 'status.phase', message: `Unsupported value: ${JSON.stringify(phase)}: supported values: "Active", "Terminating"` });
  }
  return causes;
}

// ---------------------------------------------------------------------------------- ConfigMap / Secret

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
    if (k in binKeys) causes.push(invalid(FieldPath.root('data').key(k), k, 'duplicate of key present in binaryData'));
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
