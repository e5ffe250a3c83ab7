// syncClaim on in-process fakes, asserting the Next it returns (no queue to spy on): a claim that is gone is done,
// a claim waiting for its class is done until the class event, a claim we rewrote waits for its update event,
// failed provisioning backs off and gives up at the threshold, and an infeasible failure waits retry.infeasibleDelayMs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { syncClaim } from '../../src/controller/claim/claim-sync.ts';
import { after, backoff, done, giveUp, waitForEvent } from '../../src/controller/next.ts';
import type { RetryOptions } from '../../src/controller/options/controller-options.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { fakeController, stored } from './fakes.ts';
import { claim, MemoryProvisioner, storageClass } from './harness.ts';

function setup(retry: RetryOptions = {}) {
  const backend = new MemoryProvisioner();
  const f = fakeController(backend, { retry: { failedProvisionThreshold: 2, ...retry } });
  f.classes.upsert(stored(storageClass('std'), 'class-uid'));
  const c = stored(claim('c', 'std'), 'claim-1');
  f.claims.upsert(c);
  return { f, backend, c };
}

describe('syncClaim returns the next step', () => {
  it('done for a claim that is gone, and its record is forgotten', async () => {
    const { f } = setup();
    f.s.claimRecords.set('gone', 'lastDecisionEvent', 'x');
    assert.deepEqual(await syncClaim(f.s, f.t, 'gone'), done);
    assert.equal(f.s.claimRecords.get('gone'), undefined);
  });

  it('done (no retry) while the class is missing: the class event brings it back', async () => {
    const { f } = setup();
    f.claims.upsert(stored(claim('orphan', 'missing'), 'claim-2'));
    assert.deepEqual(await syncClaim(f.s, f.t, 'claim-2'), done);
  });

  it('waitForEvent while our own rewrite of the claim is newer than the cache', async () => {
    const { f, c, backend } = setup();
    f.s.writtenClaims.record('claim-1', { ...c, metadata: { ...c.metadata, resourceVersion: '9' } }, undefined);
    assert.deepEqual(await syncClaim(f.s, f.t, 'claim-1'), waitForEvent);
    assert.deepEqual(backend.provisionCalls, [], 'nothing provisioned from the stale copy');
  });

  it('backoff after a failed save, then giveUp at failedProvisionThreshold', async () => {
    const { f } = setup();
    assert.deepEqual(await syncClaim(f.s, f.t, 'claim-1'), backoff);
    assert.deepEqual(await syncClaim(f.s, f.t, 'claim-1'), giveUp);
    assert.equal(f.s.claimRecords.get('claim-1')?.failures?.failures, 2);
  });

  it('after(retry.infeasibleDelayMs) after an infeasible error', async () => {
    const { f, backend } = setup({ infeasibleDelayMs: 60_000 });
    backend.onProvision = () => {
      throw new InfeasibleError('no such disk type');
    };
    assert.deepEqual(await syncClaim(f.s, f.t, 'claim-1'), after(60_000));
  });
});
