// syncVolume on in-process fakes, asserting the Next it returns: a PV delete conflict is retried unless the name
// now belongs to a new PV or the PV is gone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { after, backoff, done, giveUp, waitForEvent } from '../../src/controller/next.ts';
import type { ClaimLock } from '../../src/controller/claim-lock.ts';
import { volumeFingerprint } from '../../src/controller/failures.ts';
import { syncVolume } from '../../src/controller/volume/volume-sync.ts';
import { boundVolume, conflict, fakeController, interruptedBy, notFound, recordEvents } from './fakes.ts';
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

describe('syncVolume shares the failure tail of the other loops', () => {
  /** A Released PV of ours whose claim is gone: the decision is delete (or give-up once failures reach it). */
  function released(f: ReturnType<typeof fakeController>) {
    const pv = boundVolume('pvc-y', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    return pv;
  }

  it('a give-up decision returns giveUp, as for claims', async () => {
    const f = fakeController(new MemoryProvisioner(), { retry: { failedDeleteThreshold: 2 } });
    const pv = released(f);
    f.s.volumeRecords.set('pvc-y', 'failures', { failures: 2, fingerprint: volumeFingerprint(pv), lastError: 'x' });
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-y'), giveUp);
  });

  it('a delete() interrupted by shutdown is not a failure: no event, no record, waitForEvent', async () => {
    const stop = new AbortController();
    const provisioner = new MemoryProvisioner();
    provisioner.delete = interruptedBy(stop);
    const f = fakeController(provisioner);
    f.t = { ...f.t, signal: stop.signal };
    const events = recordEvents(f);
    released(f);
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-y'), waitForEvent);
    assert.deepEqual(events, []);
    assert.equal(f.s.volumeRecords.get('pvc-y')?.failures, undefined);
  });
});

describe('syncVolume waits for a lock held elsewhere by the one lock-wait rule', () => {
  function withHeldLock(retryAfterMs: number) {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-z', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    const lock = {
      acquireVolume: async () => ({ acquired: false, holder: 'replica-b', retryAfterMs }),
      forget: () => {},
    };
    f.s.claimLock = lock as unknown as ClaimLock;
    return f;
  }

  it("looks again one retry period after the holder's lease would expire", async () => {
    const f = withHeldLock(5_000);
    const period = f.s.options.leaderElection.retryPeriodMs;
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-z'), after(5_000 + period));
  });

  it('looks again after one retry period after a lost write race (not a backoff)', async () => {
    const f = withHeldLock(0);
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-z'), after(f.s.options.leaderElection.retryPeriodMs));
  });
});
