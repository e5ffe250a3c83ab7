import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  checkRelativeVolumePath,
  resolveVolumePath,
  checkBasePath,
  checkExistingVolumePath,
  UnsafePathError,
  type UnsafePathRule,
} from '../../src/hostpath/paths/path-safety.ts';
import { VolumePathIndex } from '../../src/hostpath/ledger/volume-path-index.ts';
import { compilePathPattern, PathTemplateError } from '../../src/hostpath/paths/path-template.ts';
import { fuzzSeed, seededRandom } from '../support/fuzz-seed.ts';

const pv = 'pvc-42';
const rule = (r: UnsafePathRule) => (e: unknown) => e instanceof UnsafePathError && e.rule === r;

test('each lexical rule rejects its case', () => {
  const cases: Array<[string, UnsafePathRule]> = [
    ['', 'empty'],
    ['/etc/pvc-42', 'absolute'],
    ['a/../pvc-42', 'dot-segment'],
    ['../pvc-42', 'dot-segment'],
    ['./pvc-42', 'dot-segment'],
    ['a//pvc-42', 'empty-segment'],
    ['pvc-42/', 'empty-segment'],
    ['a\u0000/pvc-42', 'control-character'],
    ['a\n/pvc-42', 'control-character'],
    ['a\u202e/pvc-42', 'control-character'],
    ['a\u0085/pvc-42', 'control-character'],
    ['a\uD800/pvc-42', 'malformed-unicode'],
    ['a\\..\\pvc-42', 'backslash'],
    [`${'x'.repeat(256)}/pvc-42`, 'segment-too-long'],
    [`${'é'.repeat(128)}/pvc-42`, 'segment-too-long'],
    [`${'a/'.repeat(40)}pvc-42`, 'too-deep'],
    ['.kube-provisioner/pvc-42', 'reserved-name'],
    ['ns/archived-pvc-1-x/pvc-42', 'reserved-name'],
    // The same names on a case-insensitive filesystem (ext4 casefold, CIFS, vfat) or after Unicode case folding.
    ['.KUBE-PROVISIONER/volumes', 'reserved-name'],
    ['.Kube-Provisioner', 'reserved-name'],
    ['.\u212Aube-provisioner', 'reserved-name'],
    ['ns/ARCHIVED-pvc-1-x', 'reserved-name'],
  ];
  for (const [rel, r] of cases) assert.throws(() => checkRelativeVolumePath(rel), rule(r), JSON.stringify(rel));
});

test('good relative paths pass and return their segments', () => {
  assert.deepEqual(checkRelativeVolumePath('ns/claim/pvc-42'), ['ns', 'claim', 'pvc-42']);
  assert.deepEqual(checkRelativeVolumePath('pvc-42_ns_claim'), ['pvc-42_ns_claim']);
  // The volume name is not required (stable names): which directory is whose is proven at delete time.
  assert.deepEqual(checkRelativeVolumePath('ns/claim'), ['ns', 'claim']);
  assert.deepEqual(checkRelativeVolumePath('%2e%2e/ünï/...x/pvc-42'), ['%2e%2e', 'ünï', '...x', 'pvc-42']);
  assert.deepEqual(checkRelativeVolumePath(`${'é'.repeat(127)}/pvc-42`).length, 2);
});

test('base paths must be absolute, normalised and not /', () => {
  for (const b of ['relative', '/', '/a/../b', '/a/', '/a//b', '/a/./b', '/a\u0000b']) {
    assert.throws(() => checkBasePath(b), rule('invalid-base-path'), b);
  }
  checkBasePath('/var/lib/volumes');
});

test('resolveVolumePath stays strictly under the base and within PATH_MAX', () => {
  assert.equal(resolveVolumePath('/data', 'ns/pvc-42').path, '/data/ns/pvc-42');
  const deep = Array.from({ length: 20 }, () => 'x'.repeat(250)).join('/') + '/pvc-42';
  assert.throws(() => resolveVolumePath('/data', deep), rule('path-too-long'));
});

test('checkExistingVolumePath re-checks a PV path at delete time', () => {
  assert.deepEqual(checkExistingVolumePath('/data', '/data/ns/pvc-42'), ['ns', 'pvc-42']);
  assert.throws(() => checkExistingVolumePath('/data', '/data'), rule('is-base-path'));
  assert.throws(() => checkExistingVolumePath('/data', '/etc/pvc-42'), rule('outside-root'));
  assert.throws(() => checkExistingVolumePath('/data', '/data/../etc/pvc-42'), rule('outside-root'));
  assert.throws(() => checkExistingVolumePath('/data', '/database/pvc-42'), rule('outside-root'));
});

test('VolumePathIndex refuses base paths, equal, ancestor and descendant paths of other volumes', () => {
  const idx = new VolumePathIndex();
  idx.add('pv-a', '/data/ns/a');
  idx.add('pv-b', '/data/ns/b/pv-b');
  const bases = ['/data', '/other'];
  idx.checkFree('/data/ns/c', 'pv-c', bases);
  idx.checkFree('/data/ns/a', 'pv-a', bases); // its own path: idempotent retry
  assert.throws(() => idx.checkFree('/data', 'pv-c', bases), rule('is-base-path'));
  assert.throws(() => idx.checkFree('/', 'pv-c', bases), rule('is-base-path'));
  assert.throws(() => idx.checkFree('/data/ns/a', 'pv-c', bases), rule('overlaps-volume'));
  assert.throws(() => idx.checkFree('/data/ns/a/sub', 'pv-c', bases), rule('overlaps-volume'));
  assert.throws(() => idx.checkFree('/data/ns', 'pv-c', bases), rule('overlaps-volume'));
  assert.throws(() => idx.checkFree('/data/ns/b', 'pv-c', bases), rule('overlaps-volume'));
  idx.remove('pv-a');
  idx.checkFree('/data/ns/a/sub', 'pv-c', bases);
  assert.throws(() => idx.checkFree('/data/ns', 'pv-c', bases), rule('overlaps-volume'), 'pv-b still below');
  idx.remove('pv-b');
  idx.checkFree('/data/ns', 'pv-c', bases);
  assert.equal(idx.size, 0);
});

// A small deterministic PRNG so a failure can be replayed from the printed seed.

const ATOMS = [
  '..',
  '.',
  '/',
  '//',
  '../',
  '/..',
  '%2e%2e',
  '%2f',
  '..%2f',
  '\u0000',
  '\n',
  '\t',
  '\\',
  '\\..',
  '~',
  '$HOME',
  '${.PV.name}',
  '{{',
  '}}',
  'é',
  '日本',
  '🙂',
  '\u202e',
  '\uD800',
  '\u0085',
  'ｰ',
  '．．',
  '...',
  ' ',
  'etc',
  'passwd',
  'a',
  'pvc-42',
  '.kube-provisioner',
  'archived-',
  'x'.repeat(300),
  '/etc/passwd',
  '../../../../etc',
  'C:\\',
  '\u00a0',
];

function hostileValue(rand: () => number): string {
  const n = 1 + Math.floor(rand() * 6);
  let s = '';
  for (let i = 0; i < n; i++) {
    if (rand() < 0.8) s += ATOMS[Math.floor(rand() * ATOMS.length)];
    else s += String.fromCodePoint(Math.floor(rand() * 0x10ffff) & ~0x800);
  }
  return s;
}

test('randomized: no generated label/annotation value renders a path that escapes the root', (t) => {
  const seed = fuzzSeed(t);
  const rand = seededRandom(seed);
  const patterns = [
    '${.PVC.namespace}/${.PVC.annotations.path}/${.PV.name}',
    '${.PVC.annotations.path}${.PV.name}',
    '{{ .PVC.Labels.app }}/{{ .PV.Name }}',
    '{{ .PVC.Annotations.path }}_{{ .PVName }}_{{ .PVC.Labels.app }}',
    '${.PVC.labels.app}/${.PVC.annotations.path}',
  ].map(compilePathPattern);
  const base = '/srv/volumes';
  let accepted = 0;
  let rejected = 0;
  for (let i = 0; i < 20000; i++) {
    const pattern = patterns[i % patterns.length];
    const claim = {
      namespace: 'ns',
      name: 'claim',
      labels: { app: hostileValue(rand) },
      annotations: { path: hostileValue(rand) },
    };
    let rel: string;
    try {
      rel = pattern.render({ pvName: pv, claim });
    } catch (e) {
      assert.ok(e instanceof PathTemplateError, `seed ${seed}: unexpected ${String(e)}`);
      rejected++;
      continue;
    }
    let full: string;
    try {
      full = resolveVolumePath(base, rel).path;
    } catch (e) {
      assert.ok(e instanceof UnsafePathError, `seed ${seed}: unexpected ${String(e)}`);
      rejected++;
      continue;
    }
    accepted++;
    // Whatever got through is a plain descendant of the root, by every measure we have.
    const resolved = path.resolve(base, rel);
    assert.equal(resolved, full, `seed ${seed}: ${JSON.stringify(rel)}`);
    assert.ok(resolved.startsWith(base + '/'), `seed ${seed}: ${JSON.stringify(rel)} escapes`);
    assert.ok(!path.relative(base, resolved).split('/').includes('..'), `seed ${seed}: ${JSON.stringify(rel)}`);
    // eslint-disable-next-line no-control-regex -- looking for control characters
    assert.ok(!/[\u0000-\u001f]/.test(full), `seed ${seed}: control character in ${JSON.stringify(full)}`);
    assert.ok(
      full
        .split('/')
        .slice(1)
        .every((s) => s !== '' && s !== '.' && s !== '..' && Buffer.byteLength(s) <= 255),
      `seed ${seed}: ${JSON.stringify(full)}`,
    );
  }
  assert.ok(accepted > 1000, `seed ${seed}: the generator should produce many acceptable paths too (${accepted})`);
  assert.ok(rejected > 1000, `seed ${seed}: and many hostile ones (${rejected})`);
});

test('the fuzz seed: FUZZ_SEED from the environment replays the same sequence; a bad value is refused', (t) => {
  const seed = fuzzSeed(t, { FUZZ_SEED: '4242' });
  assert.equal(seed, 4242);
  const [a, b] = [seededRandom(seed), seededRandom(seed)];
  const first = Array.from({ length: 5 }, () => a());
  assert.deepEqual(
    Array.from({ length: 5 }, () => b()),
    first,
  );
  assert.equal(fuzzSeed(t, { PATH_FUZZ_SEED: '7' }), 7, 'the older name still works');
  assert.ok(Number.isSafeInteger(fuzzSeed(t, {})), 'a fresh seed without the variable');
  assert.throws(() => fuzzSeed(t, { FUZZ_SEED: 'abc' }), /FUZZ_SEED must be a non-negative integer/);
});
