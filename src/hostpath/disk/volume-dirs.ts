// Filesystem operations on volume directories that never follow a symlink below a base path.
// Node has no openat/mkdirat, so on Linux every step goes through /proc/self/fd/<fd>/<name>: the kernel
// resolves the magic link to the directory we already hold open, so swapping a parent for a symlink after
// we checked it changes nothing (the walk is as race-free as openat). O_NOFOLLOW | O_DIRECTORY refuses a
// symlink at each step. Elsewhere (macOS dev machines) the same walk runs on plain paths with the same
// checks, which leaves a small check-to-use window; production nodes are Linux.
import { constants as C } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { UnsafePathError, MAX_SEGMENT_BYTES } from '../paths/path-safety.ts';
import { errnoCode as code, hostFsOf, type HostFs } from './host-fs.ts';

/** The base path is missing or unusable (not a directory, a symlink): nothing was created. */
export class BasePathError extends Error {
  override name = 'BasePathError';
  constructor(
    readonly basePath: string,
    readonly reason: 'missing' | 'symlink' | 'not-directory',
    options?: { cause?: unknown },
  ) {
    super(
      `base path ${basePath} ${reason === 'missing' ? 'does not exist (is the disk mounted?)' : reason === 'symlink' ? 'is a symlink' : 'is not a directory'}`,
      options,
    );
  }
}

/** Options shared by the race-safe filesystem operations (the fs implementation to use). */
export interface FsOpsOptions {
  /** The filesystem facade every call goes through (default node:fs/promises). */
  fs?: HostFs;
  /** Use /proc/self/fd for race-free relative operations (default: on Linux). */
  procFd?: boolean;
  /**
   * Changes the owner of the open volume directory (default: `handle.chown`). Injectable so tests can make it fail
   * even when running as root, where a real chown cannot.
   */
  chown?: (handle: FileHandle, uid: number, gid: number) => Promise<void>;
}

const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;
const useProcFd = (o?: FsOpsOptions) => o?.procFd ?? process.platform === 'linux';

/** An open directory, and how to name an entry relative to it without re-resolving its path. */
interface Dir {
  handle: FileHandle;
  /** The path it was opened by (for messages and the non-Linux fallback). */
  path: string;
  procFd: boolean;
  fs: HostFs;
}

const entry = (d: Dir, name: string) => (d.procFd ? `/proc/self/fd/${d.handle.fd}/${name}` : `${d.path}/${name}`);
const self = (d: Dir) => (d.procFd ? `/proc/self/fd/${d.handle.fd}` : d.path);

async function openBase(basePath: string, o?: FsOpsOptions): Promise<Dir> {
  const fs = hostFsOf(o);
  try {
    const handle = await fs.open(basePath, DIR_FLAGS);
    return { handle, path: basePath, procFd: useProcFd(o), fs };
  } catch (e) {
    const c = code(e);
    if (c === 'ENOENT') throw new BasePathError(basePath, 'missing', { cause: e });
    if (c === 'ELOOP') throw new BasePathError(basePath, 'symlink', { cause: e });
    if (c === 'ENOTDIR') {
      const st = await fs.lstat(basePath).catch(() => undefined);
      throw new BasePathError(basePath, st?.isSymbolicLink() ? 'symlink' : 'not-directory', { cause: e });
    }
    throw e;
  }
}

/** Opens `name` inside `parent` as a directory, refusing symlinks; undefined when it does not exist. */
async function openChild(parent: Dir, name: string): Promise<Dir | undefined> {
  const childPath = `${parent.path}/${name}`;
  try {
    const handle = await parent.fs.open(entry(parent, name), DIR_FLAGS);
    return { handle, path: childPath, procFd: parent.procFd, fs: parent.fs };
  } catch (e) {
    const c = code(e);
    if (c === 'ENOENT') return undefined;
    if (c === 'ELOOP') throw new UnsafePathError('symlink', childPath, 'is a symlink; refusing to follow it');
    if (c === 'ENOTDIR') {
      const st = await parent.fs.lstat(entry(parent, name)).catch(() => undefined);
      if (st?.isSymbolicLink()) throw new UnsafePathError('symlink', childPath, 'is a symlink; refusing to follow it');
      throw new UnsafePathError('not-directory', childPath, 'exists and is not a directory');
    }
    throw e;
  }
}

/** Walks from the base along `segments`, never following a symlink; undefined when a component is missing. */
async function walk(basePath: string, segments: string[], o?: FsOpsOptions): Promise<Dir | undefined> {
  let dir = await openBase(basePath, o);
  for (const seg of segments) {
    let child: Dir | undefined;
    try {
      child = await openChild(dir, seg);
    } finally {
      await dir.handle.close();
    }
    if (!child) return undefined;
    dir = child;
  }
  return dir;
}

/** How a volume directory is created: mode bits, owner, the base path it must stay under. */
export interface CreateVolumeDirOptions extends FsOpsOptions {
  /** Permission bits of the volume directory, applied exactly (umask does not apply). Default 0o777. */
  mode?: number;
  uid?: number;
  gid?: number;
  /** Mode of intermediate directories the walk creates. Default 0o755. */
  parentMode?: number;
  /**
   * Also return the directory's identity: the device and inode of it and of each level between the base and it
   * (nearest first), read from the directories the walk holds open (one fstat each).
   */
  identity?: boolean;
}

/** A directory's device and inode and those of its levels below the base (nearest first), as `dev:ino` keys. */
export interface DirIdentity {
  self: string;
  ancestors: string[];
}

/**
 * Creates `<basePath>/<segments...>` one component at a time without following symlinks, then applies
 * owner and mode to the last one. Idempotent: an existing real directory is accepted (owner and mode
 * re-applied). On failure, what this call created is removed again (nothing half-created).
 */
export async function createVolumeDir(
  basePath: string,
  segments: string[],
  opts: CreateVolumeDirOptions = {},
): Promise<{ created: boolean; identity?: DirIdentity }> {
  const { dir, created, identity } = await createAndOpen(basePath, segments, opts);
  await dir.handle.close().catch(() => {});
  return identity ? { created, identity } : { created };
}

// createVolumeDir, leaving the last directory open for the caller (who closes it).
async function createAndOpen(
  basePath: string,
  segments: string[],
  opts: CreateVolumeDirOptions,
): Promise<{ dir: Dir; created: boolean; identity?: DirIdentity }> {
  if (segments.length === 0) throw new UnsafePathError('is-base-path', basePath, 'a volume cannot be the base path');
  const created: Array<{ parent: Dir; name: string }> = [];
  const open: Dir[] = [];
  let dir = await openBase(basePath, opts);
  open.push(dir);
  try {
    for (let i = 0; i < segments.length; i++) {
      const last = i === segments.length - 1;
      // The volume directory itself is nearly always new: made first (mkdir never follows a symlink; EEXIST for
      // anything there), then opened, so a new one costs no failed open. Parents nearly always exist: opened first.
      let child = last ? undefined : await openChild(dir, segments[i]);
      if (!child) {
        try {
          // The volume starts private; owner and mode are set on the open handle before it is usable.
          await dir.fs.mkdir(entry(dir, segments[i]), { mode: last ? 0o700 : (opts.parentMode ?? 0o755) });
          created.push({ parent: dir, name: segments[i] });
        } catch (e) {
          if (code(e) !== 'EEXIST') throw e;
        }
        child = await openChild(dir, segments[i]);
        if (!child)
          throw new UnsafePathError('not-directory', `${dir.path}/${segments[i]}`, 'vanished while being created');
        if (!last && created.at(-1)?.parent === dir) await child.handle.chmod(opts.parentMode ?? 0o755);
      }
      open.push(child);
      dir = child;
    }
    if (opts.uid !== undefined || opts.gid !== undefined) {
      const handle = dir.handle;
      await (opts.chown
        ? opts.chown(handle, opts.uid ?? -1, opts.gid ?? -1)
        : handle.chown(opts.uid ?? -1, opts.gid ?? -1));
    }
    await dir.handle.chmod(opts.mode ?? 0o777);
    const identity = opts.identity ? await identityOf(open.slice(1)) : undefined;
    open.pop();
    return { dir, created: created.length > 0, identity };
  } catch (e) {
    // Undo in reverse; rmdir only removes empty directories, so nothing that gained content is lost.
    for (const c of created.reverse()) await c.parent.fs.rmdir(entry(c.parent, c.name)).catch(() => {});
    throw e;
  } finally {
    for (const d of open) await d.handle.close().catch(() => {});
  }
}

// The identity of the last of `levels` (the walk's open directories below the base, in walk order).
async function identityOf(levels: Dir[]): Promise<DirIdentity> {
  const keys: string[] = [];
  for (const d of levels) {
    const st = await d.handle.stat();
    keys.push(`${st.dev}:${st.ino}`);
  }
  return { self: keys.pop()!, ancestors: keys.reverse() };
}

/** What withDir remembers per directory path: the device and inode the no-follow walk last reached there. */
export type KnownDirs = Map<string, string>;

/**
 * Runs `fn` with `<basePath>/<segments...>` open (created as createVolumeDir creates it), `at(name)` naming an
 * entry through the open directory (/proc/self/fd on Linux: a component swapped for a symlink afterwards changes
 * nothing). With `known`, the walk is made once: while the whole path still leads to the directory it reached (one
 * open, never following a symlink as its last component, and one fstat: the same device and inode), that
 * directory is used; a path leading elsewhere (a component swapped for a symlink, a remount) or nowhere is walked
 * again, which refuses what is unsafe and re-applies the mode. Without `known`, it walks every time.
 */
export async function withDir<T>(
  basePath: string,
  segments: string[],
  opts: CreateVolumeDirOptions & { known?: KnownDirs },
  fn: (at: (name: string) => string) => Promise<T>,
): Promise<T> {
  const fs = hostFsOf(opts);
  const full = `${basePath}/${segments.join('/')}`;
  const key = opts.known?.get(full);
  let dir: Dir | undefined;
  if (key !== undefined) {
    const handle = await fs.open(full, DIR_FLAGS).catch(() => undefined);
    const st = await handle?.stat().catch(() => undefined);
    if (handle && st && `${st.dev}:${st.ino}` === key) dir = { handle, path: full, procFd: useProcFd(opts), fs };
    else {
      await handle?.close().catch(() => {});
      opts.known?.delete(full);
    }
  }
  if (!dir) {
    dir = (await createAndOpen(basePath, segments, opts)).dir;
    if (opts.known) {
      const st = await dir.handle.stat().catch(async (e: unknown) => {
        await dir?.handle.close().catch(() => {});
        throw e;
      });
      opts.known.set(full, `${st.dev}:${st.ino}`);
    }
  }
  const open = dir;
  try {
    return await fn((name) => entry(open, name));
  } finally {
    await open.handle.close().catch(() => {});
  }
}

/** How a volume directory is removed: the base path it must stay under. */
export interface RemoveOptions extends FsOpsOptions {
  signal?: AbortSignal;
  /**
   * Directory levels held open at once (one descriptor each). Deeper subtrees are moved up into the
   * volume directory and removed from there, so any depth is removed with bounded descriptors. Default 64.
   */
  maxOpenDepth?: number;
}

/**
 * Removes the volume directory and everything in it. Symlinks inside are removed as links (their targets
 * are never touched); a directory swapped for a symlink mid-way is unlinked as a link. Returns whether
 * the volume existed. A symlink in place of a parent component is refused.
 */
export async function removeVolumeDir(
  basePath: string,
  segments: string[],
  opts: RemoveOptions = {},
): Promise<{ existed: boolean }> {
  if (segments.length === 0) throw new UnsafePathError('is-base-path', basePath, 'refusing to remove a base path');
  const parent = await walk(basePath, segments.slice(0, -1), opts);
  if (!parent) return { existed: false };
  try {
    return { existed: await removeEntry(parent, segments.at(-1)!, { opts, moved: 0 }, 0) };
  } finally {
    await parent.handle.close();
  }
}

interface RemoveContext {
  opts: RemoveOptions;
  /** The volume directory, once open: where too-deep subtrees are moved to. */
  root?: Dir;
  /** Subtrees moved into the root during the current pass. */
  moved: number;
}

async function removeEntry(parent: Dir, name: string, ctx: RemoveContext, depth: number): Promise<boolean> {
  ctx.opts.signal?.throwIfAborted();
  const st = await parent.fs.lstat(entry(parent, name)).catch((e: unknown) => {
    if (code(e) === 'ENOENT') return undefined;
    throw e;
  });
  if (!st) return false;
  if (!st.isDirectory()) {
    await unlinkQuiet(parent.fs, entry(parent, name));
    return true;
  }
  if (ctx.root && depth >= (ctx.opts.maxOpenDepth ?? 64)) {
    // Too deep to hold open: move it up into the volume directory; the root's next pass removes it.
    await parent.fs.rename(entry(parent, name), entry(ctx.root, `.kp-deep-${randomBytes(8).toString('hex')}`));
    ctx.moved++;
    return true;
  }
  let dir: Dir | undefined;
  try {
    dir = await openChild(parent, name);
  } catch (e) {
    // Swapped for a symlink (or a file) since the lstat: remove what is there now, as a link.
    if (e instanceof UnsafePathError) {
      await unlinkQuiet(parent.fs, entry(parent, name));
      return true;
    }
    throw e;
  }
  if (!dir) return false;
  const isRoot = !ctx.root;
  if (isRoot) ctx.root = dir;
  try {
    // Tenants may still be writing: a few passes until the directory stays empty; the root keeps going
    // while deep subtrees are being moved up into it.
    for (let pass = 0; ; pass++) {
      if (isRoot) ctx.moved = 0;
      for (const child of await dir.fs.readdir(self(dir))) await removeEntry(dir, child, ctx, depth + 1);
      try {
        await parent.fs.rmdir(entry(parent, name));
        return true;
      } catch (e) {
        if (code(e) === 'ENOENT') return true;
        const progressing = isRoot && ctx.moved > 0;
        if (code(e) !== 'ENOTEMPTY' || (pass >= 3 && !progressing)) throw e;
      }
    }
  } finally {
    if (isRoot) ctx.root = undefined;
    await dir.handle.close();
  }
}

async function unlinkQuiet(fs: HostFs, p: string): Promise<void> {
  try {
    await fs.unlink(p);
  } catch (e) {
    if (code(e) !== 'ENOENT') throw e;
  }
}

/** How a volume directory is archived (renamed aside) instead of deleted. */
export interface ArchiveOptions extends FsOpsOptions {
  /** The volume the directory belongs to (for messages). */
  pvName: string;
  /** Time used in the collision suffix (default now). */
  now?: Date;
  /**
   * Whether an archive name is free of live volumes (a live PV whose directory does not exist yet may be spelled
   * there: its pod would mount the archive). A name it refuses is treated as taken.
   */
  isFree?: (segments: string[]) => Promise<boolean>;
}

/**
 * Renames the volume directory to `archived-<directory name>` in the same parent, as nfs-subdir names its
 * archives (kept in the parent so a nested layout such as `<namespace>/<claim>` keeps its namespace). Only
 * when that name is taken (on disk, or by a live volume: `isFree`) does a suffix `-<UTC timestamp>[-<random>]`
 * make it unique. Returns the new path,
 * or undefined when the volume does not exist.
 */
export async function archiveVolumeDir(
  basePath: string,
  segments: string[],
  opts: ArchiveOptions,
): Promise<{ archivedPath?: string }> {
  if (segments.length === 0) throw new UnsafePathError('is-base-path', basePath, 'refusing to archive a base path');
  const parent = await walk(basePath, segments.slice(0, -1), opts);
  if (!parent) return {};
  try {
    const name = segments.at(-1)!;
    const st = await parent.fs.lstat(entry(parent, name)).catch(() => undefined);
    if (!st) return {};
    if (!st.isDirectory())
      throw new UnsafePathError(
        st.isSymbolicLink() ? 'symlink' : 'not-directory',
        `${parent.path}/${name}`,
        'is not a real directory; refusing to archive it',
      );
    for (let attempt = 0; attempt < 6; attempt++) {
      const target = archiveName(name, opts.now ?? new Date(), attempt);
      // rename() would replace an empty directory of that name: make sure there is none.
      const taken = await parent.fs.lstat(entry(parent, target)).then(
        () => true,
        () => false,
      );
      if (taken || (opts.isFree && !(await opts.isFree([...segments.slice(0, -1), target])))) continue;
      await parent.fs.rename(entry(parent, name), entry(parent, target));
      return { archivedPath: `${parent.path}/${target}` };
    }
    throw new Error(`could not find a free archive name for ${opts.pvName} in ${parent.path}`);
  } finally {
    await parent.handle.close();
  }
}

/**
 * Archive name of the directory `dirName`: `archived-<dirName>` on the first attempt, then with a suffix
 * `-<yyyymmddThhmmssZ>` (second attempt) and `-<yyyymmddThhmmssZ>-<16 hex>` (later ones). The directory name
 * is shortened if needed so the result fits 255 bytes.
 */
export function archiveName(dirName: string, now: Date, attempt = 0): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const suffix = attempt === 0 ? '' : attempt === 1 ? `-${stamp}` : `-${stamp}-${randomBytes(8).toString('hex')}`;
  let name = dirName;
  while (Buffer.byteLength(`archived-${name}${suffix}`) > MAX_SEGMENT_BYTES) name = name.slice(0, -1);
  return `archived-${name}${suffix}`;
}
