// The one leader-election algorithm over a lock: create when the object is missing, refuse while another holder's
// lease is live by local observation time (whatever the record's timestamps say), take over after it, count
// transitions, keep acquireTime on renewal, and surface write conflicts to the caller.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestClock } from '../../src/runtime/clock.ts';
import { ConflictError, NotFoundError, syntheticStatus } from '../../src/runtime/status-errors.ts';
import {
  LockObservation,
  releasedRecord,
  tryAcquireOrRenew,
  type LockRecord,
  type ResourceLock,
} from '../../src/runtime/resource-lock.ts';

/** A lock held in memory; `conflictNext` makes the next update fail as a concurrent write would. */
class MemoryLock implements ResourceLock {
  record: LockRecord | undefined;
  exists = false;
  conflictNext = false;
  async get(): Promise<LockRecord | undefined> {
    if (!this.exists) throw new NotFoundError(syntheticStatus(404, 'NotFound', 'no lock object'));
    return this.record && { ...this.record };
  }
  async create(record: LockRecord): Promise<void> {
    this.exists = true;
    this.record = record;
  }
  async update(record: LockRecord): Promise<void> {
    if (this.conflictNext) {
      this.conflictNext = false;
      throw new ConflictError(syntheticStatus(409, 'Conflict', 'changed'));
    }
    this.record = record;
  }
  formatTime(ms: number): string {
    return String(ms);
  }
}

describe('tryAcquireOrRenew', () => {
  const signal = new AbortController().signal;

  it('creates the lock object, refuses a live holder, and takes over once its record stopped changing for a lease', async () => {
    const clock = new TestClock(1_000_000);
    const lock = new MemoryLock();
    const a = { identity: 'a', leaseDurationMs: 10_000, clock };
    const b = { identity: 'b', leaseDurationMs: 10_000, clock };
    const first = await tryAcquireOrRenew(lock, new LockObservation(), a, signal);
    assert.equal(first.acquired, true);
    assert.equal(lock.record?.holderIdentity, 'a');
    const seenByB = new LockObservation();
    const refused = await tryAcquireOrRenew(lock, seenByB, b, signal);
    assert.deepEqual(refused, { acquired: false, holder: 'a', expiresInMs: 10_000 });
    await clock.advance(9_999);
    assert.equal((await tryAcquireOrRenew(lock, seenByB, b, signal)).acquired, false);
    await clock.advance(1);
    const taken = await tryAcquireOrRenew(lock, seenByB, b, signal);
    assert.equal(taken.acquired && taken.tookOverFrom, 'a');
    assert.equal(lock.record?.leaderTransitions, 1);
  });

  it('keeps acquireTime and transitions when renewing, and lets a conflict through', async () => {
    const clock = new TestClock(5_000);
    const lock = new MemoryLock();
    const c = { identity: 'a', leaseDurationMs: 10_000, clock };
    const seen = new LockObservation();
    await tryAcquireOrRenew(lock, seen, c, signal);
    await clock.advance(3_000);
    await tryAcquireOrRenew(lock, seen, c, signal, { record: seen.record });
    assert.deepEqual(lock.record, {
      holderIdentity: 'a',
      leaseDurationSeconds: 10,
      acquireTime: '5000',
      renewTime: '8000',
      leaderTransitions: 0,
    });
    lock.conflictNext = true;
    await assert.rejects(tryAcquireOrRenew(lock, seen, c, signal), ConflictError);
    assert.equal(releasedRecord(lock, c, lock.record).holderIdentity, '');
  });
});
