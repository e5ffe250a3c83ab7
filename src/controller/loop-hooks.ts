// Turns informer events into queue keys for any list of control loops: each loop's hooks, on one handler per
// informer, in the order the loops are given. Claim updates that only move our own per-claim lock are dropped here,
// before any loop sees them (our lock writes are no news to anyone).
import type { Informer, InformerHandlers } from '../runtime/informer.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { isOnlyLockUpdate } from './claim-lock.ts';
import type { ControllerShared } from './controller-state.ts';
import type { LoopHooks } from './loop.ts';

/** What the wiring needs of an informer (an Informer fits). */
export type InformerEvents<T extends KubeObject> = Pick<Informer<T>, 'addEventHandler'>;

/** The term's informers the loops listen to. */
export interface TermEvents {
  claims: InformerEvents<PersistentVolumeClaim>;
  volumes: InformerEvents<PersistentVolume>;
  classes: InformerEvents<StorageClass>;
}

/** Registers every loop's hooks (already bound to its queue) on the term's informers. */
export function wireLoops(s: ControllerShared, informers: TermEvents, hooks: readonly LoopHooks[]): void {
  const claims = combine(hooks.flatMap((h) => (h.claims ? [h.claims] : [])));
  const update = claims.onUpdate;
  informers.claims.addEventHandler({
    ...claims,
    onUpdate: (oldClaim, newClaim) => {
      if (s.claimLock && isOnlyLockUpdate(oldClaim, newClaim)) return;
      update?.(oldClaim, newClaim);
    },
  });
  informers.volumes.addEventHandler(combine(hooks.flatMap((h) => (h.volumes ? [h.volumes] : []))));
  informers.classes.addEventHandler(combine(hooks.flatMap((h) => (h.classes ? [h.classes] : []))));
}

/** One handler calling each of `handlers` in turn. */
function combine<T extends KubeObject>(handlers: readonly InformerHandlers<T>[]): InformerHandlers<T> {
  const adds = handlers.flatMap((h) => (h.onAdd ? [h.onAdd.bind(h)] : []));
  const updates = handlers.flatMap((h) => (h.onUpdate ? [h.onUpdate.bind(h)] : []));
  const deletes = handlers.flatMap((h) => (h.onDelete ? [h.onDelete.bind(h)] : []));
  return {
    onAdd: (obj) => {
      for (const f of adds) f(obj);
    },
    onUpdate: (oldObj, newObj) => {
      for (const f of updates) f(oldObj, newObj);
    },
    onDelete: (obj, info) => {
      for (const f of deletes) f(obj, info);
    },
  };
}
