// Per-item retry delays for the work queue, with client-go's `util/workqueue/default_rate_limiters.go`
// semantics: exponential per-item backoff, an overall token bucket, fast-then-slow, max-of, and a slow
// fixed retry for items that cannot succeed soon (infeasible claims).

import { realClock, type Clock } from './clock.ts';
import { TokenBucket } from './token-bucket.ts';

/** Decides how long an item waits before its next retry. Delays are in milliseconds. */
export interface RateLimiter<K> {
  /** Records a failure of `item` and returns how long to wait before retrying it. */
  when(item: K): number;
  /** Clears the failure history of `item` (it succeeded, or it is gone). */
  forget(item: K): void;
  /** How many times `item` has been rate limited since its last `forget`. */
  numRequeues(item: K): number;
}

/** client-go's default base/cap: 5 ms doubling to 1000 s. */
export const DEFAULT_BASE_DELAY_MS = 5;
/** Cap of the per-item exponential backoff (1000 s, client-go's). */
export const DEFAULT_MAX_DELAY_MS = 1_000_000;
/** sig-storage-lib-external-provisioner's base: 15 s, because provisioning failures are rarely transient in ms. */
export const PROVISIONER_BASE_DELAY_MS = 15_000;
/** sig-storage-lib-external-provisioner's DefaultRetryIntervalMax, used for infeasible items. */
export const DEFAULT_SLOW_RETRY_MS = 5 * 60_000;

/** `baseMs * 2^failures`, capped at `maxMs`, per item. */
export class ItemExponentialFailureRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    readonly baseMs: number = DEFAULT_BASE_DELAY_MS,
    readonly maxMs: number = DEFAULT_MAX_DELAY_MS,
  ) {}

  when(item: K): number {
    const exp = this.failures.get(item) ?? 0;
    this.failures.set(item, exp + 1);
    // 2^exp overflows to Infinity long before it matters; the cap handles it.
    const delay = this.baseMs * 2 ** exp;
    return Number.isFinite(delay) && delay < this.maxMs ? delay : this.maxMs;
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/** One shared token bucket for all items: bounds the overall retry rate. Keeps no per-item state. */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  readonly bucket: TokenBucket;

  constructor(qps: number, burst: number, clock: Clock = realClock) {
    this.bucket = new TokenBucket(qps, burst, clock);
  }

  when(_item: K): number {
    return this.bucket.when();
  }

  forget(_item: K): void {}

  numRequeues(_item: K): number {
    return 0;
  }
}

/** `fastMs` for the first `maxFastAttempts` failures of an item, `slowMs` afterwards. */
export class ItemFastSlowRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(
    readonly fastMs: number,
    readonly slowMs: number,
    readonly maxFastAttempts: number,
  ) {}

  when(item: K): number {
    const n = (this.failures.get(item) ?? 0) + 1;
    this.failures.set(item, n);
    return n <= this.maxFastAttempts ? this.fastMs : this.slowMs;
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/**
 * A fixed long delay for items that cannot succeed until something else changes (e.g. an infeasible
 * claim): they are retried rarely instead of hot-looping, while still counting requeues.
 */
export class SlowRetryRateLimiter<K> implements RateLimiter<K> {
  private readonly failures = new Map<K, number>();

  constructor(readonly retryIntervalMs: number = DEFAULT_SLOW_RETRY_MS) {}

  when(item: K): number {
    this.failures.set(item, (this.failures.get(item) ?? 0) + 1);
    return this.retryIntervalMs;
  }

  forget(item: K): void {
    this.failures.delete(item);
  }

  numRequeues(item: K): number {
    return this.failures.get(item) ?? 0;
  }
}

/** The worst (longest) delay of several limiters; every limiter records every failure. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  readonly limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(item: K): number {
    let max = 0;
    // Every limiter must see the failure (the bucket reserves a token, the exponential one counts),
    // so no short-circuit.
    for (const limiter of this.limiters) max = Math.max(max, limiter.when(item));
    return max;
  }

  forget(item: K): void {
    for (const limiter of this.limiters) limiter.forget(item);
  }

  numRequeues(item: K): number {
    let max = 0;
    for (const limiter of this.limiters) max = Math.max(max, limiter.numRequeues(item));
    return max;
  }
}

/** client-go's DefaultControllerRateLimiter: max of exponential 5 ms..1000 s and a 10 qps / 100 burst bucket. */
export function defaultControllerRateLimiter<K>(clock: Clock = realClock): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialFailureRateLimiter<K>(DEFAULT_BASE_DELAY_MS, DEFAULT_MAX_DELAY_MS),
    new BucketRateLimiter<K>(10, 100, clock),
  );
}

/** sig-storage-lib-external-provisioner's limiter: max of exponential 15 s..1000 s and a 10 qps / 100 burst bucket. */
export function provisionerRateLimiter<K>(
  clock: Clock = realClock,
  opts: { baseMs?: number; maxMs?: number } = {},
): RateLimiter<K> {
  return new MaxOfRateLimiter<K>(
    new ItemExponentialFailureRateLimiter<K>(
      opts.baseMs ?? PROVISIONER_BASE_DELAY_MS,
      opts.maxMs ?? DEFAULT_MAX_DELAY_MS,
    ),
    new BucketRateLimiter<K>(10, 100, clock),
  );
}
