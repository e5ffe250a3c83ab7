// The cluster's object store: per-resource maps under ONE global resourceVersion counter, with kube-apiserver's
// write rules (create/update/patch/delete strategies, finalizers, preconditions, status subresource, no-op
// writes), a bounded watch cache per resource, admission hooks, and an optional persistence backend.
// Stored objects are immutable once committed; readers get copies, the HTTP layer reuses each version's JSON.
import { randomUUID } from 'node:crypto';
import type { KubeObject, WatchEvent } from '../../types/k8s.ts';
import { ClusterApiError, badRequest, expired, serverTimeout, statusError } from '../common/errors.ts';
import { objectKey } from '../common/meta.ts';
import { RESOURCES, type ResourceType } from '../registry/registry.ts';
import { compileFilter, type CompiledFilter, type ListFilterOptions } from './store-filter.ts';
import { WriteRules, type AdmissionPlugin, type DeleteOptions, type PatchOptions, type UpdateOptions, type PatchType, type WriteOptions } from '../writes/write-rules.ts';
import { EventRing, filterEvent, StoreEvent, StoredEntry, type FilteredEvent } from './watch-cache.ts';
import { DEFAULT_OBJECT_LIMITS, guardWrite, serializeForCommit, type ObjectLimits } from './write-limits.ts';

export { ClusterApiError } from '../common/errors.ts';
export type { AdmissionPlugin, DeleteOptions, PatchOptions, PatchType, UpdateOptions, WriteOptions } from '../writes/write-rules.ts';
export { StoredEntry, StoreEvent } from './watch-cache.ts';

/** Where a persistent store keeps its objects (see persistence.ts); every call is synchronous. */
export interface StoreBackend {
  /** Everything persisted: the last resourceVersion handed out and every live object. */
  load(): { resourceVersion: number; objects: Array<{ resource: string; rv: number; json: string; obj?: unknown }> };
  put(resource: string, key: string, rv: number, json: string): void;
  remove(resource: string, key: string, rv: number): void;
  close(): void;
}

export interface ClusterStoreOptions {
  /** Events retained per resource for watch resumes (default 10,000). */
  watchCacheSize?: number;
  /** Wall clock in epoch ms (default Date.now); timestamps are derived from it. */
  now?: () => number;
  /** Persistence; without it the store is in memory only. */
  backend?: StoreBackend;
  /** Resource types to serve (default RESOURCES). */
  resources?: readonly ResourceType[];
  /** Called when a watch callback throws (the error is otherwise swallowed so other watchers still get the event). */
  onWatcherError?: (err: unknown) => void;
  /** Size and nesting bounds of stored objects (defaults in write-limits.ts). */
  limits?: Partial<ObjectLimits>;
}

/** One resource's objects, history and watchers. */
export interface ResourceTable {
  readonly rt: ResourceType;
  readonly items: Map<string, StoredEntry>;
  sortedKeys: string[] | undefined;
  readonly ring: EventRing;
  readonly watchers: Set<Watcher>;
  readonly admission: AdmissionPlugin[];
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

/** Parses a resourceVersion parameter; "" and undefined are 0. @throws ClusterApiError 400 when not a decimal integer. */
export function parseResourceVersion(rv: string | undefined): number {
  if (rv === undefined || rv === '') return 0;
  if (!/^\d+$/.test(rv)) throw badRequest(`invalid resource version "${rv}": must be a decimal integer`);
  return Number(rv);
}

/**
 * The embedded cluster's store. Public methods (get/list/create/update/patch/delete/watch) copy objects in and
 * out; the `*Entry` methods are for the HTTP layer: they take ownership of the object passed in and return the
 * committed immutable version.
 */
export class ClusterStore {
  readonly #tables = new Map<string, ResourceTable>();
  readonly #now: () => number;
  readonly #backend: StoreBackend | undefined;
  readonly #onWatcherError: (err: unknown) => void;
  readonly #writes: WriteRules;
  readonly #limits: ObjectLimits;
  #rv = 0;
  #dispatching = false;
  readonly #pending: Array<{ table: ResourceTable; ev: StoreEvent }> = [];

  constructor(opts: ClusterStoreOptions = {}) {
    this.#now = opts.now ?? Date.now;
    this.#backend = opts.backend;
    this.#onWatcherError = opts.onWatcherError ?? (() => {});
    this.#limits = { ...DEFAULT_OBJECT_LIMITS, ...Object.fromEntries(Object.entries(opts.limits ?? {}).filter(([, v]) => v !== undefined)) };
    const loaded = this.#backend?.load();
    if (loaded) this.#rv = loaded.resourceVersion;
    const size = opts.watchCacheSize ?? 10_000;
    for (const rt of opts.resources ?? RESOURCES) {
      if (rt.view) continue;
      this.#tables.set(rt.resource, {
        rt,
        items: new Map(),
        sortedKeys: undefined,
        ring: new EventRing(size, this.#rv),
        watchers: new Set(),
        admission: [],
      });
    }
    for (const o of loaded?.objects ?? []) {
      const table = this.#tables.get(o.resource);
      if (!table) continue;
      const obj = (o.obj ?? JSON.parse(o.json)) as KubeObject;
      table.items.set(objectKey(obj.metadata.namespace, obj.metadata.name ?? ''), new StoredEntry(obj, o.rv, o.json));
      if (o.rv > this.#rv) this.#rv = o.rv;
    }
    this.#writes = new WriteRules({
      now: this.#now,
      table: (r) => this.table(r),
      tables: () => [...this.#tables.values()],
      commit: (table, type, key, obj, prev, dryRun) => this.#commit(table, type, key, obj, prev, dryRun),
      newUid: () => randomUUID(),
      limits: this.#limits,
    });
  }

  /** The current global resourceVersion (the revision of the last write). */
  get resourceVersion(): number {
    return this.#rv;
  }

  /** The table of a stored resource (plural). @throws ClusterApiError 404 for an unknown resource. */
  table(resource: string): ResourceTable {
    const t = this.#tables.get(resource);
    if (!t) throw statusError(404, 'NotFound', `the server could not find the requested resource (${resource})`, {});
    return t;
  }

  /** Whether the store holds this resource. */
  has(resource: string): boolean {
    return this.#tables.has(resource);
  }

  /** The stored (non-view) resource types. */
  resourceTypes(): ResourceType[] {
    return [...this.#tables.values()].map((t) => t.rt);
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
    return { entries, resourceVersion: this.#rv, nextKey, remaining };
  }

  /** Deep copies of matching objects in key order, with the list resourceVersion. */
  list(resource: string, opts: ListFilterOptions = {}): { items: KubeObject[]; resourceVersion: string } {
    const page = this.listEntries(resource, this.filter(resource, opts));
    return { items: page.entries.map((e) => JSON.parse(e.json) as KubeObject), resourceVersion: String(page.resourceVersion) };
  }

  // ---- writes ----

  /** Creates an object; takes ownership of `obj`. @throws ClusterApiError */
  createEntry(resource: string, obj: KubeObject, opts: WriteOptions = {}): StoredEntry {
    return guardWrite(() => this.#writes.create(resource, obj, opts));
  }

  create(resource: string, obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    return copyOut(guardWrite(() => this.createEntry(resource, structuredClone(obj), opts)));
  }

  /** PUT semantics; takes ownership of `obj`. `created` when a missing Lease/Event was created. @throws ClusterApiError */
  updateEntry(resource: string, obj: KubeObject, opts: UpdateOptions = {}): { entry: StoredEntry; created: boolean } {
    return guardWrite(() => this.#writes.update(resource, obj, opts));
  }

  update(resource: string, obj: KubeObject, opts: UpdateOptions = {}): KubeObject {
    return copyOut(guardWrite(() => this.updateEntry(resource, structuredClone(obj), opts)).entry);
  }

  /** Applies a patch to the latest stored version, then runs the update rules. @throws ClusterApiError */
  patchEntry(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions = {},
  ): StoredEntry {
    return guardWrite(() => this.#writes.patch(resource, namespace, name, type, patch, opts));
  }

  patch(resource: string, namespace: string | undefined, name: string, type: PatchType, patch: unknown, opts: UpdateOptions = {}): KubeObject {
    return copyOut(this.patchEntry(resource, namespace, name, type, patch, opts));
  }

  /** DELETE semantics: `deleted` is false when finalizers only set deletionTimestamp. @throws ClusterApiError */
  deleteEntry(resource: string, namespace: string | undefined, name: string, opts: DeleteOptions = {}): { entry: StoredEntry; deleted: boolean } {
    return guardWrite(() => this.#writes.delete(resource, namespace, name, opts));
  }

  delete(resource: string, namespace: string | undefined, name: string, opts: DeleteOptions = {}): KubeObject {
    return copyOut(this.deleteEntry(resource, namespace, name, opts).entry);
  }

  /** Registers an admission plugin run on create/update of `resource`, before validation. */
  addAdmission(resource: string, plugin: AdmissionPlugin): void {
    this.table(resource).admission.push(plugin);
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
    const watcher: Watcher = { namespace: filter.namespace, matches: filter.matches, afterRv: this.#rv, deliver };
    if (fromRv === 0) {
      for (const e of this.listEntries(resource, filter).entries) deliver({ type: 'ADDED', entry: e, sharedLine: undefined }, undefined);
    } else {
      // A resourceVersion this store never issued (e.g. a client that outlived an in-memory cluster): kube's
      // cacher waits up to 3 s for it, then fails the watch; here nothing can arrive meanwhile, so fail now.
      if (fromRv > this.#rv) {
        throw serverTimeout(`Timeout: Too large resource version: ${fromRv}, current: ${this.#rv}`, {
          retryAfterSeconds: 1,
          causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
        });
      }
      const events = t.ring.since(fromRv);
      if (!events) throw expired(`too old resource version: ${fromRv} (${t.ring.compactedRv})`);
      for (const ev of events) {
        const f = filterEvent(ev, filter.namespace, filter.matches);
        if (f) deliver(sharedIfUnchanged(f, ev), ev);
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

  /** Drops every resource's watch history: resumes from any older resourceVersion get 410 Expired. */
  compact(): void {
    for (const t of this.#tables.values()) t.ring.compact(this.#rv);
  }

  /** Closes the persistence backend; the store must not be written afterwards. */
  close(): void {
    this.#backend?.close();
  }

  // ---- commit ----

  #commit(
    table: ResourceTable,
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
      return new StoredEntry(obj, prev?.rv ?? this.#rv);
    }
    const rv = this.#rv + 1;
    obj.metadata.resourceVersion = String(rv);
    // Serialized before anything changes: an object that cannot be serialized (or is over the limits) leaves
    // neither store touched, instead of being stored and then failing every LIST.
    // A deletion stores nothing new, so an object stored under older (larger) limits can always be deleted.
    const entry = new StoredEntry(obj, rv, type === 'DELETED' ? JSON.stringify(obj) : serializeForCommit(obj, this.#limits));
    if (this.#backend) {
      try {
        if (type === 'DELETED') this.#backend.remove(table.rt.resource, key, rv);
        else this.#backend.put(table.rt.resource, key, rv, entry.json);
      } catch (err) {
        throw new ClusterApiError({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: `Internal error occurred: storage: ${(err as Error).message}`,
          reason: 'InternalError',
          code: 500,
        });
      }
    }
    this.#rv = rv;
    if (type === 'DELETED') {
      table.items.delete(key);
      table.sortedKeys = undefined;
    } else {
      if (!table.items.has(key)) table.sortedKeys = undefined;
      table.items.set(key, entry);
    }
    // DELETED keeps the state before deletion too: list snapshots rebuild older states from it.
    const ev = new StoreEvent(type, entry, type === 'ADDED' ? undefined : prev);
    table.ring.push(ev);
    this.#dispatch(table, ev);
    return entry;
  }

  /** Delivers events in commit order even when a watcher writes from inside its callback. */
  #dispatch(table: ResourceTable, ev: StoreEvent): void {
    this.#pending.push({ table, ev });
    if (this.#dispatching) return;
    this.#dispatching = true;
    try {
      for (let item = this.#pending.shift(); item; item = this.#pending.shift()) {
        for (const w of item.table.watchers) {
          if (item.ev.rv <= w.afterRv) continue;
          const f = filterEvent(item.ev, w.namespace, w.matches);
          if (!f) continue;
          try {
            w.deliver(sharedIfUnchanged(f, item.ev), item.ev);
          } catch (err) {
            this.#onWatcherError(err);
          }
        }
      }
    } finally {
      this.#dispatching = false;
    }
  }
}

function sharedIfUnchanged(f: FilteredEvent, ev: StoreEvent): FilteredEvent {
  if (f.type === ev.type && f.entry === ev.entry) f.sharedLine = ev.line;
  return f;
}

function copyOut(e: StoredEntry): KubeObject {
  return JSON.parse(e.json) as KubeObject;
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
