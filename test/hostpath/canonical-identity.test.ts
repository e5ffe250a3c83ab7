// Canonical forms and the live-volume index's other ways of knowing a directory: a PV path's spellings collapse to
// one form (`..` never does: it is ambiguous), NFS server names compare without case and trailing dot, a rendered
// pattern loses one trailing `/`; the index blocks whole roots for an unmappable source, and compares devices and
// inodes (what a bind mount or a case-insensitive name shares with the directory).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalAbsolutePath, canonicalNfsServer, canonicalRenderedPath, readAbsolutePath } from '../../src/hostpath/canonical-path.ts';
import { UnsafePathError } from '../../src/hostpath/path-safety.ts';
import { VolumePathIndex } from '../../src/hostpath/volume-path-index.ts';

test('PV paths: one canonical form for every spelling; ".." and NUL are ambiguous', () => {
  for (const [given, want] of [
    ['/base/victim', '/base/victim'], ['/base//victim', '/base/victim'], ['/base/./victim', '/base/victim'], ['/base/victim/', '/base/victim'],
    ['//base///victim//', '/base/victim'], ['/', '/'], ['/./', '/'],
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

test('NFS servers compare without case and without the trailing dot; rendered paths lose one trailing slash', () => {
  assert.equal(canonicalNfsServer('NFS.Example.'), 'nfs.example');
  assert.equal(canonicalNfsServer('10.0.0.5'), '10.0.0.5');
  assert.equal(canonicalRenderedPath('default/claim/'), 'default/claim');
  assert.equal(canonicalRenderedPath('default/claim//'), 'default/claim/', 'a second one stays, for the empty-segment rule');
  assert.equal(canonicalRenderedPath('x'), 'x');
});

test('a blocker refuses every path at or under the roots it blocks, naming itself and why; unblocked, they are free', () => {
  const index = new VolumePathIndex();
  index.block('odd', ['/data'], 'it contains a ".." segment');
  for (const p of ['/data/a', '/data/a/b']) {
    assert.throws(() => index.checkFree(p, 'mine', []), (e: unknown) => e instanceof UnsafePathError && /volume odd blocks/.test(e.message) && /"\.\." segment/.test(e.message));
  }
  index.checkFree('/other/a', 'mine', []);
  index.checkFree('/data/a', 'odd', []);
  index.block('odd', [], '');
  index.checkFree('/data/a', 'mine', []);
});

test('by device and inode: the same directory, its inside and its parents are refused, whatever the spelling', () => {
  const index = new VolumePathIndex();
  index.setInodes('bind', { self: '1:100', ancestors: ['1:10', '1:2'] });
  const refused = (what: RegExp) => (e: unknown) => e instanceof UnsafePathError && e.rule === 'overlaps-volume' && what.test(e.message);
  assert.throws(() => index.checkInodes('/data/victim', { self: '1:100', ancestors: [] }, 'tenant'), refused(/is the directory of volume bind/));
  assert.throws(() => index.checkInodes('/data/victim/sub', { ancestors: ['1:100'] }, 'tenant'), refused(/is inside the directory of volume bind/));
  assert.throws(() => index.checkInodes('/data/parent', { self: '1:10', ancestors: [] }, 'tenant'), refused(/contains the directory of volume bind/));
  index.checkInodes('/data/other', { self: '1:101', ancestors: [] }, 'tenant');
  index.checkInodes('/data/victim', { self: '1:100', ancestors: [] }, 'bind');
  // Moving the volume forgets its inodes.
  index.add('bind', '/data/elsewhere');
  index.checkInodes('/data/victim', { self: '1:100', ancestors: [] }, 'tenant');
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
