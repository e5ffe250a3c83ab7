// external-provisioner behaviours through `run csi` (startCsiSidecar) against the embedded cluster, which now serves
// the CSI and snapshot kinds: restore from a VolumeSnapshot with the source-protection finalizer, a
// VolumeAttributesClass as mutable_parameters, --strict-topology, --immediate-topology=false and
// --extra-create-metadata, each read from the objects the API holds and the requests the stub plugin received.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { parseRunCsiArgs } from '../../src/cli/csi-options.ts';
import { startCsiSidecar, type CsiSidecar } from '../../src/cli/run-csi.ts';
import { FINALIZER_SNAPSHOT_SOURCE_PROTECTION } from '../../src/csi/content-source.ts';
import { csiNodes, volumeAttributesClasses, volumeSnapshotContents, volumeSnapshots } from '../../src/csi/kinds.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { nodes, persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import type { VolumeSnapshot } from '../../src/types/storage-objects.ts';
import { StubCsiPlugin } from '../../src/testing/csi-stub-plugin.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const DRIVER = 'stub.csi.kube-provisioner.io';

describe('run csi against the embedded cluster: snapshots, VAC, topology flags', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let stub: StubCsiPlugin;
  let sidecar: CsiSidecar;

  before(async () => {
    cluster = await startCluster({ controllers: true });
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
      qps: 0,
      userAgent: 'sidecar-e2e',
    });
    stub = await StubCsiPlugin.start({
      pluginCapabilities: ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'],
      controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CREATE_DELETE_SNAPSHOT', 'MODIFY_VOLUME'],
    });
    for (const [node, zone] of [
      ['node-a', 'za'],
      ['node-b', 'zb'],
    ]) {
      await client.create(nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { zone } } });
      await client.create(csiNodes, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name: node },
        spec: { drivers: [{ name: DRIVER, nodeID: node, topologyKeys: ['zone'] }] },
      });
    }
    for (const c of [storageClass('imm', 'Immediate'), storageClass('wffc', 'WaitForFirstConsumer')])
      await client.create(storageClasses, c);
    const options = parseRunCsiArgs([
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--csi-address',
      stub.address,
      '--leader-election',
      'none',
      '--health-address',
      'off',
      '--worker-threads',
      '4',
      '--strict-topology',
      '--immediate-topology=false',
      '--extra-create-metadata',
      '--timeout',
      '5s',
      '--snapshot-orphan-sweep-interval',
      '200ms',
    ]);
    sidecar = await startCsiSidecar(options, { logger: silentLogger, registry: new Registry(), startupIntervalMs: 10 });
  });
  after(async () => {
    await sidecar?.stop();
    await stub?.stop();
    client?.close();
    await cluster?.stop();
  });

  function storageClass(name: string, mode: 'Immediate' | 'WaitForFirstConsumer'): StorageClass {
    return {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: DRIVER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: mode,
    };
  }
  const claim = (
    name: string,
    className: string,
    spec: Partial<PersistentVolumeClaim['spec']> = {},
    annotations: Record<string, string> = {},
  ): PersistentVolumeClaim => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default', annotations },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: className,
      ...spec,
    },
  });
  const getPVC = (name: string) =>
    cluster.store.get('persistentvolumeclaims', 'default', name) as PersistentVolumeClaim | undefined;
  const getPV = (name: string) =>
    cluster.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
  const createVolumeOf = (uid: string | undefined) =>
    stub.requests('CreateVolume').find((r) => r.name === `pvc-${uid}`);

  it("--strict-topology: a claim with a selected node requests only that node's segment, preferred too", async () => {
    const c = await client.create(
      persistentVolumeClaims,
      claim('strict', 'wffc', {}, { [ANN_SELECTED_NODE]: 'node-b' }),
      { namespace: 'default' },
    );
    await waitFor('strict Bound', () => getPVC('strict')?.status?.phase === 'Bound', 30_000);
    assert.deepEqual(createVolumeOf(c.metadata.uid)?.accessibilityRequirements, {
      requisite: [{ segments: { zone: 'zb' } }],
      preferred: [{ segments: { zone: 'zb' } }],
    });
  });

  it('--immediate-topology=false: an Immediate claim is created with no accessibility requirements', async () => {
    const c = await client.create(persistentVolumeClaims, claim('imm', 'imm'), { namespace: 'default' });
    await waitFor('imm Bound', () => getPVC('imm')?.status?.phase === 'Bound', 30_000);
    assert.equal(createVolumeOf(c.metadata.uid)?.accessibilityRequirements, undefined);
  });

  it("--extra-create-metadata: the claim's and the PV's names reach CreateVolume's parameters", async () => {
    const c = getPVC('imm')!;
    assert.deepEqual(createVolumeOf(c.metadata.uid)?.parameters, {
      'csi.storage.k8s.io/pvc/name': 'imm',
      'csi.storage.k8s.io/pvc/namespace': 'default',
      'csi.storage.k8s.io/pv/name': `pvc-${c.metadata.uid}`,
    });
  });

  it('VolumeAttributesClass (served at v1beta1): its parameters become mutable_parameters, the PV names the class', async () => {
    await client.create(volumeAttributesClasses, {
      apiVersion: 'storage.k8s.io/v1beta1',
      kind: 'VolumeAttributesClass',
      metadata: { name: 'gold' },
      driverName: DRIVER,
      parameters: { iops: '5000' },
    });
    const c = await client.create(persistentVolumeClaims, claim('gold', 'imm', { volumeAttributesClassName: 'gold' }), {
      namespace: 'default',
    });
    await waitFor('gold Bound', () => getPVC('gold')?.status?.phase === 'Bound', 30_000);
    assert.deepEqual(createVolumeOf(c.metadata.uid)?.mutableParameters, { iops: '5000' });
    assert.equal(getPV(`pvc-${c.metadata.uid}`)?.spec.volumeAttributesClassName, 'gold');
  });

  it('getSnapshotSource: a ready VolumeSnapshot becomes snapshot_id; volumesnapshot-as-source-protection holds it during the restore and is taken off after', async () => {
    // A pre-provisioned snapshot: the VolumeSnapshot, then its content bound back to it by uid.
    const snap = await client.create(
      volumeSnapshots,
      {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'snap', namespace: 'default' },
        spec: { source: { volumeSnapshotContentName: 'content-1' } },
      },
      { namespace: 'default' },
    );
    await client.create(volumeSnapshotContents, {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotContent',
      metadata: { name: 'content-1' },
      spec: {
        deletionPolicy: 'Delete',
        driver: DRIVER,
        source: { snapshotHandle: 'snap-handle' },
        volumeSnapshotRef: { name: 'snap', namespace: 'default', uid: snap.metadata.uid ?? '' },
      },
    });
    await client.patch(
      volumeSnapshotContents,
      'content-1',
      { status: { snapshotHandle: 'snap-handle', readyToUse: true, restoreSize: 1 << 30 } },
      { subresource: 'status' },
    );
    await client.patch(
      volumeSnapshots,
      'snap',
      { status: { boundVolumeSnapshotContentName: 'content-1', readyToUse: true, restoreSize: '1Gi' } },
      { namespace: 'default', subresource: 'status' },
    );
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    stub.script('CreateVolume', { after: gate }, { call: stub.count('CreateVolume') + 1 });
    const c = await client.create(
      persistentVolumeClaims,
      claim('restored', 'imm', {
        dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' },
      }),
      { namespace: 'default' },
    );
    const snapshot = () => cluster.store.get('volumesnapshots', 'default', 'snap') as VolumeSnapshot | undefined;
    await waitFor(
      'finalizer on the snapshot while CreateVolume runs',
      () => snapshot()?.metadata.finalizers?.includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION),
      30_000,
    );
    release();
    await waitFor('restored Bound', () => getPVC('restored')?.status?.phase === 'Bound', 30_000);
    assert.deepEqual(createVolumeOf(c.metadata.uid)?.volumeContentSource, { snapshot: { snapshotId: 'snap-handle' } });
    await waitFor(
      'finalizer taken off',
      () => !snapshot()?.metadata.finalizers?.includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION),
      30_000,
    );
  });
  it('--prevent-volume-mode-conversion (default): a Block restore of a Filesystem snapshot is refused until its VolumeSnapshotContent carries allow-volume-mode-change', async () => {
    const snap = await client.create(
      volumeSnapshots,
      {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'fs-snap', namespace: 'default' },
        spec: { source: { volumeSnapshotContentName: 'content-fs' } },
      },
      { namespace: 'default' },
    );
    await client.create(volumeSnapshotContents, {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotContent',
      metadata: { name: 'content-fs' },
      spec: {
        deletionPolicy: 'Delete',
        driver: DRIVER,
        source: { snapshotHandle: 'fs-handle' },
        sourceVolumeMode: 'Filesystem',
        volumeSnapshotRef: { name: 'fs-snap', namespace: 'default', uid: snap.metadata.uid ?? '' },
      },
    });
    await client.patch(
      volumeSnapshotContents,
      'content-fs',
      { status: { snapshotHandle: 'fs-handle', readyToUse: true, restoreSize: 1 << 30 } },
      { subresource: 'status' },
    );
    await client.patch(
      volumeSnapshots,
      'fs-snap',
      { status: { boundVolumeSnapshotContentName: 'content-fs', readyToUse: true, restoreSize: '1Gi' } },
      { namespace: 'default', subresource: 'status' },
    );
    const c = await client.create(
      persistentVolumeClaims,
      claim('as-block', 'imm', {
        volumeMode: 'Block',
        dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'fs-snap' },
      }),
      { namespace: 'default' },
    );
    const refusals = () =>
      (cluster.store.list('events').items as CoreEvent[]).filter(
        (e) =>
          e.involvedObject.name === 'as-block' &&
          /does not have permission to do so\. snapshot\.storage\.kubernetes\.io\/allow-volume-mode-change annotation is not present/.test(
            e.message ?? '',
          ),
      );
    await waitFor('the restore refused with an event', () => refusals().length > 0, 30_000);
    assert.equal(createVolumeOf(c.metadata.uid), undefined, 'no CreateVolume for a refused conversion');
    await client.patch(volumeSnapshotContents, 'content-fs', {
      metadata: { annotations: { 'snapshot.storage.kubernetes.io/allow-volume-mode-change': 'true' } },
    });
    await waitFor('as-block Bound once allowed', () => getPVC('as-block')?.status?.phase === 'Bound', 30_000);
    assert.deepEqual(createVolumeOf(c.metadata.uid)?.volumeContentSource, { snapshot: { snapshotId: 'fs-handle' } });
  });
  it('--snapshot-orphan-sweep-interval (SnapshotFinalizerController): an orphaned volumesnapshot-as-source-protection finalizer is removed; one a Pending restore needs stays', async () => {
    const snapshot = (name: string) =>
      cluster.store.get('volumesnapshots', 'default', name) as VolumeSnapshot | undefined;
    // The restore first: it waits (Pending: its snapshot is not bound to a content), so its snapshot keeps the
    // finalizer. Once the sidecar has reported on it, its claims informers have it.
    await client.create(
      persistentVolumeClaims,
      claim('waits-for-needed', 'imm', {
        dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'needed' },
      }),
      { namespace: 'default' },
    );
    await waitFor('the sidecar saw the restore', () =>
      (cluster.store.list('events').items as CoreEvent[]).some(
        (e) => e.involvedObject.name === 'waits-for-needed' && e.reason === 'ProvisioningFailed',
      ),
    );
    for (const name of ['orphan', 'needed'])
      await client.create(
        volumeSnapshots,
        {
          apiVersion: 'snapshot.storage.k8s.io/v1',
          kind: 'VolumeSnapshot',
          // A sidecar killed between adding the finalizer and removing it left it behind.
          metadata: { name, namespace: 'default', finalizers: [FINALIZER_SNAPSHOT_SOURCE_PROTECTION] },
          spec: { source: { volumeSnapshotContentName: `content-${name}` } },
        },
        { namespace: 'default' },
      );
    await waitFor(
      'the orphaned finalizer removed',
      () => !snapshot('orphan')?.metadata.finalizers?.includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION),
      30_000,
    );
    assert.ok(snapshot('needed')?.metadata.finalizers?.includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION));
    assert.equal(getPVC('waits-for-needed')?.status?.phase, 'Pending');
  });
});
