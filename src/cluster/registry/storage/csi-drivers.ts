// storage.k8s.io/v1 CSIDriver: its registry entry, SetDefaults_CSIDriver (1.32), validation after k/k
// pkg/apis/storage/validation (attachRequired and volumeLifecycleModes immutable, token requests, fsGroupPolicy),
// the strategy's generation bump, and the kubectl columns. Also the CSI driver name rule CSINode and
// VolumeAttachment share.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  duplicate,
  FieldPath,
  immutable,
  invalid,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  sorted,
  tooLong,
  typeCheck,
} from '../../common/field-errors.ts';
import { isDNS1123Subdomain } from '../../common/name-rules.ts';
import { ALL_VERBS, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, spec, type TableColumn } from '../table-columns.ts';
import { canonical } from '../validation.ts';

const CSI_DRIVER_NAME_MAX = 63;
const FS_GROUP_POLICIES = sorted(['ReadWriteOnceWithFSType', 'File', 'None']);
/** Listed unsorted, as validateVolumeLifecycleModes writes them. */
const LIFECYCLE_MODES = ['Persistent', 'Ephemeral'];
const MIN_TOKEN_SECONDS = 600;
const MAX_TOKEN_SECONDS = 2 ** 32;

/** apivalidation.ValidateCSIDriverName: required, at most 63 characters, a DNS-1123 subdomain (case-insensitive). */
export function validateCSIDriverName(name: unknown, p: FieldPath): StatusCause[] {
  if (name !== undefined && name !== null && typeof name !== 'string') return [invalid(p, name, 'must be a string')];
  const text = name ?? '';
  const causes: StatusCause[] = [];
  if (text === '') causes.push(required(p));
  if (text.length > CSI_DRIVER_NAME_MAX) causes.push(tooLong(p, CSI_DRIVER_NAME_MAX));
  causes.push(...invalidEach(p, text, isDNS1123Subdomain(text.toLowerCase())));
  return causes;
}

function validateTokenRequests(requests: unknown, p: FieldPath): StatusCause[] {
  const causes = typeCheck(p, requests, 'array');
  const audiences = new Set<string>();
  list(requests).forEach((raw, i) => {
    const r = record(raw) ?? {};
    const audience = typeof r.audience === 'string' ? r.audience : '';
    if (audiences.has(audience)) {
      causes.push(duplicate(p.index(i).child('audience'), audience));
      return;
    }
    audiences.add(audience);
    const seconds = r.expirationSeconds;
    if (seconds === undefined || seconds === null) return;
    if (typeof seconds !== 'number')
      causes.push(invalid(p.index(i).child('expirationSeconds'), seconds, 'must be an integer'));
    else if (seconds < MIN_TOKEN_SECONDS)
      causes.push(
        invalid(p.index(i).child('expirationSeconds'), seconds, 'may not specify a duration less than 10 minutes'),
      );
    else if (seconds > MAX_TOKEN_SECONDS)
      causes.push(
        invalid(p.index(i).child('expirationSeconds'), seconds, 'may not specify a duration larger than 2^32 seconds'),
      );
  });
  return causes;
}

/** validateCSIDriverSpec; kube reports attachRequired under its misspelt path `spec.attachedRequired`. */
function validateCSIDriverSpec(s: Record<string, unknown>, p: FieldPath): StatusCause[] {
  const causes: StatusCause[] = [];
  const requiredBool = (field: string, path: FieldPath) => {
    if (s[field] === undefined || s[field] === null) causes.push(required(path));
    else causes.push(...typeCheck(path, s[field], 'boolean'));
  };
  requiredBool('attachRequired', p.child('attachedRequired'));
  requiredBool('podInfoOnMount', p.child('podInfoOnMount'));
  requiredBool('storageCapacity', p.child('storageCapacity'));
  if (
    s.fsGroupPolicy !== undefined &&
    s.fsGroupPolicy !== null &&
    !FS_GROUP_POLICIES.includes(s.fsGroupPolicy as string)
  ) {
    causes.push(notSupported(p.child('fsGroupPolicy'), s.fsGroupPolicy, FS_GROUP_POLICIES));
  }
  causes.push(...validateTokenRequests(s.tokenRequests, p.child('tokenRequests')));
  causes.push(...typeCheck(p.child('volumeLifecycleModes'), s.volumeLifecycleModes, 'array'));
  for (const mode of list(s.volumeLifecycleModes)) {
    if (!LIFECYCLE_MODES.includes(mode as string))
      causes.push(notSupported(p.child('volumeLifecycleModes'), mode, LIFECYCLE_MODES));
  }
  causes.push(...typeCheck(p.child('requiresRepublish'), s.requiresRepublish, 'boolean'));
  // SELinuxMountReadWriteOncePod is beta and on in 1.32, so seLinuxMount is required (and defaulted).
  requiredBool('seLinuxMount', p.child('seLinuxMount'));
  return causes;
}

/** CSIDriver: the spec rules; on update attachRequired and volumeLifecycleModes are immutable. */
export function validateCSIDriver(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const s = record(obj.spec) ?? {};
  const causes = validateCSIDriverSpec(s, p);
  if (old !== undefined) {
    const o = record(old.spec) ?? {};
    causes.push(...immutable(p.child('attachedRequired'), s.attachRequired, o.attachRequired));
    causes.push(...immutable(p.child('volumeLifecycleModes'), s.volumeLifecycleModes, o.volumeLifecycleModes));
  }
  return causes;
}

/** SetDefaults_CSIDriver as of 1.32 (SELinuxMountReadWriteOncePod on). */
function defaultCSIDriver(o: KubeObject): void {
  const s = section(o as Record<string, unknown>, 'spec');
  setDefault(s, 'attachRequired', true);
  setDefault(s, 'podInfoOnMount', false);
  setDefault(s, 'storageCapacity', false);
  setDefault(s, 'fsGroupPolicy', 'ReadWriteOnceWithFSType');
  if (list(s.volumeLifecycleModes).length === 0) s.volumeLifecycleModes = ['Persistent'];
  setDefault(s, 'requiresRepublish', false);
  setDefault(s, 'seLinuxMount', false);
}

/** The strategy's PrepareForUpdate: a change to what kubelet acts on (tokens, republish, SELinux) is a new generation. */
function bumpGeneration(o: KubeObject, old: KubeObject): void {
  const s = record(o.spec) ?? {};
  const prev = record(old.spec) ?? {};
  const changed = ['tokenRequests', 'requiresRepublish', 'seLinuxMount'].some(
    (f) => JSON.stringify(canonical(s[f] ?? null)) !== JSON.stringify(canonical(prev[f] ?? null)),
  );
  if (changed) o.metadata.generation = (old.metadata.generation ?? 0) + 1;
}

const bool = (v: unknown, fallback: boolean) => (typeof v === 'boolean' ? v : fallback);

const csiDriverColumns: TableColumn[] = [
  nameColumn,
  column(
    'AttachRequired',
    'attachRequired indicates this CSI volume driver requires an attach operation (because it implements the CSI ControllerPublishVolume() method), and that the Kubernetes attach detach controller should call the attach volume interface which checks the volumeattachment status and waits until the volume is attached before proceeding to mounting.',
    (o) => bool(spec(o).attachRequired, true),
    0,
    'boolean',
  ),
  column(
    'PodInfoOnMount',
    'podInfoOnMount indicates this CSI volume driver requires additional pod information (like podName, podUID, etc.) during mount operations, if set to true.',
    (o) => bool(spec(o).podInfoOnMount, false),
    0,
    'boolean',
  ),
  column(
    'StorageCapacity',
    'storageCapacity indicates that the CSI volume driver wants pod scheduling to consider the storage capacity that the driver deployment will report by creating CSIStorageCapacity objects with capacity information, if set to true.',
    (o) => bool(spec(o).storageCapacity, false),
    0,
    'boolean',
  ),
  column(
    'TokenRequests',
    "tokenRequests indicates the CSI driver needs pods' service account tokens it is mounting volume for to do necessary authentication.",
    (o) => {
      const requests = list(spec(o).tokenRequests);
      return requests.length === 0 ? '<unset>' : requests.map((r) => String(record(r)?.audience ?? '')).join(',');
    },
  ),
  column(
    'RequiresRepublish',
    'requiresRepublish indicates the CSI driver wants `NodePublishVolume` being periodically called to reflect any possible change in the mounted volume.',
    (o) => bool(spec(o).requiresRepublish, false),
    0,
    'boolean',
  ),
  column('Modes', 'volumeLifecycleModes defines what kind of volumes this CSI volume driver supports.', (o) => {
    const modes = list(spec(o).volumeLifecycleModes).map(String).join(',');
    return modes === '' ? '<none>' : modes;
  }),
  ageColumn,
];

export const CSI_DRIVERS: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1',
  resource: 'csidrivers',
  kind: 'CSIDriver',
  listKind: 'CSIDriverList',
  namespaced: false,
  singular: 'csidriver',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateCSIDriver(o, old),
  defaults: defaultCSIDriver,
  prepareForUpdate(o, old) {
    // kube compares decoded (defaulted) objects: default first, so an omitted default is no change.
    defaultCSIDriver(o);
    bumpGeneration(o, old);
  },
  fieldSelectors: {},
  // Its REST store sets ReturnDeletedObject (pkg/registry/storage/*/storage/storage.go).
  returnDeletedObject: true,
  columns: csiDriverColumns,
};
