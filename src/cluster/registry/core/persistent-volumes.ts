// core/v1 PersistentVolume: its registry entry (defaults, phase bookkeeping), validation (capacity, access modes,
// exactly one volume source, reclaim policy, claimRef, nodeAffinity; source, volumeMode and nodeAffinity
// immutable) after k/k pkg/apis/core/validation, and its kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  forbidden,
  immutable,
  invalid,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  sorted,
  str,
  tooLong,
  typeCheck,
  type JsonRecord,
} from '../../common/field-errors.ts';
import { formatTime } from '../../common/meta.ts';
import { isQualifiedName, isValidLabelValue } from '../../common/name-rules.ts';
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
  VOLUME_MODES,
  validateAccessModes,
  validateClassName,
  validateOptionalEnum,
  validateQuantity,
} from '../validation.ts';

const PV_RECLAIM_POLICIES = sorted(['Delete', 'Recycle', 'Retain']);
const HOST_PATH_TYPES = sorted([
  '',
  'DirectoryOrCreate',
  'Directory',
  'FileOrCreate',
  'File',
  'Socket',
  'CharDevice',
  'BlockDevice',
]);

/** PersistentVolumeSource members (one and only one must be set). */
const PV_SOURCES = [
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'hostPath',
  'glusterfs',
  'nfs',
  'rbd',
  'quobyte',
  'iscsi',
  'cinder',
  'cephfs',
  'fc',
  'flocker',
  'flexVolume',
  'azureFile',
  'vsphereVolume',
  'azureDisk',
  'photonPersistentDisk',
  'portworxVolume',
  'scaleIO',
  'local',
  'storageos',
  'csi',
];

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
          if (req.key !== 'metadata.name')
            causes.push(invalid(rp.child('key'), req.key ?? '', 'not a valid field selector key'));
        } else {
          causes.push(...invalidEach(rp.child('key'), String(req.key ?? ''), isQualifiedName(String(req.key ?? ''))));
        }
        if (op === 'In' || op === 'NotIn') {
          if (values.length === 0)
            causes.push(required(rp.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        } else if (op === 'Exists' || op === 'DoesNotExist') {
          if (values.length > 0)
            causes.push(
              forbidden(rp.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
            );
        } else if (op === 'Gt' || op === 'Lt') {
          if (values.length !== 1)
            causes.push(required(rp.child('values'), "must be specified single value when `operator` is 'Lt' or 'Gt'"));
        } else {
          causes.push(invalid(rp.child('operator'), op ?? '', 'not a valid selector operator'));
        }
        values.forEach((v, k) => {
          if (typeof v !== 'string') causes.push(invalid(rp.child('values').index(k), v, 'must be a string'));
          else if (field === 'matchExpressions')
            causes.push(...invalidEach(rp.child('values').index(k), v, isValidLabelValue(v)));
        });
      });
    }
  });
  return causes;
}

function validatePVSource(spec: JsonRecord, p: FieldPath): StatusCause[] {
  const present = PV_SOURCES.filter((s) => spec[s] !== undefined && spec[s] !== null);
  if (present.length === 0) return [required(p, 'must specify a volume type')];
  const causes: StatusCause[] = present
    .slice(1)
    .map((s) => forbidden(p.child(s), 'may not specify more than 1 volume type'));
  const hostPath = record(spec.hostPath);
  if (hostPath) {
    const path = str(hostPath.path);
    if (!path) causes.push(required(p.child('hostPath', 'path')));
    else if (path.split('/').includes('..'))
      causes.push(invalid(p.child('hostPath', 'path'), path, "must not contain '..'"));
    causes.push(...validateOptionalEnum(hostPath.type, p.child('hostPath', 'type'), HOST_PATH_TYPES));
  }
  const local = record(spec.local);
  if (local) {
    const path = str(local.path);
    if (!path) causes.push(required(p.child('local', 'path')));
    else if (path.split('/').includes('..'))
      causes.push(invalid(p.child('local', 'path'), path, "must not contain '..'"));
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
    if (!('storage' in capacity) || Object.keys(capacity).length > 1)
      causes.push(notSupported(p.child('capacity'), capacity, ['storage']));
    for (const [k, v] of Object.entries(capacity))
      causes.push(...validateQuantity(v, p.child('capacity').key(k), false));
  }
  causes.push(...validatePVSource(spec, p));
  causes.push(
    ...validateOptionalEnum(
      spec.persistentVolumeReclaimPolicy,
      p.child('persistentVolumeReclaimPolicy'),
      PV_RECLAIM_POLICIES,
    ),
  );
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
      causes.push(
        forbidden(p.child('persistentvolumesource'), 'spec.persistentvolumesource is immutable after creation'),
      );
    }
    // kube reports these two without the "spec." prefix (field.NewPath("volumeMode") in ValidatePersistentVolumeUpdate).
    causes.push(...immutable(FieldPath.root('volumeMode'), spec.volumeMode, oldSpec.volumeMode));
    if (oldSpec.nodeAffinity != null)
      causes.push(...immutable(FieldPath.root('nodeAffinity'), spec.nodeAffinity, oldSpec.nodeAffinity));
  }
  return causes;
}

const pvColumns: TableColumn[] = [
  nameColumn,
  column('Capacity', "capacity is the description of the persistent volume's resources and capacity.", (o) =>
    cellText(rec(spec(o).capacity).storage, '0'),
  ),
  column('Access Modes', 'accessModes contains all ways the volume can be mounted.', (o) =>
    accessModesString(spec(o).accessModes),
  ),
  column(
    'Reclaim Policy',
    'persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.',
    (o) => cellText(spec(o).persistentVolumeReclaimPolicy),
  ),
  column(
    'Status',
    'phase indicates if a volume is available, bound to a claim, or released by a claim.',
    phaseOrTerminating,
  ),
  column(
    'Claim',
    'claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.',
    (o) => {
      const ref = spec(o).claimRef;
      if (ref === undefined || ref === null) return '';
      return `${cellText(rec(ref).namespace)}/${cellText(rec(ref).name)}`;
    },
  ),
  column('StorageClass', 'StorageClass of the pv', storageClassOf),
  column('VolumeAttributesClass', 'VolumeAttributesClass of the pv', (o) =>
    nonEmpty(spec(o).volumeAttributesClassName, '<unset>'),
  ),
  column(
    'Reason',
    'reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.',
    (o) => cellText(status(o).reason),
  ),
  ageColumn,
  column(
    'VolumeMode',
    'volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.',
    (o) => nonEmpty(spec(o).volumeMode, '<unset>'),
    1,
  ),
];

export const PERSISTENT_VOLUMES: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'persistentvolumes',
  kind: 'PersistentVolume',
  listKind: 'PersistentVolumeList',
  namespaced: false,
  shortNames: ['pv'],
  singular: 'persistentvolume',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validatePersistentVolume(o, old),
  defaults(o) {
    canonicalizeQuantityMaps(o, ['spec.capacity']);
    const spec = section(o, 'spec');
    setDefault(spec, 'persistentVolumeReclaimPolicy', 'Retain');
    setDefault(spec, 'volumeMode', 'Filesystem');
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o, now) {
    o.status = { phase: 'Pending', lastPhaseTransitionTime: formatTime(now) };
  },
  prepareForUpdate(o, old, subresource, now) {
    if (subresource !== 'status') return;
    const status = section(o, 'status');
    const oldStatus = (old.status ?? {}) as Record<string, unknown>;
    if (status.phase !== oldStatus.phase && status.lastPhaseTransitionTime === oldStatus.lastPhaseTransitionTime) {
      status.lastPhaseTransitionTime = formatTime(now);
    }
  },
  fieldSelectors: {},
  returnDeletedObject: true,
  columns: pvColumns,
};
