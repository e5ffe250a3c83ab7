// The PV binder's volume index: claimRef lookups, unclaimed volumes grouped by access modes in capacity order,
// removals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { VolumeIndex } from '../../src/cluster/controllers/volume-index.ts';
import type { AccessMode, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';

const pv = (
  name: string,
  size: string,
  modes: AccessMode[] = ['ReadWriteOnce'],
  extra: Partial<PersistentVolume['spec']> = {},
  phase: 'Available' | 'Bound' = 'Available',
): PersistentVolume => ({
  metadata: { name },
  spec: { capacity: { storage: size }, accessModes: modes, storageClassName: 'c', ...extra },
  status: { phase },
});
const claim = (name: string): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'ns', uid: `u-${name}` },
  spec: {},
});
const names = (groups: Iterable<Iterable<PersistentVolume>>) =>
  [...groups].map((g) => [...g].map((v) => v.metadata.name));

test('VolumeIndex: unclaimed groups by access modes (fewest first) in ascending capacity, from the minimum', () => {
  const idx = new VolumeIndex();
  idx.upsert(pv('big', '10Gi'));
  idx.upsert(pv('small', '1Gi'));
  idx.upsert(pv('mid', '5Gi'));
  idx.upsert(pv('mid2', '5Gi'));
  idx.upsert(pv('wide', '1Gi', ['ReadWriteOnce', 'ReadWriteMany']));
  idx.upsert(pv('rox', '1Gi', ['ReadOnlyMany']));
  idx.upsert(pv('other-class', '1Gi', ['ReadWriteOnce'], { storageClassName: 'd' }));
  idx.upsert(pv('not-available', '1Gi', ['ReadWriteOnce'], {}, 'Bound'));
  idx.upsert(pv('broken', 'lots'));
  assert.deepEqual(names(idx.unclaimedGroups('c', ['ReadWriteOnce'], 2n * 1024n ** 3n)), [['mid', 'mid2', 'big'], []]);
  assert.deepEqual(names(idx.unclaimedGroups('c', ['ReadWriteOnce'], 0n)), [['small', 'mid', 'mid2', 'big'], ['wide']]);
  assert.deepEqual(names(idx.unclaimedGroups('c', ['ReadWriteMany'], 0n)), [['wide']]);
  assert.deepEqual(names(idx.unclaimedGroups('nope', [], 0n)), []);
  idx.remove('mid');
  idx.upsert({ ...pv('mid2', '5Gi'), spec: { ...pv('mid2', '5Gi').spec, claimRef: { namespace: 'ns', name: 'x' } } });
  assert.deepEqual(names(idx.unclaimedGroups('c', ['ReadWriteOnce'], 2n * 1024n ** 3n)), [['big'], []]);
  assert.deepEqual(
    [...idx.preBoundTo(claim('x'))].map((v) => v.metadata.name),
    ['mid2'],
  );
  idx.upsert(pv('mid2', '5Gi')); // unbound again
  idx.upsert(pv('mid', '5Gi'));
  assert.deepEqual(names(idx.unclaimedGroups('c', ['ReadWriteOnce'], 2n * 1024n ** 3n))[0], ['mid2', 'mid', 'big']);
  assert.deepEqual([...idx.preBoundTo(claim('x'))], []);
  assert.equal(idx.size, 9);
});

test('VolumeIndex: many removals from the front keep iteration correct', () => {
  const idx = new VolumeIndex();
  for (let i = 0; i < 500; i++) idx.upsert(pv(`v${i}`, '1Gi'));
  for (let i = 0; i < 490; i++) idx.remove(`v${i}`);
  assert.deepEqual(names(idx.unclaimedGroups('c', [], 0n)), [Array.from({ length: 10 }, (_, i) => `v${490 + i}`)]);
});
