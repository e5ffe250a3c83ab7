// A directory's identity on disk: where a path really leads (realpath, for a PV spelled through a symlink) and the
// device and inode of the directory and its ancestors (the same directory however it is spelled: a bind mount, a
// case-insensitive name). Read for each live PV once per path it names, and for a candidate directory before it is
// created, reused or removed. Only what lies strictly below a root is compared (a PV of a base path itself, or of a
// parent of one, is refused at delete but does not stop placement, as before); each root's real path is read once
// and kept, so a volume under a root costs a realpath and one stat per level below the root.
import type { Stats } from 'node:fs';
import path from 'node:path';
import { ancestorsOf } from '../paths/canonical-path.ts';
import { errnoCode, type HostFs } from '../disk/host-fs.ts';
import { isStrictlyUnder } from '../paths/path-safety.ts';
import { UnsafePathError } from '../paths/path-safety.ts';
import type { InodeChain, InodeMatch, VolumePathIndex } from './volume-path-index.ts';

const inodeKey = (st: Stats) => `${st.dev}:${st.ino}`;
/** The most missing levels a not-yet-existing volume directory is indexed with (twice a rendered path's MAX_DEPTH). */
const MAX_PENDING_DEPTH = 64;

/** What the disk says a PV's directory is. */
export interface DiskIdentity {
  /** The path below a root the spelling really leads to (in the root's spelling), when that differs. */
  alias?: string;
  chain: InodeChain;
}

/** Reads identities through one HostFs, keeping each root's real path. */
export class DirectoryIdentities {
  private readonly roots = new Map<string, Promise<string | undefined>>();

  constructor(private readonly fs: HostFs) {}

  /**
   * The identity of an existing directory named by `p` (a live PV's canonical path), given the configured roots;
   * undefined when nothing is there.
   */
  async ofVolume(p: string, roots: readonly string[]): Promise<DiskIdentity | undefined> {
    const found = await this.fs.realpath(p).catch(() => undefined);
    // Not there yet (a hostPath of type DirectoryOrCreate is made by kubelet when the pod starts, through whatever
    // symlink or bind mount its spelling holds): where it will be made, so that place is blocked before anyone else
    // takes it: by path below a root, and by its nearest existing ancestor's inode and the rest (`pending`).
    const would = found === undefined ? await this.wouldBe(p) : undefined;
    const real = found ?? would?.path;
    if (real === undefined) return undefined;
    const pending = would?.pending;
    const self = pending === undefined ? await this.fs.stat(real).catch(() => undefined) : undefined;
    if (pending === undefined && !self) return undefined;
    for (const root of roots) {
      const rootReal = await this.realRoot(root);
      if (rootReal === undefined || !isStrictlyUnder(rootReal, real)) continue;
      // Below a root: only the levels between the root and the directory need reading.
      const ancestors: string[] = [];
      for (const a of ancestorsOf(real)) {
        if (!isStrictlyUnder(rootReal, a)) break;
        const st = await this.fs.stat(a).catch(() => undefined);
        if (st) ancestors.push(inodeKey(st));
      }
      const inRootSpelling = `${root}${real.slice(rootReal.length)}`;
      return {
        alias: inRootSpelling === p ? undefined : inRootSpelling,
        chain: { self: self && inodeKey(self), ancestors, ...(pending ? { pending } : {}) },
      };
    }
    // Outside every root (a bind mount of one, say): the whole chain, so a candidate can meet it by inode.
    const ancestors: string[] = [];
    for (const a of [...ancestorsOf(real), '/']) {
      if (a === real) continue;
      const st = await this.fs.stat(a).catch(() => undefined);
      if (st) ancestors.push(inodeKey(st));
    }
    return { chain: { self: self && inodeKey(self), ancestors, ...(pending ? { pending } : {}) } };
  }

  /**
   * Where a missing directory `p` would be made: the real path of its nearest existing ancestor, with the missing
   * part below it resolved lexically (kubelet's MkdirAll makes each missing level a plain directory, so `..` there
   * means its parent), and `pending`: the device and inode of the nearest existing ancestor of that place and the
   * rest below it. Undefined when no ancestor is a directory that can be reached (ENOTDIR, ELOOP, EACCES).
   */
  private async wouldBe(p: string): Promise<{ path: string; pending?: string } | undefined> {
    const segments = p.split('/').filter((s) => s !== '');
    for (let i = segments.length - 1; i >= 0; i--) {
      const real = await this.fs.realpath(`/${segments.slice(0, i).join('/')}`).then(
        (r) => r,
        (e: unknown) => (errnoCode(e) === 'ENOENT' ? undefined : null),
      );
      if (real === null) return undefined;
      if (real === undefined) continue;
      const would = path.posix.resolve(real, ...segments.slice(i));
      // Its nearest existing ancestor (a `..` in the missing part may have climbed above `real`).
      const rest: string[] = [];
      for (let at = would; at !== '/'; at = path.posix.dirname(at)) {
        const st = await this.fs.stat(at).catch(() => undefined);
        // Nothing missing after all (the `..` climbed out of the missing part): the place is the directory itself.
        if (st) return { path: would, pending: rest.length === 0 ? undefined : `${inodeKey(st)}/${rest.join('/')}` };
        rest.unshift(path.posix.basename(at));
        // A place far below anything that exists is no place a claim can render (MAX_DEPTH below its root): not
        // indexed, at the cost of a stat and a key prefix per level.
        if (rest.length > MAX_PENDING_DEPTH) return undefined;
      }
      return undefined;
    }
    return undefined;
  }

  /** The chain of a candidate directory `<root>/<segments>` below its root (lstat: never a symlink), as far as it exists. */
  async ofCandidate(root: string, segments: readonly string[], withRoutes = true): Promise<InodeChain> {
    const ancestors: string[] = [];
    // `dev:ino/rest` through the root and each existing proper ancestor: where a volume whose directory does not
    // exist yet will be made (its `pending` place) is met whatever spelling it was read through. Only asked for
    // (one more lstat, of the root) while some live volume has such a place.
    const rootSt = withRoutes ? await this.fs.lstat(root).catch(() => undefined) : undefined;
    const routes = rootSt ? [`${inodeKey(rootSt)}/${segments.join('/')}`] : [];
    let p = root;
    for (let i = 0; i < segments.length; i++) {
      p = `${p}/${segments[i]}`;
      const st = await this.fs.lstat(p).catch((e: unknown) => {
        if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') return undefined;
        throw e;
      });
      if (!st) return { ancestors, routes };
      if (i === segments.length - 1) return { self: inodeKey(st), ancestors, routes };
      ancestors.push(inodeKey(st));
      if (withRoutes) routes.push(`${inodeKey(st)}/${segments.slice(i + 1).join('/')}`);
    }
    return { ancestors, routes };
  }

  /** Forgets the roots' real paths (a configuration change may have remounted them). */
  forgetRoots(): void {
    this.roots.clear();
  }

  private realRoot(root: string): Promise<string | undefined> {
    let real = this.roots.get(root);
    if (!real) {
      real = this.fs.realpath(root).catch(() => undefined);
      this.roots.set(root, real);
      // A root that is not there yet is read again next time.
      void real.then((r) => {
        if (r === undefined) this.roots.delete(root);
      });
    }
    return real;
  }
}

/**
 * Throws UnsafePathError when the directory `path` (its chain, read from the disk) is, contains or is inside another
 * live volume's directory by device and inode. Inode numbers are reused once a directory is gone, so each match is
 * confirmed by reading that volume's directory again (a stale chain is replaced or forgotten): O(1) reads when
 * nothing matches, one more per match.
 */
export async function checkInodes(o: {
  path: string;
  chain: InodeChain;
  pvName: string;
  indexes: readonly VolumePathIndex[];
  identities: DirectoryIdentities;
  roots: readonly string[];
}): Promise<void> {
  const refuse = (m: InodeMatch) => {
    const how =
      m.relation === 'same'
        ? 'is the directory'
        : m.relation === 'contains'
          ? 'contains the directory'
          : 'is inside the directory';
    return new UnsafePathError(
      'overlaps-volume',
      o.path,
      `${how} of volume ${m.pvName} (the same device and inode, spelled ${JSON.stringify(m.source)})`,
    );
  };
  for (const index of o.indexes) {
    const reread = new Set<string>();
    for (const m of index.inodeMatches(o.chain, o.pvName)) {
      if (reread.has(m.pvName)) continue;
      const now = await o.identities.ofVolume(m.source, o.roots);
      if (now && stillMatches(now.chain, m)) throw refuse(m);
      reread.add(m.pvName);
      if (now) index.setInodes(m.pvName, now.chain, m.source);
      else index.clearInodes(m.pvName);
    }
    // What a volume read again is now (its directory made since, or made again) may meet the candidate otherwise.
    for (const m of index.inodeMatches(o.chain, o.pvName)) if (reread.has(m.pvName)) throw refuse(m);
  }
}

function stillMatches(chain: InodeChain, m: InodeMatch): boolean {
  if (m.pending)
    return m.relation === 'contains' ? chain.pending?.startsWith(`${m.key}/`) === true : chain.pending === m.key;
  return m.relation === 'contains' ? chain.ancestors.includes(m.key) : chain.self === m.key;
}
