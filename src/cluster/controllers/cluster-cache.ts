// The cluster controllers' shared informer: one store watch per resource feeding in-memory maps and the
// indexes the controllers query (PVs by claimRef and by class, pods by claim, CSIStorageCapacities by class),
// then fanning each change out to the controllers, which only enqueue keys. Store watches deliver synchronously after each commit, so the
// cache is current whenever a controller's worker runs.
import type { KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, WatchEvent } from '../../types/k8s.ts';
import type { CSIDriver, CSIStorageCapacity } from '../../types/storage-objects.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { VolumeIndex } from './volume-index.ts';
import { claimKey, pickDefaultClass } from './volume-match.ts';

export type CachedResource =
  | 'persistentvolumeclaims' | 'persistentvolumes' | 'storageclasses' | 'pods' | 'nodes' | 'csidrivers' | 'csistoragecapacities';

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

export class ClusterCache {
  readonly claims = new Map<string, PersistentVolumeClaim>();
  readonly volumes = new VolumeIndex();
  readonly classes = new Map<string, StorageClass>();
  readonly pods = new Map<string, Pod>();
  readonly nodes = new Map<string, Node>();
  readonly csiDrivers = new Map<string, CSIDriver>();
  /** CSIStorageCapacity objects by storageClassName, each by namespace/name: the scheduler reads one class's. */
  readonly #capacitiesByClass = new Map<string, Map<string, CSIStorageCapacity>>();
  readonly #capacityClass = new Map<string, string>();
  readonly #podsByClaim = new Map<string, Set<string>>();
  readonly #listeners: Array<(change: CacheChange) => void> = [];
  readonly #unsubscribe: Array<() => void> = [];

  /** Registers a listener; call before start() to also see the initial ADDED events. */
  onChange(listener: (change: CacheChange) => void): void {
    this.#listeners.push(listener);
  }

  /** Watches the store (current objects first, as ADDED). */
  start(store: ClusterStore): void {
    const resources: CachedResource[] = [
      'storageclasses', 'csidrivers', 'csistoragecapacities', 'nodes', 'persistentvolumes', 'persistentvolumeclaims', 'pods',
    ];
    for (const resource of resources) {
      this.#unsubscribe.push(store.watch(resource, {}, (ev) => this.#apply(resource, ev)));
    }
  }

  stop(): void {
    for (const u of this.#unsubscribe.splice(0)) u();
  }

  getClaim(namespace: string, name: string): PersistentVolumeClaim | undefined {
    return this.claims.get(claimKey(namespace, name));
  }

  /** Pods of the claim's namespace that reference it. */
  podsUsingClaim(namespace: string, name: string): Pod[] {
    const keys = this.#podsByClaim.get(claimKey(namespace, name));
    if (!keys) return [];
    const pods: Pod[] = [];
    for (const k of keys) {
      const p = this.pods.get(k);
      if (p) pods.push(p);
    }
    return pods;
  }

  /** The CSIStorageCapacity objects of one storage class (none: an empty iterable). */
  capacitiesFor(className: string): Iterable<CSIStorageCapacity> {
    return this.#capacitiesByClass.get(className)?.values() ?? [];
  }

  defaultClass(): StorageClass | undefined {
    return pickDefaultClass(this.classes.values());
  }

  #apply(resource: CachedResource, ev: WatchEvent): void {
    if (ev.type !== 'ADDED' && ev.type !== 'MODIFIED' && ev.type !== 'DELETED') return;
    const obj = ev.object;
    const name = obj.metadata.name ?? '';
    const key = claimKey(obj.metadata.namespace, name);
    const deleted = ev.type === 'DELETED';
    let old: KubeObject | undefined;
    switch (resource) {
      case 'persistentvolumeclaims':
        old = this.claims.get(key);
        if (deleted) this.claims.delete(key);
        else this.claims.set(key, obj as PersistentVolumeClaim);
        break;
      case 'persistentvolumes':
        old = this.volumes.get(name);
        if (deleted) this.volumes.remove(name);
        else this.volumes.upsert(obj as PersistentVolume);
        break;
      case 'storageclasses':
        old = this.classes.get(name);
        if (deleted) this.classes.delete(name);
        else this.classes.set(name, obj as StorageClass);
        break;
      case 'nodes':
        old = this.nodes.get(name);
        if (deleted) this.nodes.delete(name);
        else this.nodes.set(name, obj as Node);
        break;
      case 'csidrivers':
        old = this.csiDrivers.get(name);
        if (deleted) this.csiDrivers.delete(name);
        else this.csiDrivers.set(name, obj as CSIDriver);
        break;
      case 'csistoragecapacities':
        old = this.#indexCapacity(key, deleted ? undefined : (obj as CSIStorageCapacity));
        break;
      case 'pods': {
        const previous = this.pods.get(key);
        old = previous;
        if (previous) this.#indexPod(previous, key, false);
        if (deleted) this.pods.delete(key);
        else {
          this.pods.set(key, obj as Pod);
          this.#indexPod(obj as Pod, key, true);
        }
        break;
      }
    }
    const change: CacheChange = { resource, type: ev.type, obj, old };
    for (const l of this.#listeners) l(change);
  }

  /** Moves a capacity into the bucket of its class (or out of the index); returns the object it replaced. */
  #indexCapacity(key: string, capacity: CSIStorageCapacity | undefined): KubeObject | undefined {
    const previousClass = this.#capacityClass.get(key);
    const bucket = previousClass === undefined ? undefined : this.#capacitiesByClass.get(previousClass);
    const old = bucket?.get(key);
    if (bucket) {
      bucket.delete(key);
      if (bucket.size === 0) this.#capacitiesByClass.delete(previousClass!);
    }
    this.#capacityClass.delete(key);
    if (capacity) {
      const className = capacity.storageClassName ?? '';
      let next = this.#capacitiesByClass.get(className);
      if (!next) this.#capacitiesByClass.set(className, (next = new Map()));
      next.set(key, capacity);
      this.#capacityClass.set(key, className);
    }
    return old;
  }

  #indexPod(pod: Pod, podKey: string, add: boolean): void {
    for (const claimName of podClaimNames(pod)) {
      const k = claimKey(pod.metadata.namespace, claimName);
      let set = this.#podsByClaim.get(k);
      if (add) {
        if (!set) this.#podsByClaim.set(k, (set = new Set()));
        set.add(podKey);
      } else if (set) {
        set.delete(podKey);
        if (set.size === 0) this.#podsByClaim.delete(k);
      }
    }
  }
}
