// The live volumes this instance knows about: for each PV its location (scope + base path), directory and
// size. From that: bytes allocated per base path (capacity accounting, #266/#345 in the anchors) and the
// overlap index placement and delete identity need (volume-path-index.ts). It is fed by several sources (PVs in
// the API, the records on disk) and kept current by reserve/release, so accounting survives restarts.
import { VolumePathIndex, type InodeChain } from './volume-path-index.ts';

/** Where a base path lives: a node name for node-local paths, '' for the shared filesystem. */
export type Scope = string;
/** The capacity scope of the shared filesystem path (node-local paths are scoped by node name). */
export const SHARED_SCOPE: Scope = '';

/** One volume's claim on a base path. */
export interface Allocation {
  pvName: string;
  scope: Scope;
  /** The configured base path holding it; '' for a live volume under none (indexed for overlaps, allocating nothing). */
  basePath: string;
  /** The volume directory (absolute, canonical). */
  path: string;
  bytes: bigint;
}

/** A live volume whose source cannot be mapped to one directory: it blocks the roots it could reach. */
export interface Blocker {
  pvName: string;
  scope: Scope;
  roots: string[];
  why: string;
}

/** Who told us about a volume: the API's PVs, our on-disk records, or this process (reserved, not yet seen). */
export type AllocationSource = 'api' | 'disk' | 'local';

interface Entry extends Allocation {
  /** What each source says the volume's size is; `bytes` is the largest (a growth not yet in the PV still counts). */
  sources: Sources;
}

/** Allocation of one base path, for metrics and `explain`. */
export interface BasePathAllocation {
  scope: Scope;
  basePath: string;
  allocated: bigint;
  volumes: number;
}

const locKey = (scope: Scope, basePath: string) => `${scope}\u0000${basePath}`;

/** What each source says a volume's size is (a plain object: a Map per volume costs more than the volume). */
type Sources = Partial<Record<AllocationSource, bigint>>;

const withSource = (s: Sources | undefined, source: AllocationSource, bytes: bigint): Sources => {
  const out: Sources = { ...s, [source]: bytes };
  // The API confirms a local reservation or growth once its PV carries at least that size.
  if (source === 'api' && (out.local ?? 0n) <= bytes) delete out.local;
  return out;
};
const withoutSource = (s: Sources, source: AllocationSource): Sources => {
  const out = { ...s };
  delete out[source];
  return out;
};
const isEmpty = (s: Sources) => s.api === undefined && s.disk === undefined && s.local === undefined;

/** Per base path allocation accounting plus the live-path index. Not thread-aware: callers check and reserve synchronously. */
export class VolumeLedger {
  private readonly entries = new Map<string, Entry>();
  private readonly allocatedBy = new Map<string, { bytes: bigint; volumes: number }>();
  private readonly pathIndexes = new Map<Scope, VolumePathIndex>();
  private readonly blockers = new Map<string, Scope>();

  /**
   * Replaces what `source` says: entries it no longer lists lose that source (and go when no source is
   * left); entries it lists are added or updated. A `local` reservation is dropped once the API confirms it.
   * Blockers (API only) are replaced when given.
   */
  rebuild(
    source: Exclude<AllocationSource, 'local'>,
    allocations: Iterable<Allocation>,
    blockers?: Iterable<Blocker>,
  ): void {
    if (blockers) {
      for (const pvName of [...this.blockers.keys()]) this.unblock(pvName);
      for (const b of blockers) this.block(b);
    }
    const seen = new Set<string>();
    for (const a of allocations) {
      seen.add(a.pvName);
      this.put({ ...a, sources: withSource(this.entries.get(a.pvName)?.sources, source, a.bytes) });
    }
    for (const e of [...this.entries.values()]) {
      if (seen.has(e.pvName) || e.sources[source] === undefined) continue;
      const sources = withoutSource(e.sources, source);
      if (isEmpty(sources)) this.release(e.pvName);
      else this.put({ ...e, sources });
    }
  }

  /** Sets what one source says about one volume, keeping what the others say. */
  observe(source: AllocationSource, a: Allocation): void {
    this.put({ ...a, sources: withSource(this.entries.get(a.pvName)?.sources, source, a.bytes) });
  }

  /** Drops what `source` says about one volume; the volume goes when no source is left. */
  forget(source: AllocationSource, pvName: string): void {
    const e = this.entries.get(pvName);
    if (e?.sources[source] === undefined) return;
    const sources = withoutSource(e.sources, source);
    if (isEmpty(sources)) this.release(pvName);
    else this.put({ ...e, sources });
  }

  /** A volume that blocks whole roots (its source names no one directory); replaces what it blocked before. */
  block(b: Blocker): void {
    this.unblock(b.pvName);
    this.blockers.set(b.pvName, b.scope);
    this.paths(b.scope).block(b.pvName, b.roots, b.why);
  }

  unblock(pvName: string): void {
    const scope = this.blockers.get(pvName);
    if (scope === undefined) return;
    this.blockers.delete(pvName);
    this.pathIndexes.get(scope)?.block(pvName, [], '');
  }

  /**
   * What the disk says a live volume's directory is: `alias`, the path below a root a symlink in its spelling leads
   * to, and its inode chain. Ignored when the volume has moved (or gone) since `path` was read.
   */
  identify(pvName: string, path: string, found: { alias?: string; chain?: InodeChain }): void {
    const e = this.entries.get(pvName);
    if (!e || e.path !== path) return;
    const index = this.paths(e.scope);
    if (found.alias !== undefined && found.alias !== path) index.addAlias(pvName, found.alias);
    if (found.chain) index.setInodes(pvName, found.chain, path);
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
    this.account(e, -1);
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
    for (const b of Object.values(given.sources)) if (b !== undefined && b > bytes) bytes = b;
    const e = { ...given, bytes };
    const old = this.entries.get(e.pvName);
    if (old && old.scope === e.scope && old.path === e.path) {
      // Same directory (a status update, a growth): accounting only, the index keeps its aliases and inodes.
      this.account(old, -1);
      this.entries.set(e.pvName, e);
      this.account(e, 1);
      return;
    }
    if (old) {
      this.entries.delete(e.pvName);
      this.account(old, -1);
      this.pathIndexes.get(old.scope)?.remove(e.pvName);
    }
    this.entries.set(e.pvName, e);
    this.account(e, 1);
    this.paths(e.scope).add(e.pvName, e.path);
  }

  // Volumes under no base path allocate nothing.
  private account(e: Entry, sign: 1 | -1): void {
    if (e.basePath === '') return;
    const k = locKey(e.scope, e.basePath);
    const acc = this.allocatedBy.get(k) ?? { bytes: 0n, volumes: 0 };
    acc.bytes += sign > 0 ? e.bytes : -e.bytes;
    acc.volumes += sign;
    if (acc.volumes === 0) this.allocatedBy.delete(k);
    else this.allocatedBy.set(k, acc);
  }
}
