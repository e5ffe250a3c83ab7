// The resize flow's plumbing: which informer events put a claim uid on the resize queue (syncResize returns a
// Next that the controller's worker applies, like the claim and volume flows).
import type { WorkQueue } from '../runtime/workqueue.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import type { ControllerTerm } from './controller-state.ts';
import { mayNeedResize } from './decide-resize.ts';
import { forgetResize, type ResizeState } from './resize-sync.ts';

/** What the informer handlers tell the resize flow. */
export interface ResizeHooks {
  claimChanged(claim: PersistentVolumeClaim): void;
  claimDeleted(uid: string): void;
  volumeChanged(volume: PersistentVolume): void;
  classChanged(name: string): void;
}

/** Hooks that enqueue the claims the resize flow may have work for. */
export function resizeHooks(t: ControllerTerm, queue: WorkQueue<string>, state: ResizeState): ResizeHooks {
  const consider = (c: PersistentVolumeClaim | undefined) => {
    if (c && mayNeedResize(c)) queue.add(c.metadata.uid ?? '');
  };
  return {
    claimChanged: consider,
    claimDeleted: (uid) => {
      queue.forget(uid);
      forgetResize(state, uid);
    },
    // A PV write (ours, or its capacity set by hand) may finish or unblock its claim's resize.
    volumeChanged: (v) => consider(v.spec.claimRef?.uid ? t.claims.getByUid(v.spec.claimRef.uid) : undefined),
    // allowVolumeExpansion switched on, or a class edit that restarts a given-up resize.
    classChanged: (name) => {
      for (const c of t.claims.byIndex('class', name)) consider(c);
    },
  };
}
