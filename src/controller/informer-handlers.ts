// Informer event handlers of one term: which keys to enqueue for which changes. Bound claims are skipped (no
// work and no API calls at resync), our own lock writes are filtered out, a deleted claim still in progress is
// carried on, a deleted PV unblocks claims refused for its name, and class changes re-queue their claims.
import type { Informer } from '../runtime/informer.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { isOnlyLockUpdate } from './claim-lock.ts';
import { forgetClaim } from './claim-sync.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';

/** Registers the handlers that turn informer events into queue keys. */
export function wireHandlers(
  s: ControllerShared,
  t: ControllerTerm,
  claims: Informer<PersistentVolumeClaim>,
  volumes: Informer<PersistentVolume>,
  classes: Informer<StorageClass>,
): void {
  const enqueueClaim = (c: PersistentVolumeClaim) => {
    const uid = c.metadata.uid ?? '';
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
    for (const c of t.claims.byIndex(index, value)) enqueueClaim(c);
  };
  volumes.addEventHandler({
    onAdd: (v) => {
      s.savedVolumes.delete(v.metadata.name ?? '');
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onUpdate: (_old, v) => {
      s.savedVolumes.delete(v.metadata.name ?? '');
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onDelete: (v) => {
      const name = v.metadata.name ?? '';
      t.volumeQueue.forget(name);
      s.volumeFailures.delete(name);
      s.deletedBackends.delete(v.metadata.uid ?? '');
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
