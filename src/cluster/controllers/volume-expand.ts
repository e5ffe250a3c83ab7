// kube-controller-manager's side of volume expansion for the embedded cluster: the PersistentVolumeClaimResize
// admission plugin (a Bound claim's storage request may grow only when its class sets allowVolumeExpansion) and
// the expand controller's ExternalExpanding event for volumes no in-tree plugin expands (all of ours). The event
// is emitted once per requested size, where the real controller repeats it per sync and the correlator counts.
// For an in-tree volume whose plugin is migrated to CSI (GA in 1.32), the expand controller also names the CSI
// driver in `volume.kubernetes.io/storage-resizer`, the only case it sets that annotation: external-resizer finds
// a native CSI volume's claims by the PV's spec.csi.driver. Here a claim Bound to a native CSI volume gets the
// annotation too (its driver), once, when it is Bound: a resizer that selects claims by the annotation finds them,
// and external-resizer's CanSupport accepts an annotation equal to its own driver name, so it changes nothing for it.
import type { KubeObject, PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { ANN_STORAGE_RESIZER } from '../../types/annotations.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { forbidden } from '../common/api-errors.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { validatePersistentVolumeClaim } from '../registry/core/persistent-volume-claims.ts';
import type { ClusterCache } from './cluster-cache.ts';
import type { ClusterEventRecorder } from './cluster-event-recorder.ts';
import { claimClass } from './volume-match.ts';

/** The expand controller's event source component. */
export const EXPAND_CONTROLLER_COMPONENT = 'volume_expand';

const PVC_REF = { group: '', resource: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim' };

const storageOf = (c: PersistentVolumeClaim | undefined, where: 'request' | 'status'): bigint | undefined => {
  const q = where === 'request' ? c?.spec?.resources?.requests?.storage : c?.status?.capacity?.storage;
  return isQuantity(q) ? parseQuantity(q) : undefined;
};

/**
 * Installs the resize admission plugin. kube-apiserver validates an update before its validating admission runs,
 * so an update that validation refuses (an unbound claim's request, a shrink to status.capacity) gets the 422 and
 * this plugin stays silent for it.
 */
export function installResizeAdmission(store: ClusterStore, cache: ClusterCache): { disable(): void } {
  let enabled = true;
  store.addAdmission('persistentvolumeclaims', (op, obj: KubeObject, old, info) => {
    if (!enabled || op !== 'update' || info.subresource || !old) return;
    const claim = obj as PersistentVolumeClaim;
    const before = old as PersistentVolumeClaim;
    const newSize = storageOf(claim, 'request');
    const oldSize = storageOf(before, 'request');
    if (newSize === undefined || oldSize === undefined || newSize <= oldSize) return;
    if (validatePersistentVolumeClaim(obj, old).length > 0) return;
    const name = claim.metadata.name ?? '';
    if (before.status?.phase !== 'Bound')
      throw forbidden(PVC_REF, name, 'Only bound persistent volume claims can be expanded');
    const className = claimClass(claim);
    const oldClassName = claimClass(before);
    const sc = className ? cache.classes.get(className) : undefined;
    if (!className || className !== oldClassName || sc?.allowVolumeExpansion !== true) {
      throw forbidden(
        PVC_REF,
        name,
        'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
      );
    }
  });
  return { disable: () => void (enabled = false) };
}

/**
 * In-tree volume sources whose CSI migration is on by default in 1.32, with the in-tree plugin and the CSI
 * driver (csi-translation-lib). Portworx and RBD migration are off by default there, so they are not listed.
 */
const MIGRATED_SOURCES: ReadonlyArray<[source: string, plugin: string, driver: string]> = [
  ['awsElasticBlockStore', 'kubernetes.io/aws-ebs', 'ebs.csi.aws.com'],
  ['gcePersistentDisk', 'kubernetes.io/gce-pd', 'pd.csi.storage.gke.io'],
  ['azureDisk', 'kubernetes.io/azure-disk', 'disk.csi.azure.com'],
  ['azureFile', 'kubernetes.io/azure-file', 'file.csi.azure.com'],
  ['vsphereVolume', 'kubernetes.io/vsphere-volume', 'csi.vsphere.vmware.com'],
  ['cinder', 'kubernetes.io/cinder', 'cinder.csi.openstack.org'],
];

/** The in-tree plugin and CSI driver of a migrated volume, or undefined (CSI volumes and the rest). */
export function migratedResizer(pv: PersistentVolume | undefined): { plugin: string; driver: string } | undefined {
  const spec = pv?.spec as Record<string, unknown> | undefined;
  const hit = MIGRATED_SOURCES.find(([source]) => spec?.[source] !== undefined && spec[source] !== null);
  return hit ? { plugin: hit[1], driver: hit[2] } : undefined;
}

/**
 * Emits ExternalExpanding on a Bound claim whose request exceeds its capacity and, for a migrated in-tree volume,
 * sets its storage-resizer annotation to the CSI driver (SetClaimResizer). Returns a stop switch.
 */
export function watchExternalExpansion(
  cache: ClusterCache,
  recorder: ClusterEventRecorder,
  store: ClusterStore,
): { stop(): void } {
  let stopped = false;
  const announced = new Map<string, string>();
  cache.onChange((change) => {
    if (change.resource !== 'persistentvolumeclaims') return;
    const claim = change.obj as PersistentVolumeClaim;
    const uid = claim.metadata.uid ?? '';
    if (change.type === 'DELETED') {
      announced.delete(uid);
      return;
    }
    if (claim.status?.phase === 'Bound' && claim.spec.volumeName) {
      const pv = cache.volumes.get(claim.spec.volumeName);
      const driver = pv?.spec.csi?.driver;
      if (driver && pv?.spec.claimRef?.uid === uid && claim.metadata.annotations?.[ANN_STORAGE_RESIZER] === undefined) {
        queueMicrotask(() => void (!stopped && setClaimResizer(store, claim, driver)));
      }
    }
    const request = storageOf(claim, 'request');
    const capacity = storageOf(claim, 'status');
    if (
      claim.status?.phase !== 'Bound' ||
      !claim.spec.volumeName ||
      request === undefined ||
      capacity === undefined ||
      request <= capacity
    )
      return;
    const size = claim.spec.resources?.requests?.storage ?? '';
    if (announced.get(uid) === size) return;
    announced.set(uid, size);
    const pv = cache.volumes.get(claim.spec.volumeName);
    if (pv?.spec.claimRef?.uid !== undefined && pv.spec.claimRef.uid !== uid) return;
    const migrated = migratedResizer(pv);
    const message = migrated
      ? `CSI migration enabled for ${migrated.plugin}; waiting for external resizer to expand the pvc`
      : 'waiting for an external controller to expand this PVC';
    // Not from inside the store's watch delivery: the event and the annotation are store writes of their own.
    queueMicrotask(() => {
      if (stopped) return;
      recorder.record(
        { ...claim, apiVersion: 'v1', kind: 'PersistentVolumeClaim' },
        'Normal',
        'ExternalExpanding',
        message,
      );
      if (migrated && claim.metadata.annotations?.[ANN_STORAGE_RESIZER] !== migrated.driver)
        setClaimResizer(store, claim, migrated.driver);
    });
  });
  return { stop: () => void (stopped = true) };
}

/** util.SetClaimResizer: a merge of the annotation onto the current claim (a conflict is retried on the next change). */
function setClaimResizer(store: ClusterStore, claim: PersistentVolumeClaim, driver: string): void {
  try {
    store.patch(
      'persistentvolumeclaims',
      claim.metadata.namespace,
      claim.metadata.name ?? '',
      'merge',
      { metadata: { annotations: { [ANN_STORAGE_RESIZER]: driver } } },
      { user: EXPAND_CONTROLLER_USER },
    );
  } catch (err) {
    if (!(err instanceof ClusterApiError)) throw err;
  }
}

/** The identity the expand controller writes as. */
export const EXPAND_CONTROLLER_USER = 'system:serviceaccount:kube-system:expand-controller';
