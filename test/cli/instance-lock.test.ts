// One instance per data directory: a second `dev` (or `cluster`) on a directory in use exits non-zero naming the
// directory and the running instance's PID and URL, and touches nothing (the kubeconfig stays byte for byte); a
// lock left by a dead process is taken over; a data directory that is a file or a dangling link, or a lock this user
// cannot read, stops the start with a message naming the path and what to do. Real processes, real directories.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, chown, lstat, mkdir, readFile, readdir, rm, mkdtemp, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DataDirLockedError, LOCK_FILE, lockDataDir } from '../../src/cli/data-dir-lock.ts';
import { runCli, startCli, waitFor } from './cli-helpers.ts';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A PID that was just in use and is now dead. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

describe('data directory lock', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-lock-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a second dev on the same data dir exits 1 naming the dir, PID and URL, and touches nothing', async () => {
    const dataDir = join(dir, 'shared');
    const first = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
    try {
      await waitFor('the first instance serving', () => first.stdout().includes('Ctrl-C to stop'), 30_000);
      const url = /cluster ready at (\S+),/.exec(first.stdout())?.[1];
      assert.ok(url, first.stdout());
      const lock = JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number; url: string };
      assert.equal(lock.pid, first.child.pid);
      assert.equal(lock.url, url);
      const kubeconfig = await readFile(join(dataDir, 'kubeconfig'), 'utf8');
      const listing = (await readdir(dataDir)).sort();
      const mtime = (await stat(join(dataDir, 'kubeconfig'))).mtimeMs;

      for (const args of [
        ['dev', '--data-dir', dataDir, '--port', '0'],
        ['cluster', '--data-dir', dataDir, '--port', '0'],
      ]) {
        const second = await runCli(args, { timeoutMs: 30_000 });
        assert.equal(second.code, 1, second.stderr);
        assert.match(second.stderr, new RegExp(`data directory ${escape(dataDir)} is in use`));
        assert.match(second.stderr, new RegExp(`PID ${first.child.pid}\\b`));
        assert.ok(second.stderr.includes(url), second.stderr);
        assert.doesNotMatch(second.stdout, /cluster ready/);
      }
      assert.equal(await readFile(join(dataDir, 'kubeconfig'), 'utf8'), kubeconfig, 'the kubeconfig was not rewritten');
      assert.equal((await stat(join(dataDir, 'kubeconfig'))).mtimeMs, mtime);
      assert.deepEqual((await readdir(dataDir)).sort(), listing, 'no file was added or removed');

      first.child.kill('SIGINT');
      assert.equal(await first.exited, 0, first.stderr());
      await assert.rejects(stat(join(dataDir, LOCK_FILE)), /ENOENT/, 'a clean stop removes the lock');
    } finally {
      first.child.kill('SIGKILL');
    }
  });

  it('a lock left by a dead process is taken over; a live one (even in this process) is refused', async () => {
    const dataDir = join(dir, 'stale');
    await mkdir(dataDir);
    const pid = deadPid();
    await writeFile(
      join(dataDir, LOCK_FILE),
      JSON.stringify({ pid, command: 'dev', startedAt: '', token: 'old', url: 'https://127.0.0.1:1' }),
    );
    const lock = await lockDataDir(dataDir, 'test');
    try {
      const held = JSON.parse(await readFile(join(dataDir, LOCK_FILE), 'utf8')) as { pid: number };
      assert.equal(held.pid, process.pid);
      await lock.setUrl('https://127.0.0.1:2');
      const err = await lockDataDir(dataDir, 'again').then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof DataDirLockedError, String(err));
      assert.equal(err.owner.url, 'https://127.0.0.1:2');
    } finally {
      await lock.release();
    }
    await assert.rejects(stat(join(dataDir, LOCK_FILE)), /ENOENT/);
    assert.deepEqual(await readdir(dataDir), [], 'no temporary file left behind');
  });

  it('a lock whose owner was killed (SIGKILL) does not block the next start', async () => {
    const dataDir = join(dir, 'killed');
    const first = startCli(['cluster', '--data-dir', dataDir, '--port', '0']);
    await waitFor('the cluster serving', () => first.stdout().includes('ready at'), 30_000);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = startCli(['cluster', '--data-dir', dataDir, '--port', '0']);
    try {
      await waitFor('the second cluster serving', () => second.stdout().includes('ready at'), 30_000);
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0, second.stderr());
    } finally {
      second.child.kill('SIGKILL');
    }
  });

  describe('a data directory that cannot be locked: a message naming the path, what is there and what to do', () => {
    const refused = async (dataDir: string, what: RegExp, opts: Parameters<typeof runCli>[1] = {}) => {
      const r = await runCli(['cluster', '--data-dir', dataDir, '--port', '0'], { timeoutMs: 30_000, ...opts });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`cannot lock the data directory: ${escape(dataDir)}`));
      assert.match(r.stderr, what);
      assert.match(r.stderr, /another --data-dir/);
      assert.doesNotMatch(r.stderr, /E[A-Z]{3,}:|\n\s+at /, 'no raw errno, no stack');
      assert.doesNotMatch(r.stdout, /ready at/);
    };

    it('the data directory is a regular file (kept as it is)', async () => {
      const file = join(dir, 'a-file');
      await writeFile(file, 'not a directory');
      await refused(file, /is a regular file/);
      assert.equal(await readFile(file, 'utf8'), 'not a directory');
      await refused(join(file, 'below'), /a regular file/);
    });

    it('the data directory is a dangling symbolic link (kept as it is)', async () => {
      const link = join(dir, 'dangling');
      await symlink(join(dir, 'nowhere'), link);
      await refused(link, new RegExp(`dangling symbolic link to ${escape(join(dir, 'nowhere'))}`));
      assert.ok((await lstat(link)).isSymbolicLink());
      await assert.rejects(stat(join(dir, 'nowhere')), /ENOENT/);
    });

    it('the lock file cannot be read by this user (as root: the CLI runs as nobody)', async () => {
      const dataDir = join(dir, 'unreadable');
      await mkdir(dataDir);
      const lock = join(dataDir, LOCK_FILE);
      await writeFile(lock, JSON.stringify({ pid: deadPid(), command: 'dev', startedAt: '', token: 'old' }));
      await chmod(lock, 0o000);
      let user: { uid: number; gid: number } | undefined;
      if (process.getuid?.() === 0) {
        // Root reads a mode 000 file: the CLI runs as nobody, which owns the directory and cannot.
        user = { uid: 65534, gid: 65534 };
        await chmod(dir, 0o755);
        await chown(dataDir, user.uid, user.gid);
        await chown(lock, user.uid, user.gid);
      }
      await refused(dataDir, /cannot be read by this user/, { user });
      assert.deepEqual(await readdir(dataDir), [LOCK_FILE], 'nothing written, the lock left alone');
      assert.equal((await stat(lock)).mode & 0o777, 0);
    });
  });
});
