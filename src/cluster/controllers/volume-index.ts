// The binder's index of PersistentVolumes, so that matching one claim costs O(log n) rather than a scan of
// every PV: by claimRef (namespace/name -> PVs pre-bound or bound to it), and for unclaimed Available volumes
// by class -> access-mode set -> capacity buckets kept in ascending order.
import type { AccessMode, PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { accessModesKey, claimKey, volumeCapacity, volumeClass, type VolumeSource } from './volume-match.ts';

/**
 * Names of volumes with one capacity, in insertion order. Removal is lazy (the name leaves `live`; the array
 * is swept from the front), because iterating a Set from its start after many deletions is O(deletions) in V8.
 */
class Bucket {
  readonly live = new Set<string>();
  private names: string[] = [];
  private head = 0;

  add(name: string): void {
    if (this.live.has(name)) return;
    this.live.add(name);
    this.names.push(name);
  }

  delete(name: string): void {
    this.live.delete(name);
    while (this.head < this.names.length && !this.live.has(this.names[this.head])) this.head++;
    if (this.head > 64 && this.head * 2 > this.names.length) {
      this.names = this.names.slice(this.head);
      this.head = 0;
    }
  }

  get size(): number {
    return this.live.size;
  }

  *[Symbol.iterator](): Iterator<string> {
    const seen = new Set<string>();
    for (let i = this.head; i < this.names.length; i++) {
      const name = this.names[i];
      // A name removed and re-added appears twice in the array; yield it once.
      if (this.live.has(name) && !seen.has(name)) {
        seen.add(name);
        yield name;
      }
    }
  }
}

/** Unclaimed volumes of one class and one access-mode set, bucketed by capacity. */
class CapacityBuckets {
  readonly buckets = new Map<bigint, Bucket>();
  /** Distinct capacities, ascending. */
  readonly sorted: bigint[] = [];

  add(capacity: bigint, name: string): void {
    let bucket = this.buckets.get(capacity);
    if (!bucket) {
      bucket = new Bucket();
      this.buckets.set(capacity, bucket);
      this.sorted.splice(lowerBound(this.sorted, capacity), 0, capacity);
    }
    bucket.add(name);
  }

  remove(capacity: bigint, name: string): void {
    const bucket = this.buckets.get(capacity);
    if (!bucket) return;
    bucket.delete(name);
    if (bucket.size === 0) {
      this.buckets.delete(capacity);
      this.sorted.splice(lowerBound(this.sorted, capacity), 1);
    }
  }

  get size(): number {
    return this.buckets.size;
  }
}

function lowerBound(sorted: bigint[], value: bigint): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

interface IndexedVolume {
  volume: PersistentVolume;
  claimKey?: string;
  unclaimed?: { className: string; modesKey: string; capacity: bigint };
}

export class VolumeIndex implements VolumeSource {
  private readonly volumes = new Map<string, IndexedVolume>();
  /** Claim key -> the volume naming it (nearly always one: a string) or the volumes (a Set, when several do). */
  private readonly byClaim = new Map<string, string | Set<string>>();
  /** class -> access-mode key -> buckets. */
  private readonly unclaimed = new Map<string, Map<string, CapacityBuckets>>();
  /** Counts the volumes handed out (see ClusterCache's read counter). */
  private readonly count: (n: number) => void;

  constructor(count: (n: number) => void = () => {}) {
    this.count = count;
  }

  get(name: string): PersistentVolume | undefined {
    this.count(1);
    return this.volumes.get(name)?.volume;
  }

  /** Like get(), for the cache's own bookkeeping (not counted as a controller's read). */
  peek(name: string): PersistentVolume | undefined {
    return this.volumes.get(name)?.volume;
  }

  *values(): IterableIterator<IndexedVolume> {
    for (const v of this.volumes.values()) {
      this.count(1);
      yield v;
    }
  }

  get size(): number {
    return this.volumes.size;
  }

  /** Adds or replaces a volume (from a watch ADDED/MODIFIED). */
  upsert(volume: PersistentVolume): void {
    const name = volume.metadata.name ?? '';
    this.remove(name);
    const entry: IndexedVolume = { volume };
    const ref = volume.spec.claimRef;
    if (ref) {
      entry.claimKey = claimKey(ref.namespace, ref.name);
      const names = this.byClaim.get(entry.claimKey);
      if (names === undefined) this.byClaim.set(entry.claimKey, name);
      else if (typeof names === 'string') {
        if (names !== name) this.byClaim.set(entry.claimKey, new Set([names, name]));
      } else names.add(name);
    } else if (volume.status?.phase === 'Available' && !volume.metadata.deletionTimestamp) {
      const capacity = volumeCapacity(volume);
      if (capacity !== undefined) {
        entry.unclaimed = {
          className: volumeClass(volume),
          modesKey: accessModesKey(volume.spec.accessModes),
          capacity,
        };
        let byModes = this.unclaimed.get(entry.unclaimed.className);
        if (!byModes) this.unclaimed.set(entry.unclaimed.className, (byModes = new Map()));
        let buckets = byModes.get(entry.unclaimed.modesKey);
        if (!buckets) byModes.set(entry.unclaimed.modesKey, (buckets = new CapacityBuckets()));
        buckets.add(capacity, name);
      }
    }
    this.volumes.set(name, entry);
  }

  /** Forgets a volume (watch DELETED). */
  remove(name: string): void {
    const old = this.volumes.get(name);
    if (!old) return;
    this.volumes.delete(name);
    if (old.claimKey) {
      const names = this.byClaim.get(old.claimKey);
      if (names === name) this.byClaim.delete(old.claimKey);
      else if (typeof names === 'object') {
        names.delete(name);
        if (names.size === 1) this.byClaim.set(old.claimKey, names.values().next().value as string);
      }
    }
    if (old.unclaimed) {
      const byModes = this.unclaimed.get(old.unclaimed.className);
      const buckets = byModes?.get(old.unclaimed.modesKey);
      buckets?.remove(old.unclaimed.capacity, name);
      if (buckets?.size === 0) byModes?.delete(old.unclaimed.modesKey);
      if (byModes?.size === 0) this.unclaimed.delete(old.unclaimed.className);
    }
  }

  /** Names of volumes whose claimRef names namespace/name. */
  namesForClaim(key: string): ReadonlySet<string> {
    const names = this.byClaim.get(key);
    const set = typeof names === 'string' ? new Set([names]) : (names ?? new Set<string>());
    this.count(set.size);
    return set;
  }

  *preBoundTo(claim: PersistentVolumeClaim): Iterable<PersistentVolume> {
    const names = this.byClaim.get(claimKey(claim.metadata.namespace, claim.metadata.name));
    for (const name of typeof names === 'string' ? [names] : (names ?? [])) {
      const v = this.get(name);
      if (v) yield v;
    }
  }

  unclaimedGroups(
    className: string,
    modes: readonly AccessMode[],
    minCapacity: bigint,
  ): Iterable<Iterable<PersistentVolume>> {
    const byModes = this.unclaimed.get(className);
    if (!byModes) return [];
    const wanted = [...new Set(modes)];
    const groups = [...byModes.entries()]
      .map(([key, buckets]) => ({ modes: key === '' ? [] : key.split(','), buckets }))
      .filter((g) => wanted.every((m) => g.modes.includes(m)))
      .sort((a, b) => a.modes.length - b.modes.length);
    return groups.map((g) => this.ascending(g.buckets, minCapacity));
  }

  private *ascending(buckets: CapacityBuckets, minCapacity: bigint): Iterable<PersistentVolume> {
    // Matching only reads; the index changes on store writes, which happen after the match is chosen.
    for (let i = lowerBound(buckets.sorted, minCapacity); i < buckets.sorted.length; i++) {
      const capacity = buckets.sorted[i];
      for (const name of buckets.buckets.get(capacity) ?? []) {
        const v = this.get(name);
        if (v) yield v;
      }
    }
  }
}
