// The informer handlers on in-process fakes: which keys a claim deletion puts on the volume queue.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { wireHandlers } from '../../src/controller/informer-handlers.ts';
import type { InformerEvents } from '../../src/controller/informer-handlers.ts';
import type { InformerHandlers } from '../../src/runtime/informer.ts';
import type { ObjectStore } from '../../src/runtime/object-store.ts';
import type { KubeObject, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { boundVolume, fakeController, stored } from './fakes.ts';
import { claim, MemoryProvisioner } from './harness.ts';

/** An informer standing in for the real one: indexes go to `store`, handlers are kept to be called by the test. */
function fakeInformer<T extends KubeObject>(
  store: ObjectStore<T>,
): { informer: InformerEvents<T>; handlers: InformerHandlers<T>[] } {
  const handlers: InformerHandlers<T>[] = [];
  const informer = {
    addIndex: (name: string, fn: (obj: T) => readonly string[]) => store.addIndex(name, fn),
    addEventHandler: (h: InformerHandlers<T>) => {
      handlers.push(h);
      return () => {};
    },
  };
  return { informer, handlers };
}

describe('informer handlers: a deleted claim re-queues its volume', () => {
  it('enqueues the PV named by spec.volumeName and the PVs whose claimRef is the claim', () => {
    const f = fakeController(new MemoryProvisioner());
    const claims = fakeInformer(f.claims);
    const volumes = fakeInformer(f.volumes);
    const classes = fakeInformer(f.classes);
    wireHandlers(f.s, f.t, claims.informer, volumes.informer, classes.informer);
    // A PV bound to the claim by claimRef only (the claim's volumeName not written yet), and one by volumeName.
    f.volumes.upsert(boundVolume('pvc-by-ref', 'claim-1'));
    const gone: PersistentVolumeClaim = stored(claim('c', 'std'), 'claim-1');
    gone.spec.volumeName = 'pvc-by-name';
    for (const h of claims.handlers) h.onDelete?.(gone, { finalStateUnknown: false });
    assert.deepEqual([...f.volumeQueue.added].sort(), ['pvc-by-name', 'pvc-by-ref']);
  });
});
