// syncVolume on in-process fakes, asserting the Next it returns: a PV delete conflict is retried unless the name
// now belongs to a new PV or the PV is gone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoff, done } from '../../src/controller/next.ts';
import { syncVolume } from '../../src/controller/volume-sync.ts';
import { boundVolume, conflict, fakeController, notFound } from './fakes.ts';
import { MemoryProvisioner } from './harness.ts';

describe('syncVolume after a 409 on the PV delete', () => {
  /** A Released PV whose backend volume is already deleted: the sync goes straight to the PV delete. */
  function setup() {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-x', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    f.s.volumeRecords.set('pvc-x', 'backendDeletedUid', 'uid-pvc-x');
    f.client.onDelete = () => {
      throw conflict();
    };
    return { f, pv };
  }

  it('is retried when the PV is still ours (a resourceVersion conflict, an injected 409)', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => pv;
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), backoff, 'retried with backoff');
  });

  it('is done when the name now belongs to a new PV (uid precondition failed) or the PV is gone', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => ({ ...pv, metadata: { ...pv.metadata, uid: 'uid-successor' } });
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), done);
    f.client.onGet = () => {
      throw notFound();
    };
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), done);
  });
});
