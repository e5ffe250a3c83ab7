// A claim's data source as CreateVolume's volume_content_source, with external-provisioner's checks: a PVC source
// (clone) must be Bound, not being deleted, of the same driver and volume mode, no larger than the request; a
// VolumeSnapshot source must be bound to its content, of the same driver, ready, with a handle, and no larger than
// the request. Any other kind belongs to a volume populator (IgnoredError). Failures here are NoChange: the
// source may become ready.
import { IgnoredError, InfeasibleError, ProvisioningError } from '../controller/provisioner.ts';
import type { PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { isQuantity, parseQuantity } from '../types/quantity.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import type { RequestOf } from './services.ts';

/** The cloning-protection finalizer on a source claim while clones of it are Pending. */
export const FINALIZER_CLONE_PROTECTION = 'provisioner.storage.kubernetes.io/cloning-protection';
/** The finalizer on a source VolumeSnapshot while a volume is restored from it. */
export const FINALIZER_SNAPSHOT_SOURCE_PROTECTION =
  'provisioner.storage.kubernetes.io/volumesnapshot-as-source-protection';
const SNAPSHOT_GROUP = 'snapshot.storage.k8s.io';
/** On a VolumeSnapshotContent: restores may change the volume mode (with --prevent-volume-mode-conversion). */
export const ANN_ALLOW_VOLUME_MODE_CHANGE = 'snapshot.storage.kubernetes.io/allow-volume-mode-change';

/** A CSI VolumeContentSource. */
export type VolumeContentSource = NonNullable<RequestOf<'createVolume'>['volumeContentSource']>;

/** The claim's data source, from dataSource or dataSourceRef (same namespace only). */
export interface DataSource {
  kind: string;
  apiGroup: string;
  name: string;
  namespace: string;
}

/** The normalised data source, if any. A cross-namespace dataSourceRef is refused (the gate is off here). */
export function dataSourceOf(claim: PersistentVolumeClaim): DataSource | undefined {
  const namespace = claim.metadata.namespace ?? '';
  const ds = claim.spec.dataSource;
  if (ds) return { kind: ds.kind, apiGroup: ds.apiGroup ?? '', name: ds.name, namespace };
  const ref = claim.spec.dataSourceRef;
  if (!ref) return undefined;
  if (ref.namespace && ref.namespace !== namespace) {
    throw new InfeasibleError(
      'dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled',
    );
  }
  return { kind: ref.kind, apiGroup: ref.apiGroup ?? '', name: ref.name, namespace };
}

/** Which capability the source needs, or an IgnoredError for a populator's kind. */
export function sourceKindOf(ds: DataSource): 'clone' | 'snapshot' {
  if (ds.name === '') throw new InfeasibleError('the PVC source not found: dataSource has no name');
  if (ds.kind === 'VolumeSnapshot') {
    if (ds.apiGroup !== SNAPSHOT_GROUP)
      throw new InfeasibleError(
        `the PVC source does not belong to the right APIGroup. Expected ${SNAPSHOT_GROUP}, Got ${ds.apiGroup}`,
      );
    return 'snapshot';
  }
  if (ds.kind === 'PersistentVolumeClaim' && ds.apiGroup === '') return 'clone';
  throw new IgnoredError(
    `data source (${ds.kind}) is not handled by the provisioner, assuming an external populator will provision it`,
  );
}

const noChange = (message: string) => new ProvisioningError(message, 'NoChange');
const bytesOf = (q: string | undefined): bigint => (q !== undefined && isQuantity(q) ? parseQuantity(q) : 0n);

/** getPVCSource: the source claim's volume handle, after its checks. */
export async function cloneSource(
  claim: PersistentVolumeClaim,
  sc: StorageClass,
  ds: DataSource,
  cluster: CsiClusterAccess,
  signal: AbortSignal,
): Promise<VolumeContentSource> {
  const source = await cluster.getClaim(ds.namespace, ds.name, signal);
  if (!source) throw noChange(`error getting PVC ${ds.name} (namespace "${ds.namespace}"): not found`);
  if (source.status?.phase !== 'Bound')
    throw noChange(
      `the PVC DataSource ${ds.name} must have a status of Bound. Got ${source.status?.phase ?? 'no phase'}`,
    );
  if (source.metadata.deletionTimestamp) throw noChange(`the PVC DataSource ${ds.name} is currently being deleted`);
  if (!source.spec.storageClassName) throw noChange(`the source PVC (${ds.name}) storageclass cannot be empty`);
  if (!claim.spec.storageClassName)
    throw noChange(`the requested PVC (${claim.metadata.name ?? ''}) storageclass cannot be empty`);
  const requested = bytesOf(claim.spec.resources?.requests?.storage);
  const sourceSize = bytesOf(source.spec.resources?.requests?.storage);
  if (requested < sourceSize) {
    throw noChange(
      `error, new PVC request must be greater than or equal in size to the specified PVC data source, requested ${requested} but source is ${sourceSize}`,
    );
  }
  if (!source.spec.volumeName) throw noChange(`volume name is empty in source PVC ${ds.name}`);
  const pv = await cluster.getVolume(source.spec.volumeName, signal);
  const ref = pv?.spec.claimRef;
  if (
    !pv ||
    !pv.spec.csi ||
    pv.spec.csi.driver !== sc.provisioner ||
    !ref ||
    ref.uid !== source.metadata.uid ||
    ref.namespace !== source.metadata.namespace ||
    ref.name !== source.metadata.name ||
    pv.status?.phase !== 'Bound'
  ) {
    throw noChange('claim in dataSource not bound or invalid');
  }
  const wantBlock = claim.spec.volumeMode === 'Block';
  const sourceBlock = pv.spec.volumeMode === 'Block';
  if (wantBlock !== sourceBlock) {
    throw noChange(
      `the source PVC and destination PVCs must have the same volume mode for cloning.  Source is ${sourceBlock ? 'Block' : 'Filesystem'}, but new PVC requested ${wantBlock ? 'Block' : 'Filesystem'}`,
    );
  }
  return { volume: { volumeId: pv.spec.csi.volumeHandle } };
}

/** getSnapshotSource: the snapshot's handle, after its checks. */
export async function snapshotSource(
  claim: PersistentVolumeClaim,
  sc: StorageClass,
  ds: DataSource,
  cluster: CsiClusterAccess,
  signal: AbortSignal,
  preventVolumeModeConversion = true,
): Promise<VolumeContentSource> {
  const snapshot = await cluster.getVolumeSnapshot(ds.namespace, ds.name, signal);
  if (!snapshot) throw noChange(`error getting snapshot ${ds.name} from api server: not found`);
  // A snapshot being deleted still serves a restore that started before (our finalizer on it says so).
  if (
    snapshot.metadata.deletionTimestamp &&
    !(snapshot.metadata.finalizers ?? []).includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION)
  ) {
    throw noChange(`snapshot ${ds.name} is being deleted`);
  }
  const contentName = snapshot.status?.boundVolumeSnapshotContentName;
  if (!contentName) throw noChange(`snapshot ${ds.name} not bound`);
  const content = await cluster.getVolumeSnapshotContent(contentName, signal);
  if (!content) throw noChange(`error getting snapshotcontent ${contentName} for snapshot ${ds.name}`);
  const ref = content.spec.volumeSnapshotRef;
  if (
    ref.uid !== snapshot.metadata.uid ||
    ref.namespace !== snapshot.metadata.namespace ||
    ref.name !== snapshot.metadata.name
  ) {
    throw noChange(`snapshotcontent ${contentName} for snapshot ${ds.name} is bound to a different snapshot`);
  }
  if (content.spec.driver !== sc.provisioner) {
    throw noChange(
      `snapshotcontent ${contentName} for snapshot ${ds.name} is not handled by CSI driver of StorageClass ${sc.metadata.name ?? ''}`,
    );
  }
  if (snapshot.status?.readyToUse !== true) throw noChange(`snapshot ${ds.name} is not Ready`);
  const handle = content.status?.snapshotHandle;
  if (!handle) throw noChange(`snapshot handle ${ds.name} is not available`);
  const restoreSize = snapshot.status?.restoreSize;
  if (restoreSize !== undefined) {
    const requested = bytesOf(claim.spec.resources?.requests?.storage);
    const size = bytesOf(restoreSize);
    if (requested < size)
      throw noChange(
        `requested volume size ${requested} is less than the size ${size} for the source snapshot ${ds.name}`,
      );
  }
  const sourceMode = content.spec.sourceVolumeMode;
  const wantMode = claim.spec.volumeMode;
  if (preventVolumeModeConversion && sourceMode && wantMode && sourceMode !== wantMode) {
    // Only the snapshot's owner may allow a conversion (a Filesystem volume read as Block exposes its raw blocks).
    const allow = content.metadata.annotations?.[ANN_ALLOW_VOLUME_MODE_CHANGE];
    const who = `requested volume ${claim.metadata.namespace ?? ''}/${claim.metadata.name ?? ''} modifies the mode of the source volume but does not have permission to do so.`;
    if (allow === undefined)
      throw noChange(
        `${who} ${ANN_ALLOW_VOLUME_MODE_CHANGE} annotation is not present on snapshotcontent ${contentName}`,
      );
    const allowed = parseGoBool(allow);
    if (allowed === undefined)
      throw noChange(
        `${who} failed to convert ${ANN_ALLOW_VOLUME_MODE_CHANGE} annotation value to boolean with error: strconv.ParseBool: parsing ${JSON.stringify(allow)}: invalid syntax`,
      );
    if (!allowed)
      throw noChange(`${who} ${ANN_ALLOW_VOLUME_MODE_CHANGE} is set to false on snapshotcontent ${contentName}`);
  }
  return { snapshot: { snapshotId: handle } };
}

/** Go's strconv.ParseBool: undefined when it is not one of its spellings. */
function parseGoBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}
