// The scheduler stand-in's node fitting: readiness, nodeSelector, affinity operators, matchFields, topology, and
// nodes a claim's volume blocks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  claimBlocksNode,
  nodeIsSchedulable,
  nodeSelectorMatches,
  podFitsNode,
  topologyAllows,
} from '../../src/cluster/controllers/node-fit.ts';
import type { AccessMode, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';

const pv = (
  name: string,
  size: string,
  modes: AccessMode[],
  extra: Partial<PersistentVolume['spec']>,
): PersistentVolume => ({
  metadata: { name },
  spec: { capacity: { storage: size }, accessModes: modes, storageClassName: 'c', ...extra },
  status: { phase: 'Available' },
});

const node = (name: string, labels: Record<string, string> = {}, ready = 'True', unschedulable = false): Node => ({
  metadata: { name, labels },
  spec: { unschedulable },
  status: { conditions: [{ type: 'Ready', status: ready }] },
});

test('node fitting: readiness, nodeSelector, affinity operators, matchFields, topology, claims', () => {
  assert.equal(nodeIsSchedulable(node('a')), true);
  assert.equal(nodeIsSchedulable(node('a', {}, 'False')), false);
  assert.equal(nodeIsSchedulable(node('a', {}, 'True', true)), false);
  const n = node('n1', { zone: 'z1', size: '8' });
  const sel = (key: string, operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt', values?: string[]) => ({
    nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }],
  });
  assert.equal(nodeSelectorMatches(sel('zone', 'In', ['z1', 'z2']), n), true);
  assert.equal(nodeSelectorMatches(sel('zone', 'NotIn', ['z1']), n), false);
  assert.equal(nodeSelectorMatches(sel('gpu', 'DoesNotExist'), n), true);
  assert.equal(nodeSelectorMatches(sel('gpu', 'Exists'), n), false);
  assert.equal(nodeSelectorMatches(sel('size', 'Gt', ['4']), n), true);
  assert.equal(nodeSelectorMatches(sel('size', 'Lt', ['4']), n), false);
  assert.equal(
    nodeSelectorMatches(
      { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] }] },
      n,
    ),
    true,
  );
  assert.equal(nodeSelectorMatches({ nodeSelectorTerms: [{}] }, n), false, 'an empty term matches nothing');
  assert.equal(
    nodeSelectorMatches(
      { nodeSelectorTerms: [sel('gpu', 'Exists').nodeSelectorTerms[0], sel('zone', 'Exists').nodeSelectorTerms[0]] },
      n,
    ),
    true,
    'terms are ORed',
  );
  assert.equal(topologyAllows(undefined, n), true);
  assert.equal(topologyAllows([{ matchLabelExpressions: [{ key: 'zone', values: ['z2'] }] }], n), false);
  const p: Pod = { metadata: { name: 'p' }, spec: { containers: [], nodeSelector: { zone: 'z1' } } };
  assert.equal(podFitsNode(p, n), true);
  assert.equal(podFitsNode({ ...p, spec: { ...p.spec, nodeName: 'other' } }, n), false);
  assert.equal(podFitsNode({ ...p, spec: { ...p.spec, nodeSelector: { zone: 'z9' } } }, n), false);

  const world = {
    getVolume: (name: string) =>
      name === 'local'
        ? pv('local', '1Gi', ['ReadWriteOnce'], { nodeAffinity: { required: sel('zone', 'In', ['z2']) } })
        : undefined,
    getClass: (name: string) =>
      name === 'wffc'
        ? { metadata: { name }, provisioner: 'p', volumeBindingMode: 'WaitForFirstConsumer' as const }
        : undefined,
  };
  const c = (
    spec: Partial<PersistentVolumeClaim['spec']>,
    annotations?: Record<string, string>,
  ): PersistentVolumeClaim => ({ metadata: { name: 'c', annotations }, spec });
  assert.equal(claimBlocksNode(c({ volumeName: 'local' }), '', n, world), 'node(s) had volume node affinity conflict');
  assert.equal(claimBlocksNode(c({}), 'immediate', n, world), 'pod has unbound immediate PersistentVolumeClaims');
  assert.equal(claimBlocksNode(c({}), 'wffc', n, world), undefined);
  assert.match(
    claimBlocksNode(c({}, { 'volume.kubernetes.io/selected-node': 'n2' }), 'wffc', n, world) ?? '',
    /already provisioning on node "n2"/,
  );
});
