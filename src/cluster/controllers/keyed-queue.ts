// The cluster controllers' work queue: keys, deduplicated while waiting, never processed twice at once (a key
// added while it runs is run again afterwards), drained in batches on the event loop so the HTTP server keeps
// answering, with per-key exponential backoff on failure. A sync answers with a `SyncNext`, the controller's
// `Next` words (src/controller/next.ts) for the two cases these controllers have. Why this is a sibling of
// runtime/workqueue.ts and not a use of it: docs/architecture.md, "The cluster's controllers".

/**
 * What a cluster controller's sync asks of its queue, in the words of the controller's `Next` (and assignable
 * to it, test/cluster/keyed-queue.test.ts checks): `done` forgets the key's backoff history; `backoff` retries
 * it with per-key exponential backoff. The other `Next` cases do not arise here: every change reaches these
 * controllers as a store event (no `after` or `waitForEvent`), and they retry until they succeed, as
 * kube-controller-manager's do (no `giveUp`).
 */
export type SyncNext = { readonly kind: 'done' } | { readonly kind: 'backoff' };

/** Finished, or nothing to do. */
export const done: SyncNext = Object.freeze({ kind: 'done' });
/** Retry with the key's exponential backoff. */
export const backoff: SyncNext = Object.freeze({ kind: 'backoff' });

export interface KeyedQueueOptions {
  /** Processes one key synchronously; `backoff` or a throw requeues it with backoff. */
  handle(key: string): SyncNext;
  /** Called with a key's error before it is requeued. */
  onError?(key: string, err: unknown): void;
  /** First retry delay (default 5 ms), doubled per consecutive failure up to maxDelayMs (default 30 s). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Keys handled per turn of the event loop (default 500). */
  batchSize?: number;
}

export class KeyedQueue {
  private readonly opts: KeyedQueueOptions;
  // FIFO of waiting keys: an array with a moving head plus a membership set. (Taking the first key of a Set
  // over and over is O(deleted entries) in V8 and made big drains quadratic.)
  private order: string[] = [];
  private head = 0;
  private readonly queue = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, ReturnType<typeof setTimeout>>();
  private processing: string | undefined;
  private rerun = false;
  private scheduled: ReturnType<typeof setImmediate> | undefined;
  private stopped = false;
  private idleWaiters: Array<() => void> = [];

  constructor(opts: KeyedQueueOptions) {
    this.opts = opts;
  }

  /** Queues a key (a no-op when it already waits). */
  add(key: string): void {
    if (this.stopped) return;
    if (this.processing === key) this.rerun = true;
    else this.enqueue(key);
    this.schedule();
  }

  /** Queues a key after `ms`; an earlier pending delay for the key is kept. */
  addAfter(key: string, ms: number): void {
    if (this.stopped || this.delayed.has(key)) return;
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    timer.unref?.();
    this.delayed.set(key, timer);
  }

  /** Number of keys waiting (not counting delayed ones). */
  get length(): number {
    return this.queue.size;
  }

  /** True while keys wait or one runs (delayed keys aside). */
  get busy(): boolean {
    return this.queue.size > 0 || this.processing !== undefined;
  }

  /** Resolves once nothing waits or runs (delayed keys aside). For tests and benchmarks. */
  idle(): Promise<void> {
    if (this.queue.size === 0 && this.processing === undefined) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops everything and cancels timers; later adds are ignored. */
  stop(): void {
    this.stopped = true;
    this.queue.clear();
    this.order = [];
    this.head = 0;
    for (const t of this.delayed.values()) clearTimeout(t);
    this.delayed.clear();
    if (this.scheduled) clearImmediate(this.scheduled);
    this.scheduled = undefined;
    this.notifyIdle();
  }

  private enqueue(key: string): void {
    if (this.queue.has(key)) return;
    this.queue.add(key);
    this.order.push(key);
  }

  private schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = setImmediate(() => {
      this.scheduled = undefined;
      this.drain();
    });
  }

  private drain(): void {
    const batch = this.opts.batchSize ?? 500;
    for (let i = 0; i < batch && this.queue.size > 0 && !this.stopped; i++) {
      const key = this.order[this.head++];
      this.queue.delete(key);
      if (this.head > 1024 && this.head * 2 > this.order.length) {
        this.order = this.order.slice(this.head);
        this.head = 0;
      }
      this.processing = key;
      this.rerun = false;
      let next: SyncNext;
      try {
        next = this.opts.handle(key);
      } catch (err) {
        this.opts.onError?.(key, err);
        next = backoff;
      }
      this.processing = undefined;
      if (next.kind === 'backoff') this.retry(key);
      else this.failures.delete(key);
      if (this.rerun) this.enqueue(key);
    }
    if (this.queue.size > 0) this.schedule();
    else this.notifyIdle();
  }

  private retry(key: string): void {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    const delay = Math.min((this.opts.baseDelayMs ?? 5) * 2 ** (n - 1), this.opts.maxDelayMs ?? 30_000);
    this.addAfter(key, delay);
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}

/** The lifecycle every cluster controller shares: it is as idle, busy or stopped as its one queue. */
export abstract class QueueController {
  protected abstract readonly queue: KeyedQueue;

  /** Resolves once the queue is empty and nothing is being processed. */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  get busy(): boolean {
    return this.queue.busy;
  }

  stop(): void {
    this.queue.stop();
  }
}
