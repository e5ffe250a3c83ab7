// The Next value and the shared failure policy: what each failure kind leads to, and how the worker applies a
// Next to a work queue (a real WorkQueue on a test clock, so forget/addAfter/addRateLimited are observed, not spied).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { recordFailure } from '../../src/controller/failures.ts';
import { failurePolicy } from '../../src/controller/failures.ts';
import { after, applyNext, backoff, done, giveUp, waitForEvent } from '../../src/controller/next.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { ItemExponentialFailureRateLimiter } from '../../src/runtime/rate-limiters.ts';
import { WorkQueue } from '../../src/runtime/workqueue.ts';

describe('failurePolicy', () => {
  const failures = (n: number) => {
    let r = recordFailure(undefined, 'fp', 'boom');
    for (let i = 1; i < n; i++) r = recordFailure(r, 'fp', 'boom');
    return r;
  };
  it('backs off below the threshold and gives up once it is reached', () => {
    assert.deepEqual(failurePolicy(failures(2), 3, 'final'), backoff);
    assert.deepEqual(failurePolicy(failures(3), 3, 'final'), giveUp);
  });
  it('never gives up with threshold 0, nor while the backend may still be working', () => {
    assert.deepEqual(failurePolicy(failures(100), 0, 'final'), backoff);
    assert.deepEqual(failurePolicy(failures(100), 3, 'inBackground'), backoff);
  });
  it('waits the infeasible retry interval after an infeasible failure, whatever the count', () => {
    assert.deepEqual(failurePolicy(failures(100), 3, 'infeasible', 60_000), after(60_000));
  });
});

describe('applyNext', () => {
  function queue(clock: TestClock) {
    return new WorkQueue<string>({ clock, rateLimiter: new ItemExponentialFailureRateLimiter<string>(1000, 60_000) });
  }
  it('backoff requeues with growing delays; done forgets the history', async () => {
    const clock = new TestClock();
    const q = queue(clock);
    applyNext(q, 'k', backoff);
    applyNext(q, 'k', backoff);
    assert.equal(q.numRequeues('k'), 2);
    applyNext(q, 'k', done);
    assert.equal(q.numRequeues('k'), 0);
    q.shutdown();
  });
  it('after(ms) brings the key back after ms; waitForEvent and giveUp add nothing', async () => {
    const clock = new TestClock();
    const q = queue(clock);
    applyNext(q, 'a', waitForEvent);
    applyNext(q, 'b', giveUp);
    applyNext(q, 'c', after(5000));
    assert.equal(q.len, 0);
    await clock.advance(4999);
    assert.equal(q.len, 0);
    await clock.advance(1);
    assert.equal(q.len, 1);
    assert.equal((await q.get()).key, 'c');
    q.shutdown();
  });
});
