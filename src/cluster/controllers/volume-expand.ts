// kube-controller-manager's side of volume expansion for the embedded cluster: the PersistentVolumeClaimResize
// admission plugin (a Bound claim's storage request may grow only when its class sets allowVolumeExpansion) and
// the expand controller's ExternalExpanding event for volumes no in-tree plugin expands (all of ours). The event
// is emitted once per requested size, where the real controller repeats it per sync and the correlator counts.
import type { KubeObject, PersistentVolumeClaim } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { forbidden } from '../common/errors.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { validatePersistentVolumeClaim } from '../registry/core/persistent-volume-claims.ts';
import type { ClusterCache } from './cluster-cache.ts';
import type { ClusterEventRecorder } from './event-recorder.ts';
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
    if (before.status?.phase !== 'Bound') throw forbidden(PVC_REF, name, 'Only bound persistent volume claims can be expanded');
    const className = claimClass(claim);
    const oldClassName = claimClass(before);
    const sc = className ? cache.classes.get(className) : undefined;
    if (!className || className !== oldClassName || sc?.allowVolumeExpansion !== true) {
      throw forbidden(PVC_REF, name, 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
    }
  });
  return { disable: () => void (enabled = false) };
}

/** Emits ExternalExpanding on a Bound claim whose request exceeds its capacity. Returns a stop switch. */
export function watchExternalExpansion(cache: ClusterCache, recorder: ClusterEventRecorder): { stop(): void } {
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
    const request = storageOf(claim, 'request');
    const capacity = storageOf(claim, 'status');
    if (claim.status?.phase !== 'Bound' || !claim.spec.volumeName || request === undefined || capacity === undefined || request <= capacity) return;
    const size = claim.spec.resources?.requests?.storage ?? '';
    if (announced.get(uid) === size) return;
    announced.set(uid, size);
    // Not from inside the store's watch delivery: the event write is a store write of its own.
    queueMicrotask(() => {
      if (!stopped) recorder.record({ ...claim, apiVersion: 'v1', kind: 'PersistentVolumeClaim' }, 'Normal', 'ExternalExpanding', 'waiting for an external controller to expand this PVC');
    });
  });
  return { stop: () => void (stopped = true) };
}
