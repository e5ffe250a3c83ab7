// Tests for the token bucket and the work queue's rate limiters, all on a TestClock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestClock } from '../../src/runtime/clock.ts';
import { TokenBucket, InvalidRateError } from '../../src/runtime/token-bucket.ts';
import {
  BucketRateLimiter,
  ItemExponentialFailureRateLimiter,
  ItemFastSlowRateLimiter,
  MaxOfRateLimiter,
  SlowRetryRateLimiter,
  defaultControllerRateLimiter,
  provisionerRateLimiter,
} from '../../src/runtime/rate-limiters.ts';

test('token bucket: burst is available at once, then refills at qps', async () => {
  const clock = new TestClock();
  const bucket = new TokenBucket(10, 3, clock);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), false);
  await clock.advance(99);
  assert.equal(bucket.tryTake(), false);
  await clock.advance(1);
  assert.equal(bucket.tryTake(), true);
  assert.equal(bucket.tryTake(), false);
  await clock.advance(10_000);
  assert.equal(bucket.available(), 3, 'refill is capped at burst');
});

test('token bucket: when() reserves like rate.Reserve().Delay()', () => {
  const clock = new TestClock();
  const bucket = new TokenBucket(10, 2, clock);
  assert.deepEqual([bucket.when(), bucket.when(), bucket.when(), bucket.when(), bucket.when()], [0, 0, 100, 200, 300]);
  assert.equal(bucket.tryTake(), false, 'reservations consume future tokens');
});

test('token bucket: take() waits for a token, abort returns the reservation', async () => {
  const clock = new TestClock();
  const bucket = new TokenBucket(1, 1, clock);
  await bucket.take();
  let done = false;
  const waiting = bucket.take().then(() => {
    done = true;
  });
  await clock.advance(999);
  assert.equal(done, false);
  await clock.advance(1);
  await waiting;
  assert.equal(done, true);

  const ac = new AbortController();
  const aborted = bucket.take(ac.signal);
  ac.abort(new Error('stop'));
  await assert.rejects(aborted, /stop/);
  assert.equal(clock.pending, 0, 'no timer left behind');
  await clock.advance(1000);
  assert.equal(bucket.tryTake(), true, 'the aborted reservation was returned');
});

test('token bucket: Infinity qps never limits; bad config is rejected', () => {
  const bucket = new TokenBucket(Infinity, 1, new TestClock());
  for (let i = 0; i < 1000; i++) assert.equal(bucket.when(), 0);
  assert.equal(bucket.tryTake(), true);
  assert.throws(() => new TokenBucket(0, 1), InvalidRateError);
  assert.throws(() => new TokenBucket(-1, 1), InvalidRateError);
  assert.throws(() => new TokenBucket(1, 0), InvalidRateError);
  assert.throws(() => new TokenBucket(Number.NaN, 1), InvalidRateError);
});

test('exponential limiter: base * 2^n per item, capped, forget resets', () => {
  const limiter = new ItemExponentialFailureRateLimiter<string>(5, 1000);
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6, 7, 8, 9].map(() => limiter.when('a')),
    [5, 10, 20, 40, 80, 160, 320, 640, 1000],
  );
  assert.equal(limiter.when('b'), 5, 'items are independent');
  assert.equal(limiter.numRequeues('a'), 9);
  limiter.forget('a');
  assert.equal(limiter.numRequeues('a'), 0);
  assert.equal(limiter.when('a'), 5);
  const huge = new ItemExponentialFailureRateLimiter<string>(1, 1e9);
  for (let i = 0; i < 2000; i++) huge.when('x');
  assert.equal(huge.when('x'), 1e9, 'no overflow to Infinity/NaN after many failures');
});

test('bucket limiter: burst free, then spaced at 1/qps, no per-item state', () => {
  const limiter = new BucketRateLimiter<string>(10, 2, new TestClock());
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((k) => limiter.when(k)),
    [0, 0, 100, 200],
  );
  assert.equal(limiter.numRequeues('a'), 0);
});

test('fast/slow limiter: fast for the first attempts, then slow', () => {
  const limiter = new ItemFastSlowRateLimiter<string>(10, 5000, 3);
  assert.deepEqual(
    [1, 2, 3, 4, 5].map(() => limiter.when('a')),
    [10, 10, 10, 5000, 5000],
  );
  assert.equal(limiter.numRequeues('a'), 5);
  limiter.forget('a');
  assert.equal(limiter.when('a'), 10);
});

test('slow retry limiter: a fixed long delay (5 min default) and a requeue count', () => {
  const limiter = new SlowRetryRateLimiter<string>();
  assert.equal(limiter.when('a'), 300_000);
  assert.equal(limiter.when('a'), 300_000);
  assert.equal(limiter.numRequeues('a'), 2);
  limiter.forget('a');
  assert.equal(limiter.numRequeues('a'), 0);
  assert.equal(new SlowRetryRateLimiter<string>(60_000).when('a'), 60_000);
});

test('max-of limiter: the longest delay, every limiter sees every failure', () => {
  const clock = new TestClock();
  const limiter = new MaxOfRateLimiter<string>(
    new ItemExponentialFailureRateLimiter(1, 1000),
    new BucketRateLimiter(1, 2, clock),
  );
  // exp: 1, 2, 4; bucket: 0, 0, 1000
  assert.deepEqual([limiter.when('a'), limiter.when('a'), limiter.when('a')], [1, 2, 1000]);
  assert.equal(limiter.numRequeues('a'), 3);
  limiter.forget('a');
  assert.equal(limiter.numRequeues('a'), 0);
  assert.throws(() => new MaxOfRateLimiter<string>(), RangeError);
});

test('default limiters match client-go and the provisioner library', () => {
  const generic = defaultControllerRateLimiter<string>(new TestClock());
  assert.deepEqual([generic.when('a'), generic.when('a'), generic.when('a')], [5, 10, 20]);
  for (let i = 0; i < 30; i++) generic.when('a');
  assert.equal(generic.when('a'), 1_000_000, 'capped at 1000 s');
  const provisioner = provisionerRateLimiter<string>(new TestClock());
  assert.deepEqual([provisioner.when('c'), provisioner.when('c'), provisioner.when('c')], [15_000, 30_000, 60_000]);
  // The 10 qps / 100 burst bucket dominates once 100 retries happen at one instant.
  const clock = new TestClock();
  const burst = defaultControllerRateLimiter<string>(clock);
  for (let i = 0; i < 100; i++) assert.equal(burst.when(`k${i}`), 5);
  assert.equal(burst.when('k100'), 100);
});
