import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  createVolumeDir,
  removeVolumeDir,
  archiveVolumeDir,
  archiveName,
  BasePathError,
} from '../../src/hostpath/disk/volume-dirs.ts';
import { directoryUsage } from '../../src/hostpath/usage/directory-usage.ts';
import { DirectoryIdentities } from '../../src/hostpath/ledger/directory-identity.ts';
import { nodeHostFs } from '../../src/hostpath/disk/host-fs.ts';
import { UnsafePathError } from '../../src/hostpath/paths/path-safety.ts';

let tmp: string;
let root: string;
let outside: string;

before(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-fsops-'));
  root = path.join(tmp, 'root');
  outside = path.join(tmp, 'outside');
  await fsp.mkdir(root);
  await fsp.mkdir(outside);
  await fsp.writeFile(path.join(outside, 'secret'), 'keep me');
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** Everything below `dir`, as sorted relative paths, to prove a tree did not change. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      out.push(path.relative(dir, path.join(d, e.name)));
      if (e.isDirectory()) await walk(path.join(d, e.name));
    }
  };
  await walk(dir);
  return out.sort();
}

const isRule = (rule: string) => (e: unknown) => e instanceof UnsafePathError && e.rule === rule;

test('creates nested volume directories with exact mode, idempotently', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  const r1 = await createVolumeDir(base, ['ns', 'claim', 'pvc-1'], { mode: 0o2770, parentMode: 0o755 });
  assert.equal(r1.created, true);
  const st = await fsp.stat(path.join(base, 'ns/claim/pvc-1'));
  assert.ok(st.isDirectory());
  assert.equal(st.mode & 0o7777, 0o2770, 'mode applied exactly, umask does not interfere');
  assert.equal((await fsp.stat(path.join(base, 'ns'))).mode & 0o777, 0o755);
  await fsp.writeFile(path.join(base, 'ns/claim/pvc-1/data'), 'x');
  const r2 = await createVolumeDir(base, ['ns', 'claim', 'pvc-1'], { mode: 0o777 });
  assert.equal(r2.created, false);
  assert.equal((await fsp.stat(path.join(base, 'ns/claim/pvc-1'))).mode & 0o777, 0o777, 'mode re-applied');
  assert.equal(await fsp.readFile(path.join(base, 'ns/claim/pvc-1/data'), 'utf8'), 'x', 'existing content kept');
});

test('uid/gid are applied (to our own ids when unprivileged)', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await createVolumeDir(base, ['pvc-own'], { uid: process.getuid!(), gid: process.getgid!() });
  const st = await fsp.stat(path.join(base, 'pvc-own'));
  assert.equal(st.uid, process.getuid!());
  assert.equal(st.gid, process.getgid!());
});

test('a failed chown leaves nothing half-created', async () => {
  // Injected, so it fails as root too (CI runs as root, where a real chown to any id succeeds).
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await fsp.mkdir(path.join(base, 'existing'));
  const calls: Array<[number, number]> = [];
  const chown = async (_h: unknown, uid: number, gid: number) => {
    calls.push([uid, gid]);
    throw Object.assign(new Error('EPERM: operation not permitted, fchown'), { code: 'EPERM' });
  };
  await assert.rejects(
    createVolumeDir(base, ['existing', 'ns', 'pvc-x'], { uid: 1234, gid: 5678, chown }),
    (e: NodeJS.ErrnoException) => e.code === 'EPERM',
  );
  assert.deepEqual(calls, [[1234, 5678]], 'the chown of the volume directory was attempted');
  assert.deepEqual(await snapshot(base), ['existing'], 'what the call created is gone; what existed before is kept');
});

test(
  'a real chown refused by the kernel leaves nothing half-created (unprivileged only)',
  {
    skip: process.getuid?.() === 0 ? 'running as root: chown cannot fail; the injected variant above covers it' : false,
  },
  async () => {
    const base = await fsp.mkdtemp(path.join(root, 'b-'));
    await assert.rejects(
      createVolumeDir(base, ['ns', 'pvc-x'], { uid: 0 }),
      (e: NodeJS.ErrnoException) => e.code === 'EPERM',
    );
    assert.deepEqual(await snapshot(base), []);
  },
);

test('a failure after mkdir (here an out-of-range uid) rolls back what this call created', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await fsp.mkdir(path.join(base, 'existing'));
  await assert.rejects(createVolumeDir(base, ['existing', 'ns', 'pvc-x'], { uid: -5 }), RangeError);
  assert.deepEqual(await snapshot(base), ['existing']);
});

test('base path missing, a file or a symlink is refused', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await assert.rejects(
    createVolumeDir(path.join(base, 'missing'), ['pvc']),
    (e: unknown) => e instanceof BasePathError && e.reason === 'missing',
  );
  await fsp.writeFile(path.join(base, 'file'), '');
  await assert.rejects(
    createVolumeDir(path.join(base, 'file'), ['pvc']),
    (e: unknown) => e instanceof BasePathError && e.reason === 'not-directory',
  );
  await fsp.symlink(outside, path.join(base, 'link'));
  await assert.rejects(
    createVolumeDir(path.join(base, 'link'), ['pvc']),
    (e: unknown) => e instanceof BasePathError && e.reason === 'symlink',
  );
  assert.deepEqual(await snapshot(outside), ['secret']);
});

test('a symlink anywhere below the base is refused, nothing is created outside', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await fsp.symlink(outside, path.join(base, 'ns'));
  await assert.rejects(createVolumeDir(base, ['ns', 'pvc-1']), isRule('symlink'));
  await fsp.mkdir(path.join(base, 'real'));
  await fsp.symlink(outside, path.join(base, 'real', 'pvc-2'));
  await assert.rejects(createVolumeDir(base, ['real', 'pvc-2']), isRule('symlink'), 'the final component too');
  await fsp.writeFile(path.join(base, 'real', 'pvc-3'), '');
  await assert.rejects(createVolumeDir(base, ['real', 'pvc-3']), isRule('not-directory'));
  assert.deepEqual(await snapshot(outside), ['secret']);
  await assert.rejects(removeVolumeDir(base, ['ns', 'pvc-1']), isRule('symlink'));
  await assert.rejects(archiveVolumeDir(base, ['ns', 'pvc-1'], { pvName: 'pvc-1' }), isRule('symlink'));
  assert.deepEqual(await snapshot(outside), ['secret']);
});

test('a parent swapped for a symlink while creating never leads outside the root', async () => {
  // A racer flips base/ns between a real directory and a symlink to `outside` as fast as it can while
  // we create volumes below it. Every create either succeeds inside the root or is refused.
  const base = await fsp.mkdtemp(path.join(root, 'race-'));
  const target = await fsp.mkdtemp(path.join(outside, 'race-target-'));
  const ns = path.join(base, 'ns');
  const parked = path.join(base, 'parked');
  await fsp.mkdir(ns);
  await fsp.symlink(target, path.join(base, 'link'));
  let stop = false;
  let flips = 0;
  const racer = (async () => {
    while (!stop) {
      try {
        fs.renameSync(ns, parked); // real dir out
        fs.renameSync(path.join(base, 'link'), ns); // symlink in
        await new Promise((r) => setImmediate(r));
        fs.renameSync(ns, path.join(base, 'link'));
        fs.renameSync(parked, ns);
        flips++;
      } catch {
        // a rename lost against our own state: keep going
      }
      await new Promise((r) => setImmediate(r));
    }
  })();
  let ok = 0;
  let refused = 0;
  for (let i = 0; i < 300; i++) {
    try {
      await createVolumeDir(base, ['ns', `pvc-${i}`]);
      ok++;
    } catch (e) {
      assert.ok(e instanceof UnsafePathError || (e as NodeJS.ErrnoException).code === 'ENOENT', String(e));
      refused++;
    }
  }
  stop = true;
  await racer;
  assert.deepEqual(await snapshot(target), [], 'nothing was created through the symlink');
  assert.ok(flips > 0 && ok > 0, `the race ran (flips ${flips}, created ${ok}, refused ${refused})`);
});

test('remove deletes the tree, removes inner symlinks as links and never touches their targets', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await createVolumeDir(base, ['ns', 'pvc-1']);
  const vol = path.join(base, 'ns/pvc-1');
  await fsp.mkdir(path.join(vol, 'a/b/c'), { recursive: true });
  await fsp.writeFile(path.join(vol, 'a/b/c/f'), 'data');
  await fsp.symlink(outside, path.join(vol, 'a/escape-dir'));
  await fsp.symlink(path.join(outside, 'secret'), path.join(vol, 'escape-file'));
  await fsp.symlink('../../..', path.join(vol, 'a/b/up'));
  const r = await removeVolumeDir(base, ['ns', 'pvc-1']);
  assert.equal(r.existed, true);
  await assert.rejects(fsp.lstat(vol), { code: 'ENOENT' });
  assert.deepEqual(await snapshot(base), ['ns'], 'the parent stays');
  assert.equal(await fsp.readFile(path.join(outside, 'secret'), 'utf8'), 'keep me');
  assert.equal((await removeVolumeDir(base, ['ns', 'pvc-1'])).existed, false, 'idempotent');
  assert.equal((await removeVolumeDir(base, ['gone', 'pvc-1'])).existed, false);
});

test('a tree deeper than the descriptors we hold open is still removed completely', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await createVolumeDir(base, ['pvc-deep']);
  const deep = path.join(base, 'pvc-deep', ...Array.from({ length: 1500 }, () => 'd'));
  await fsp.mkdir(deep, { recursive: true });
  await fsp.writeFile(path.join(deep, 'f'), 'x');
  await fsp.symlink(outside, path.join(deep, 'out'));
  const fdsBefore = (await fsp.readdir('/proc/self/fd').catch(() => [])).length;
  assert.equal((await removeVolumeDir(base, ['pvc-deep'], { maxOpenDepth: 16 })).existed, true);
  assert.deepEqual(await snapshot(base), []);
  assert.ok((await fsp.readdir('/proc/self/fd').catch(() => [])).length <= fdsBefore, 'no descriptor leaked');
  assert.equal(await fsp.readFile(path.join(outside, 'secret'), 'utf8'), 'keep me');
});

test('a volume directory that is itself a symlink is removed as a link', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await fsp.symlink(outside, path.join(base, 'pvc-1'));
  assert.equal((await removeVolumeDir(base, ['pvc-1'])).existed, true);
  await assert.rejects(fsp.lstat(path.join(base, 'pvc-1')), { code: 'ENOENT' });
  assert.deepEqual(
    (await snapshot(outside)).filter((p) => !p.startsWith('race-target')),
    ['secret'],
  );
});

test('archive renames within the parent to archived-<name>, with a suffix only on collision', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await createVolumeDir(base, ['ns', 'pvc-1']);
  await fsp.writeFile(path.join(base, 'ns/pvc-1/f'), 'x');
  const now = new Date('2026-11-29T20:00:00.123Z');
  const a1 = await archiveVolumeDir(base, ['ns', 'pvc-1'], { pvName: 'pvc-1', now });
  assert.equal(a1.archivedPath, path.join(base, 'ns', 'archived-pvc-1'), "nfs-subdir's name when it is free");
  await createVolumeDir(base, ['ns', 'pvc-1']);
  const a2 = await archiveVolumeDir(base, ['ns', 'pvc-1'], { pvName: 'pvc-1', now });
  assert.equal(a2.archivedPath, path.join(base, 'ns', 'archived-pvc-1-20261129T200000Z'));
  await createVolumeDir(base, ['ns', 'pvc-1']);
  const a3 = await archiveVolumeDir(base, ['ns', 'pvc-1'], { pvName: 'pvc-1', now });
  assert.match(path.basename(a3.archivedPath ?? ''), /^archived-pvc-1-20261129T200000Z-[0-9a-f]{16}$/);
  assert.equal(await fsp.readFile(path.join(a1.archivedPath, 'f'), 'utf8'), 'x', 'the first archive is never replaced');
  assert.deepEqual(
    await archiveVolumeDir(base, ['ns', 'pvc-1'], { pvName: 'pvc-1' }),
    {},
    'missing volume: nothing to archive',
  );
  for (let attempt = 0; attempt < 3; attempt++)
    assert.ok(Buffer.byteLength(archiveName('p'.repeat(253), now, attempt)) <= 255);
});

test('usage sums allocated and apparent bytes without following symlinks, bounded', async () => {
  const base = await fsp.mkdtemp(path.join(root, 'b-'));
  await createVolumeDir(base, ['pvc-u']);
  const vol = path.join(base, 'pvc-u');
  await fsp.writeFile(path.join(vol, 'a'), Buffer.alloc(100_000, 1));
  await fsp.mkdir(path.join(vol, 'd'));
  await fsp.writeFile(path.join(vol, 'd/b'), Buffer.alloc(50_000, 1));
  await fsp.link(path.join(vol, 'a'), path.join(vol, 'd/hard'));
  await fsp.symlink(tmp, path.join(vol, 'loop'));
  const u = await directoryUsage(vol);
  assert.equal(u.complete, true);
  assert.ok(u.apparentBytes >= 150_000n && u.apparentBytes < 160_000n, String(u.apparentBytes));
  assert.ok(u.bytes >= 150_000n && u.bytes < 1_000_000n, String(u.bytes));
  const bounded = await directoryUsage(vol, { maxEntries: 2 });
  assert.equal(bounded.complete, false);
  assert.equal(bounded.entries, 2);
});

test("createVolumeDir's identity is what the disk says the directory is, as a live PV's would be read", async () => {
  const base = await fsp.realpath(root);
  const { identity } = await createVolumeDir(base, ['ids', 'team', 'vol'], { identity: true });
  const read = await new DirectoryIdentities(nodeHostFs).ofVolume(path.join(base, 'ids/team/vol'), [base]);
  assert.ok(identity && read);
  assert.equal(read.alias, undefined);
  assert.deepEqual(identity, read.chain, 'the same device and inode, nearest ancestor first');
  assert.deepEqual((await createVolumeDir(base, ['ids', 'plain'])).identity, undefined, 'only when asked');
});
