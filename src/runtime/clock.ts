// Time as a dependency: every timer in the project goes through a Clock, so tests can use TestClock and
// run backoff, resync and lease logic in milliseconds, deterministically.

/** A cancellable timer handle. */
export interface Timer {
  cancel(): void;
}

/** A time source: now(), sleeps and timers; realClock for production, TestClock for tests. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` after `ms`; the returned timer never keeps the process alive on its own when `unref` is true. */
  setTimeout(fn: () => void, ms: number, opts?: { unref?: boolean }): Timer;
  /** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function sleepWith(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      timer.cancel();
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The wall clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms, opts) {
    const t = setTimeout(fn, Math.max(0, ms));
    if (opts?.unref) t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  sleep(ms, signal) {
    return sleepWith(realClock, ms, signal);
  },
};

interface Scheduled {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

/**
 * A manual clock for tests: time moves only when `advance()` is called, and due timers fire in order
 * (by time, then by creation), each after the promises queued by the previous one have settled.
 */
export class TestClock implements Clock {
  private current: number;
  private seq = 0;
  private timers: Scheduled[] = [];

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const entry: Scheduled = { at: this.current + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    this.timers.push(entry);
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepWith(this, ms, signal);
  }

  /** Number of timers still waiting. */
  get pending(): number {
    return this.timers.filter((t) => !t.cancelled).length;
  }

  /** Moves time forward by `ms`, firing every timer that falls due, including ones scheduled on the way. */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      await flushMicrotasks();
      this.timers = this.timers.filter((t) => !t.cancelled);
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers[0];
      if (!next || next.at > target) break;
      this.timers.shift();
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = target;
    await flushMicrotasks();
  }
}

async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
}
