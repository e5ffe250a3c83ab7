// A token bucket in the manner of golang.org/x/time/rate: `qps` tokens per second refill a bucket of
// `burst` tokens. Used for the client's QPS budget and by the work queue's bucket rate limiter. Time comes
// from an injected Clock so tests are deterministic.

import { realClock, type Clock } from './clock.ts';

/** Thrown by {@link TokenBucket} for a nonsensical configuration (qps <= 0 that is not Infinity, burst < 1). */
export class InvalidRateError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidRateError';
  }
}

/**
 * A token bucket. `qps = Infinity` means "no limit": every call succeeds at once.
 *
 * Tokens are fractional and may go negative through {@link TokenBucket.when} (a reservation), exactly like
 * `rate.Limiter.Reserve()`: the caller that reserves a future token must wait the returned delay, and later
 * callers queue up behind it.
 */
export class TokenBucket {
  readonly qps: number;
  readonly burst: number;
  private readonly clock: Clock;
  private tokens: number;
  private last: number;

  constructor(qps: number, burst: number, clock: Clock = realClock) {
    if (!(qps > 0)) throw new InvalidRateError(`token bucket qps must be > 0 or Infinity, got ${qps}`);
    if (!(burst >= 1) || !Number.isFinite(burst))
      throw new InvalidRateError(`token bucket burst must be a finite number >= 1, got ${burst}`);
    this.qps = qps;
    this.burst = burst;
    this.clock = clock;
    this.tokens = burst;
    this.last = clock.now();
  }

  /** Tokens available now (may be negative while reservations are outstanding). */
  available(): number {
    this.refill();
    return this.tokens;
  }

  /** Takes a token if one is available now; never waits, never reserves. */
  tryTake(): boolean {
    if (this.qps === Infinity) return true;
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return true;
    }
    return false;
  }

  /**
   * Reserves one token and returns how many milliseconds the caller must wait before using it
   * (0 when a token was available). Like `Reserve().Delay()`: the token is committed, so callers must honour it.
   */
  when(): number {
    if (this.qps === Infinity) return 0;
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    return Math.ceil((-this.tokens * 1000) / this.qps);
  }

  /**
   * Waits until a token is available and takes it. If `signal` aborts while waiting, the reservation is
   * returned to the bucket and the promise rejects with the signal's reason.
   */
  async take(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    const delay = this.when();
    if (delay <= 0) return;
    try {
      await this.clock.sleep(delay, signal);
    } catch (err) {
      this.cancelReservation();
      throw err;
    }
  }

  private cancelReservation(): void {
    this.refill();
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  private refill(): void {
    const now = this.clock.now();
    const elapsed = now - this.last;
    // A clock that moves backwards must not mint tokens nor stall the bucket forever.
    if (elapsed > 0) this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.qps) / 1000);
    this.last = now;
  }
}
