// The live volumes this instance knows about: for each PV its location (scope + base path), directory and
// size. From that: bytes allocated per base path (capacity accounting, #266/#345 in the anchors) and the
// overlap index path-safety needs. It is rebuilt from several sources (PVs in the API, the records on
// disk) and kept current by reserve/release, so accounting survives restarts.
import { VolumePathIndex } from './path-safety.ts';

/** Where a base path lives: a node name for node-local paths, '' for the shared filesystem. */
export type Scope = string;
/** The capacity scope of the shared filesystem path (node-local paths are scoped by node name). */
export const SHARED_SCOPE: Scope = '';

/** One volume's claim on a base path. */
export interface Allocation {
  pvName: string;
  scope: Scope;
  basePath: string;
  /** The volume directory (absolute). */
  path: string;
  bytes: bigint;
}

/** Who told us about a volume: the API's PVs, our on-disk records, or this process (reserved, not yet seen). */
export type AllocationSource = 'api' | 'disk' | 'local';

interface Entry extends Allocation {
  /** What each source says the volume's size is; `bytes` is the largest (a growth not yet in the PV still counts). */
  sources: Map<AllocationSource, bigint>;
}

/** Allocation of one base path, for metrics and `explain`. */
export interface BasePathAllocation {
  scope: Scope;
  basePath: string;
  allocated: bigint;
  volumes: number;
}

const locKey = (scope: Scope, basePath: string) => `${scope}\u0000${basePath}`;

/** Per base path allocation accounting plus the live-path index. Not thread-aware: callers check and reserve synchronously. */
export class VolumeLedger {
  private readonly entries = new Map<string, Entry>();
  private readonly allocatedBy = new Map<string, { bytes: bigint; volumes: number }>();
  private readonly pathIndexes = new Map<Scope, VolumePathIndex>();

  /**
   * Replaces what `source` says: entries it no longer lists lose that source (and go when no source is
   * left); entries it lists are added or updated. A `local` reservation is dropped once the API confirms it.
   */
  rebuild(source: Exclude<AllocationSource, 'local'>, allocations: Iterable<Allocation>): void {
    const seen = new Set<string>();
    for (const a of allocations) {
      seen.add(a.pvName);
      const sources = new Map(this.entries.get(a.pvName)?.sources ?? []);
      sources.set(source, a.bytes);
      // The API confirms a local reservation or growth once its PV carries at least that size.
      if (source === 'api' && (sources.get('local') ?? 0n) <= a.bytes) sources.delete('local');
      this.put({ ...a, sources });
    }
    for (const e of [...this.entries.values()]) {
      if (seen.has(e.pvName) || !e.sources.has(source)) continue;
      e.sources.delete(source);
      if (e.sources.size === 0) this.release(e.pvName);
      else this.put({ ...e, sources: e.sources });
    }
  }

  /** Sets what one source says about one volume, keeping what the others say. */
  observe(source: AllocationSource, a: Allocation): void {
    const sources = new Map(this.entries.get(a.pvName)?.sources ?? []);
    sources.set(source, a.bytes);
    this.put({ ...a, sources });
  }

  /** Records a volume this process is creating (kept until release() or an API rebuild confirms it). */
  reserve(a: Allocation): void {
    this.observe('local', a);
  }

  /** Forgets a volume (deleted, or its creation failed). */
  release(pvName: string): void {
    const e = this.entries.get(pvName);
    if (!e) return;
    this.entries.delete(pvName);
    const k = locKey(e.scope, e.basePath);
    const acc = this.allocatedBy.get(k)!;
    acc.bytes -= e.bytes;
    acc.volumes--;
    if (acc.volumes === 0) this.allocatedBy.delete(k);
    this.pathIndexes.get(e.scope)?.remove(pvName);
  }

  get(pvName: string): Allocation | undefined {
    const e = this.entries.get(pvName);
    return e && { pvName: e.pvName, scope: e.scope, basePath: e.basePath, path: e.path, bytes: e.bytes };
  }

  /** Bytes allocated on a base path. */
  allocated(scope: Scope, basePath: string): bigint {
    return this.allocatedBy.get(locKey(scope, basePath))?.bytes ?? 0n;
  }

  /**
   * Free bytes on a base path for `pvName` (its own allocation counts as free, so a retried provision
   * fits again); undefined capacity means unlimited.
   */
  free(scope: Scope, basePath: string, capacity: bigint | undefined, pvName?: string): bigint | undefined {
    if (capacity === undefined) return undefined;
    const own = pvName ? this.entries.get(pvName) : undefined;
    const ownBytes = own && own.scope === scope && own.basePath === basePath ? own.bytes : 0n;
    return capacity - this.allocated(scope, basePath) + ownBytes;
  }

  /** Whether `bytes` fit on a base path of `capacity` (undefined = unlimited). */
  fits(scope: Scope, basePath: string, capacity: bigint | undefined, bytes: bigint, pvName?: string): boolean {
    const f = this.free(scope, basePath, capacity, pvName);
    return f === undefined || bytes <= f;
  }

  /** The overlap index of a scope (created on first use). */
  paths(scope: Scope): VolumePathIndex {
    let idx = this.pathIndexes.get(scope);
    if (!idx) this.pathIndexes.set(scope, (idx = new VolumePathIndex()));
    return idx;
  }

  /** The overlap indexes of the given scopes, or of every scope. */
  pathIndexesOf(scopes?: readonly Scope[]): VolumePathIndex[] {
    return scopes ? scopes.map((s) => this.paths(s)) : [...this.pathIndexes.values()];
  }

  /** Allocation per base path that has volumes. */
  snapshot(): BasePathAllocation[] {
    const out: BasePathAllocation[] = [];
    for (const [k, v] of this.allocatedBy) {
      const [scope, basePath] = k.split('\u0000');
      out.push({ scope, basePath, allocated: v.bytes, volumes: v.volumes });
    }
    return out;
  }

  get size(): number {
    return this.entries.size;
  }

  private put(given: Entry): void {
    let bytes = 0n;
    for (const b of given.sources.values()) if (b > bytes) bytes = b;
    const e = { ...given, bytes };
    this.release(e.pvName);
    this.entries.set(e.pvName, e);
    const k = locKey(e.scope, e.basePath);
    const acc = this.allocatedBy.get(k) ?? { bytes: 0n, volumes: 0 };
    acc.bytes += e.bytes;
    acc.volumes++;
    this.allocatedBy.set(k, acc);
    this.paths(e.scope).add(e.pvName, e.path);
  }
}
