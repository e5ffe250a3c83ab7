// The loops' informer hooks on in-process fakes: which keys a claim deletion puts on the volume queue.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { volumeLoop } from '../../src/controller/volume/volume-loop.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { boundVolume, fakeController, RecordingQueue, stored } from './fakes.ts';
import { claim, MemoryProvisioner } from './harness.ts';

describe('informer handlers: a deleted claim re-queues its volume', () => {
  it('enqueues the PV named by spec.volumeName and the PVs whose claimRef is the claim', () => {
    const f = fakeController(new MemoryProvisioner());
    const volumeQueue = new RecordingQueue();
    const hooks = volumeLoop(f.s).hooks(f.t, volumeQueue);
    // A PV bound to the claim by claimRef only (the claim's volumeName not written yet), and one by volumeName.
    f.volumes.upsert(boundVolume('pvc-by-ref', 'claim-1'));
    const gone: PersistentVolumeClaim = stored(claim('c', 'std'), 'claim-1');
    gone.spec.volumeName = 'pvc-by-name';
    hooks.claims?.onDelete?.(gone, { finalStateUnknown: false });
    assert.deepEqual([...volumeQueue.added].sort(), ['pvc-by-name', 'pvc-by-ref']);
  });
});
