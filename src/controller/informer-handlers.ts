// Informer event handlers of one term: which keys to enqueue for which changes. Bound claims are skipped (no
// work and no API calls at resync), our own lock writes are filtered out, a deleted claim still in progress is
// carried on, a deleted claim re-queues its volume, a deleted PV unblocks claims refused for its name, and class
// changes re-queue their claims.
import type { Informer } from '../runtime/informer.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { isOnlyLockUpdate } from './claim-lock.ts';
import { forgetClaim } from './claim-sync.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';
import type { ResizeHooks } from './resize-loop.ts';

/** Volume cache index: PVs by their claimRef's uid. */
export const VOLUME_CLAIM_UID_INDEX = 'claimUid';

/** Registers the handlers that turn informer events into queue keys. */
export function wireHandlers(
  s: ControllerShared,
  t: ControllerTerm,
  claims: Informer<PersistentVolumeClaim>,
  volumes: Informer<PersistentVolume>,
  classes: Informer<StorageClass>,
  resize?: ResizeHooks,
): void {
  volumes.addIndex(VOLUME_CLAIM_UID_INDEX, (v) => (v.spec.claimRef?.uid ? [v.spec.claimRef.uid] : []));
  const enqueueClaim = (c: PersistentVolumeClaim) => {
    const uid = c.metadata.uid ?? '';
    resize?.claimChanged(c);
    // Bound claims need nothing (unless an operation of ours is still in progress for them).
    if (c.spec.volumeName && !s.inProgress.has(uid)) return;
    t.claimQueue.add(uid);
  };
  claims.addEventHandler({
    onAdd: enqueueClaim,
    onUpdate: (oldClaim, newClaim) => {
      if (s.claimLock && isOnlyLockUpdate(oldClaim, newClaim)) return;
      enqueueClaim(newClaim);
    },
    onDelete: (c) => {
      const uid = c.metadata.uid ?? '';
      resize?.claimDeleted(uid);
      // The PV's Released event may have come while this cache still held the claim (ClaimStillExists): without
      // this the volume would wait for the next resync. Both the claim's volumeName and PVs whose claimRef is it.
      const volumeNames = new Set(t.volumes.indexKeys(VOLUME_CLAIM_UID_INDEX, uid));
      if (c.spec.volumeName) volumeNames.add(c.spec.volumeName);
      for (const name of volumeNames) t.volumeQueue.add(name);
      if (s.inProgress.has(uid)) {
        // Carry on with the in-progress copy: the backend may be creating the volume right now.
        t.claimQueue.add(uid);
        return;
      }
      t.claimQueue.forget(uid);
      forgetClaim(s, uid);
    },
  });
  const reenqueueWaiting = (index: 'class' | 'pvName', value: string) => {
    if (index === 'class') resize?.classChanged(value);
    for (const c of t.claims.byIndex(index, value)) enqueueClaim(c);
  };
  volumes.addEventHandler({
    onAdd: (v) => {
      s.savedVolumes.delete(v.metadata.name ?? '');
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onUpdate: (_old, v) => {
      resize?.volumeChanged(v);
      s.savedVolumes.delete(v.metadata.name ?? '');
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onDelete: (v) => {
      const name = v.metadata.name ?? '';
      t.volumeQueue.forget(name);
      s.volumeFailures.delete(name);
      s.deletedBackends.delete(v.metadata.uid ?? '');
      s.claimLock?.forget(v.metadata.uid ?? ''); // the PV's delete lock (per-claim mode)
      s.savedVolumes.delete(name);
      // A claim refused because this name was taken may proceed now.
      reenqueueWaiting('pvName', name);
    },
  });
  // The Go library had no class handlers (defect 13): creating or fixing a class re-evaluates its claims now.
  classes.addEventHandler({
    onAdd: (c) => reenqueueWaiting('class', c.metadata.name ?? ''),
    onUpdate: (oldClass, c) => {
      if (oldClass !== c) reenqueueWaiting('class', c.metadata.name ?? '');
    },
    onDelete: (c) => reenqueueWaiting('class', c.metadata.name ?? ''),
  });
}
