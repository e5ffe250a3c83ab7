// Informer event handlers of one term: which keys to enqueue for which changes. Bound claims are skipped (no
// work and no API calls at resync) and forgotten, our own lock writes are filtered out, a deleted claim still in
// progress is carried on, a deleted claim re-queues its volume, a deleted PV unblocks claims refused for its name,
// and class changes re-queue their claims.
import type { Informer } from '../runtime/informer.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { isOnlyLockUpdate } from './claim-lock.ts';
import { forgetClaim, forgetVolume } from './cached-decisions.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';
import type { ResizeHooks } from './resize-loop.ts';

/** Volume cache index: PVs by their claimRef's uid. */
export const VOLUME_CLAIM_UID_INDEX = 'claimUid';

/** What the handlers need of an informer (an Informer fits). */
export type InformerEvents<T extends KubeObject> = Pick<Informer<T>, 'addIndex' | 'addEventHandler'>;

/** Registers the handlers that turn informer events into queue keys. */
export function wireHandlers(
  s: ControllerShared,
  t: ControllerTerm,
  claims: InformerEvents<PersistentVolumeClaim>,
  volumes: InformerEvents<PersistentVolume>,
  classes: InformerEvents<StorageClass>,
  resize?: ResizeHooks,
): void {
  volumes.addIndex(VOLUME_CLAIM_UID_INDEX, (v) => (v.spec.claimRef?.uid ? [v.spec.claimRef.uid] : []));
  const enqueueClaim = (c: PersistentVolumeClaim) => {
    const uid = c.metadata.uid ?? '';
    resize?.claimChanged(c);
    // Bound claims need nothing (unless an operation of ours is still in progress for them), and nothing about them
    // is kept: a claim's record, our write of it and its lock observation go once it is bound (the key's backoff
    // history went when its sync returned done).
    if (c.spec.volumeName && !s.claimRecords.inProgress(uid)) {
      forgetClaim(s, uid);
      return;
    }
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
      if (s.claimRecords.inProgress(uid)) {
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
      s.savedVolumes.observe(v.metadata.name ?? '', v);
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onUpdate: (_old, v) => {
      resize?.volumeChanged(v);
      s.savedVolumes.observe(v.metadata.name ?? '', v);
      t.volumeQueue.add(v.metadata.name ?? '');
    },
    onDelete: (v) => {
      const name = v.metadata.name ?? '';
      t.volumeQueue.forget(name);
      forgetVolume(s, v);
      // A claim refused because this name was taken may proceed now.
      reenqueueWaiting('pvName', name);
    },
  });
  // Creating or fixing a class re-evaluates its claims now (the Go library had no class handlers).
  classes.addEventHandler({
    onAdd: (c) => reenqueueWaiting('class', c.metadata.name ?? ''),
    onUpdate: (oldClass, c) => {
      if (oldClass !== c) reenqueueWaiting('class', c.metadata.name ?? '');
    },
    onDelete: (c) => reenqueueWaiting('class', c.metadata.name ?? ''),
  });
}
