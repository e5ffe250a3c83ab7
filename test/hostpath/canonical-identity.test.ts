// Canonical forms and the live-volume index's other ways of knowing a directory: a PV path's spellings collapse to
// one form (`..` never does: it is ambiguous), NFS server names compare without case and trailing dot, a rendered
// pattern loses one trailing `/`; the index blocks whole roots for an unmappable source, and compares devices and
// inodes (what a bind mount or a case-insensitive name shares with the directory).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  canonicalAbsolutePath,
  canonicalNfsServer,
  canonicalRenderedPath,
  readAbsolutePath,
} from '../../src/hostpath/paths/canonical-path.ts';
import { UnsafePathError } from '../../src/hostpath/paths/path-safety.ts';
import { VolumePathIndex } from '../../src/hostpath/ledger/volume-path-index.ts';
import { checkInodes, DirectoryIdentities } from '../../src/hostpath/ledger/directory-identity.ts';
import { nodeHostFs } from '../../src/hostpath/disk/host-fs.ts';

test('PV paths: one canonical form for every spelling; ".." and NUL are ambiguous', () => {
  for (const [given, want] of [
    ['/base/victim', '/base/victim'],
    ['/base//victim', '/base/victim'],
    ['/base/./victim', '/base/victim'],
    ['/base/victim/', '/base/victim'],
    ['//base///victim//', '/base/victim'],
    ['/', '/'],
    ['/./', '/'],
  ] as const) {
    assert.equal(canonicalAbsolutePath(given), want, given);
  }
  for (const bad of ['relative/x', '', 7, undefined]) assert.equal(readAbsolutePath(bad), undefined, String(bad));
  const r = readAbsolutePath('/base/a/../b/');
  assert.equal(r?.kind, 'ambiguous');
  assert.deepEqual(r?.kind === 'ambiguous' && r.candidates, ['/base/a', '/base/b']);
  assert.equal(readAbsolutePath('/base/a\u0000b')?.kind, 'ambiguous');
  assert.equal(canonicalAbsolutePath('/base/../etc'), undefined);
});

test('NFS servers compare without case and without the trailing dot; rendered paths lose their trailing slashes', () => {
  assert.equal(canonicalNfsServer('NFS.Example.'), 'nfs.example');
  assert.equal(canonicalNfsServer('10.0.0.5'), '10.0.0.5');
  assert.equal(canonicalRenderedPath('default/claim/'), 'default/claim');
  assert.equal(canonicalRenderedPath('default/claim//'), 'default/claim', 'every trailing one, as filepath.Join');
  assert.equal(
    canonicalRenderedPath('default//claim'),
    'default//claim',
    'one inside stays, for the empty-segment rule',
  );
  assert.equal(canonicalRenderedPath('//'), '/', 'nothing but slashes stays refusable');
  assert.equal(canonicalRenderedPath('x'), 'x');
});

test('a blocker refuses every path at or under the roots it blocks, naming itself and why; unblocked, they are free', () => {
  const index = new VolumePathIndex();
  index.block('odd', ['/data'], 'it contains a ".." segment');
  for (const p of ['/data/a', '/data/a/b']) {
    assert.throws(
      () => index.checkFree(p, 'mine', []),
      (e: unknown) =>
        e instanceof UnsafePathError && /volume odd blocks/.test(e.message) && /"\.\." segment/.test(e.message),
    );
  }
  index.checkFree('/other/a', 'mine', []);
  index.checkFree('/data/a', 'odd', []);
  index.block('odd', [], '');
  index.checkFree('/data/a', 'mine', []);
});

test('by device and inode: the same directory, its inside and its parents match, whatever the spelling', () => {
  const index = new VolumePathIndex();
  index.setInodes('bind', { self: '1:100', ancestors: ['1:10', '1:2'] }, '/mnt/bind/victim');
  const relations = (chain: { self?: string; ancestors: string[] }, pv = 'tenant') =>
    index.inodeMatches(chain, pv).map((m) => `${m.pvName} ${m.relation}`);
  assert.deepEqual(relations({ self: '1:100', ancestors: [] }), ['bind same']);
  assert.deepEqual(relations({ ancestors: ['1:100'] }), ['bind inside']);
  assert.deepEqual(relations({ self: '1:10', ancestors: [] }), ['bind contains']);
  assert.deepEqual(relations({ self: '1:101', ancestors: [] }), []);
  assert.deepEqual(relations({ self: '1:100', ancestors: [] }, 'bind'), [], 'its own directory');
  // Moving the volume forgets its inodes.
  index.add('bind', '/data/elsewhere');
  assert.deepEqual(relations({ self: '1:100', ancestors: [] }), []);
});

test('an inode match is read again before it refuses: a reused inode number of a deleted directory is not a volume', async () => {
  const tmp = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-inode-')));
  try {
    const root = path.join(tmp, 'root');
    await fsp.mkdir(path.join(root, 'live'), { recursive: true });
    await fsp.symlink(root, path.join(tmp, 'link'));
    const identities = new DirectoryIdentities(nodeHostFs);
    const index = new VolumePathIndex();
    const live = await identities.ofVolume(path.join(tmp, 'link', 'live'), [root]);
    assert.equal(live?.alias, path.join(root, 'live'), 'the symlinked spelling leads below the root');
    index.setInodes('live-pv', live!.chain, path.join(tmp, 'link', 'live'));
    const check = async (segments: string[]) =>
      checkInodes({
        path: path.join(root, ...segments),
        chain: await identities.ofCandidate(root, segments),
        pvName: 'tenant',
        indexes: [index],
        identities,
        roots: [root],
      });
    await assert.rejects(
      check(['live']),
      (e: unknown) => e instanceof UnsafePathError && /is the directory of volume live-pv/.test(e.message),
    );
    await assert.rejects(check(['live', 'sub']), /is inside the directory of volume live-pv/);
    // A chain read from a directory that is gone now, whose inode number another directory may carry.
    await fsp.mkdir(path.join(root, 'fresh'));
    const fresh = await identities.ofCandidate(root, ['fresh']);
    index.setInodes('deleted-pv', { self: fresh.self, ancestors: [] }, path.join(root, 'gone'));
    await check(['fresh']);
    assert.deepEqual(index.inodeMatches(fresh, 'tenant'), [], 'the stale chain was forgotten');
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});

test('aliases: a volume known by two paths blocks both, and is removed from both', () => {
  const index = new VolumePathIndex();
  index.add('v', '/link/victim');
  index.addAlias('v', '/data/victim');
  assert.throws(() => index.checkFree('/data/victim/sub', 'tenant', []), /inside the directory of volume v/);
  assert.throws(() => index.checkFree('/data', 'tenant', []), /contains the directory of another volume/);
  index.checkFree('/data/victim/sub', 'v', []);
  index.remove('v');
  index.checkFree('/data/victim', 'tenant', []);
  index.checkFree('/data', 'tenant', []);
});
