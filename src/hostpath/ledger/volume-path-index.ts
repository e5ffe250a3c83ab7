// The live volumes' directories, indexed so "is this candidate equal to, above or below a live volume" costs
// O(depth), not O(volumes): every ancestor of every live path is counted. A volume may be known by more than one
// path (its canonical path and, when a symlink led there, the path it really is below a root), by the device and
// inode of its directory (the same directory whatever the spelling: a bind mount, a case-insensitive name), and a
// volume whose source cannot be mapped to one directory blocks whole roots. A path may have several owners (a
// forged or stale PV pointing at another volume's directory): each one blocks the others.
import { ancestorsOf } from '../paths/canonical-path.ts';
import { isStrictlyUnder, UnsafePathError } from '../paths/path-safety.ts';

/** A directory's device and inode, and those of its ancestors, as `dev:ino` keys. */
export interface InodeChain {
  /** The directory itself; undefined when it does not exist (only its existing ancestors count). */
  self?: string;
  /** Its ancestors' keys, in any order. */
  ancestors: string[];
  /**
   * A volume's directory that does not exist yet: `dev:ino/rest`, its nearest existing ancestor and the path below
   * it (where kubelet will make it, however that ancestor is spelled: a bind mount).
   */
  pending?: string;
  /** A candidate's `dev:ino/rest` through each of its existing proper ancestors (its root included). */
  routes?: string[];
}

/**
 * A live volume's directory that shares an inode with a candidate: `same` (the candidate is it), `contains` (the
 * candidate is one of its parents), `inside` (it is one of the candidate's parents). Inode numbers are reused once
 * a directory is deleted, so a match is only a lead: the caller reads that volume's directory again (`source`).
 */
export interface InodeMatch {
  pvName: string;
  relation: 'same' | 'contains' | 'inside';
  key: string;
  /** The path the volume's chain was read from. */
  source: string;
  /** Matched through the volume's `pending` place (its directory did not exist when read). */
  pending?: boolean;
}

// Owners of a key: one name (the usual case, a few bytes) or a set of them (a forged or stale PV sharing it).
type Owners = string | Set<string>;
const add = (m: Map<string, Owners>, k: string, v: string) => {
  const o = m.get(k);
  if (o === undefined) m.set(k, v);
  else if (typeof o === 'string') {
    if (o !== v) m.set(k, new Set([o, v]));
  } else o.add(v);
};
const del = (m: Map<string, Owners>, k: string, v: string) => {
  const o = m.get(k);
  if (o === v) m.delete(k);
  else if (typeof o === 'object') {
    o.delete(v);
    if (o.size === 1) m.set(k, o.values().next().value as string);
  }
};

/** The live-volume index of one scope (a node, or the shared paths). */
export class VolumePathIndex {
  /** Volume -> its paths (canonical first, then aliases). */
  private readonly byVolume = new Map<string, string[]>();
  private readonly owners = new Map<string, Owners>();
  private readonly ancestorCount = new Map<string, number>();
  /** Root -> volumes blocking it (and why). */
  private readonly blocked = new Map<string, Map<string, string>>();
  private readonly blocksOf = new Map<string, string[]>();
  private readonly inodeOwners = new Map<string, Owners>();
  private readonly ancestorInodeOwners = new Map<string, Owners>();
  private readonly inodesOf = new Map<string, InodeChain & { source: string }>();
  /** Volumes whose directory did not exist when read: their `pending` place, and its proper prefixes. */
  private readonly pendingOwners = new Map<string, Owners>();
  private readonly pendingAncestorOwners = new Map<string, Owners>();
  /**
   * Ancestor chains, shared: every volume under one directory has the same ancestors, and each read gave each
   * volume its own array of the same `dev:ino` strings (2.2 MB of 10,000 volumes). Bounded: cleared when full
   * (sharing is only an optimisation).
   */
  private readonly chains = new Map<string, string[]>();

  /** Records (or moves) the path of a volume; its aliases and inodes are forgotten (they were of the old path). */
  add(pvName: string, volumePath: string): void {
    this.removePaths(pvName);
    this.clearInodes(pvName);
    this.byVolume.set(pvName, []);
    this.addPath(pvName, volumePath);
  }

  /**
   * Another path the same volume is known by (where a symlink in its spelling leads, below a root); for a volume
   * spelled outside every root, its only indexed path.
   */
  addAlias(pvName: string, alias: string): void {
    let paths = this.byVolume.get(pvName);
    if (!paths) this.byVolume.set(pvName, (paths = []));
    if (paths.includes(alias)) return;
    this.addPath(pvName, alias);
  }

  /** The device and inode of a volume's directory and of its ancestors, read from `source`. */
  setInodes(pvName: string, chain: InodeChain, source: string): void {
    this.clearInodes(pvName);
    const chainKey = chain.ancestors.join('|');
    let ancestors = this.chains.get(chainKey);
    if (!ancestors) {
      if (this.chains.size >= 1024) this.chains.clear();
      this.chains.set(chainKey, (ancestors = [...chain.ancestors]));
    }
    // The source is nearly always the volume's own indexed path: keep that string, not a second copy of it.
    const path = this.byVolume.get(pvName)?.find((p) => p === source) ?? source;
    this.inodesOf.set(pvName, {
      self: chain.self,
      ancestors,
      ...(chain.pending ? { pending: chain.pending } : {}),
      source: path,
    });
    if (chain.self) add(this.inodeOwners, chain.self, pvName);
    if (chain.pending) {
      add(this.pendingOwners, chain.pending, pvName);
      for (const q of pendingPrefixes(chain.pending)) add(this.pendingAncestorOwners, q, pvName);
    }
    for (const a of chain.ancestors) add(this.ancestorInodeOwners, a, pvName);
  }

  /** A volume whose directory cannot be told blocks every path under (or at) `roots`, saying `why`; none: unblocks it. */
  block(pvName: string, roots: readonly string[], why: string): void {
    this.unblock(pvName);
    if (roots.length === 0) return;
    this.blocksOf.set(pvName, [...roots]);
    for (const r of roots) {
      let m = this.blocked.get(r);
      if (!m) this.blocked.set(r, (m = new Map()));
      m.set(pvName, why);
    }
  }

  /** Forgets a volume's paths and inodes (what it blocks stays until block() replaces it). */
  remove(pvName: string): void {
    this.removePaths(pvName);
    this.clearInodes(pvName);
  }

  /** The volume's canonical path. */
  pathOf(pvName: string): string | undefined {
    return this.byVolume.get(pvName)?.[0];
  }

  get size(): number {
    return this.byVolume.size;
  }

  /**
   * Throws UnsafePathError when `candidate` is a base path (or above one), under a root a volume blocks, or equal
   * to / an ancestor of / a descendant of a live volume's path other than `pvName`'s own.
   */
  checkFree(candidate: string, pvName: string, basePaths: Iterable<string>): void {
    for (const base of basePaths) {
      if (candidate === base || isStrictlyUnder(candidate, base)) {
        throw new UnsafePathError('is-base-path', candidate, `is (or contains) the base path ${base}`);
      }
    }
    for (const [root, blockers] of this.blocked) {
      if (candidate !== root && !isStrictlyUnder(root, candidate)) continue;
      for (const [o, why] of blockers) {
        if (o !== pvName)
          throw new UnsafePathError(
            'overlaps-volume',
            candidate,
            `is under ${root}, which volume ${o} blocks: its source cannot be mapped to exactly one directory (${why}); fix or delete that PV`,
          );
      }
    }
    const owner = otherOwner(this.owners.get(candidate), pvName);
    if (owner !== undefined)
      throw new UnsafePathError('overlaps-volume', candidate, `is already the path of volume ${owner}`);
    const below = this.ancestorCount.get(candidate) ?? 0;
    const own = (this.byVolume.get(pvName) ?? []).filter((p) => isStrictlyUnder(candidate, p)).length;
    if (below - own > 0)
      throw new UnsafePathError('overlaps-volume', candidate, 'contains the directory of another volume');
    for (const a of ancestorsOf(candidate)) {
      const o = otherOwner(this.owners.get(a), pvName);
      if (o !== undefined)
        throw new UnsafePathError('overlaps-volume', candidate, `is inside the directory of volume ${o}`);
    }
  }

  /** The live volumes (other than `pvName`) whose directory is, contains or is inside the one of `chain`, by inode. */
  inodeMatches(chain: InodeChain, pvName: string): InodeMatch[] {
    const out: InodeMatch[] = [];
    const push = (owners: Owners | undefined, relation: InodeMatch['relation'], key: string, pending?: boolean) => {
      for (const o of typeof owners === 'string' ? [owners] : (owners ?? [])) {
        const source = this.inodesOf.get(o)?.source;
        if (o !== pvName && source !== undefined)
          out.push({ pvName: o, relation, key, source, ...(pending ? { pending } : {}) });
      }
    };
    if (this.pendingOwners.size > 0) {
      for (const r of chain.routes ?? []) {
        push(this.pendingOwners.get(r), 'same', r, true);
        push(this.pendingAncestorOwners.get(r), 'contains', r, true);
        for (const q of pendingPrefixes(r)) push(this.pendingOwners.get(q), 'inside', q, true);
      }
    }
    if (chain.self) {
      push(this.inodeOwners.get(chain.self), 'same', chain.self);
      push(this.ancestorInodeOwners.get(chain.self), 'contains', chain.self);
    }
    for (const a of chain.ancestors) push(this.inodeOwners.get(a), 'inside', a);
    return out;
  }

  /** Whether some volume's directory did not exist when read (a candidate then needs its routes). */
  hasPending(): boolean {
    return this.pendingOwners.size > 0;
  }

  /** Whether the inode chain of a volume's directory is known, read from `source`. */
  hasInodes(pvName: string, source: string): boolean {
    return this.inodesOf.get(pvName)?.source === source;
  }

  /** Forgets what the disk said about a volume's directory (it was read again and is not what it was). */
  clearInodes(pvName: string): void {
    const chain = this.inodesOf.get(pvName);
    if (!chain) return;
    this.inodesOf.delete(pvName);
    if (chain.self) del(this.inodeOwners, chain.self, pvName);
    for (const a of chain.ancestors) del(this.ancestorInodeOwners, a, pvName);
    if (chain.pending) {
      del(this.pendingOwners, chain.pending, pvName);
      for (const q of pendingPrefixes(chain.pending)) del(this.pendingAncestorOwners, q, pvName);
    }
  }

  private addPath(pvName: string, p: string): void {
    this.byVolume.get(pvName)!.push(p);
    add(this.owners, p, pvName);
    for (const a of ancestorsOf(p)) this.ancestorCount.set(a, (this.ancestorCount.get(a) ?? 0) + 1);
  }

  private removePaths(pvName: string): void {
    const paths = this.byVolume.get(pvName);
    if (!paths) return;
    this.byVolume.delete(pvName);
    for (const p of paths) {
      del(this.owners, p, pvName);
      for (const a of ancestorsOf(p)) {
        const n = (this.ancestorCount.get(a) ?? 0) - 1;
        if (n <= 0) this.ancestorCount.delete(a);
        else this.ancestorCount.set(a, n);
      }
    }
  }

  private unblock(pvName: string): void {
    for (const r of this.blocksOf.get(pvName) ?? []) {
      const m = this.blocked.get(r);
      m?.delete(pvName);
      if (m?.size === 0) this.blocked.delete(r);
    }
    this.blocksOf.delete(pvName);
  }
}

function otherOwner(owners: Owners | undefined, pvName: string): string | undefined {
  if (typeof owners === 'string') return owners === pvName ? undefined : owners;
  for (const o of owners ?? []) if (o !== pvName) return o;
  return undefined;
}

// The proper prefixes of a `dev:ino/a/b/c` place that still name a path below the inode: `dev:ino/a/b`, `dev:ino/a`.
function* pendingPrefixes(key: string): Generator<string> {
  const first = key.indexOf('/');
  for (let i = key.lastIndexOf('/'); i > first; i = key.lastIndexOf('/', i - 1)) yield key.slice(0, i);
}
