// Path claims: how instances sharing a base path (replicas of a shared Deployment, on NFS too) learn, in a bounded
// number of lookups, whether another volume holds a directory at, above or below the one they are about to use,
// without reading every record. Layout under `<base>/.kube-provisioner/`:
//   paths/<sha256(rel)>.json               the claim of one canonical relative path: {pvName, claimUid, relativePath},
//                                          created with O_EXCL, so two instances can never both claim one path;
//   below/<sha256(ancestor)>/<sha256(rel)> one marker per proper ancestor of a claimed path, so "is anything claimed
//                                          below this path" is one directory lookup.
// A claim is written before its markers and both before the directory exists; whoever then sees another's claim
// or marker backs off (both may, and retry later: never both proceed). Checking costs one read per ancestor and one
// directory open; a marker whose claim is gone (a crash between the writes) is removed when met. Claims and markers
// are whole files written once: nothing is ever half-written.
import { createHash } from 'node:crypto';
import type { FsOpsOptions } from '../disk/volume-dirs.ts';
import { errnoCode, hostFsOf, type HostFs } from '../disk/host-fs.ts';
import { relativeAncestorsOf } from '../paths/canonical-path.ts';
import { isStrictlyUnder } from '../paths/path-safety.ts';

/** Who holds a directory: the claim file of one canonical relative path. */
export interface PathClaim {
  pvName: string;
  claimUid?: string;
  relativePath: string;
}

const keyOf = (rel: string) => createHash('sha256').update(rel).digest('hex');
const claimsDir = (base: string) => `${base}/.kube-provisioner/paths`;
const belowDir = (base: string) => `${base}/.kube-provisioner/below`;
const claimFile = (base: string, rel: string) => `${claimsDir(base)}/${keyOf(rel)}.json`;
const markerDir = (base: string, ancestor: string) => `${belowDir(base)}/${keyOf(ancestor)}`;

/** The claim file names present in a base path (one directory read; for loading an index). */
export async function listPathClaimKeys(base: string, fsOpts?: FsOpsOptions): Promise<Set<string>> {
  const names = await hostFsOf(fsOpts)
    .readdir(claimsDir(base))
    .catch((e: unknown) => {
      if (errnoCode(e) === 'ENOENT') return [] as string[];
      throw e;
    });
  return new Set(names.filter((n) => n.endsWith('.json')).map((n) => n.slice(0, -5)));
}

/** The claim file key of a relative path (for matching listPathClaimKeys). */
export const pathClaimKey = keyOf;

/** Reads the claim of `rel`, or undefined. */
export async function readPathClaim(base: string, rel: string, fsOpts?: FsOpsOptions): Promise<PathClaim | undefined> {
  const text = await hostFsOf(fsOpts)
    .readFile(claimFile(base, rel))
    .catch(() => undefined);
  const c = text === undefined ? undefined : parse(text);
  // A hash collision (or a hand-edited file) never stands for another path.
  return c?.relativePath === rel ? c : undefined;
}

/**
 * Claims `claim.relativePath` for `claim.pvName` and marks its ancestors. Returns undefined when the claim is this
 * volume's (new, or already its own: a retry), or the claim of the volume that holds the path.
 */
export async function claimPath(base: string, claim: PathClaim, fsOpts?: FsOpsOptions): Promise<PathClaim | undefined> {
  const fs = hostFsOf(fsOpts);
  const text = JSON.stringify(claim);
  const file = claimFile(base, claim.relativePath);
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.writeFile(file, text, { mode: 0o600, flag: 'wx' });
      break;
    } catch (e) {
      const c = errnoCode(e);
      if (c === 'ENOENT' && attempt < 3) {
        await mkdirQuiet(fs, claimsDir(base));
        continue;
      }
      if (c !== 'EEXIST') throw e;
      const held = await readPathClaim(base, claim.relativePath, fsOpts);
      if (held && held.pvName !== claim.pvName) return held;
      if (held) break;
      // Unreadable (written by a crash?) or just released: take it over.
      if (attempt >= 3) throw e;
      await fs.rm(file, { force: true });
    }
  }
  for (const a of relativeAncestorsOf(claim.relativePath)) await writeMarker(fs, base, a, claim);
  return undefined;
}

async function writeMarker(fs: HostFs, base: string, ancestor: string, claim: PathClaim): Promise<void> {
  const dir = markerDir(base, ancestor);
  const text = JSON.stringify({ pvName: claim.pvName, relativePath: claim.relativePath });
  for (let attempt = 0; ; attempt++) {
    try {
      await fs.writeFile(`${dir}/${keyOf(claim.relativePath)}`, text, { mode: 0o600, flag: 'w' });
      return;
    } catch (e) {
      // The directory is made on first use, and removed by whoever empties it (possibly just now): make it again.
      if (errnoCode(e) !== 'ENOENT' || attempt >= 3) throw e;
      await mkdirQuiet(fs, belowDir(base));
      await mkdirQuiet(fs, dir);
    }
  }
}

/**
 * Another volume's claim at `rel`, on one of its ancestors, or below it (read now: another instance may have just
 * written it), or undefined. Bounded: one read per ancestor, one directory open, and the first live marker below.
 * `claimed`: the caller holds the claim of `rel` (claimPath just returned undefined), which is then not read again:
 * a claim is removed only by its holder, or by a claimant finding it unreadable, so it is still the caller's.
 */
export async function findConflictingClaim(
  base: string,
  rel: string,
  pvName: string,
  fsOpts?: FsOpsOptions,
  claimed = false,
): Promise<PathClaim | undefined> {
  const own = claimed ? undefined : await readPathClaim(base, rel, fsOpts);
  if (own && own.pvName !== pvName) return own;
  for (const a of relativeAncestorsOf(rel)) {
    const c = await readPathClaim(base, a, fsOpts);
    if (c && c.pvName !== pvName) return c;
  }
  return firstClaimBelow(base, rel, pvName, fsOpts);
}

async function firstClaimBelow(
  base: string,
  rel: string,
  pvName: string,
  fsOpts?: FsOpsOptions,
): Promise<PathClaim | undefined> {
  const fs = hostFsOf(fsOpts);
  const dir = markerDir(base, rel);
  const handle = await fs.opendir(dir).catch((e: unknown) => {
    if (errnoCode(e) === 'ENOENT') return undefined;
    throw e;
  });
  if (!handle) return undefined;
  try {
    for await (const entry of handle) {
      const marker = parse(await fs.readFile(`${dir}/${entry.name}`).catch(() => '{}'));
      const live =
        marker && isStrictlyUnder(`/${rel}`, `/${marker.relativePath}`)
          ? await readPathClaim(base, marker.relativePath, fsOpts)
          : undefined;
      if (live && live.pvName !== pvName) return live;
      // Its claim is gone (a crash between the writes, or a release that did not finish): forget the marker.
      if (!live) await fs.rm(`${dir}/${entry.name}`, { force: true });
    }
  } finally {
    // for-await closes the directory when it ends or breaks; a throw before that still must not leak it.
    await handle.close().catch(() => {});
  }
  return undefined;
}

/**
 * Releases the claim of `rel` if `pvName` holds it (or nobody does), with its markers. A claim another volume holds
 * is left alone, markers included (they stand for that claim).
 */
export async function releasePath(base: string, rel: string, pvName: string, fsOpts?: FsOpsOptions): Promise<void> {
  const fs = hostFsOf(fsOpts);
  const held = await readPathClaim(base, rel, fsOpts);
  if (held && held.pvName !== pvName) return;
  if (held) await fs.rm(claimFile(base, rel), { force: true });
  for (const a of relativeAncestorsOf(rel)) {
    const dir = markerDir(base, a);
    await fs.rm(`${dir}/${keyOf(rel)}`, { force: true });
    await fs.rmdir(dir).catch((e: unknown) => {
      if (errnoCode(e) !== 'ENOTEMPTY' && errnoCode(e) !== 'ENOENT' && errnoCode(e) !== 'EEXIST') throw e;
    });
  }
}

async function mkdirQuiet(fs: HostFs, dir: string): Promise<void> {
  await fs.mkdir(dir, { mode: 0o700 }).catch((e: unknown) => {
    if (errnoCode(e) !== 'EEXIST') throw e;
  });
}

function parse(text: string): PathClaim | undefined {
  try {
    const c = JSON.parse(text) as Partial<PathClaim>;
    if (typeof c.pvName !== 'string' || typeof c.relativePath !== 'string') return undefined;
    const out: PathClaim = { pvName: c.pvName, relativePath: c.relativePath };
    if (typeof c.claimUid === 'string' && c.claimUid !== '') out.claimUid = c.claimUid;
    return out;
  } catch {
    return undefined;
  }
}
