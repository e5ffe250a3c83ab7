// What the CSI sidecar's own caches keep (issue 24 part 7, sidecar memory with 10,000 volumes): the Node, CSINode and
// VolumeAttachment informers of InformedClusterAccess keep what topology and the delete guard read, and the
// cloning-protection loop's claim cache keeps what its rule reads, not a second whole copy of every claim.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { InformedClusterAccess } from '../../src/csi/cluster-access.ts';
import { cloneProtectionTransform, mayReleaseSource } from '../../src/csi/clone-protection.ts';
import { FINALIZER_CLONE_PROTECTION } from '../../src/csi/content-source.ts';
import { volumeAttachments, type VolumeAttachment } from '../../src/csi/kinds.ts';
import { nodes } from '../../src/runtime/resources.ts';
import type { Node, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

describe('InformedClusterAccess caches', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster.stop();
  });

  it('keep a Node without its status and a VolumeAttachment without status or inline spec', async () => {
    const client = cluster.client;
    const node = await client.create<Node>(nodes, {
      metadata: { name: 'cache-node', labels: { 'topology.example.com/zone': 'z1' } },
      spec: {},
    });
    await client.update<Node>(
      nodes,
      {
        ...node,
        status: {
          images: [{ names: ['registry.example.com/big/image:1'], sizeBytes: 123456789 }],
          volumesInUse: ['kubernetes.io/csi/x^y'],
        },
      } as Node,
      { subresource: 'status' },
    );
    const va = await client.create<VolumeAttachment>(volumeAttachments, {
      metadata: { name: 'cache-va' },
      spec: { attacher: 'hostpath.csi.example.com', nodeName: 'cache-node', source: { persistentVolumeName: 'pv-a' } },
    });
    await client.update<VolumeAttachment>(
      volumeAttachments,
      { ...va, status: { attached: true, attachmentMetadata: { devicePath: '/dev/xvda' } } },
      { subresource: 'status' },
    );

    const access = new InformedClusterAccess(client);
    access.start();
    try {
      const signal = new AbortController().signal;
      // Until synced, reads go to the server (whole objects); wait for the cached ones.
      const cachedNode = await waitFor('the Node from the cache', async () => {
        const n = await access.getNode('cache-node', signal);
        return n && n.status === undefined ? n : undefined;
      });
      assert.deepEqual(cachedNode.metadata.labels, { 'topology.example.com/zone': 'z1' });
      const [cachedVa] = await waitFor('the VolumeAttachment from the cache', async () => {
        const list = await access.volumeAttachmentsOf('pv-a', signal);
        return list.length === 1 && list[0].status === undefined ? list : undefined;
      });
      assert.equal(cachedVa.spec.nodeName, 'cache-node');
      assert.equal(cachedVa.spec.source.persistentVolumeName, 'pv-a');
      assert.equal((cachedVa.metadata as { managedFields?: unknown }).managedFields, undefined);
    } finally {
      await access.stop();
    }
  });
});

describe('cloneProtectionTransform', () => {
  const claim = (over: Partial<PersistentVolumeClaim['metadata']>, phase?: string, source?: string) =>
    ({
      metadata: {
        name: 'c',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '7',
        labels: { app: 'x' },
        annotations: { 'volume.kubernetes.io/storage-provisioner': 'hostpath.csi.example.com' },
        ...over,
      },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        storageClassName: 'csi',
        ...(source ? { dataSource: { kind: 'PersistentVolumeClaim', name: source } } : {}),
      },
      ...(phase ? { status: { phase, capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] } } : {}),
    }) as PersistentVolumeClaim;

  it('keeps identity, deletion state, finalizers, dataSource and phase, and nothing else', () => {
    const full = claim(
      { deletionTimestamp: '2026-12-01T00:00:00Z', finalizers: [FINALIZER_CLONE_PROTECTION] },
      'Pending',
      'src',
    );
    assert.deepEqual(cloneProtectionTransform(structuredClone(full)), {
      metadata: {
        name: 'c',
        namespace: 'ns',
        uid: 'u1',
        resourceVersion: '7',
        deletionTimestamp: '2026-12-01T00:00:00Z',
        finalizers: [FINALIZER_CLONE_PROTECTION],
      },
      spec: { dataSource: { kind: 'PersistentVolumeClaim', name: 'src' } },
      status: { phase: 'Pending' },
    });
  });

  it('gives the rule the same answer as the whole claims', () => {
    const deleting = { deletionTimestamp: '2026-12-01T00:00:00Z', finalizers: [FINALIZER_CLONE_PROTECTION] };
    const cases: Array<[PersistentVolumeClaim, PersistentVolumeClaim[]]> = [
      [claim(deleting), [claim({ name: 'k1' }, 'Pending', 'c')]],
      [claim(deleting), [claim({ name: 'k1' }, 'Bound', 'c')]],
      [claim(deleting), [claim({ name: 'k1' }, undefined, 'c')]],
      [claim({ finalizers: [FINALIZER_CLONE_PROTECTION] }), []],
      [claim({ deletionTimestamp: '2026-12-01T00:00:00Z' }), []],
    ];
    for (const [source, clones] of cases) {
      const slim = cloneProtectionTransform(structuredClone(source));
      const slimClones = clones.map((c) => cloneProtectionTransform(structuredClone(c)));
      assert.equal(mayReleaseSource(slim, slimClones), mayReleaseSource(source, clones));
    }
  });
});
