// Validation of the core/v1 storage kinds: PersistentVolume and PersistentVolumeClaim (create and update
// immutability), after k/k pkg/apis/core/validation; StorageClass is in storage.ts with its group.
// Objects arrive defaulted (the registry defaults before validating), as kube-apiserver's do.

import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import {
  FieldPath, forbidden, immutable, invalid, invalidEach, list, notSupported, record, required, sorted, str, tooLong,
  typeCheck, type JsonRecord,
} from '../common/field-errors.ts';
import { isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from '../common/name-rules.ts';
import { labelSelectorToPredicate, SelectorError } from '../common/selectors.ts';
import type { LabelSelector } from '../../types/k8s.ts';

export const ACCESS_MODES = sorted(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']);
export const VOLUME_MODES = sorted(['Block', 'Filesystem']);
const PV_RECLAIM_POLICIES = sorted(['Delete', 'Recycle', 'Retain']);
const HOST_PATH_TYPES = sorted(['', 'DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice']);

/** PersistentVolumeSource members (one and only one must be set). */
const PV_SOURCES = [
  'gcePersistentDisk', 'awsElasticBlockStore', 'hostPath', 'glusterfs', 'nfs', 'rbd', 'quobyte', 'iscsi', 'cinder',
  'cephfs', 'fc', 'flocker', 'flexVolume', 'azureFile', 'vsphereVolume', 'azureDisk', 'photonPersistentDisk',
  'portworxVolume', 'scaleIO', 'local', 'storageos', 'csi',
];


function validateAccessModes(modes: unknown, p: FieldPath, requiredDetail?: string): StatusCause[] {
  const typeErrs = typeCheck(p, modes, 'array');
  if (typeErrs.length) return typeErrs;
  const list_ = list(modes);
  if (list_.length === 0) return [required(p, requiredDetail)];
  const causes: StatusCause[] = [];
  for (const m of list_) if (!ACCESS_MODES.includes(m as string)) causes.push(notSupported(p, m, ACCESS_MODES));
  if (list_.includes('ReadWriteOncePod') && list_.length > 1) causes.push(forbidden(p, 'may not use ReadWriteOncePod with other access modes'));
  return causes;
}

/** A quantity that must parse and be >= 0 (or > 0 with `positive`). */
function validateQuantity(v: unknown, p: FieldPath, positive: boolean): StatusCause[] {
  if (!isQuantity(v)) {
    return [invalid(p, v, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")];
  }
  const n = parseQuantity(v);
  if (positive && n <= 0n) return [invalid(p, v, 'must be greater than zero')];
  if (n < 0n) return [invalid(p, v, 'must be greater than or equal to 0')];
  return [];
}

export function validateOptionalEnum(v: unknown, p: FieldPath, values: string[]): StatusCause[] {
  if (v === undefined || v === null || v === '') return [];
  return values.includes(v as string) ? [] : [notSupported(p, v, values)];
}

function validateClassName(v: unknown, p: FieldPath): StatusCause[] {
  if (v === undefined || v === null || v === '') return [];
  if (typeof v !== 'string') return [invalid(p, v, 'must be a string')];
  return invalidEach(p, v, isDNS1123Subdomain(v));
}

/** ValidateNodeSelector as PV nodeAffinity uses it. */
function validateNodeSelector(sel: unknown, p: FieldPath): StatusCause[] {
  const terms = record(sel)?.nodeSelectorTerms;
  if (!Array.isArray(terms) || terms.length === 0) {
    return [required(p.child('nodeSelectorTerms'), 'must have at least one node selector term')];
  }
  const causes: StatusCause[] = [];
  terms.forEach((rawTerm, i) => {
    const term = record(rawTerm) ?? {};
    const tp = p.child('nodeSelectorTerms').index(i);
    for (const field of ['matchExpressions', 'matchFields']) {
      list(term[field]).forEach((rawReq, j) => {
        const req = record(rawReq) ?? {};
        const rp = tp.child(field).index(j);
        const values = list(req.values);
        const op = req.operator;
        if (field === 'matchFields') {
          if (req.key !== 'metadata.name') causes.push(invalid(rp.child('key'), req.key ?? '', 'not a valid field selector key'));
        } else {
          causes.push(...invalidEach(rp.child('key'), String(req.key ?? ''), isQualifiedName(String(req.key ?? ''))));
        }
        if (op === 'In' || op === 'NotIn') {
          if (values.length === 0) causes.push(required(rp.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        } else if (op === 'Exists' || op === 'DoesNotExist') {
          if (values.length > 0) causes.push(forbidden(rp.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        } else if (op === 'Gt' || op === 'Lt') {
          if (values.length !== 1) causes.push(required(rp.child('values'), "must be specified single value when `operator` is 'Lt' or 'Gt'"));
        } else {
          causes.push(invalid(rp.child('operator'), op ?? '', 'not a valid selector operator'));
        }
        values.forEach((v, k) => {
          if (typeof v !== 'string') causes.push(invalid(rp.child('values').index(k), v, 'must be a string'));
          else if (field === 'matchExpressions') causes.push(...invalidEach(rp.child('values').index(k), v, isValidLabelValue(v)));
        });
      });
    }
  });
  return causes;
}

function validatePVSource(spec: JsonRecord, p: FieldPath): StatusCause[] {
  const present = PV_SOURCES.filter((s) => spec[s] !== undefined && spec[s] !== null);
  if (present.length === 0) return [required(p, 'must specify a volume type')];
  const causes: StatusCause[] = present.slice(1).map((s) => forbidden(p.child(s), 'may not specify more than 1 volume type'));
  const hostPath = record(spec.hostPath);
  if (hostPath) {
    const path = str(hostPath.path);
    if (!path) causes.push(required(p.child('hostPath', 'path')));
    else if (path.split('/').includes('..')) causes.push(invalid(p.child('hostPath', 'path'), path, "must not contain '..'"));
    causes.push(...validateOptionalEnum(hostPath.type, p.child('hostPath', 'type'), HOST_PATH_TYPES));
  }
  const local = record(spec.local);
  if (local) {
    const path = str(local.path);
    if (!path) causes.push(required(p.child('local', 'path')));
    else if (path.split('/').includes('..')) causes.push(invalid(p.child('local', 'path'), path, "must not contain '..'"));
    if (spec.nodeAffinity === undefined || spec.nodeAffinity === null) {
      causes.push(required(p.child('nodeAffinity'), 'Local volume requires node affinity'));
    }
  }
  const nfs = record(spec.nfs);
  if (nfs) {
    if (!str(nfs.server)) causes.push(required(p.child('nfs', 'server')));
    const path = str(nfs.path);
    if (!path) causes.push(required(p.child('nfs', 'path')));
    else if (!path.startsWith('/')) causes.push(invalid(p.child('nfs', 'path'), path, 'must be an absolute path'));
  }
  const csi = record(spec.csi);
  if (csi) {
    const driver = str(csi.driver);
    if (!driver) causes.push(required(p.child('csi', 'driver')));
    else if (driver.length > 63) causes.push(tooLong(p.child('csi', 'driver'), 63));
    if (!str(csi.volumeHandle)) causes.push(required(p.child('csi', 'volumeHandle')));
  }
  return causes;
}

/** PersistentVolume: capacity.storage, accessModes, exactly one source, reclaim policy, claimRef, nodeAffinity, volumeMode. */
export function validatePersistentVolume(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes: StatusCause[] = [];
  causes.push(...validateAccessModes(spec.accessModes, p.child('accessModes')));
  const capacity = record(spec.capacity);
  if (!capacity || Object.keys(capacity).length === 0) {
    causes.push(required(p.child('capacity')));
  } else {
    if (!('storage' in capacity) || Object.keys(capacity).length > 1) causes.push(notSupported(p.child('capacity'), capacity, ['storage']));
    for (const [k, v] of Object.entries(capacity)) causes.push(...validateQuantity(v, p.child('capacity').key(k), false));
  }
  causes.push(...validatePVSource(spec, p));
  causes.push(...validateOptionalEnum(spec.persistentVolumeReclaimPolicy, p.child('persistentVolumeReclaimPolicy'), PV_RECLAIM_POLICIES));
  causes.push(...validateClassName(spec.storageClassName, p.child('storageClassName')));
  causes.push(...validateOptionalEnum(spec.volumeMode, p.child('volumeMode'), VOLUME_MODES));
  if (spec.claimRef !== undefined && spec.claimRef !== null) {
    const ref = record(spec.claimRef);
    if (!ref) causes.push(invalid(p.child('claimRef'), spec.claimRef, 'must be an object'));
    else {
      if (!str(ref.name)) causes.push(required(p.child('claimRef', 'name')));
      if (!str(ref.namespace)) causes.push(required(p.child('claimRef', 'namespace')));
    }
  }
  if (spec.nodeAffinity !== undefined && spec.nodeAffinity !== null) {
    const required_ = record(spec.nodeAffinity)?.required;
    if (required_ === undefined || required_ === null) {
      causes.push(required(p.child('nodeAffinity', 'required'), 'must specify required node constraints'));
    } else {
      causes.push(...validateNodeSelector(required_, p.child('nodeAffinity', 'required')));
    }
  }
  if (old !== undefined) {
    const oldSpec = record(old.spec) ?? {};
    const source = (s: JsonRecord) => Object.fromEntries(PV_SOURCES.filter((k) => s[k] != null).map((k) => [k, s[k]]));
    if (JSON.stringify(source(spec)) !== JSON.stringify(source(oldSpec))) {
      causes.push(forbidden(p.child('persistentvolumesource'), 'spec.persistentvolumesource is immutable after creation'));
    }
    // kube reports these two without the "spec." prefix (field.NewPath("volumeMode") in ValidatePersistentVolumeUpdate).
    causes.push(...immutable(FieldPath.root('volumeMode'), spec.volumeMode, oldSpec.volumeMode));
    if (oldSpec.nodeAffinity != null) causes.push(...immutable(FieldPath.root('nodeAffinity'), spec.nodeAffinity, oldSpec.nodeAffinity));
  }
  return causes;
}

/** PersistentVolumeClaim create rules, and on update kube's spec immutability (see validatePVCUpdate). */
export function validatePersistentVolumeClaim(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes: StatusCause[] = [];
  causes.push(...validateAccessModes(spec.accessModes, p.child('accessModes'), 'at least 1 access mode is required'));
  if (spec.selector !== undefined && spec.selector !== null) {
    try {
      labelSelectorToPredicate(spec.selector as LabelSelector);
    } catch (e) {
      if (!(e instanceof SelectorError)) throw e;
      causes.push(invalid(p.child('selector'), spec.selector, e.message));
    }
  }
  const resources = record(spec.resources) ?? {};
  const requests = record(resources.requests) ?? {};
  if (!('storage' in requests)) causes.push(required(p.child('resources').key('storage')));
  else causes.push(...validateQuantity(requests.storage, p.child('resources').key('storage'), true));
  for (const [k, v] of Object.entries(requests)) {
    if (k !== 'storage') causes.push(...validateQuantity(v, p.child('resources', 'requests').key(k), false));
  }
  for (const [k, v] of Object.entries(record(resources.limits) ?? {})) {
    causes.push(...validateQuantity(v, p.child('resources', 'limits').key(k), false));
  }
  causes.push(...validateClassName(spec.storageClassName, p.child('storageClassName')));
  causes.push(...validateClassName(spec.volumeAttributesClassName, p.child('volumeAttributesClassName')));
  causes.push(...validateOptionalEnum(spec.volumeMode, p.child('volumeMode'), VOLUME_MODES));
  for (const ds of ['dataSource', 'dataSourceRef']) {
    const ref = record(spec[ds]);
    if (!ref) continue;
    if (!str(ref.kind)) causes.push(required(p.child(ds, 'kind')));
    if (!str(ref.name)) causes.push(required(p.child(ds, 'name')));
    if (!ref.apiGroup && ref.kind && ref.kind !== 'PersistentVolumeClaim') {
      causes.push(invalid(p.child(ds), ref, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"));
    }
  }
  if (old !== undefined) causes.push(...validatePVCUpdate(obj, old));
  return causes;
}

const BETA_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';

/**
 * ValidatePersistentVolumeClaimUpdate: the spec is immutable except volumeName "" -> name (binding), storageClassName
 * nil -> value (retroactive default class), and, for bound claims, resources.requests.storage (never decreasing)
 * and volumeAttributesClassName; volumeMode is immutable.
 */
function validatePVCUpdate(obj: KubeObject, old: KubeObject): StatusCause[] {
  const spec = { ...(record(obj.spec) ?? {}) };
  const oldSpec = { ...(record(old.spec) ?? {}) };
  const causes: StatusCause[] = [];
  if (!oldSpec.volumeName) oldSpec.volumeName = spec.volumeName;
  const oldAnnotations = old.metadata?.annotations ?? {};
  if ((oldSpec.storageClassName === undefined || oldSpec.storageClassName === null) && !(BETA_CLASS_ANNOTATION in oldAnnotations)) {
    if (typeof spec.storageClassName === 'string' && spec.storageClassName !== '') oldSpec.storageClassName = spec.storageClassName;
  }
  const bound = record(obj.status)?.phase === 'Bound';
  const oldRequests = record(record(oldSpec.resources)?.requests) ?? {};
  const newRequests = record(record(spec.resources)?.requests) ?? {};
  if (bound) {
    spec.resources = { ...(record(spec.resources) ?? {}), requests: { ...newRequests, storage: oldRequests.storage } };
    spec.volumeAttributesClassName = oldSpec.volumeAttributesClassName;
  }
  if (JSON.stringify(canonical(spec)) !== JSON.stringify(canonical(oldSpec))) {
    causes.push(forbidden(FieldPath.root('spec'), 'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims'));
  }
  const newSize = newRequests.storage;
  const oldSize = oldRequests.storage;
  if (isQuantity(newSize) && isQuantity(oldSize) && parseQuantity(newSize) < parseQuantity(oldSize)) {
    // RecoverVolumeExpansionFailure (beta, on by default in 1.32): a request may come back down after a failed
    // expansion, but never to status.capacity or below (Kubernetes does not shrink volumes).
    const statusSize = record(record(old.status)?.capacity)?.storage;
    if (parseQuantity(newSize) <= (isQuantity(statusSize) ? parseQuantity(statusSize) : 0n)) {
      causes.push(forbidden(FieldPath.root('spec', 'resources', 'requests', 'storage'), 'field can not be less than status.capacity'));
    }
  }
  causes.push(...immutable(FieldPath.root('volumeMode'), record(obj.spec)?.volumeMode, record(old.spec)?.volumeMode));
  return causes;
}

/** JSON with sorted keys and absent/null members dropped, for semantic equality of specs. */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  const r = record(v);
  if (!r) return v;
  const out: JsonRecord = {};
  for (const k of Object.keys(r).sort()) if (r[k] !== undefined && r[k] !== null) out[k] = canonical(r[k]);
  return out;
}
