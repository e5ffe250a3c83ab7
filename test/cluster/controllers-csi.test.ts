// The cluster controllers and the CSI kinds, through @kubernetes/client-node: the scheduler stand-in places a
// WaitForFirstConsumer claim as kube-scheduler's volume binding plugin does (allowedTopologies, and the
// CSIStorageCapacity objects of the class when its CSIDriver tracks capacity), a claim with a data source reaches
// its provisioner with dataSource and dataSourceRef mirrored, and the expand controller names the CSI resizer of
// a migrated in-tree volume on resize (as kube-controller-manager) and a native CSI volume's driver once the claim is
// Bound (which kube-controller-manager leaves to external-resizer's spec.csi.driver match; see docs/architecture.md).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, StorageV1Api, type V1Pod } from '@kubernetes/client-node';
import { hasEnoughCapacity } from '../../src/cluster/controllers/node-fit.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { Node, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import type { CSIDriver, CSIStorageCapacity } from '../../src/types/storage-objects.ts';
import { waitFor } from '../support/wait.ts';

const DRIVER = 'cap.csi.example.com';
const NS = 'default';
let cluster: TestCluster;
let core: CoreV1Api;
let storage: StorageV1Api;

const readyNode = (name: string, zone: string) => ({
  metadata: { name, labels: { 'topology.example.com/zone': zone } },
  status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }] },
});

before(async () => {
  cluster = await startCluster({ controllers: { resyncMs: 60_000 } });
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  storage = cluster.kubeConfig.makeApiClient(StorageV1Api);
  for (const [name, zone] of [
    ['zone-a-node', 'a'],
    ['zone-b-node', 'b'],
  ]) {
    await core.createNode({ body: readyNode(name, zone) });
    await core.replaceNodeStatus({ name, body: { ...(await core.readNode({ name })), ...readyNode(name, zone) } });
  }
});
after(async () => {
  await cluster?.stop();
});

const consumer = (name: string, claimName: string): V1Pod => ({
  metadata: { name },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    volumes: [{ name: 'd', persistentVolumeClaim: { claimName } }],
  },
});
const claim = (name: string, storageClassName: string, storage = '5Gi', extra: Record<string, unknown> = {}) => ({
  metadata: { name },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName, ...extra },
});
const selectedNode = async (name: string) =>
  (await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name })).metadata?.annotations?.[
    'volume.kubernetes.io/selected-node'
  ];

describe('scheduler stand-in and CSIStorageCapacity', () => {
  it('places a claim only where a capacity object of its class holds it; none means no node fits', async () => {
    await storage.createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { storageCapacity: true } } });
    await storage.createStorageClass({
      body: { metadata: { name: 'cap' }, provisioner: DRIVER, volumeBindingMode: 'WaitForFirstConsumer' },
    });
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim('cap-claim', 'cap') });
    await core.createNamespacedPod({ namespace: NS, body: consumer('cap-pod', 'cap-claim') });
    await cluster.controllers!.idle();
    assert.equal(await selectedNode('cap-claim'), undefined, 'no CSIStorageCapacity: the claim fits no node');

    // Zone a has room for 1Gi only; zone b's maximumVolumeSize (not its larger capacity) decides, and holds 5Gi.
    const capacity = (name: string, zone: string, c: Record<string, string>) =>
      storage.createNamespacedCSIStorageCapacity({
        namespace: NS,
        body: {
          metadata: { name },
          storageClassName: 'cap',
          nodeTopology: { matchLabels: { 'topology.example.com/zone': zone } },
          ...c,
        },
      });
    await capacity('csisc-a', 'a', { capacity: '1Gi' });
    await storage.createNamespacedCSIStorageCapacity({
      namespace: NS,
      body: { metadata: { name: 'csisc-other' }, storageClassName: 'other', capacity: '1Ti', nodeTopology: {} },
    });
    await cluster.controllers!.idle();
    assert.equal(
      await selectedNode('cap-claim'),
      undefined,
      "zone a is too small and another class's capacity does not count",
    );
    await capacity('csisc-b', 'b', { capacity: '1Ti', maximumVolumeSize: '8Gi' });
    assert.equal(await waitFor('selected node', () => selectedNode('cap-claim')), 'zone-b-node');
  });

  it('ignores capacity for a driver that does not track it, and honours allowedTopologies', async () => {
    await storage.createCSIDriver({ body: { metadata: { name: 'plain.csi.example.com' }, spec: {} } });
    await storage.createStorageClass({
      body: {
        metadata: { name: 'zoned' },
        provisioner: 'plain.csi.example.com',
        volumeBindingMode: 'WaitForFirstConsumer',
        allowedTopologies: [{ matchLabelExpressions: [{ key: 'topology.example.com/zone', values: ['a'] }] }],
      },
    });
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim('zoned-claim', 'zoned') });
    await core.createNamespacedPod({ namespace: NS, body: consumer('zoned-pod', 'zoned-claim') });
    assert.equal(await waitFor('selected node', () => selectedNode('zoned-claim')), 'zone-a-node');
  });

  it('hasEnoughCapacity: request, driver opt-in, maximumVolumeSize before capacity, topology, class', () => {
    const node: Node = { metadata: { name: 'n', labels: { zone: 'a' } } };
    const cls: StorageClass = { metadata: { name: 'c' }, provisioner: 'd' };
    const pvc = (size?: string): PersistentVolumeClaim => ({
      metadata: { name: 'x' },
      spec: { accessModes: ['ReadWriteOnce'], resources: size ? { requests: { storage: size } } : {} },
    });
    const tracking: CSIDriver = { metadata: { name: 'd' }, spec: { storageCapacity: true } };
    const cap = (c: Partial<CSIStorageCapacity>): CSIStorageCapacity => ({
      metadata: { name: 'k' },
      storageClassName: 'c',
      nodeTopology: { matchLabels: { zone: 'a' } },
      ...c,
    });
    assert.equal(hasEnoughCapacity(pvc('1Gi'), cls, node, undefined, []), true, 'not a CSI driver');
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, { metadata: { name: 'd' }, spec: { storageCapacity: false } }, []),
      true,
    );
    assert.equal(hasEnoughCapacity(pvc(), cls, node, tracking, []), true, 'no request');
    assert.equal(hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, []), false, 'no object');
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({ capacity: '1Gi' })]),
      true,
      'exactly enough',
    );
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({ capacity: '10Gi', maximumVolumeSize: '512Mi' })]),
      false,
    );
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({})]),
      false,
      'neither capacity nor maximumVolumeSize',
    );
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({ capacity: '2Gi', nodeTopology: undefined })]),
      false,
      'no topology: nowhere',
    );
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({ capacity: '2Gi', nodeTopology: {} })]),
      true,
      'empty selector: everywhere',
    );
    assert.equal(
      hasEnoughCapacity(pvc('1Gi'), cls, node, tracking, [cap({ capacity: '2Gi', storageClassName: 'other' })]),
      false,
    );
  });
});

describe('claims with a data source', () => {
  it('reach the external provisioner with dataSource and dataSourceRef mirrored; an unsupported dataSource is dropped', async () => {
    await storage.createStorageClass({ body: { metadata: { name: 'clone' }, provisioner: 'clone.csi.example.com' } });
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: claim('source', 'clone', '1Gi') });
    const fromPvc = await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: claim('cloned', 'clone', '1Gi', {
        dataSource: { kind: 'PersistentVolumeClaim', name: 'source' },
      }),
    });
    assert.deepEqual(JSON.parse(JSON.stringify(fromPvc.spec?.dataSourceRef)), {
      kind: 'PersistentVolumeClaim',
      name: 'source',
    });
    const fromSnapshot = await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: claim('restored', 'clone', '1Gi', {
        dataSourceRef: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap-1' },
      }),
    });
    assert.deepEqual(JSON.parse(JSON.stringify(fromSnapshot.spec?.dataSource)), {
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: 'snap-1',
    });
    const dropped = await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: claim('odd', 'clone', '1Gi', {
        dataSource: { apiGroup: 'example.com', kind: 'Populator', name: 'p' },
      }),
    });
    assert.equal(dropped.spec?.dataSource, undefined);
    assert.equal(dropped.spec?.dataSourceRef, undefined);
    for (const name of ['cloned', 'restored']) {
      const c = await waitFor(`${name} annotated for its provisioner`, async () => {
        const x = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name });
        return x.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'] === 'clone.csi.example.com'
          ? x
          : undefined;
      });
      assert.ok(c.spec?.dataSource && c.spec.dataSourceRef, `${name} keeps its data source`);
      assert.equal(c.status?.phase, 'Pending');
    }
  });

  it('refuses dataSource and dataSourceRef that differ (422)', async () => {
    await assert.rejects(
      core.createNamespacedPersistentVolumeClaim({
        namespace: NS,
        body: claim('mismatch', 'clone', '1Gi', {
          dataSource: { kind: 'PersistentVolumeClaim', name: 'a' },
          dataSourceRef: { kind: 'PersistentVolumeClaim', name: 'b' },
        }),
      }),
      (err: { code?: number; body?: string }) => {
        assert.equal(err.code, 422);
        assert.match(String(err.body), /spec: Invalid value: spec.dataSource: must match dataSourceRef/);
        return true;
      },
    );
  });
});

describe('expand controller and the storage-resizer annotation', () => {
  async function boundClaim(name: string, source: Record<string, unknown>): Promise<void> {
    await storage
      .createStorageClass({
        body: { metadata: { name: `grow-${name}` }, provisioner: 'grow.example.com', allowVolumeExpansion: true },
      })
      .catch(() => undefined);
    await core.createPersistentVolume({
      body: {
        metadata: { name: `pv-${name}` },
        spec: {
          capacity: { storage: '1Gi' },
          accessModes: ['ReadWriteOnce'],
          storageClassName: `grow-${name}`,
          ...source,
        },
      },
    });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: claim(name, `grow-${name}`, '1Gi', { volumeName: `pv-${name}` }),
    });
    await waitFor(
      `${name} bound`,
      async () => (await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name })).status?.phase === 'Bound',
    );
    await core.patchNamespacedPersistentVolumeClaim({
      namespace: NS,
      name,
      body: [{ op: 'replace', path: '/spec/resources/requests/storage', value: '2Gi' }],
    });
  }
  const events = async (name: string) =>
    (await core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.name=${name}` })).items
      .filter((e) => e.reason === 'ExternalExpanding')
      .map((e) => e.message);

  it("names the CSI driver of a migrated in-tree volume on resize, and a native CSI volume's driver", async () => {
    await boundClaim('ebs', { awsElasticBlockStore: { volumeID: 'vol-0123' } });
    await boundClaim('native', { csi: { driver: 'native.csi.example.com', volumeHandle: 'h-1' } });
    const ebs = await waitFor('resizer annotation', async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'ebs' });
      return c.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'] ? c : undefined;
    });
    assert.equal(ebs.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'], 'ebs.csi.aws.com');
    assert.deepEqual(
      await waitFor('ebs event', async () => ((await events('ebs')).length ? events('ebs') : undefined)),
      ['CSI migration enabled for kubernetes.io/aws-ebs; waiting for external resizer to expand the pvc'],
    );
    assert.deepEqual(
      await waitFor('native event', async () => ((await events('native')).length ? events('native') : undefined)),
      ['waiting for an external controller to expand this PVC'],
    );
    const native = await waitFor('native resizer annotation', async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'native' });
      return c.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'] ? c : undefined;
    });
    assert.equal(native.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'], 'native.csi.example.com');
  });

  it("names a native CSI volume's driver once its claim is Bound, before any resize, and nothing for other volumes", async () => {
    await storage.createStorageClass({ body: { metadata: { name: 'plain-csi' }, provisioner: 'plain.example.com' } });
    for (const [name, source] of [
      ['bound-csi', { csi: { driver: 'bound.csi.example.com', volumeHandle: 'h-2' } }],
      ['bound-host', { hostPath: { path: '/tmp/bound-host' } }],
    ] as const) {
      await core.createPersistentVolume({
        body: {
          metadata: { name: `pv-${name}` },
          spec: {
            capacity: { storage: '1Gi' },
            accessModes: ['ReadWriteOnce'],
            storageClassName: 'plain-csi',
            ...source,
          },
        },
      });
      await core.createNamespacedPersistentVolumeClaim({
        namespace: NS,
        body: claim(name, 'plain-csi', '1Gi', { volumeName: `pv-${name}` }),
      });
    }
    const csi = await waitFor('bound csi annotated', async () => {
      const c = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'bound-csi' });
      return c.status?.phase === 'Bound' && c.metadata?.annotations?.['volume.kubernetes.io/storage-resizer']
        ? c
        : undefined;
    });
    assert.equal(csi.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'], 'bound.csi.example.com');
    await waitFor(
      'host bound',
      async () =>
        (await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'bound-host' })).status?.phase ===
        'Bound',
    );
    await cluster.controllers!.idle();
    const host = await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'bound-host' });
    assert.equal(host.metadata?.annotations?.['volume.kubernetes.io/storage-resizer'], undefined);
  });
});
