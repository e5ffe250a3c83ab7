// kube-controller-manager's garbage collector on the store (k/k pkg/controller/garbagecollector: GraphBuilder
// processGraphChanges/processTransitions, GarbageCollector attemptToDeleteItem, processDeletingDependentsItem,
// attemptToOrphanWorker, isDangling). Store events keep the dependents index and only enqueue keys; a worker then
// decides with lookups by name and uid:
//   - a dependent none of whose owners exists any more (deleted, never created, or another object by that name)
//     is deleted, in the foreground when an owner waits in the foreground and it has dependents itself; one
//     with a live owner only loses its references to the absent ones;
//   - an owner being deleted with `foregroundDeletion` loses that finalizer once no dependent with
//     blockOwnerDeletion remains; its dependents are deleted first;
//   - an owner with `orphan` has its dependents' references to it removed, then the finalizer.
// A cluster-scoped object naming a namespaced owner is an invalid reference and is left alone, as in kube.
// Events are not watched (kube's GC ignores them). The work per deletion follows the deleted object's own
// dependents and owners only: `examined` counts the objects looked at, for the test that proves it.
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../../types/annotations.ts';
import type { KubeObject, OwnerReference } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { RESOURCES } from '../registry/registry.ts';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import type { PropagationPolicy } from '../writes/deletion-finalizers.ts';
import type { StoredEntry } from '../storage/stored-entry.ts';
import { DependentsIndex, itemKey, parseItemKey, type Dependent } from './dependents-index.ts';
import { backoff, done, KeyedQueue, QueueController, type SyncNext } from './keyed-queue.ts';

/** The identity the garbage collector writes as, as kube-controller-manager's service account. */
export const GARBAGE_COLLECTOR_USER = 'system:serviceaccount:kube-system:generic-garbage-collector';

/** Resources kube's garbage collector ignores (DefaultIgnoredResources): events. */
const IGNORED_RESOURCES = new Set(['events']);

const DELETE = 'd:';
const ORPHAN = 'o:';

type Reference = 'solid' | 'dangling' | 'waiting';

export interface GarbageCollectorDeps {
  store: ClusterStore;
  logger: Logger;
}

export class GarbageCollector extends QueueController {
  private readonly store: ClusterStore;
  private readonly logger: Logger;
  private readonly index = new DependentsIndex();
  /** Served kinds by `apiVersion/kind`, with the resource their objects are stored under. */
  private readonly kinds = new Map<string, { rt: ResourceType; resource: string }>();
  private readonly unsubscribe: Array<() => void> = [];
  private examinedCount = 0;
  protected readonly queue: KeyedQueue;

  constructor(deps: GarbageCollectorDeps) {
    super();
    this.store = deps.store;
    this.logger = deps.logger;
    this.queue = new KeyedQueue({
      handle: (key) =>
        key.startsWith(ORPHAN) ? this.orphan(key.slice(ORPHAN.length)) : this.attemptToDelete(key.slice(DELETE.length)),
      onError: (key, err) => deps.logger.error({ err, key }, 'garbage collection failed'),
    });
    for (const rt of [...RESOURCES, ...deps.store.resourceTypes()]) {
      const resource = rt.view?.resource ?? rt.resource;
      if (deps.store.has(resource)) this.kinds.set(`${apiVersionOf(rt)}/${rt.kind}`, { rt, resource });
    }
  }

  /** Objects looked at (store lookups and index entries visited) since the start: the cost of the work done. */
  get examined(): number {
    return this.examinedCount;
  }

  /** Watches every collected resource (current objects first, as ADDED). */
  start(): void {
    for (const rt of this.store.resourceTypes()) {
      if (IGNORED_RESOURCES.has(rt.resource)) continue;
      const resource = rt.resource;
      const filter = this.store.filter(resource, {});
      this.unsubscribe.push(
        this.store.watchEntries(resource, filter, undefined, (ev, source) =>
          this.observe(resource, ev.type, ev.entry.obj, source?.prev?.obj),
        ),
      );
    }
  }

  override stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
    super.stop();
  }

  /** Nothing to re-check: store events arrive synchronously with every commit, so none is missed. */
  resync(): void {}

  // ---- graph changes (store events): update the index, enqueue keys ----

  private observe(
    resource: string,
    type: 'ADDED' | 'MODIFIED' | 'DELETED',
    obj: KubeObject,
    prev: KubeObject | undefined,
  ): void {
    const meta = obj.metadata;
    const key = itemKey(resource, meta.namespace, meta.name ?? '');
    if (type === 'DELETED') {
      const node = this.index.remove(resource, obj);
      for (const dep of this.visit(this.index.dependentsOf(meta.uid ?? ''))) this.queue.add(DELETE + dep.key);
      // An owner deleting in the foreground may be waiting for this one.
      for (const ref of node?.owners ?? []) this.addOwner(ref, meta.namespace);
      return;
    }
    const changes = this.index.upsert(resource, waitsFor(obj, FINALIZER_DELETE_DEPENDENTS), obj);
    if (changes.added.length > 0) this.queue.add(DELETE + key);
    for (const ref of [...changes.removed.filter((r) => r.blockOwnerDeletion === true), ...changes.unblocked])
      this.addOwner(ref, meta.namespace);
    if (waitsFor(obj, FINALIZER_ORPHAN_DEPENDENTS) && !(prev && waitsFor(prev, FINALIZER_ORPHAN_DEPENDENTS))) {
      this.queue.add(ORPHAN + key);
    } else if (waitsFor(obj, FINALIZER_DELETE_DEPENDENTS) && !(prev && waitsFor(prev, FINALIZER_DELETE_DEPENDENTS))) {
      for (const dep of this.visit(this.index.dependentsOf(meta.uid ?? ''))) this.queue.add(DELETE + dep.key);
      this.queue.add(DELETE + key);
    }
  }

  private addOwner(ref: OwnerReference, dependentNamespace: string | undefined): void {
    const kind = this.kinds.get(`${ref.apiVersion}/${ref.kind}`);
    if (kind)
      this.queue.add(DELETE + itemKey(kind.resource, kind.rt.namespaced ? dependentNamespace : undefined, ref.name));
  }

  // ---- workers ----

  private lookup(resource: string, namespace: string | undefined, name: string): StoredEntry | undefined {
    this.examinedCount++;
    return this.store.getEntry(resource, namespace, name);
  }

  /** attemptToDeleteItem. */
  private attemptToDelete(key: string): SyncNext {
    const { resource, namespace, name } = parseItemKey(key);
    const entry = this.lookup(resource, namespace, name);
    if (!entry) return done;
    const obj = entry.obj;
    if (obj.metadata.deletionTimestamp) {
      // Being deleted is a one-way trip: only an owner waiting for its dependents has anything left to do.
      return waitsFor(obj, FINALIZER_DELETE_DEPENDENTS) ? this.processDeletingDependents(resource, entry) : done;
    }
    const refs = obj.metadata.ownerReferences ?? [];
    if (refs.length === 0) return done;
    const classified = new Map<Reference, OwnerReference[]>([
      ['solid', []],
      ['dangling', []],
      ['waiting', []],
    ]);
    for (const ref of refs) {
      const c = this.classify(ref, namespace);
      if (c === 'unresolved') return done;
      classified.get(c)!.push(ref);
    }
    const [solid, dangling, waiting] = [
      classified.get('solid')!,
      classified.get('dangling')!,
      classified.get('waiting')!,
    ];
    if (solid.length > 0) {
      if (dangling.length === 0 && waiting.length === 0) return done;
      // References to absent owners, and to owners waiting for their dependents, go; the live owner keeps it.
      const gone = new Set([...dangling, ...waiting].map((r) => r.uid));
      return this.update(resource, entry, { ownerReferences: refs.filter((r) => !gone.has(r.uid)) });
    }
    const uid = obj.metadata.uid ?? '';
    if (waiting.length > 0 && this.index.dependentsOf(uid).size > 0) {
      const dependents = this.visit(this.index.dependentsOf(uid));
      let current: StoredEntry | undefined = entry;
      if (dependents.some((d) => d.deletingDependents) && refs.some((r) => r.blockOwnerDeletion === true)) {
        // A possible cycle of foreground deletions: stop blocking the owners first (kube's unblockOwnerReferences).
        const unblocked = refs.map((r) => (r.blockOwnerDeletion === true ? { ...r, blockOwnerDeletion: false } : r));
        if (this.update(resource, entry, { ownerReferences: unblocked }).kind === 'backoff') return backoff;
        current = this.lookup(resource, namespace, name);
      }
      return current ? this.delete(resource, current, 'Foreground') : done;
    }
    const finalizers = obj.metadata.finalizers ?? [];
    const policy: PropagationPolicy = finalizers.includes(FINALIZER_ORPHAN_DEPENDENTS)
      ? 'Orphan'
      : finalizers.includes(FINALIZER_DELETE_DEPENDENTS)
        ? 'Foreground'
        : 'Background';
    return this.delete(resource, entry, policy);
  }

  /** isDangling plus the waiting check of classifyReferences; 'unresolved' when kube would not decide either. */
  private classify(ref: OwnerReference, dependentNamespace: string | undefined): Reference | 'unresolved' {
    const kind = this.kinds.get(`${ref.apiVersion}/${ref.kind}`);
    if (!kind) {
      this.logger.debug({ ref }, 'owner kind not served: reference left alone');
      return 'unresolved';
    }
    if (kind.rt.namespaced && !dependentNamespace) {
      this.logger.debug({ ref }, 'cluster-scoped object refers to a namespaced owner: invalid, left alone');
      return 'unresolved';
    }
    const owner = this.lookup(kind.resource, kind.rt.namespaced ? dependentNamespace : undefined, ref.name);
    if (!owner || owner.obj.metadata.uid !== ref.uid) return 'dangling';
    return owner.obj.metadata.deletionTimestamp && waitsFor(owner.obj, FINALIZER_DELETE_DEPENDENTS)
      ? 'waiting'
      : 'solid';
  }

  /** processDeletingDependentsItem: the owner goes once no blocking dependent is left. */
  private processDeletingDependents(resource: string, entry: StoredEntry): SyncNext {
    const uid = entry.obj.metadata.uid ?? '';
    const blocking = this.visit(this.index.dependentsOf(uid)).filter((d) =>
      d.owners.some((r) => r.uid === uid && r.blockOwnerDeletion === true),
    );
    if (blocking.length === 0) return this.removeFinalizer(resource, entry, FINALIZER_DELETE_DEPENDENTS);
    for (const dep of blocking) if (!dep.deletingDependents) this.queue.add(DELETE + dep.key);
    return done;
  }

  /** attemptToOrphanWorker: every dependent loses its references to the owner, then the owner its finalizer. */
  private orphan(key: string): SyncNext {
    const { resource, namespace, name } = parseItemKey(key);
    const entry = this.lookup(resource, namespace, name);
    if (!entry || !waitsFor(entry.obj, FINALIZER_ORPHAN_DEPENDENTS)) return done;
    const uid = entry.obj.metadata.uid ?? '';
    for (const dep of this.visit(this.index.dependentsOf(uid))) {
      const depEntry = this.lookup(dep.resource, dep.namespace, dep.name);
      if (!depEntry || depEntry.obj.metadata.uid !== dep.uid) continue;
      const refs = (depEntry.obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
      if (this.update(dep.resource, depEntry, { ownerReferences: refs }).kind === 'backoff') return backoff;
    }
    return this.removeFinalizer(resource, entry, FINALIZER_ORPHAN_DEPENDENTS);
  }

  // ---- writes ----

  private visit(dependents: ReadonlySet<Dependent>): Dependent[] {
    this.examinedCount += dependents.size;
    return [...dependents];
  }

  private removeFinalizer(resource: string, entry: StoredEntry, finalizer: string): SyncNext {
    return this.update(resource, entry, {
      finalizers: (entry.obj.metadata.finalizers ?? []).filter((f) => f !== finalizer),
    });
  }

  /** Writes metadata changes on the version read (a newer one meanwhile is a conflict: retried). */
  private update(
    resource: string,
    entry: StoredEntry,
    changes: { ownerReferences?: OwnerReference[]; finalizers?: string[] },
  ): SyncNext {
    const obj = entry.obj;
    return this.write(resource, obj, () => {
      this.store.update(
        resource,
        { ...obj, metadata: { ...obj.metadata, ...changes, resourceVersion: String(entry.rv) } },
        { user: GARBAGE_COLLECTOR_USER },
      );
    });
  }

  private delete(resource: string, entry: StoredEntry, propagationPolicy: PropagationPolicy): SyncNext {
    const meta = entry.obj.metadata;
    return this.write(resource, entry.obj, () => {
      this.store.deleteEntry(resource, meta.namespace, meta.name ?? '', {
        preconditions: { uid: meta.uid, resourceVersion: String(entry.rv) },
        propagationPolicy,
        user: GARBAGE_COLLECTOR_USER,
      });
      this.logger.debug(
        { resource, namespace: meta.namespace, name: meta.name, propagationPolicy },
        'garbage collected',
      );
    });
  }

  private write(resource: string, obj: KubeObject, write: () => void): SyncNext {
    try {
      write();
      return done;
    } catch (err) {
      if (err instanceof ClusterApiError && err.code === 404) return done;
      if (err instanceof ClusterApiError && err.code === 409) return backoff;
      this.logger.error(
        { err, resource, namespace: obj.metadata.namespace, name: obj.metadata.name },
        'garbage collector write refused',
      );
      return backoff;
    }
  }
}

/** Being deleted and held by this garbage collector finalizer. */
function waitsFor(obj: KubeObject, finalizer: string): boolean {
  return !!obj.metadata.deletionTimestamp && (obj.metadata.finalizers ?? []).includes(finalizer);
}
