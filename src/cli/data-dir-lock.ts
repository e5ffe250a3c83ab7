// One instance per data directory: `dev` and `cluster` take DIR/kube-provisioner.lock before touching anything
// else in DIR. Two instances on one directory diverge (each rewrites the kubeconfig, each keeps its own copy of
// the store) and lose deletions after a restart, so the second one must stop before it writes a byte.
// The lock file holds the owner's PID, a random token and, once it serves, its URL. It is created whole and
// atomically: the content goes to a private temporary file which is then hard-linked to the lock name (link(2)
// fails with EEXIST like open(O_CREAT|O_EXCL), and a reader never sees a half-written lock). A lock whose PID is
// dead is stale and taken over. Anything else at the lock's name (a symbolic link, dangling or not, a directory, a
// FIFO...) was not written by kube-provisioner: start-up stops with DataDirLockPathError, which names the path and
// what to do, and leaves it alone. So does a data directory that is not one (a regular file, a dangling symbolic
// link, a path below a file), a lock this user cannot read, and a directory it cannot create or write: no raw
// EEXIST, ENOENT, ENOTDIR or EACCES.
import { randomBytes } from 'node:crypto';
import { unlinkSync, readFileSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { link, lstat, mkdir, readFile, readlink, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** The lock file's name inside the data directory. */
export const LOCK_FILE = 'kube-provisioner.lock';

/** What a lock file says about its owner. */
export interface DataDirLockOwner {
  pid: number;
  /** The API server's URL once it serves; absent while it starts. */
  url?: string;
  /** The command that holds it (`dev`, `cluster`). */
  command: string;
  startedAt: string;
  token: string;
}

/** Another live process holds the data directory. */
export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly owner: DataDirLockOwner,
  ) {
    super(
      `data directory ${dataDir} is in use by another kube-provisioner (${owner.command}, PID ${owner.pid}, ` +
        `${owner.url ? `serving at ${owner.url}` : 'still starting'}); stop it first, or use another --data-dir`,
    );
  }
}

/**
 * The data directory cannot be locked for a reason the user can fix: the lock's name is taken by something that is
 * not a lock file (kube-provisioner only ever writes regular files there), the lock cannot be read, or the data
 * directory is not a directory this user can create and write. The message names the path, what is there and what
 * to do.
 */
export class DataDirLockPathError extends Error {
  override name = 'DataDirLockPathError';
  constructor(
    readonly path: string,
    readonly what: string,
    advice: string,
  ) {
    super(`cannot lock the data directory: ${path} ${what}; ${advice}`);
  }
}

const OTHERWISE = 'or start with another --data-dir';
const NOT_OURS = 'not a lock file kube-provisioner wrote';
const codeOf = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;
const denied = (err: unknown) => codeOf(err) === 'EACCES' || codeOf(err) === 'EPERM';
const kindOf = (st: Stats) => (st.isFile() ? 'a regular file' : st.isDirectory() ? 'a directory' : 'a special file');

/** What mkdir's failure on the data directory means, as a DataDirLockPathError (other errors as they are). */
async function dataDirError(dataDir: string, err: unknown): Promise<unknown> {
  const st = await lstat(dataDir).catch(() => undefined);
  if (st?.isSymbolicLink()) {
    const target = await readlink(dataDir).catch(() => '?');
    const to = await stat(dataDir).catch(() => undefined);
    if (!to)
      return new DataDirLockPathError(
        dataDir,
        `is a dangling symbolic link to ${target}`,
        `create the directory it points to (mkdir -p ${target}) and start again, ${OTHERWISE}`,
      );
    if (!to.isDirectory())
      return new DataDirLockPathError(
        dataDir,
        `is a symbolic link to ${target}, which is ${kindOf(to)}, not a directory`,
        `point it at a directory, ${OTHERWISE}`,
      );
  } else if (st && !st.isDirectory()) {
    return new DataDirLockPathError(
      dataDir,
      `is ${kindOf(st)}, not a directory`,
      `move it away (mv ${dataDir} ${dataDir}.old) and start again, ${OTHERWISE}`,
    );
  }
  if (codeOf(err) === 'ENOTDIR') {
    // A component above it is not a directory: name the nearest one that exists.
    let above = dirname(dataDir);
    let found = await stat(above).catch(() => undefined);
    while (!found && dirname(above) !== above) {
      above = dirname(above);
      found = await stat(above).catch(() => undefined);
    }
    return new DataDirLockPathError(
      dataDir,
      `cannot be created: ${above} is ${found ? kindOf(found) : 'not a directory'}, not a directory`,
      `move ${above} away and start again, ${OTHERWISE}`,
    );
  }
  if (denied(err))
    return new DataDirLockPathError(
      dataDir,
      'cannot be created by this user (permission denied)',
      `create it for this user (mkdir -p ${dataDir}), ${OTHERWISE}`,
    );
  return err;
}

/** DataDirLockPathError for what lstat finds at `path`, or undefined for a regular file (or nothing). */
async function notALockFile(path: string): Promise<DataDirLockPathError | undefined> {
  let st;
  try {
    st = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (st.isFile()) return undefined;
  if (st.isSymbolicLink()) {
    const target = await readlink(path).catch(() => '?');
    const dangling = await stat(path).then(
      () => false,
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
    return new DataDirLockPathError(
      path,
      `is a ${dangling ? 'dangling ' : ''}symbolic link to ${target}, ${NOT_OURS}`,
      `if no kube-provisioner is running on this directory, remove it (rm ${path}) and start again, ${OTHERWISE}`,
    );
  }
  if (st.isDirectory()) {
    return new DataDirLockPathError(
      path,
      `is a directory, ${NOT_OURS}`,
      `if nothing in it is needed, remove it (rm -r ${path}) and start again, ${OTHERWISE}`,
    );
  }
  return new DataDirLockPathError(
    path,
    `is a special file, ${NOT_OURS}`,
    `if no kube-provisioner is running on this directory, remove it (rm ${path}) and start again, ${OTHERWISE}`,
  );
}

/** A held lock. */
export interface DataDirLock {
  readonly path: string;
  /** Records the URL the instance serves at (shown to a second instance). */
  setUrl(url: string): Promise<void>;
  /** Removes the lock if it is still ours. Idempotent. */
  release(): Promise<void>;
}

// Locks held by this process (a second lock from the same process must fail too).
const heldHere = new Set<string>();

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseOwner(text: string): DataDirLockOwner | undefined {
  try {
    const v = JSON.parse(text) as Partial<DataDirLockOwner>;
    if (typeof v.pid !== 'number' || typeof v.token !== 'string') return undefined;
    return {
      pid: v.pid,
      url: typeof v.url === 'string' ? v.url : undefined,
      command: String(v.command ?? '?'),
      startedAt: String(v.startedAt ?? ''),
      token: v.token,
    };
  } catch {
    return undefined;
  }
}

async function readOwner(path: string): Promise<DataDirLockOwner | undefined | 'gone'> {
  try {
    return parseOwner(await readFile(path, 'utf8'));
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return 'gone';
    // Its owner may be alive: taking it over unread could run two instances on one directory.
    if (denied(err))
      throw new DataDirLockPathError(
        path,
        'cannot be read by this user (permission denied), so whether its owner still runs is unknown',
        `if no kube-provisioner is running on this directory, remove it (rm ${path}) and start again; ` +
          `if one is, stop it first (as the user that owns the lock), ${OTHERWISE}`,
      );
    throw err;
  }
}

async function writeWhole(path: string, owner: DataDirLockOwner, replace: boolean): Promise<void> {
  const tmp = `${path}.${owner.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, `${JSON.stringify(owner)}\n`, { flag: 'wx', mode: 0o644 }).catch((err: unknown) => {
    if (!denied(err) && codeOf(err) !== 'EROFS') throw err;
    const dir = dirname(path);
    throw new DataDirLockPathError(
      dir,
      `is not writable by this user (${codeOf(err) === 'EROFS' ? 'a read-only file system' : 'permission denied'})`,
      `run as the user that owns it, ${OTHERWISE}`,
    );
  });
  try {
    if (replace) await rename(tmp, path);
    else await link(tmp, path);
  } finally {
    if (!replace) await unlink(tmp).catch(() => {});
  }
}

/**
 * Takes the data directory's lock for `command`, creating the directory if needed. Throws DataDirLockedError when
 * a live process holds it; takes over a lock left by a dead process (or an unreadable one).
 */
export async function lockDataDir(dataDir: string, command: string): Promise<DataDirLock> {
  try {
    await mkdir(dataDir, { recursive: true });
  } catch (err) {
    throw await dataDirError(dataDir, err);
  }
  const path = join(dataDir, LOCK_FILE);
  const owner: DataDirLockOwner = {
    pid: process.pid,
    command,
    startedAt: new Date().toISOString(),
    token: randomBytes(12).toString('hex'),
  };
  for (let attempt = 0; ; attempt++) {
    try {
      await writeWhole(path, owner, false);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // Not a lock file at all: reading through it would give a raw ENOENT loop or EISDIR.
      const foreign = await notALockFile(path);
      if (foreign) throw foreign;
      if (attempt >= 5) throw err;
    }
    const held = await readOwner(path);
    if (held === 'gone') continue;
    // Our own PID in a lock we do not hold in this process: a previous run that had the same PID (containers).
    if (held && (heldHere.has(path) || (isAlive(held.pid) && held.pid !== process.pid)))
      throw new DataDirLockedError(dataDir, held);
    await takeOver(path, dataDir, held);
  }
  heldHere.add(path);
  let released = false;
  const ours = () => {
    try {
      return parseOwner(readFileSync(path, 'utf8'))?.token === owner.token;
    } catch {
      return false;
    }
  };
  // A forced exit (second Ctrl-C) skips the finally blocks: the lock still goes.
  const onExit = () => {
    if (!released && ours()) {
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', onExit);
  return {
    path,
    async setUrl(url: string) {
      owner.url = url;
      if (ours()) await writeWhole(path, owner, true);
    },
    async release() {
      if (released) return;
      released = true;
      heldHere.delete(path);
      process.off('exit', onExit);
      if (ours()) await unlink(path).catch(() => {});
    },
  };
}

// Moves the stale lock aside under a name of our own, so of two processes taking over at once only one gets it;
// if what we moved turns out to be a live process's fresh lock, it goes back and that process wins.
async function takeOver(path: string, dataDir: string, stale: DataDirLockOwner | undefined): Promise<void> {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const moved = await readOwner(aside);
  if (moved !== 'gone' && moved && moved.token !== stale?.token && isAlive(moved.pid)) {
    await link(aside, path).catch(() => {});
    await unlink(aside).catch(() => {});
    throw new DataDirLockedError(dataDir, moved);
  }
  await unlink(aside).catch(() => {});
}
