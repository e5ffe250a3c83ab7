// The reflector: keeps an ObjectStore equal to the server's state of one resource by list + watch, the way
// client-go's tools/cache.Reflector does: paginated list, watch from the list's resourceVersion with bookmarks
// and a randomised server timeout, reconnect with jittered exponential backoff, relist on 410 Gone, and a diff
// on relist so vanished objects are reported as deletions with their last known state.
import type { KubeObject } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import type { KubeClient } from './client.ts';
import { ApiError, GoneError } from './status-errors.ts';
import { silentLogger, type Logger } from '../types/logger.ts';
import { objectKey, type ObjectStore } from './object-store.ts';
import type { ApiResource } from './resources.ts';

/** One change applied to the store, reported after the store already reflects it. */
export type Delta<T extends KubeObject> =
  | { type: 'add'; obj: T }
  | { type: 'update'; old: T; obj: T }
  /** `finalStateUnknown`: the deletion was inferred on relist; `obj` is the last state we saw (a tombstone). */
  | { type: 'delete'; obj: T; finalStateUnknown: boolean };

/** client-go's reflector backoff: 800 ms doubling to 30 s, jitter 1.0, reset after 2 min without failures. */
export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  factor?: number;
  /** Adds up to `jitter * delay` at random. */
  jitter?: number;
  resetAfterMs?: number;
}

/** Options of a Reflector: what to list and watch, the store, paging, watch timeouts and backoff. */
export interface ReflectorOptions<T extends KubeObject> {
  client: KubeClient;
  resource: ApiResource<T>;
  store: ObjectStore<T>;
  /** Called synchronously for every store change. Exceptions are the caller's (the informer catches them). */
  onDelta: (delta: Delta<T>) => void;
  /** Called after every complete list has been applied (the first call means "synced"). */
  onListed?: (resourceVersion: string) => void;
  /**
   * Applied to every listed and watched object before it enters the store or reaches a handler (client-go's
   * SetTransform): drop or share what no reader needs. It receives an object fresh from the wire that nothing else
   * holds yet, so it may change it in place; it must keep metadata.name, namespace, uid and resourceVersion.
   */
  transform?: (obj: T) => T;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Page size of the list (default 500). */
  pageSize?: number;
  /** Watch timeoutSeconds is random in [min, 2*min) (default 300, like client-go). */
  minWatchTimeoutSeconds?: number;
  /** Reconnect a watch that delivered no byte for this long (default: watch timeout + 30 s). */
  watchIdleTimeoutMs?: number;
  backoff?: BackoffOptions;
  clock?: Clock;
  logger?: Logger;
  /** Random source in [0,1) for jitter and timeouts (tests). */
  random?: () => number;
}

/** Jittered exponential backoff that resets after a quiet period (client-go's exponentialBackoffManager). */
export class Backoff {
  private delay: number;
  private lastAt = -Infinity;
  private readonly o: Required<BackoffOptions>;

  constructor(
    opts: BackoffOptions,
    private readonly clock: Clock,
    private readonly random: () => number = Math.random,
  ) {
    this.o = { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 1, resetAfterMs: 120_000, ...opts };
    this.delay = this.o.initialMs;
  }

  /** The next delay in ms (advances the sequence). */
  next(): number {
    const now = this.clock.now();
    if (now - this.lastAt > this.o.resetAfterMs) this.delay = this.o.initialMs;
    this.lastAt = now;
    const base = this.delay;
    this.delay = Math.min(this.delay * this.o.factor, this.o.maxMs);
    return base + this.random() * this.o.jitter * base;
  }
}

/** Runs list + watch until its signal aborts. Owns the writes to its store. */
export class Reflector<T extends KubeObject = KubeObject> {
  private rv = '';
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;

  constructor(private readonly opts: ReflectorOptions<T>) {
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.logger = (opts.logger ?? silentLogger).child({ resource: opts.resource.resource });
  }

  /** resourceVersion of the last list, event or bookmark applied ('' before the first list or after a 410). */
  get lastSyncResourceVersion(): string {
    return this.rv;
  }

  /** Lists and watches until `signal` aborts; never rejects for API errors (it retries them). */
  async run(signal: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.opts.backoff ?? {}, this.clock, this.random);
    while (!signal.aborted) {
      let healthyClose = false;
      try {
        if (!this.rv) await this.relist(signal);
        healthyClose = await this.watchOnce(signal);
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof GoneError || isResourceVersionTooLarge(err)) {
          // 410: our version was compacted away. 504 ResourceVersionTooLarge: the server is behind our version
          // (it restarted without its history); client-go relists on both rather than waiting for it to catch up.
          this.logger.info({ rv: this.rv }, 'resourceVersion expired or unknown to the server, relisting');
          this.rv = '';
        } else {
          this.logger.warn({ err: (err as Error).message, rv: this.rv }, 'list/watch failed, backing off');
        }
      }
      if (healthyClose || signal.aborted) continue;
      try {
        await this.clock.sleep(backoff.next(), signal);
      } catch {
        break;
      }
    }
  }

  private async relist(signal: AbortSignal): Promise<void> {
    const { client, resource, store, onDelta } = this.opts;
    const { items, resourceVersion } = await client.listAll<T>(resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      limit: this.opts.pageSize ?? 500,
      signal,
    });
    if (signal.aborted) return;
    const transform = this.opts.transform;
    const seen = new Set<string>();
    for (const listed of items) {
      const item = transform ? transform(listed) : listed;
      const key = objectKey(item);
      seen.add(key);
      const old = store.get(key);
      if (!old) {
        store.upsert(item);
        onDelta({ type: 'add', obj: item });
      } else if (old.metadata.uid && item.metadata.uid && old.metadata.uid !== item.metadata.uid) {
        // Deleted and recreated while we were not watching: two different objects, not an update.
        store.remove(key);
        onDelta({ type: 'delete', obj: old, finalStateUnknown: true });
        store.upsert(item);
        onDelta({ type: 'add', obj: item });
      } else if (old.metadata.resourceVersion !== item.metadata.resourceVersion) {
        store.upsert(item);
        onDelta({ type: 'update', old, obj: item });
      }
    }
    for (const key of store.keys()) {
      if (seen.has(key)) continue;
      const old = store.remove(key);
      if (old) onDelta({ type: 'delete', obj: old, finalStateUnknown: true });
    }
    this.rv = resourceVersion;
    this.opts.onListed?.(resourceVersion);
  }

  /** One watch; true when it ended as planned (server timeout), false when it ended early. */
  private async watchOnce(signal: AbortSignal): Promise<boolean> {
    const min = this.opts.minWatchTimeoutSeconds ?? 300;
    const timeoutSeconds = Math.floor(min * (1 + this.random()));
    const started = this.clock.now();
    const stream = await this.opts.client.watch<T>(this.opts.resource, {
      namespace: this.opts.namespace,
      labelSelector: this.opts.labelSelector,
      fieldSelector: this.opts.fieldSelector,
      resourceVersion: this.rv,
      allowWatchBookmarks: true,
      timeoutSeconds,
      signal,
      idleTimeoutMs: this.opts.watchIdleTimeoutMs ?? timeoutSeconds * 1000 + 30_000,
    });
    const { store, onDelta, transform } = this.opts;
    let events = 0;
    for await (const ev of stream) {
      events++;
      const obj = transform && ev.type !== 'BOOKMARK' ? transform(ev.object) : ev.object;
      const rv = obj.metadata?.resourceVersion;
      if (ev.type !== 'BOOKMARK') {
        const key = objectKey(obj);
        const old = store.get(key);
        if (ev.type === 'DELETED') {
          if (old) {
            store.remove(key);
            onDelta({ type: 'delete', obj, finalStateUnknown: false });
          }
        } else if (!old) {
          store.upsert(obj);
          onDelta({ type: 'add', obj });
        } else if (old.metadata.resourceVersion !== rv) {
          store.upsert(obj);
          onDelta({ type: 'update', old, obj });
        }
      }
      if (rv) this.rv = rv;
    }
    // client-go's rule: a watch the server ends normally is re-opened at once, unless it was "very short" (under
    // a second with no event at all), which is what a server refusing watches looks like: that one backs off, so
    // a bad server cannot make us spin (client-node 1.x's #1933). Backing off after every close instead left
    // caches 25 s+ behind when watches were cut every few seconds (chaos runs).
    return events > 0 || this.clock.now() - started >= 1_000;
  }
}

function isResourceVersionTooLarge(err: unknown): boolean {
  return err instanceof ApiError && err.causes.some((c) => c.reason === 'ResourceVersionTooLarge');
}
