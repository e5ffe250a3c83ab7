import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VolumeLedger, SHARED_SCOPE, type Allocation } from '../../src/hostpath/ledger/volume-ledger.ts';
import { UnsafePathError } from '../../src/hostpath/paths/path-safety.ts';

const GI = 1n << 30n;
const a = (pvName: string, bytes: bigint, basePath = '/data', scope = 'n1'): Allocation => ({
  pvName,
  scope,
  basePath,
  path: `${basePath}/${pvName}`,
  bytes,
});

test('reserve/release keep per base path sums; fits counts own allocation as free', () => {
  const l = new VolumeLedger();
  l.reserve(a('pv-1', 6n * GI));
  assert.equal(l.allocated('n1', '/data'), 6n * GI);
  assert.equal(l.allocated('n2', '/data'), 0n, 'the same path on another node is another disk');
  assert.equal(l.fits('n1', '/data', 10n * GI, 4n * GI), true);
  assert.equal(l.fits('n1', '/data', 10n * GI, 5n * GI), false);
  assert.equal(l.fits('n1', '/data', 10n * GI, 10n * GI, 'pv-1'), true, 'a retry of pv-1 fits in its own space');
  assert.equal(l.fits('n1', '/data', undefined, 1000n * GI), true, 'no capacity: unlimited');
  l.reserve(a('pv-1', 6n * GI)); // idempotent
  assert.equal(l.allocated('n1', '/data'), 6n * GI);
  l.release('pv-1');
  assert.equal(l.allocated('n1', '/data'), 0n);
  assert.deepEqual(l.snapshot(), []);
  l.release('pv-1');
});

test('rebuild merges sources: disk records, API PVs, local reservations', () => {
  const l = new VolumeLedger();
  l.rebuild('disk', [a('pv-1', GI), a('pv-2', GI)]);
  l.reserve(a('pv-3', GI));
  assert.equal(l.allocated('n1', '/data'), 3n * GI);
  // The API knows pv-1 and pv-3 (confirmed) but not pv-2 (its record is on disk: still counted) nor pv-4.
  l.rebuild('api', [a('pv-1', GI), a('pv-3', GI)]);
  assert.equal(l.size, 3);
  // Later the API no longer lists pv-3 (deleted elsewhere); its local reservation was confirmed, so it goes.
  l.rebuild('api', [a('pv-1', GI)]);
  assert.equal(l.get('pv-3'), undefined);
  assert.equal(l.allocated('n1', '/data'), 2n * GI);
  // A local reservation not yet seen by the API survives API rebuilds.
  l.reserve(a('pv-5', GI));
  l.rebuild('api', [a('pv-1', GI)]);
  assert.ok(l.get('pv-5'));
  const snap = l.snapshot();
  assert.deepEqual(snap, [{ scope: 'n1', basePath: '/data', allocated: 3n * GI, volumes: 3 }]);
});

test('the ledger feeds the overlap index per scope', () => {
  const l = new VolumeLedger();
  l.reserve(a('pv-1', GI, '/data', 'n1'));
  assert.throws(() => l.paths('n1').checkFree('/data/pv-1/x', 'pv-2', ['/data']), UnsafePathError);
  l.paths('n2').checkFree('/data/pv-1/x', 'pv-2', ['/data']);
  l.reserve(a('pv-s', GI, '/shared', SHARED_SCOPE));
  assert.throws(() => l.paths(SHARED_SCOPE).checkFree('/shared/pv-s', 'pv-x', ['/shared']), UnsafePathError);
  l.release('pv-1');
  l.paths('n1').checkFree('/data/pv-1/x', 'pv-2', ['/data']);
});
