// The per-claim lock: the record format (the 2017 seed's), expiry judged by local observation time, and the
// filter for updates that only touched the lock annotation.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClaimLock, isOnlyLockUpdate, parseLockRecord } from '../../src/controller/claim-lock.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { silentLogger } from '../../src/types/logger.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../../src/types/annotations.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { formatTime } from '../../src/types/time.ts';
import { ScriptedClient } from './fakes.ts';
import { newClaim } from './fixtures.ts';

function withLock(claim: PersistentVolumeClaim, record: object): PersistentVolumeClaim {
  return {
    ...claim,
    metadata: {
      ...claim.metadata,
      annotations: { ...claim.metadata.annotations, [ANN_CONTROL_PLANE_LEADER]: JSON.stringify(record) },
    },
  };
}

describe('claim lock record', () => {
  it('parses the seed format', () => {
    const rec = {
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2017-01-01T00:00:00Z',
      renewTime: '2017-01-01T00:00:05Z',
      leaderTransitions: 2,
    };
    assert.deepEqual(parseLockRecord(withLock(newClaim('c', 'u', 'x', '', ''), rec)), rec);
    assert.equal(parseLockRecord(newClaim('c', 'u', 'x', '', '')), undefined);
    const broken = newClaim('c', 'u', 'x', '', '', { [ANN_CONTROL_PLANE_LEADER]: 'not json' });
    assert.equal(parseLockRecord(broken), undefined);
  });

  it('formats metav1.Time with second precision', () => {
    assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), '2026-01-02T03:04:05Z');
  });

  it('judges expiry by local observation time, not by the record timestamps', async () => {
    const clock = new TestClock();
    const lock = new ClaimLock({
      client: new ScriptedClient(),
      identity: 'me',
      leaseDurationMs: 15_000,
      clock,
      logger: silentLogger,
    });
    // renewTime far in the past: a skewed clock must not make it look expired on first sight.
    const held = withLock(newClaim('c', 'u1', 'x', '', ''), {
      holderIdentity: 'other',
      leaseDurationSeconds: 15,
      acquireTime: '2000-01-01T00:00:00Z',
      renewTime: '2000-01-01T00:00:00Z',
      leaderTransitions: 0,
    });
    const first = lock.inspect(held);
    assert.equal(first.state, 'held');
    await clock.advance(14_000);
    assert.equal(lock.inspect(held).state, 'held');
    await clock.advance(1_000);
    assert.equal(lock.inspect(held).state, 'expired');
    // A renewal (changed record) restarts the count.
    const renewed = withLock(held, {
      holderIdentity: 'other',
      leaseDurationSeconds: 15,
      acquireTime: '2000-01-01T00:00:00Z',
      renewTime: '2000-01-01T00:00:10Z',
      leaderTransitions: 0,
    });
    assert.equal(lock.inspect(renewed).state, 'held');
    assert.equal(
      lock.inspect(
        withLock(held, {
          holderIdentity: 'me',
          leaseDurationSeconds: 15,
          acquireTime: '',
          renewTime: '',
          leaderTransitions: 0,
        }),
      ).state,
      'ours',
    );
    assert.equal(
      lock.inspect(
        withLock(held, {
          holderIdentity: '',
          leaseDurationSeconds: 15,
          acquireTime: '',
          renewTime: '',
          leaderTransitions: 0,
        }),
      ).state,
      'free',
    );
  });

  it('filters updates that only touched the lock annotation', () => {
    const a = newClaim('c', 'u', 'x', 'p', '');
    const b = {
      ...withLock(a, { holderIdentity: 'x' }),
      metadata: { ...withLock(a, { holderIdentity: 'x' }).metadata, resourceVersion: '7' },
    };
    assert.equal(isOnlyLockUpdate(a, b), true);
    const c = { ...b, spec: { ...b.spec, volumeName: 'pv' } };
    assert.equal(isOnlyLockUpdate(a, c), false);
    assert.equal(isOnlyLockUpdate(a, a), false, 'a resync is never filtered');
  });
});
