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
    // symlink its spelling holds): where it will be made, so that place is blocked before anyone else takes it.
    const real = found ?? (await this.wouldBe(p));
    if (real === undefined) return undefined;
    const self = found === undefined ? undefined : await this.fs.stat(real).catch(() => undefined);
    if (found !== undefined && !self) return undefined;
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
        chain: { self: self && inodeKey(self), ancestors },
      };
    }
    // Outside every root (a bind mount of one, say): the whole chain, so a candidate can meet it by inode.
    const ancestors: string[] = [];
    for (const a of [...ancestorsOf(real), '/']) {
      if (a === real) continue;
      const st = await this.fs.stat(a).catch(() => undefined);
      if (st) ancestors.push(inodeKey(st));
    }
    return { chain: { self: self && inodeKey(self), ancestors } };
  }

  /**
   * Where a missing directory `p` would be made: the real path of its nearest existing ancestor, with the missing
   * part below it resolved lexically (kubelet's MkdirAll makes each missing level a plain directory, so `..` there
   * means its parent). Undefined when no ancestor is a directory that can be reached (ENOTDIR, ELOOP, EACCES).
   */
  private async wouldBe(p: string): Promise<string | undefined> {
    const segments = p.split('/').filter((s) => s !== '');
    for (let i = segments.length - 1; i >= 0; i--) {
      const real = await this.fs.realpath(`/${segments.slice(0, i).join('/')}`).then(
        (r) => r,
        (e: unknown) => (errnoCode(e) === 'ENOENT' ? undefined : null),
      );
      if (real === null) return undefined;
      if (real !== undefined) return path.posix.resolve(real, ...segments.slice(i));
    }
    return undefined;
  }

  /** The chain of a candidate directory `<root>/<segments>` below its root (lstat: never a symlink), as far as it exists. */
  async ofCandidate(root: string, segments: readonly string[]): Promise<InodeChain> {
    const ancestors: string[] = [];
    let p = root;
    for (let i = 0; i < segments.length; i++) {
      p = `${p}/${segments[i]}`;
      const st = await this.fs.lstat(p).catch((e: unknown) => {
        if (errnoCode(e) === 'ENOENT' || errnoCode(e) === 'ENOTDIR') return undefined;
        throw e;
      });
      if (!st) return { ancestors };
      if (i === segments.length - 1) return { self: inodeKey(st), ancestors };
      ancestors.push(inodeKey(st));
    }
    return { ancestors };
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
  for (const index of o.indexes) {
    for (const m of index.inodeMatches(o.chain, o.pvName)) {
      const now = await o.identities.ofVolume(m.source, o.roots);
      if (now && stillMatches(now.chain, m)) {
        const how =
          m.relation === 'same'
            ? 'is the directory'
            : m.relation === 'contains'
              ? 'contains the directory'
              : 'is inside the directory';
        throw new UnsafePathError(
          'overlaps-volume',
          o.path,
          `${how} of volume ${m.pvName} (the same device and inode, spelled ${JSON.stringify(m.source)})`,
        );
      }
      if (now) index.setInodes(m.pvName, now.chain, m.source);
      else index.clearInodes(m.pvName);
    }
  }
}

function stillMatches(chain: InodeChain, m: InodeMatch): boolean {
  return m.relation === 'contains' ? chain.ancestors.includes(m.key) : chain.self === m.key;
}
