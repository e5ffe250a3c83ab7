// core/v1 PersistentVolumeClaim: its registry entry, validation (access modes, selector, storage request,
// class names, data sources; on update kube's spec immutability with the binding and resize exceptions) after
// k/k pkg/apis/core/validation, the strategy's dataSource/dataSourceRef normalization, and its kubectl columns.
// Objects arrive defaulted (the registry defaults before validating), as kube-apiserver's do.
import type { KubeObject, LabelSelector, StatusCause } from '../../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../../types/quantity.ts';
import {
  FieldPath,
  forbidden,
  immutable,
  invalid,
  invalidEach,
  record,
  required,
  str,
  typeCheck,
  type JsonRecord,
} from '../../common/field-errors.ts';
import { isDNS1123Label, isDNS1123Subdomain } from '../../common/name-rules.ts';
import { labelSelectorToPredicate, SelectorError } from '../../common/selectors.ts';
import { canonicalizeQuantityMaps } from '../quantity-canonical.ts';
import { ALL_VERBS, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  accessModesString,
  ageColumn,
  column,
  nameColumn,
  nonEmpty,
  phaseOrTerminating,
  rec,
  spec,
  status,
  storageClassOf,
  str as cellText,
  type TableColumn,
} from '../table-columns.ts';
import {
  canonical,
  VOLUME_MODES,
  validateAccessModes,
  validateClassName,
  validateOptionalEnum,
  validateQuantity,
} from '../validation.ts';

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
  causes.push(...validateDataSources(spec, p));
  if (old !== undefined) causes.push(...validatePVCUpdate(obj, old));
  return causes;
}

/** validateDataSource / validateDataSourceRef of one reference. */
function validateDataSourceReference(ref: JsonRecord, p: FieldPath, withNamespace: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!str(ref.name)) causes.push(required(p.child('name')));
  if (!str(ref.kind)) causes.push(required(p.child('kind')));
  const apiGroup = str(ref.apiGroup) ?? '';
  if (apiGroup === '' && ref.kind !== 'PersistentVolumeClaim') {
    causes.push(invalid(p, ref.kind ?? '', "must be 'PersistentVolumeClaim' when referencing the default apiGroup"));
  }
  if (apiGroup !== '') causes.push(...invalidEach(p.child('apiGroup'), apiGroup, isDNS1123Subdomain(apiGroup)));
  const namespace = str(ref.namespace);
  if (withNamespace && namespace)
    causes.push(...invalidEach(p.child('namespace'), namespace, isDNS1123Label(namespace)));
  return causes;
}

/** Both references valid, and equal unless dataSourceRef names a namespace (then dataSource must be unset). */
function validateDataSources(spec: JsonRecord, p: FieldPath): StatusCause[] {
  const causes: StatusCause[] = [];
  const ds = record(spec.dataSource);
  const ref = record(spec.dataSourceRef);
  if (ds) causes.push(...validateDataSourceReference(ds, p.child('dataSource'), false));
  if (ref) causes.push(...validateDataSourceReference(ref, p.child('dataSourceRef'), true));
  // The bad value is a *field.Path, which Go prints through its String(), unquoted.
  const pathValue = (detail: string): StatusCause => ({
    reason: 'FieldValueInvalid',
    field: p.toString(),
    message: `Invalid value: ${p.child('dataSource').toString()}: ${detail}`,
  });
  if (ref && str(ref.namespace)) {
    if (ds) causes.push(pathValue('may not be specified when dataSourceRef.namespace is specified'));
  } else if (ds && ref && !sameReference(ds, ref)) {
    causes.push(pathValue('must match dataSourceRef'));
  }
  return causes;
}

/** isDataSourceEqualDataSourceRef: apiGroup compared as a pointer (unset differs from ""), kind and name. */
function sameReference(a: JsonRecord, b: JsonRecord): boolean {
  return a.apiGroup === b.apiGroup && a.kind === b.kind && a.name === b.name;
}

const VOLUME_SNAPSHOT_GROUP = 'snapshot.storage.k8s.io';

/**
 * The PVC strategy's data source handling (k/k pkg/api/persistentvolumeclaim/util.go), in its order:
 * DropDisabledFields (CrossNamespaceVolumeDataSource is alpha and off: a new dataSourceRef.namespace is dropped),
 * EnforceDataSourceBackwardsCompatibility (with no dataSourceRef, a dataSource other than a PVC or a VolumeSnapshot
 * is dropped, unless the old claim had one), NormalizeDataSources (AnyVolumeDataSource is on: each of dataSource and
 * dataSourceRef is copied into the other when only one is set, dataSourceRef with a namespace excepted).
 */
export function normalizeDataSources(spec: JsonRecord, oldSpec: JsonRecord | undefined): void {
  const ref = record(spec.dataSourceRef);
  if (ref && ref.namespace !== undefined && !str(record(oldSpec?.dataSourceRef)?.namespace)) delete ref.namespace;
  const oldHadSource = record(oldSpec?.dataSource) !== undefined;
  const ds = record(spec.dataSource);
  if (!oldHadSource && !ref && ds) {
    const group = str(ds.apiGroup) ?? '';
    const allowed =
      (ds.kind === 'PersistentVolumeClaim' && group === '') ||
      (ds.kind === 'VolumeSnapshot' && group === VOLUME_SNAPSHOT_GROUP);
    if (!allowed) delete spec.dataSource;
  }
  const source = record(spec.dataSource);
  const sourceRef = record(spec.dataSourceRef);
  const copy = (r: JsonRecord): JsonRecord => ({
    ...(r.apiGroup !== undefined ? { apiGroup: r.apiGroup } : {}),
    kind: r.kind,
    name: r.name,
  });
  if (!source && sourceRef) {
    if (!str(sourceRef.namespace)) spec.dataSource = copy(sourceRef);
  } else if (source && !sourceRef) {
    spec.dataSourceRef = copy(source);
  }
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
  if (
    (oldSpec.storageClassName === undefined || oldSpec.storageClassName === null) &&
    !(BETA_CLASS_ANNOTATION in oldAnnotations)
  ) {
    if (typeof spec.storageClassName === 'string' && spec.storageClassName !== '')
      oldSpec.storageClassName = spec.storageClassName;
  }
  const bound = record(obj.status)?.phase === 'Bound';
  const oldRequests = record(record(oldSpec.resources)?.requests) ?? {};
  const newRequests = record(record(spec.resources)?.requests) ?? {};
  if (bound) {
    spec.resources = { ...(record(spec.resources) ?? {}), requests: { ...newRequests, storage: oldRequests.storage } };
    spec.volumeAttributesClassName = oldSpec.volumeAttributesClassName;
  }
  if (JSON.stringify(canonical(spec)) !== JSON.stringify(canonical(oldSpec))) {
    causes.push(
      forbidden(
        FieldPath.root('spec'),
        'spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims',
      ),
    );
  }
  const newSize = newRequests.storage;
  const oldSize = oldRequests.storage;
  if (isQuantity(newSize) && isQuantity(oldSize) && parseQuantity(newSize) < parseQuantity(oldSize)) {
    // RecoverVolumeExpansionFailure (beta, on by default in 1.32): a request may come back down after a failed
    // expansion, but never to status.capacity or below (Kubernetes does not shrink volumes).
    const statusSize = record(record(old.status)?.capacity)?.storage;
    if (parseQuantity(newSize) <= (isQuantity(statusSize) ? parseQuantity(statusSize) : 0n)) {
      causes.push(
        forbidden(
          FieldPath.root('spec', 'resources', 'requests', 'storage'),
          'field can not be less than status.capacity',
        ),
      );
    }
  }
  causes.push(...immutable(FieldPath.root('volumeMode'), record(obj.spec)?.volumeMode, record(old.spec)?.volumeMode));
  return causes;
}

const pvcColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'phase represents the current phase of PersistentVolumeClaim.', phaseOrTerminating),
  column('Volume', 'volumeName is the binding reference to the PersistentVolume backing this claim.', (o) =>
    cellText(spec(o).volumeName),
  ),
  column('Capacity', 'capacity represents the actual resources of the underlying volume.', (o) =>
    cellText(spec(o).volumeName) !== '' ? cellText(rec(status(o).capacity).storage, '0') : '',
  ),
  column('Access Modes', 'accessModes contains the actual access modes the volume backing the PVC has.', (o) =>
    cellText(spec(o).volumeName) !== '' ? accessModesString(status(o).accessModes) : '',
  ),
  column('StorageClass', 'StorageClass of the pvc', storageClassOf),
  column('VolumeAttributesClass', 'VolumeAttributesClass of the pvc', (o) =>
    nonEmpty(spec(o).volumeAttributesClassName, '<unset>'),
  ),
  ageColumn,
  column(
    'VolumeMode',
    'volumeMode defines what type of volume is required by the claim.',
    (o) => nonEmpty(spec(o).volumeMode, '<unset>'),
    1,
  ),
];

export const PERSISTENT_VOLUME_CLAIMS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'persistentvolumeclaims',
  kind: 'PersistentVolumeClaim',
  listKind: 'PersistentVolumeClaimList',
  namespaced: true,
  shortNames: ['pvc'],
  singular: 'persistentvolumeclaim',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validatePersistentVolumeClaim(o, old),
  defaults(o) {
    canonicalizeQuantityMaps(o, [
      'spec.resources.requests',
      'spec.resources.limits',
      'status.capacity',
      'status.allocatedResources',
    ]);
    setDefault(section(o, 'spec'), 'volumeMode', 'Filesystem');
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o) {
    o.status = { phase: 'Pending' };
    const spec = record(o.spec);
    if (spec) normalizeDataSources(spec, undefined);
  },
  prepareForUpdate(o, old, subresource) {
    const spec = record(o.spec);
    if (spec && !subresource) normalizeDataSources(spec, record(old.spec));
  },
  fieldSelectors: {},
  returnDeletedObject: true,
  columns: pvcColumns,
};
