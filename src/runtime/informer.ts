// Informer<T>: a reflector-fed cache plus typed event handlers, a `synced` promise that resolves only after
// the first complete list, and an optional periodic resync that re-delivers every cached object as an update
// (the level-triggered safety net client-node does not have, #595).
import type { KubeObject } from '../types/k8s.ts';
import { realClock, type Clock, type Timer } from './clock.ts';
import type { KubeClient } from './client.ts';
import { silentLogger, type Logger } from '../types/logger.ts';
import { ObjectStore, type IndexFunc, type ReadonlyObjectStore } from './object-store.ts';
import { Reflector, type BackoffOptions, type Delta } from './reflector.ts';
import type { ApiResource } from './resources.ts';

/** Typed event handlers. Objects are frozen cache entries: clone before mutating. Exceptions are logged, not propagated. */
export interface InformerHandlers<T extends KubeObject> {
  onAdd?(obj: T): void;
  /** `oldObj === newObj` on a periodic resync. */
  onUpdate?(oldObj: T, newObj: T): void;
  /** `obj` is the last state; `finalStateUnknown` when the deletion was only noticed on a relist (a tombstone). */
  onDelete?(obj: T, info: { finalStateUnknown: boolean }): void;
}

/** Options of an Informer: what to watch, resync period, clock and logger. */
export interface InformerOptions<T extends KubeObject> {
  client: KubeClient;
  resource: ApiResource<T>;
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Re-deliver every object as an update this often (ms); 0 = off (default). */
  resyncMs?: number;
  handlers?: InformerHandlers<T>;
  /** Deep-freeze cached objects (default true). */
  freeze?: boolean;
  /**
   * Applied to every object before it enters the cache or reaches a handler, like client-go's SetTransform: keep
   * only what the readers need (see {@link cacheTransform}). The object is fresh from the wire and may be changed in place.
   */
  transform?: (obj: T) => T;
  pageSize?: number;
  minWatchTimeoutSeconds?: number;
  watchIdleTimeoutMs?: number;
  backoff?: BackoffOptions;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

/** Raised by `synced` when the informer is stopped before its first list completed. */
export class InformerStoppedError extends Error {
  override readonly name = 'InformerStoppedError';
}

/** A watched, cached resource: reflector-fed store, add/update/delete handlers, indexes and a `synced` promise. */
export class Informer<T extends KubeObject = KubeObject> {
  /** Resolves after the first complete list has been applied and its add events delivered. */
  readonly synced: Promise<void>;
  private readonly cache: ObjectStore<T>;
  private readonly handlers = new Set<InformerHandlers<T>>();
  private readonly reflector: Reflector<T>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private resolveSynced!: () => void;
  private rejectSynced!: (err: Error) => void;
  private isSynced = false;
  private controller: AbortController | undefined;
  private running: Promise<void> | undefined;
  private resyncTimer: Timer | undefined;

  constructor(private readonly opts: InformerOptions<T>) {
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? silentLogger).child({ informer: opts.resource.resource });
    this.cache = new ObjectStore<T>(opts.freeze ?? true);
    if (opts.handlers) this.handlers.add(opts.handlers);
    this.synced = new Promise<void>((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    this.synced.catch(() => {}); // only rejects on stop; callers who await it still see the rejection
    this.reflector = new Reflector<T>({
      client: opts.client,
      resource: opts.resource,
      store: this.cache,
      namespace: opts.namespace,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      pageSize: opts.pageSize,
      minWatchTimeoutSeconds: opts.minWatchTimeoutSeconds,
      watchIdleTimeoutMs: opts.watchIdleTimeoutMs,
      backoff: opts.backoff,
      clock: this.clock,
      logger: opts.logger,
      random: opts.random,
      transform: opts.transform,
      onDelta: (d) => this.dispatch(d),
      onListed: () => this.markSynced(),
    });
  }

  /** The cache (read-only view). */
  get store(): ReadonlyObjectStore<T> {
    return this.cache;
  }

  hasSynced(): boolean {
    return this.isSynced;
  }

  get lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion;
  }

  /** Adds an index to the cache (before or after start). */
  addIndex(name: string, fn: IndexFunc<T>): void {
    this.cache.addIndex(name, fn);
  }

  /**
   * Registers handlers; returns a function that unregisters them. Handlers added after the informer has
   * synced first receive an add for every cached object, as client-go's AddEventHandler does.
   */
  addEventHandler(handlers: InformerHandlers<T>): () => void {
    this.handlers.add(handlers);
    if (this.isSynced) for (const obj of this.cache.list()) this.call(handlers, 'onAdd', () => handlers.onAdd?.(obj));
    return () => this.handlers.delete(handlers);
  }

  /** Starts list+watch in the background. Stops when `signal` aborts or on {@link stop}. */
  start(signal?: AbortSignal): void {
    if (this.controller) throw new Error('informer already started');
    const controller = new AbortController();
    this.controller = controller;
    const onAbort = () => controller.abort(signal?.reason);
    if (signal?.aborted) controller.abort(signal.reason);
    else signal?.addEventListener('abort', onAbort, { once: true });
    this.running = this.reflector.run(controller.signal).finally(() => {
      signal?.removeEventListener('abort', onAbort);
      this.resyncTimer?.cancel();
      this.resyncTimer = undefined;
      if (!this.isSynced)
        this.rejectSynced(
          new InformerStoppedError(`informer for ${this.opts.resource.resource} stopped before syncing`),
        );
    });
  }

  /** Stops and waits until the watch is closed and no timer is left. */
  async stop(): Promise<void> {
    this.controller?.abort();
    await this.running;
  }

  private markSynced(): void {
    if (this.isSynced) return;
    this.isSynced = true;
    this.resolveSynced();
    this.scheduleResync();
  }

  private scheduleResync(): void {
    const every = this.opts.resyncMs ?? 0;
    if (every <= 0 || this.controller?.signal.aborted) return;
    this.resyncTimer = this.clock.setTimeout(
      () => {
        if (this.controller?.signal.aborted) return;
        for (const obj of this.cache.list()) {
          for (const h of this.handlers) this.call(h, 'onUpdate', () => h.onUpdate?.(obj, obj));
        }
        this.scheduleResync();
      },
      every,
      { unref: true },
    );
  }

  private dispatch(d: Delta<T>): void {
    for (const h of this.handlers) {
      switch (d.type) {
        case 'add':
          this.call(h, 'onAdd', () => h.onAdd?.(d.obj));
          break;
        case 'update':
          this.call(h, 'onUpdate', () => h.onUpdate?.(d.old, d.obj));
          break;
        case 'delete':
          this.call(h, 'onDelete', () => h.onDelete?.(d.obj, { finalStateUnknown: d.finalStateUnknown }));
          break;
      }
    }
  }

  private call(_h: InformerHandlers<T>, which: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.logger.error({ err: (err as Error).message, handler: which }, 'informer handler threw');
    }
  }
}

/**
 * Waits until every informer has synced (client-go's WaitForCacheSync). Rejects with the signal's reason
 * if it aborts first, or with InformerStoppedError if an informer stops before syncing.
 */
export async function waitForCacheSync(
  signal: AbortSignal | undefined,
  ...informers: Array<{ synced: Promise<void> }>
): Promise<void> {
  const all = Promise.all(informers.map((i) => i.synced)).then(() => undefined);
  if (!signal) return all;
  all.catch(() => {}); // a later rejection after an abort is not "unhandled"; the race below still reports it
  if (signal.aborted) throw signal.reason;
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([all, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
