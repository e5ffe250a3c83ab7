// Units under the cluster controllers: the keyed queue (dedup, re-run while processing, retry), the PV index
// (claimRef lookups, capacity order, removal), node fitting (selectors, affinity, topology) and the local node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KeyedQueue } from '../../src/cluster/controllers/keyed-queue.ts';
import { VolumeIndex } from '../../src/cluster/controllers/volume-index.ts';
import { claimBlocksNode, nodeIsSchedulable, nodeSelectorMatches, podFitsNode, topologyAllows } from '../../src/cluster/controllers/node-fit.ts';
import { localNodeName, localNodeObject } from '../../src/cluster/controllers/local-node.ts';
import type { AccessMode, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';

test('KeyedQueue: deduplicates waiting keys, re-runs a key added while it runs, retries failures', async () => {
  const seen: string[] = [];
  let failOnce = true;
  const q: KeyedQueue = new KeyedQueue({
    handle(key) {
      seen.push(key);
      if (key === 'a' && seen.filter((k) => k === 'a').length === 1) q.add('a'); // added while processing
      if (key === 'flaky' && failOnce) {
        failOnce = false;
        throw new Error('boom');
      }
      return 'done';
    },
    baseDelayMs: 1,
  });
  q.add('a');
  q.add('b');
  q.add('b');
  q.add('flaky');
  assert.equal(q.length, 3);
  await q.idle();
  await new Promise((r) => setTimeout(r, 20));
  await q.idle();
  assert.deepEqual(seen, ['a', 'b', 'flaky', 'a', 'flaky']);
  q.stop();
  q.add('after-stop');
  await q.idle();
  assert.equal(seen.includes('after-stop'), false);
});

test('KeyedQueue: handles many keys in FIFO order across batches', async () => {
  const seen: number[] = [];
  const q = new KeyedQueue({ handle: (k) => (seen.push(Number(k)), 'done'), batchSize: 7 });
  for (let i = 0; i < 3000; i++) q.add(String(i));
  await q.idle();
  assert.deepEqual(seen, Array.from({ length: 3000 }, (_, i) => i));
  q.stop();
});

const pv = (name: string, size: string, modes: AccessMode[] = ['ReadWriteOnce'], extra: Partial<PersistentVolume['spec']> = {}, phase: 'Available' | 'Bound' = 'Available'): PersistentVolume => ({
  metadata: { name }, spec: { capacity: { storage: size }, accessModes: modes, storageClassName: 'c', ...extra }, status: { phase },
});
const claim = (name: string): PersistentVolumeClaim => ({ metadata: { name, namespace: 'ns', uid: `u-${name}` }, spec: {} });
const names = (groups: Iterable<Iterable<PersistentVolume>>) => [...groups].map((g) => [...g].map((v) => v.metadata.name));

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
  assert.deepEqual([...idx.preBoundTo(claim('x'))].map((v) => v.metadata.name), ['mid2']);
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

const node = (name: string, labels: Record<string, string> = {}, ready = 'True', unschedulable = false): Node => ({
  metadata: { name, labels }, spec: { unschedulable }, status: { conditions: [{ type: 'Ready', status: ready }] },
});

test('node fitting: readiness, nodeSelector, affinity operators, matchFields, topology, claims', () => {
  assert.equal(nodeIsSchedulable(node('a')), true);
  assert.equal(nodeIsSchedulable(node('a', {}, 'False')), false);
  assert.equal(nodeIsSchedulable(node('a', {}, 'True', true)), false);
  const n = node('n1', { zone: 'z1', size: '8' });
  const sel = (key: string, operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt', values?: string[]) =>
    ({ nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }] });
  assert.equal(nodeSelectorMatches(sel('zone', 'In', ['z1', 'z2']), n), true);
  assert.equal(nodeSelectorMatches(sel('zone', 'NotIn', ['z1']), n), false);
  assert.equal(nodeSelectorMatches(sel('gpu', 'DoesNotExist'), n), true);
  assert.equal(nodeSelectorMatches(sel('gpu', 'Exists'), n), false);
  assert.equal(nodeSelectorMatches(sel('size', 'Gt', ['4']), n), true);
  assert.equal(nodeSelectorMatches(sel('size', 'Lt', ['4']), n), false);
  assert.equal(nodeSelectorMatches({ nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }] }, n), true);
  assert.equal(nodeSelectorMatches({ nodeSelectorTerms: [{}] }, n), false, 'an empty term matches nothing');
  assert.equal(nodeSelectorMatches({ nodeSelectorTerms: [sel('gpu', 'Exists').nodeSelectorTerms[0], sel('zone', 'Exists').nodeSelectorTerms[0]] }, n), true, 'terms are ORed');
  assert.equal(topologyAllows(undefined, n), true);
  assert.equal(topologyAllows([{ matchLabelExpressions: [{ key: 'zone', values: ['z2'] }] }], n), false);
  const p: Pod = { metadata: { name: 'p' }, spec: { containers: [], nodeSelector: { zone: 'z1' } } };
  assert.equal(podFitsNode(p, n), true);
  assert.equal(podFitsNode({ ...p, spec: { ...p.spec, nodeName: 'other' } }, n), false);
  assert.equal(podFitsNode({ ...p, spec: { ...p.spec, nodeSelector: { zone: 'z9' } } }, n), false);

  const world = {
    getVolume: (name: string) => (name === 'local' ? pv('local', '1Gi', ['ReadWriteOnce'], { nodeAffinity: { required: sel('zone', 'In', ['z2']) } }) : undefined),
    getClass: (name: string) => (name === 'wffc' ? { metadata: { name }, provisioner: 'p', volumeBindingMode: 'WaitForFirstConsumer' as const } : undefined),
  };
  const c = (spec: Partial<PersistentVolumeClaim['spec']>, annotations?: Record<string, string>): PersistentVolumeClaim => ({ metadata: { name: 'c', annotations }, spec });
  assert.equal(claimBlocksNode(c({ volumeName: 'local' }), '', n, world), 'node(s) had volume node affinity conflict');
  assert.equal(claimBlocksNode(c({}), 'immediate', n, world), 'pod has unbound immediate PersistentVolumeClaims');
  assert.equal(claimBlocksNode(c({}), 'wffc', n, world), undefined);
  assert.match(claimBlocksNode(c({}, { 'volume.kubernetes.io/selected-node': 'n2' }), 'wffc', n, world) ?? '', /already provisioning on node "n2"/);
});

test('local node: DNS-safe name from the hostname, hostname label, Ready', () => {
  assert.equal(localNodeName('My_Laptop.local'), 'my-laptop.local');
  assert.equal(localNodeName('---'), 'localhost');
  const nodeObj = localNodeObject('host-1', Date.parse('2026-01-01T00:00:00Z'));
  assert.equal(nodeObj.metadata.labels?.['kubernetes.io/hostname'], 'host-1');
  assert.deepEqual(nodeObj.status?.conditions?.map((c) => [c.type, c.status, c.lastHeartbeatTime]), [['Ready', 'True', '2026-01-01T00:00:00Z']]);
});
