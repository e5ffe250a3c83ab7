// The controller work queue with client-go's semantics (util/workqueue queue.go, delaying_queue.go,
// rate_limiting_queue.go), for async workers: a FIFO plus a dirty set plus a processing set, so a key is
// never handed to two workers at once and a burst of adds coalesces into one run; delayed adds where the
// earliest time wins; rate-limited retries; abandon or drain on shutdown; controller-runtime's metrics.

import type { Registry } from 'prom-client';
import { realClock, type Clock, type Timer } from './clock.ts';
import { WorkQueueMetrics, type QueueMetricsRecorder, type QueueStats } from './metrics.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiters.ts';

/** Options of a WorkQueue: name (for metrics), rate limiter, clock and metrics. */
export interface WorkQueueOptions<K> {
  /** Queue name: the `name` label of the `workqueue_*` metrics. Default `workqueue`. */
  name?: string;
  /** Time source for delays and metrics. Default: the wall clock. */
  clock?: Clock;
  /** Delays for {@link WorkQueue.addRateLimited}. Default: {@link defaultControllerRateLimiter}. */
  rateLimiter?: RateLimiter<K>;
  /** Registry to report `workqueue_*` metrics on (shared with other queues of the same owner). No metrics if absent. */
  registry?: Registry;
}

/** What {@link WorkQueue.get} yields: a key to process (then call `done(key)`), or the news that the queue shut down. */
export type QueueItem<K> = { shutdown: false; key: K } | { shutdown: true; key?: undefined };

interface Getter<K> {
  resolve(item: QueueItem<K>): void;
  reject(reason: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface DelayedEntry<K> {
  at: number;
  key: K;
}

const SHUTDOWN: QueueItem<never> = Object.freeze({ shutdown: true });

/**
 * A rate-limited, delaying work queue of keys.
 *
 * Workers loop: `const item = await q.get(signal); if (item.shutdown) return; try { ... } finally { q.done(item.key) }`.
 * Keys are compared with `Map`/`Set` identity (use strings such as `namespace/name`).
 */
export class WorkQueue<K> {
  readonly name: string;
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter<K>;
  private readonly metrics: QueueMetricsRecorder | undefined;

  // FIFO of keys ready to be handed out; `head` avoids O(n) shift().
  private fifo: K[] = [];
  private head = 0;
  private readonly dirty = new Set<K>();
  private readonly processing = new Set<K>();
  private getters: Getter<K>[] = [];

  private readonly waiting = new Map<K, number>();
  private readonly heap: DelayedEntry<K>[] = [];
  private timer: Timer | undefined;
  private timerAt = Infinity;

  // Only maintained when metrics are on: add time (for queue latency) and start time (for work duration).
  private readonly addTimes = new Map<K, number>();
  private readonly startTimes = new Map<K, number>();

  private addsTotal = 0;
  private retriesTotal = 0;
  private stopping = false;
  private draining = false;
  private drainWaiters: (() => void)[] = [];

  constructor(opts: WorkQueueOptions<K> = {}) {
    this.name = opts.name ?? 'workqueue';
    this.clock = opts.clock ?? realClock;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter<K>(this.clock);
    this.metrics = opts.registry
      ? WorkQueueMetrics.forRegistry(opts.registry).attach(this.name, { stats: () => this.stats() })
      : undefined;
  }

  /** Number of keys ready to be handed out (not counting delayed or in-flight keys). */
  get len(): number {
    return this.fifo.length - this.head;
  }

  /** Number of keys currently held by workers. */
  get inProgress(): number {
    return this.processing.size;
  }

  /** Number of keys waiting for an `addAfter` delay. */
  get delayed(): number {
    return this.waiting.size;
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  /** Marks `key` as needing processing. No-op if it is already queued, or after shutdown. */
  add(key: K): void {
    if (this.stopping || this.dirty.has(key)) return;
    this.dirty.add(key);
    this.addsTotal++;
    if (this.metrics && !this.addTimes.has(key)) this.addTimes.set(key, this.clock.now());
    // A key being processed is re-queued by done(), never handed to a second worker.
    if (this.processing.has(key)) return;
    this.fifo.push(key);
    if (this.getters.length > 0) this.dispatch();
  }

  /** Adds `key` after `ms`. If it is already waiting, only an earlier time replaces the pending one. */
  addAfter(key: K, ms: number): void {
    if (this.stopping) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + ms;
    const pending = this.waiting.get(key);
    if (pending !== undefined && pending <= at) return;
    this.waiting.set(key, at);
    heapPush(this.heap, { at, key });
    if (at < this.timerAt) this.armTimer();
  }

  /** Adds `key` after the rate limiter's delay for it (counts as a retry). */
  addRateLimited(key: K): void {
    if (this.stopping) return;
    this.retriesTotal++;
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** Resets the rate limiter's failure history for `key`. Call after a success, or when the key is gone. */
  forget(key: K): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: K): number {
    return this.rateLimiter.numRequeues(key);
  }

  /**
   * Waits for the next key. Resolves `{ shutdown: true }` once the queue shut down (and, when draining,
   * has handed out its last queued key). Rejects with the signal's reason if `signal` aborts first.
   */
  get(signal?: AbortSignal): Promise<QueueItem<K>> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.len > 0) return Promise.resolve({ shutdown: false, key: this.take() });
    if (this.stopping) return Promise.resolve(SHUTDOWN);
    return new Promise<QueueItem<K>>((resolve, reject) => {
      const getter: Getter<K> = { resolve, reject, signal, onAbort: undefined };
      if (signal) {
        getter.onAbort = () => {
          this.getters = this.getters.filter((g) => g !== getter);
          reject(signal.reason);
        };
        signal.addEventListener('abort', getter.onAbort, { once: true });
      }
      this.getters.push(getter);
    });
  }

  /** Tells the queue that processing of `key` finished; if it was added meanwhile, it is queued again. */
  done(key: K): void {
    if (!this.processing.delete(key)) return;
    if (this.metrics) {
      const start = this.startTimes.get(key);
      if (start !== undefined) {
        this.metrics.workDuration.observe((this.clock.now() - start) / 1000);
        this.startTimes.delete(key);
      }
    }
    if (this.dirty.has(key)) {
      this.fifo.push(key);
      if (this.getters.length > 0) this.dispatch();
    }
    if (this.draining) this.checkDrained();
  }

  /**
   * Abandons the queue: adds are ignored, queued and delayed keys are dropped, waiting and future
   * `get()` calls resolve `{ shutdown: true }`. Workers still holding keys may finish and call `done()`.
   */
  shutdown(): void {
    this.beginShutdown();
    this.metrics?.detach();
    this.dirty.clear();
    this.fifo = [];
    this.head = 0;
    this.addTimes.clear();
    this.releaseGetters();
    if (this.draining) this.checkDrained();
  }

  /**
   * Shuts down gracefully: adds are ignored and delayed keys dropped, but keys already queued are still
   * handed out; resolves when the queue is empty and every worker has called `done()` (client-go's
   * ShutDownWithDrain). If `signal` aborts first, the queue is abandoned and the promise rejects.
   */
  shutdownWithDrain(signal?: AbortSignal): Promise<void> {
    this.beginShutdown();
    this.draining = true;
    if (this.len === 0) this.releaseGetters();
    const drained = new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        this.shutdown();
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        this.drainWaiters = this.drainWaiters.filter((w) => w !== finish);
        this.shutdown();
        reject(signal?.reason);
      };
      const finish = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      this.drainWaiters.push(finish);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
    this.checkDrained();
    return drained;
  }

  private beginShutdown(): void {
    this.stopping = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.timerAt = Infinity;
    this.waiting.clear();
    this.heap.length = 0;
  }

  private checkDrained(): void {
    if (this.len > 0 || this.processing.size > 0) return;
    this.metrics?.detach();
    this.releaseGetters();
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }

  private releaseGetters(): void {
    const getters = this.getters;
    this.getters = [];
    for (const g of getters) {
      if (g.onAbort) g.signal?.removeEventListener('abort', g.onAbort);
      g.resolve(SHUTDOWN);
    }
  }

  /** Pops the next ready key and marks it in flight. Caller guarantees len > 0. */
  private take(): K {
    const key = this.fifo[this.head++];
    if (this.head === this.fifo.length) {
      this.fifo.length = 0;
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.fifo.length) {
      this.fifo = this.fifo.slice(this.head);
      this.head = 0;
    }
    this.dirty.delete(key);
    this.processing.add(key);
    if (this.metrics) {
      const now = this.clock.now();
      const added = this.addTimes.get(key);
      if (added !== undefined) {
        this.metrics.queueDuration.observe((now - added) / 1000);
        this.addTimes.delete(key);
      }
      this.startTimes.set(key, now);
    }
    return key;
  }

  /** Hands ready keys to waiting getters, oldest getter first. */
  private dispatch(): void {
    while (this.getters.length > 0 && this.len > 0) {
      const getter = this.getters.shift() as Getter<K>;
      if (getter.onAbort) getter.signal?.removeEventListener('abort', getter.onAbort);
      getter.resolve({ shutdown: false, key: this.take() });
    }
  }

  private armTimer(): void {
    this.timer?.cancel();
    const top = this.heap[0];
    if (!top) {
      this.timer = undefined;
      this.timerAt = Infinity;
      return;
    }
    this.timerAt = top.at;
    // unref: a queue alone must not keep the process alive; owners stop it with shutdown().
    this.timer = this.clock.setTimeout(() => this.fireDelayed(), top.at - this.clock.now(), { unref: true });
  }

  private fireDelayed(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = this.clock.now();
    while (this.heap.length > 0 && this.heap[0].at <= now) {
      const entry = heapPop(this.heap);
      // Stale heap entries (superseded by an earlier addAfter) are skipped.
      if (this.waiting.get(entry.key) !== entry.at) continue;
      this.waiting.delete(entry.key);
      this.add(entry.key);
    }
    if (!this.stopping) this.armTimer();
  }

  private stats(): QueueStats {
    const now = this.clock.now();
    let total = 0;
    let longest = 0;
    for (const start of this.startTimes.values()) {
      const seconds = (now - start) / 1000;
      total += seconds;
      if (seconds > longest) longest = seconds;
    }
    return {
      depth: this.dirty.size,
      adds: this.addsTotal,
      retries: this.retriesTotal,
      unfinishedSeconds: total,
      longestSeconds: longest,
    };
  }
}

function heapPush<K>(heap: DelayedEntry<K>[], entry: DelayedEntry<K>): void {
  heap.push(entry);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (heap[parent].at <= heap[i].at) break;
    [heap[parent], heap[i]] = [heap[i], heap[parent]];
    i = parent;
  }
}

function heapPop<K>(heap: DelayedEntry<K>[]): DelayedEntry<K> {
  const top = heap[0];
  const last = heap.pop() as DelayedEntry<K>;
  if (heap.length > 0) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let smallest = i;
      if (l < heap.length && heap[l].at < heap[smallest].at) smallest = l;
      if (r < heap.length && heap[r].at < heap[smallest].at) smallest = r;
      if (smallest === i) break;
      [heap[smallest], heap[i]] = [heap[i], heap[smallest]];
      i = smallest;
    }
  }
  return top;
}
