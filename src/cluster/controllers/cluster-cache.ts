// The cluster controllers' shared informer: one store watch per resource feeding in-memory maps and the
// indexes the controllers query (PVs by claimRef and by class, pods by claim, pending claims by class, the
// default class, nodes by name order, CSIStorageCapacities by class), then fanning each change out to the
// controllers, which only enqueue keys. Store watches deliver synchronously after each commit, so the cache is
// current whenever a controller's worker runs. Every read is counted through an optional counter: the flat-cost
// test checks that the objects examined per claim do not grow with the number of claims and volumes.
import type {
  KubeObject,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  StorageClass,
  WatchEvent,
} from '../../types/k8s.ts';
import type { CSIDriver, CSIStorageCapacity } from '../../types/storage-objects.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { shareStrings, StringTable } from '../../types/shared-strings.ts';
import { VolumeIndex } from './volume-index.ts';
import { claimClass, claimHasNoClass, claimKey, pickDefaultClass } from './volume-match.ts';

export type CachedResource =
  | 'persistentvolumeclaims'
  | 'persistentvolumes'
  | 'storageclasses'
  | 'pods'
  | 'nodes'
  | 'csidrivers'
  | 'csistoragecapacities';

/** Counts the cached objects the controllers look at (each object a read returns or an iteration yields). */
export interface CacheReadCounter {
  examined(resource: CachedResource, count: number): void;
}

/** What the controllers may do with one of the cache's maps: look up, and iterate (resyncs). */
export interface CachedMap<V> extends Iterable<[string, V]> {
  readonly size: number;
  get(key: string): V | undefined;
  keys(): Iterable<string>;
  values(): Iterable<V>;
}

/** A read-only view of one of the cache's maps that counts what it hands out. */
class CountedMap<V> implements CachedMap<V> {
  constructor(
    private readonly map: Map<string, V>,
    private readonly count: (n: number) => void,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    this.count(1);
    return this.map.get(key);
  }

  *[Symbol.iterator](): Iterator<[string, V]> {
    for (const e of this.map) {
      this.count(1);
      yield e;
    }
  }

  *keys(): Iterable<string> {
    for (const [k] of this) yield k;
  }

  *values(): Iterable<V> {
    for (const [, v] of this) yield v;
  }
}

/** A change the cache applied: the new object (the last state for DELETED) and the one it replaced. */
export interface CacheChange {
  resource: CachedResource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  obj: KubeObject;
  old: KubeObject | undefined;
}

/** The claim names a pod uses: persistentVolumeClaim volumes and generic ephemeral volumes (`<pod>-<volume>`). */
export function podClaimNames(pod: Pod): string[] {
  const names: string[] = [];
  for (const v of pod.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim?.claimName) names.push(v.persistentVolumeClaim.claimName);
    else if (v.ephemeral) names.push(`${pod.metadata.name}-${v.name}`);
  }
  return names;
}

/** A pod that has not finished (Succeeded/Failed pods no longer hold their claims). */
export function podIsActive(pod: Pod): boolean {
  return pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

/** Key of the claims that name no class at all in the pending-claims index (no class can have this name). */
const NO_CLASS = '\u0000';

/**
 * Resources whose objects the cache keeps by the thousand (one per claim): their repeated short strings (class,
 * provisioner, namespace, access modes, phase, finalizers, annotation values, quantities) are shared through one
 * table. Each watch event is a fresh JSON.parse, so without it every object carried its own copy of each: 10,000
 * claims left 26 MB in the claims and the VolumeIndex, a quarter of it these strings (test/cluster/
 * cluster-cache-memory.test.ts). Nothing is dropped: the controllers write objects from the cache back.
 */
const SHARED_STRINGS: ReadonlySet<CachedResource> = new Set(['persistentvolumeclaims', 'persistentvolumes', 'pods']);

export class ClusterCache {
  private readonly strings = new StringTable();
  private readonly claimMap = new Map<string, PersistentVolumeClaim>();
  private readonly classMap = new Map<string, StorageClass>();
  private readonly podMap = new Map<string, Pod>();
  private readonly nodeMap = new Map<string, Node>();
  private readonly csiDriverMap = new Map<string, CSIDriver>();
  /** CSIStorageCapacity objects by storageClassName, each by namespace/name: the scheduler reads one class's. */
  private readonly capacitiesByClass = new Map<string, Map<string, CSIStorageCapacity>>();
  private readonly capacityClass = new Map<string, string>();
  private readonly podsByClaim = new Map<string, Set<string>>();
  /** Claims not Bound, by the class they name (NO_CLASS: none): what a class change re-queues. */
  private readonly pendingByClass = new Map<string, Set<string>>();
  private currentDefault: StorageClass | undefined;
  /** Node names in order, rebuilt on node changes (rare) instead of sorted per scheduling. */
  private nodeOrder: Node[] = [];
  private readonly listeners: Array<(change: CacheChange) => void> = [];
  private readonly unsubscribe: Array<() => void> = [];
  private readonly counter: CacheReadCounter | undefined;
  readonly claims: CachedMap<PersistentVolumeClaim>;
  readonly volumes: VolumeIndex;
  readonly classes: CachedMap<StorageClass>;
  readonly pods: CachedMap<Pod>;
  readonly nodes: CachedMap<Node>;
  readonly csiDrivers: CachedMap<CSIDriver>;

  constructor(opts: { counter?: CacheReadCounter } = {}) {
    const counter = (this.counter = opts.counter);
    const count = (resource: CachedResource) => (counter ? (n: number) => counter.examined(resource, n) : () => {});
    this.claims = new CountedMap(this.claimMap, count('persistentvolumeclaims'));
    this.volumes = new VolumeIndex(count('persistentvolumes'));
    this.classes = new CountedMap(this.classMap, count('storageclasses'));
    this.pods = new CountedMap(this.podMap, count('pods'));
    this.nodes = new CountedMap(this.nodeMap, count('nodes'));
    this.csiDrivers = new CountedMap(this.csiDriverMap, count('csidrivers'));
  }

  /** Registers a listener; call before start() to also see the initial ADDED events. */
  onChange(listener: (change: CacheChange) => void): void {
    this.listeners.push(listener);
  }

  /** Watches the store (current objects first, as ADDED). */
  start(store: ClusterStore): void {
    const resources: CachedResource[] = [
      'storageclasses',
      'csidrivers',
      'csistoragecapacities',
      'nodes',
      'persistentvolumes',
      'persistentvolumeclaims',
      'pods',
    ];
    for (const resource of resources) {
      this.unsubscribe.push(store.watch(resource, {}, (ev) => this.apply(resource, ev)));
    }
  }

  stop(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }

  getClaim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.claims.get(claimKey(namespace, name));
  }

  /** Pods of the claim's namespace that reference it. */
  podsUsingClaim(namespace: string, name: string): Pod[] {
    const keys = this.podsByClaim.get(claimKey(namespace, name));
    if (!keys) return [];
    const pods: Pod[] = [];
    for (const k of keys) {
      const p = this.podMap.get(k);
      if (p) pods.push(p);
    }
    this.counter?.examined('pods', pods.length);
    return pods;
  }

  /** Keys of the claims not Bound that name class `className`, and of those naming no class at all. */
  pendingClaimKeys(className: string): string[] {
    const keys = [...(this.pendingByClass.get(className) ?? []), ...(this.pendingByClass.get(NO_CLASS) ?? [])];
    this.counter?.examined('persistentvolumeclaims', keys.length);
    return keys;
  }

  /** The CSIStorageCapacity objects of one storage class (none: an empty iterable). */
  capacitiesFor(className: string): Iterable<CSIStorageCapacity> {
    const bucket = this.capacitiesByClass.get(className);
    this.counter?.examined('csistoragecapacities', bucket?.size ?? 0);
    return bucket?.values() ?? [];
  }

  /** The default StorageClass (kept current on class changes: not a scan per claim). */
  defaultClass(): StorageClass | undefined {
    this.counter?.examined('storageclasses', this.currentDefault ? 1 : 0);
    return this.currentDefault;
  }

  /** Every Node, ordered by name. */
  nodesByName(): readonly Node[] {
    this.counter?.examined('nodes', this.nodeOrder.length);
    return this.nodeOrder;
  }

  private apply(resource: CachedResource, ev: WatchEvent): void {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return;
    const obj = ev.object;
    if (ev.type !== 'DELETED' && SHARED_STRINGS.has(resource))
      shareStrings(obj as unknown as Record<string, unknown>, this.strings);
    const name = obj.metadata.name ?? '';
    const key = claimKey(obj.metadata.namespace, name);
    const deleted = ev.type === 'DELETED';
    let old: KubeObject | undefined;
    switch (resource) {
      case 'persistentvolumeclaims': {
        const previous = this.claimMap.get(key);
        old = previous;
        if (previous) this.indexPending(previous, key, false);
        if (deleted) this.claimMap.delete(key);
        else {
          this.claimMap.set(key, obj as PersistentVolumeClaim);
          this.indexPending(obj as PersistentVolumeClaim, key, true);
        }
        break;
      }
      case 'persistentvolumes':
        old = this.volumes.peek(name);
        if (deleted) this.volumes.remove(name);
        else this.volumes.upsert(obj as PersistentVolume);
        break;
      case 'storageclasses':
        old = this.classMap.get(name);
        if (deleted) this.classMap.delete(name);
        else this.classMap.set(name, obj as StorageClass);
        this.currentDefault = pickDefaultClass(this.classMap.values());
        break;
      case 'nodes':
        old = this.nodeMap.get(name);
        if (deleted) this.nodeMap.delete(name);
        else this.nodeMap.set(name, obj as Node);
        this.nodeOrder = [...this.nodeMap.values()].sort((a, b) =>
          (a.metadata.name ?? '') < (b.metadata.name ?? '') ? -1 : 1,
        );
        break;
      case 'csidrivers':
        old = this.csiDriverMap.get(name);
        if (deleted) this.csiDriverMap.delete(name);
        else this.csiDriverMap.set(name, obj as CSIDriver);
        break;
      case 'csistoragecapacities':
        old = this.indexCapacity(key, deleted ? undefined : (obj as CSIStorageCapacity));
        break;
      case 'pods': {
        const previous = this.podMap.get(key);
        old = previous;
        if (previous) this.indexPod(previous, key, false);
        if (deleted) this.podMap.delete(key);
        else {
          this.podMap.set(key, obj as Pod);
          this.indexPod(obj as Pod, key, true);
        }
        break;
      }
    }
    const change: CacheChange = { resource, type: ev.type, obj, old };
    for (const l of this.listeners) l(change);
  }

  private indexPending(claim: PersistentVolumeClaim, key: string, add: boolean): void {
    if (claim.status?.phase === 'Bound') return;
    const cls = claimHasNoClass(claim) ? NO_CLASS : claimClass(claim);
    if (cls === '') return; // an explicit "": no class change concerns it
    addOrRemove(this.pendingByClass, cls, key, add);
  }

  /** Moves a capacity into the bucket of its class (or out of the index); returns the object it replaced. */
  private indexCapacity(key: string, capacity: CSIStorageCapacity | undefined): KubeObject | undefined {
    const previousClass = this.capacityClass.get(key);
    const bucket = previousClass === undefined ? undefined : this.capacitiesByClass.get(previousClass);
    const old = bucket?.get(key);
    if (bucket) {
      bucket.delete(key);
      if (bucket.size === 0) this.capacitiesByClass.delete(previousClass!);
    }
    this.capacityClass.delete(key);
    if (capacity) {
      const className = capacity.storageClassName ?? '';
      let next = this.capacitiesByClass.get(className);
      if (!next) this.capacitiesByClass.set(className, (next = new Map()));
      next.set(key, capacity);
      this.capacityClass.set(key, className);
    }
    return old;
  }

  private indexPod(pod: Pod, podKey: string, add: boolean): void {
    for (const claimName of podClaimNames(pod))
      addOrRemove(this.podsByClaim, claimKey(pod.metadata.namespace, claimName), podKey, add);
  }
}

function addOrRemove(index: Map<string, Set<string>>, value: string, key: string, add: boolean): void {
  let set = index.get(value);
  if (add) {
    if (!set) index.set(value, (set = new Set()));
    set.add(key);
  } else if (set) {
    set.delete(key);
    if (set.size === 0) index.delete(value);
  }
}
