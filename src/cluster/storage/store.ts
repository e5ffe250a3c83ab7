// The bottom of the embedded cluster: per-resource tables under ONE global resourceVersion counter, the commit
// (persist, then publish to the table and its bounded watch cache), reads, watches and compaction. It knows
// nothing about kinds beyond their plural, scope and field selectors: the write rules (writes/) sit above it.
// Stored objects are immutable once committed and serialised once (stored-entry.ts); in-process readers get
// copies, the HTTP layer sends each version's JSON text. Every version, current or superseded, is kept as that text
// only once its commit is delivered (parsed again on demand). Events can expire (trackExpiry, expiry.ts).
import type { KubeObject, WatchEvent } from '../../types/k8s.ts';
import { ClusterApiError, badRequest, expired, serverTimeout, statusError } from '../common/api-errors.ts';
import { objectKey } from '../common/meta.ts';
import type { FieldGetter } from '../common/selectors.ts';
import { ExpiryQueue } from './expiry.ts';
import { compileFilter, type CompiledFilter, type ListFilterOptions } from './store-filter.ts';
import { StoredEntry } from './stored-entry.ts';
import { EventRing, filterEvent, StoreEvent, type FilteredEvent } from './watch-cache.ts';
import { DEFAULT_OBJECT_LIMITS, serializeForCommit, type ObjectLimits } from './write-limits.ts';

/**
 * Where a persistent store keeps its objects (see persistence.ts); every call but `commit` is synchronous. A
 * backend with begin/commit/rollback groups writes: the store opens a transaction at the first write of an event
 * loop turn, and commits it at the end of the turn (group commit). Without them each put/remove is its own commit.
 */
export interface StoreBackend {
  /** Everything persisted: the last resourceVersion handed out and every live object. */
  load(): { resourceVersion: number; objects: Array<{ resource: string; rv: number; json: string; obj?: unknown }> };
  put(resource: string, key: string, rv: number, json: string): void;
  remove(resource: string, key: string, rv: number): void;
  /** Opens a transaction the following puts and removes join. */
  begin?(): void;
  /**
   * Commits the open transaction. A promise (a backend whose commit is asynchronous, or a test holding it) makes
   * the store wait: writes made meanwhile join the same transaction.
   */
  commit?(): void | Promise<void>;
  /** Abandons the open transaction (never throws: also called when the database already rolled it back). */
  rollback?(): void;
  /** Event loop turns a transaction stays open for more writes to join it (default 1: the turn it was opened in). */
  readonly groupTurns?: number;
  close(): void;
}

/** Writes one transaction holds at most: the next write commits it at once (a bound on memory and answer delay). */
export const MAX_GROUP_COMMIT_WRITES = 512;

/** The writes of one open transaction: answered, published and kept only once it commits. */
interface CommitGroup<K extends StoredKind> {
  readonly writes: Array<{ table: ResourceTable<K>; ev: StoreEvent; prev: StoredEntry | undefined }>;
  /** Set while an asynchronous commit runs. */
  committing: boolean;
  /** Loop turns the transaction has been open (see StoreBackend.groupTurns). */
  turns: number;
  /** Why the transaction failed, once it has. */
  failed: ClusterApiError | undefined;
  /** Created when someone waits for the commit (durable()). */
  done: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
}

function storageError(err: unknown): ClusterApiError {
  if (err instanceof ClusterApiError) return err;
  return new ClusterApiError({
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `Internal error occurred: storage: ${(err as Error).message}`,
    reason: 'InternalError',
    code: 500,
  });
}

/** What storage needs to know of a kind: its plural, scope and field selectors (a registry entry has them). */
export interface StoredKind {
  readonly resource: string;
  readonly namespaced: boolean;
  /** Set on a kind served over another kind's storage: storage keeps no table for it. */
  readonly view?: unknown;
  readonly fieldSelectors: Record<string, FieldGetter>;
}

export interface StorageOptions<K extends StoredKind = StoredKind> {
  /** Events retained per resource for watch resumes (default 10,000). */
  watchCacheSize?: number;
  /**
   * Characters of superseded object versions (their JSON) the watch history keeps per resource (default 32 MiB):
   * with large objects the history ends sooner than watchCacheSize events, and older resumes get 410 Expired.
   */
  watchCacheBytes?: number;
  /** Wall clock in epoch ms (default Date.now); timestamps are derived from it. */
  now?: () => number;
  /** Persistence; without it the store is in memory only. */
  backend?: StoreBackend;
  /** Resource types to serve (the write layer defaults them to the registry's RESOURCES). */
  resources?: readonly K[];
  /** Called when a watch callback throws (the error is otherwise swallowed so other watchers still get the event). */
  onWatcherError?: (err: unknown) => void;
  /** Size and nesting bounds of stored objects (defaults in write-limits.ts). */
  limits?: Partial<ObjectLimits>;
}

/** One resource's objects, history and watchers. */
export interface ResourceTable<K extends StoredKind = StoredKind> {
  readonly rt: K;
  readonly items: Map<string, StoredEntry>;
  sortedKeys: string[] | undefined;
  readonly ring: EventRing;
  readonly watchers: Set<Watcher>;
}

interface Watcher {
  namespace: string | undefined;
  matches: CompiledFilter['matches'];
  /** Events at or below this resourceVersion were already delivered (replay) and are skipped. */
  afterRv: number;
  deliver(ev: FilteredEvent, source: StoreEvent): void;
}

/** Options of a watch on the store. */
export interface StoreWatchOptions {
  namespace?: string;
  /** "" / "0" / undefined: synthetic ADDED for current objects first; "N": replay events after N. */
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/** A page of entries from listEntries. */
export interface EntryPage {
  entries: StoredEntry[];
  resourceVersion: number;
  /** Key of the last returned entry when more remain. */
  nextKey: string | undefined;
  remaining: number;
}

/** Default bound of a resource's watch history in characters of superseded versions (see watchCacheBytes). */
export const DEFAULT_WATCH_CACHE_BYTES = 32 * 1024 * 1024;

/** Parses a resourceVersion parameter; "" and undefined are 0. @throws ClusterApiError 400 when not a decimal integer. */
export function parseResourceVersion(rv: string | undefined): number {
  if (rv === undefined || rv === '') return 0;
  if (!/^\d+$/.test(rv)) throw badRequest(`invalid resource version "${rv}": must be a decimal integer`);
  return Number(rv);
}

/**
 * The embedded cluster's storage. Public reads (get/list/watch) copy objects out; the `*Entry` methods are for
 * the HTTP layer and return the committed immutable version. `commit` is the only way anything is stored.
 */
export class Storage<K extends StoredKind = StoredKind> {
  private readonly byResource = new Map<string, ResourceTable<K>>();
  /** Wall clock in epoch ms. */
  readonly now: () => number;
  private readonly backend: StoreBackend | undefined;
  private readonly onWatcherError: (err: unknown) => void;
  /** Size and nesting bounds of stored objects. */
  readonly limits: ObjectLimits;
  private rv = 0;
  private dispatching = false;
  private readonly pending: Array<{ table: ResourceTable<K>; ev: StoreEvent }> = [];
  /** deliverPending bound once, not a closure per commit. */
  private readonly deliverAll = (): void => this.deliverPending();
  /** The open transaction of a grouping backend (see StoreBackend), until it commits. */
  private group: CommitGroup<K> | undefined;
  /** At the end of a loop turn: commits the open transaction once it has been open for groupTurns turns. */
  private readonly commitOpenGroup = (): void => {
    const g = this.group;
    if (!g) return;
    if (++g.turns < (this.backend?.groupTurns ?? 1)) setImmediate(this.commitOpenGroup);
    else this.commitGroup();
  };
  /** Resources whose objects expire (trackExpiry): when each version was last seen. */
  private readonly expiries = new Map<string, { lastSeen: (obj: KubeObject) => number; queue: ExpiryQueue }>();

  constructor(opts: StorageOptions<K> = {}) {
    this.now = opts.now ?? Date.now;
    this.backend = opts.backend;
    this.onWatcherError = opts.onWatcherError ?? (() => {});
    this.limits = {
      ...DEFAULT_OBJECT_LIMITS,
      ...Object.fromEntries(Object.entries(opts.limits ?? {}).filter(([, v]) => v !== undefined)),
    };
    const loaded = this.backend?.load();
    if (loaded) this.rv = loaded.resourceVersion;
    const size = opts.watchCacheSize ?? 10_000;
    for (const rt of opts.resources ?? []) {
      if (rt.view) continue;
      this.byResource.set(rt.resource, {
        rt,
        items: new Map(),
        sortedKeys: undefined,
        ring: new EventRing(size, this.rv, opts.watchCacheBytes ?? DEFAULT_WATCH_CACHE_BYTES),
        watchers: new Set(),
      });
    }
    for (const o of loaded?.objects ?? []) {
      const table = this.byResource.get(o.resource);
      if (!table) continue;
      const obj = (o.obj ?? JSON.parse(o.json)) as KubeObject;
      const entry = new StoredEntry(obj, o.rv, o.json);
      entry.release();
      table.items.set(objectKey(obj.metadata.namespace, obj.metadata.name ?? ''), entry);
      if (o.rv > this.rv) this.rv = o.rv;
    }
  }

  /** The current global resourceVersion (the revision of the last write). */
  get resourceVersion(): number {
    return this.rv;
  }

  /** The table of a stored resource (plural). @throws ClusterApiError 404 for an unknown resource. */
  table(resource: string): ResourceTable<K> {
    const t = this.byResource.get(resource);
    if (!t) throw statusError(404, 'NotFound', `the server could not find the requested resource (${resource})`, {});
    return t;
  }

  /** Whether the store holds this resource. */
  has(resource: string): boolean {
    return this.byResource.has(resource);
  }

  /** The stored (non-view) resource types. */
  resourceTypes(): K[] {
    return [...this.byResource.values()].map((t) => t.rt);
  }

  /** Every table, in registration order. */
  tables(): Array<ResourceTable<K>> {
    return [...this.byResource.values()];
  }

  // ---- reads ----

  getEntry(resource: string, namespace: string | undefined, name: string): StoredEntry | undefined {
    const t = this.table(resource);
    return t.items.get(objectKey(t.rt.namespaced ? namespace : undefined, name));
  }

  /** A deep copy of the object, or undefined. */
  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const e = this.getEntry(resource, namespace, name);
    return e ? (JSON.parse(e.json) as KubeObject) : undefined;
  }

  /** Compiles list/watch filters for a resource. @throws ClusterApiError 400 for a broken selector. */
  filter(resource: string, opts: ListFilterOptions): CompiledFilter {
    return compileFilter(this.table(resource).rt, opts);
  }

  /** Matching entries in key order, from after `startAfterKey`, at most `limit` (0 = all). */
  listEntries(resource: string, filter: CompiledFilter, page?: { limit?: number; startAfterKey?: string }): EntryPage {
    const t = this.table(resource);
    if (!t.sortedKeys) t.sortedKeys = [...t.items.keys()].sort();
    const keys = t.sortedKeys;
    let i = 0;
    if (filter.namespace !== undefined) i = lowerBound(keys, `${filter.namespace}/`);
    if (page?.startAfterKey !== undefined) {
      i = Math.max(i, lowerBound(keys, page.startAfterKey));
      if (keys[i] === page.startAfterKey) i++;
    }
    const limit = page?.limit && page.limit > 0 ? page.limit : Infinity;
    const prefix = filter.namespace !== undefined ? `${filter.namespace}/` : undefined;
    const entries: StoredEntry[] = [];
    let nextKey: string | undefined;
    for (; i < keys.length; i++) {
      const key = keys[i];
      if (prefix !== undefined && !key.startsWith(prefix)) break;
      const e = t.items.get(key)!;
      if (filter.matches && !filter.matches(e.obj)) continue;
      if (entries.length === limit) {
        nextKey = keys[i - 1];
        break;
      }
      entries.push(e);
    }
    let remaining = 0;
    if (nextKey !== undefined && !filter.matches) {
      for (; i < keys.length && (prefix === undefined || keys[i].startsWith(prefix)); i++) remaining++;
    }
    return { entries, resourceVersion: this.rv, nextKey, remaining };
  }

  /** Deep copies of matching objects in key order, with the list resourceVersion. */
  list(resource: string, opts: ListFilterOptions = {}): { items: KubeObject[]; resourceVersion: string } {
    const page = this.listEntries(resource, this.filter(resource, opts));
    return {
      items: page.entries.map((e) => JSON.parse(e.json) as KubeObject),
      resourceVersion: String(page.resourceVersion),
    };
  }

  // ---- watch ----

  /**
   * Subscribes to committed writes. With resourceVersion ""/"0"/undefined the current matching objects arrive
   * first as ADDED; with "N" the retained events after N are replayed. Delivery is synchronous and in commit order.
   * @throws ClusterApiError 410 Expired when N is older than the retained history, 400 for broken selectors.
   */
  watchEntries(
    resource: string,
    filter: CompiledFilter,
    resourceVersion: string | undefined,
    deliver: (ev: FilteredEvent, source: StoreEvent | undefined) => void,
  ): () => void {
    const t = this.table(resource);
    const fromRv = parseResourceVersion(resourceVersion);
    const watcher: Watcher = { namespace: filter.namespace, matches: filter.matches, afterRv: this.rv, deliver };
    if (fromRv === 0) {
      for (const e of this.listEntries(resource, filter).entries)
        deliver({ type: 'ADDED', entry: e, shared: undefined }, undefined);
    } else {
      // A resourceVersion this store never issued (e.g. a client that outlived an in-memory cluster): kube's
      // cacher waits up to 3 s for it, then fails the watch; here nothing can arrive meanwhile, so fail now.
      if (fromRv > this.rv) {
        throw serverTimeout(`Timeout: Too large resource version: ${fromRv}, current: ${this.rv}`, {
          retryAfterSeconds: 1,
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        });
      }
      const events = t.ring.since(fromRv);
      if (!events) throw expired(`too old resource version: ${fromRv} (${t.ring.compactedRv})`);
      for (const ev of events) {
        const f = filterEvent(ev, filter.namespace, filter.matches);
        if (f) deliver(f, ev);
      }
    }
    t.watchers.add(watcher);
    return () => {
      t.watchers.delete(watcher);
    };
  }

  watch(resource: string, opts: StoreWatchOptions, onEvent: (ev: WatchEvent) => void): () => void {
    return this.watchEntries(resource, this.filter(resource, opts), opts.resourceVersion, (f) =>
      onEvent({ type: f.type, object: JSON.parse(f.entry.json) as KubeObject }),
    );
  }

  // ---- expiry ----

  /**
   * Tracks when the objects of `resource` were last seen (`lastSeen(obj)`, epoch ms): the objects stored now, then
   * every version as it is committed. takeExpired() then finds the expired ones without reading every object.
   */
  trackExpiry(resource: string, lastSeen: (obj: KubeObject) => number): void {
    const t = this.table(resource);
    const queue = new ExpiryQueue();
    for (const [key, e] of t.items) queue.add(lastSeen(e.obj), key, e.rv);
    this.expiries.set(resource, { lastSeen, queue });
  }

  /**
   * The current objects of a tracked resource last seen before `cutoff`, earliest first, each reported once. The
   * queue holds one entry per object, moved to each new version's time; a deleted object is skipped.
   */
  takeExpired(resource: string, cutoff: number): StoredEntry[] {
    const t = this.table(resource);
    const out: StoredEntry[] = [];
    for (const due of this.expiries.get(resource)?.queue.takeBefore(cutoff) ?? []) {
      const e = t.items.get(due.key);
      if (e && e.rv === due.rv) out.push(e);
    }
    return out;
  }

  /** Objects of a tracked resource queued for expiry (one per stored object, whatever its number of versions). */
  queuedForExpiry(resource: string): number {
    return this.expiries.get(resource)?.queue.size ?? 0;
  }

  /** Drops every resource's watch history: resumes from any older resourceVersion get 410 Expired. */
  compact(): void {
    for (const t of this.byResource.values()) t.ring.compact(this.rv);
  }

  /** Commits what is pending, then closes the persistence backend; the store must not be written afterwards. */
  close(): void {
    if (this.group && !this.group.committing) this.commitGroup();
    this.backend?.close();
  }

  /**
   * Resolves when every write made so far is committed to the backend, rejects (500) when the transaction holding
   * them failed (they are then gone from the store too). Undefined when nothing is pending: a write's answer waits
   * on this, so no client hears of a write before it is durable.
   */
  durable(): Promise<void> | undefined {
    const g = this.group;
    if (!g) return undefined;
    if (!g.done) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
      g.done = { promise, resolve, reject };
    }
    return g.done.promise;
  }

  /** The open transaction, opened (and its commit scheduled for the end of this turn) if there is none. */
  private openGroup(backend: StoreBackend): CommitGroup<K> {
    if (this.group) return this.group;
    backend.begin!();
    this.group = { writes: [], committing: false, turns: 0, failed: undefined, done: undefined };
    setImmediate(this.commitOpenGroup);
    return this.group;
  }

  /** Commits the open transaction, then publishes its writes; a failed commit fails them all. */
  private commitGroup(): void {
    const g = this.group;
    if (!g || g.committing) return;
    let result: void | Promise<void>;
    try {
      result = this.backend!.commit!();
    } catch (err) {
      this.failGroup(g, err);
      return;
    }
    if (!result) return this.publishGroup(g);
    g.committing = true;
    result.then(
      () => this.publishGroup(g),
      (err: unknown) => this.failGroup(g, err),
    );
  }

  /** A committed group: its events go to the watchers, in commit order; then its answers. */
  private publishGroup(g: CommitGroup<K>): void {
    if (this.group === g) this.group = undefined;
    for (const w of g.writes) {
      this.dispatch(w.table, w.ev);
      w.prev?.release();
      w.ev.entry.release();
    }
    g.done?.resolve();
  }

  /**
   * A group whose transaction failed: rolled back, and its writes undone in the tables and the watch history,
   * newest first, so the store holds what the database holds. No client got an answer, no watcher their events
   * (except a read in the same turn: a list or a watch resumed then saw them). The resourceVersions they took stay
   * used (a gap, as etcd leaves one): a watch started meanwhile would skip them.
   */
  private failGroup(g: CommitGroup<K>, err: unknown): void {
    if (this.group === g) this.group = undefined;
    this.backend!.rollback!();
    for (let i = g.writes.length - 1; i >= 0; i--) {
      const { table, ev, prev } = g.writes[i];
      table.ring.dropNewest(ev);
      table.sortedKeys = undefined;
      if (prev) {
        table.items.set(ev.key, prev);
        const expiry = this.expiries.get(table.rt.resource);
        expiry?.queue.add(expiry.lastSeen(prev.obj), ev.key, prev.rv);
      } else table.items.delete(ev.key);
      prev?.release();
      ev.entry.release();
    }
    g.failed = storageError(err);
    g.done?.reject(g.failed);
  }

  // ---- commit ----

  /**
   * Stores one write: allocates the next resourceVersion, persists, updates the table and publishes the event.
   * With a grouping backend the write joins the turn's transaction and its event is published when that commits
   * (the caller answers after durable()). With `dryRun` nothing is stored and no resourceVersion is allocated.
   */
  commit(
    table: ResourceTable<K>,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    key: string,
    obj: KubeObject,
    prev: StoredEntry | undefined,
    dryRun = false,
  ): StoredEntry {
    if (dryRun) {
      // Nothing is stored: the answer shows the object as it would be (no new resourceVersion is allocated).
      if (prev) obj.metadata.resourceVersion = String(prev.rv);
      else delete obj.metadata.resourceVersion;
      return new StoredEntry(obj, prev?.rv ?? this.rv);
    }
    const rv = this.rv + 1;
    obj.metadata.resourceVersion = String(rv);
    // Serialized before anything changes: an object that cannot be serialized (or is over the limits) leaves
    // neither store touched, instead of being stored and then failing every LIST.
    // A deletion stores nothing new, so an object stored under older (larger) limits can always be deleted.
    const json = type === 'DELETED' ? JSON.stringify(obj) : serializeForCommit(obj, this.limits);
    const entry = new StoredEntry(obj, rv, json);
    const backend = this.backend;
    const group = backend?.begin ? this.openGroup(backend) : undefined;
    if (backend) {
      try {
        if (type === 'DELETED') backend.remove(table.rt.resource, key, rv);
        else backend.put(table.rt.resource, key, rv, json);
      } catch (err) {
        // In a transaction, the database may have rolled all of it back (SQLite does on a full disk or an I/O
        // error): the whole group fails, this write with it.
        if (group) this.failGroup(group, err);
        throw storageError(err);
      }
    }
    this.rv = rv;
    if (type === 'DELETED') {
      table.items.delete(key);
      table.sortedKeys = undefined;
    } else {
      if (!table.items.has(key)) table.sortedKeys = undefined;
      table.items.set(key, entry);
      const expiry = this.expiries.get(table.rt.resource);
      expiry?.queue.add(expiry.lastSeen(obj), key, rv);
    }
    // DELETED keeps the state before deletion too: list snapshots rebuild older states from it.
    const ev = new StoreEvent(type, key, obj.metadata.namespace, entry, type === 'ADDED' ? undefined : prev);
    // In the watch history at once, like the table: list snapshots and watch resumes are rebuilt from both.
    table.ring.push(ev);
    if (group) {
      // Told to watchers when the transaction commits; the table already holds it, so later writes build on it.
      group.writes.push({ table, ev, prev });
      if (group.writes.length >= MAX_GROUP_COMMIT_WRITES) this.commitGroup();
      if (group.failed) throw group.failed;
      return entry;
    }
    this.dispatch(table, ev);
    // Every version keeps only its JSON once delivered, current or not (parsed again when asked for). The caller's
    // answer is the entry's JSON; the object passed in stays the caller's.
    prev?.release();
    entry.release();
    return entry;
  }

  /** Delivers events in commit order even when a watcher writes from inside its callback. */
  private dispatch(table: ResourceTable<K>, ev: StoreEvent): void {
    this.pending.push({ table, ev });
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      // Entries parsed again for watchers' selectors (a MODIFIED event's previous state) once per event.
      StoredEntry.pinDuring(this.deliverAll);
    } finally {
      this.dispatching = false;
    }
  }

  private deliverPending(): void {
    for (let item = this.pending.shift(); item; item = this.pending.shift()) {
      const ev = item.ev;
      // What every watcher without a namespace or selector receives: one object for all of them.
      let unfiltered: FilteredEvent | undefined;
      for (const w of item.table.watchers) {
        if (ev.rv <= w.afterRv) continue;
        let f: FilteredEvent | undefined;
        if (w.namespace === undefined && !w.matches) f = unfiltered ??= { type: ev.type, entry: ev.entry, shared: ev };
        else {
          f = filterEvent(ev, w.namespace, w.matches);
          if (!f) continue;
          // Delivered unchanged: every watcher sends the same frame, serialised once.
          if (f.type === ev.type && f.entry === ev.entry) f.shared = ev;
        }
        try {
          w.deliver(f, ev);
        } catch (err) {
          this.onWatcherError(err);
        }
      }
      ev.dropFrame();
    }
  }
}

function lowerBound(keys: string[], target: string): number {
  let lo = 0;
  let hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
