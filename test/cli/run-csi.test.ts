// `kube-provisioner run csi`: its flags (external-provisioner's names and defaults), and startCsiSidecar against
// the embedded cluster and the stub plugin: one process provisions, resizes (the plugin has EXPAND_VOLUME) and
// publishes CSIStorageCapacity objects; stop() leaves nothing running.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { parseRunCsiArgs } from '../../src/cli/csi-options.ts';
import { controllerOptionsOf, managedByForNode, startCsiSidecar, type CsiSidecar } from '../../src/cli/run-csi.ts';
import { csiStorageCapacities, LABEL_DRIVER_NAME, LABEL_MANAGED_BY } from '../../src/csi/capacity-publisher.ts';
import { csiNodes } from '../../src/csi/kinds.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { leases, nodes, persistentVolumeClaims, pods, storageClasses } from '../../src/runtime/resources.ts';
import { leaseNameFor } from '../../src/controller/options/controller-options.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import type { CSIStorageCapacity } from '../../src/types/storage-objects.ts';
import { StubCsiPlugin } from '../../src/testing/csi-stub-plugin.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';
import { allows, DEPLOY_DIR, loadGrants, usedKeys } from '../reliability/rbac.ts';
import { userAgent } from '../../src/cli/version.ts';

const DRIVER = 'stub.csi.kube-provisioner.io';

describe('run csi flags', () => {
  it("external-provisioner's defaults: /run/csi/socket, 10s timeout, retries 1s..5m, 100 workers, pvc prefix, whole uid, immediate topology", () => {
    const o = parseRunCsiArgs([]);
    assert.equal(o.csiAddress, '/run/csi/socket');
    assert.equal(o.timeoutMs, 10_000);
    assert.equal(o.retryIntervalStartMs, 1_000);
    assert.equal(o.retryIntervalMaxMs, 300_000);
    assert.equal(o.workerThreads, 100);
    assert.equal(o.volumeNamePrefix, 'pvc');
    assert.equal(o.volumeNameUuidLength, -1);
    assert.equal(o.immediateTopology, true);
    assert.equal(o.strictTopology, false);
    assert.equal(o.enableCapacity, false);
    assert.equal(o.capacityPollIntervalMs, 60_000);
    assert.equal(o.capacityOwnerrefLevel, 1);
    assert.equal(o.leaderElection, 'lease');
    assert.equal(o.podNamespace, 'default');
    assert.equal(o.podName, undefined);
    assert.equal(o.preventVolumeModeConversion, true);
    assert.equal(o.snapshotOrphanSweepIntervalMs, 300_000);
    assert.equal(parseRunCsiArgs(['--snapshot-orphan-sweep-interval', '0']).snapshotOrphanSweepIntervalMs, 0);
    assert.deepEqual(
      [o.nodeDeploymentImmediateBinding, o.nodeDeploymentBaseDelayMs, o.nodeDeploymentMaxDelayMs],
      [true, 20_000, 60_000],
    );
  });

  it('every flag of the issue parses, and maps onto the controller options', () => {
    const o = parseRunCsiArgs(
      [
        '--csi-address',
        'unix:///csi/csi.sock',
        '--kubeconfig',
        '/k',
        '--retry-interval-start',
        '2s',
        '--retry-interval-max',
        '1m',
        '--leader-election',
        'per-claim',
        '--health-address',
        ':9808',
        '--metrics-address',
        ':9809',
        '--volume-name-prefix',
        'vol',
        '--volume-name-uuid-length',
        '8',
        '--timeout',
        '30s',
        '--worker-threads',
        '7',
        '--extra-create-metadata',
        '--default-fstype',
        'ext4',
        '--strict-topology',
        '--immediate-topology=false',
        '--capacity-poll-interval',
        '30s',
        '--controller-publish-readonly',
      ],
      { POD_NAMESPACE: 'storage', POD_NAME: 'sidecar-0' },
    );
    assert.equal(o.csiAddress, 'unix:///csi/csi.sock');
    assert.equal(o.kubeconfig, '/k');
    assert.equal(o.leaderElection, 'per-claim');
    assert.equal(o.healthAddress, ':9808');
    assert.equal(o.metricsAddress, ':9809');
    assert.deepEqual([o.volumeNamePrefix, o.volumeNameUuidLength, o.timeoutMs, o.workerThreads], ['vol', 8, 30_000, 7]);
    assert.deepEqual(
      [o.extraCreateMetadata, o.defaultFsType, o.strictTopology, o.immediateTopology, o.controllerPublishReadOnly],
      [true, 'ext4', true, false, true],
    );
    assert.equal(o.capacityPollIntervalMs, 30_000);
    assert.deepEqual([o.podNamespace, o.podName], ['storage', 'sidecar-0']);
    const c = controllerOptionsOf(o);
    assert.deepEqual(c.retry, { backoffBaseMs: 2_000, backoffMaxMs: 60_000, infeasibleDelayMs: 60_000 });
    assert.equal(c.threadiness, 7);
    assert.equal(c.leaderElection?.namespace, 'storage');
  });

  it("--leader-election takes external-provisioner's booleans; --node-deployment needs NODE_NAME and runs without election; its immediate-binding flags and delays", () => {
    assert.equal(parseRunCsiArgs(['--leader-election', 'false']).leaderElection, 'none');
    assert.equal(parseRunCsiArgs(['--leader-election']).leaderElection, 'lease');
    assert.throws(() => parseRunCsiArgs(['--node-deployment']), /NODE_NAME/);
    const o = parseRunCsiArgs(['--node-deployment'], { NODE_NAME: 'n1' });
    assert.deepEqual([o.nodeDeployment, o.nodeName, o.leaderElection], [true, 'n1', 'none']);
    assert.throws(
      () => parseRunCsiArgs(['--node-deployment', '--leader-election', 'lease'], { NODE_NAME: 'n1' }),
      /must be none/,
    );
    assert.throws(() => parseRunCsiArgs(['--enable-capacity', '--leader-election', 'per-claim']), /lease or none/);
    const d = parseRunCsiArgs(
      [
        '--node-deployment',
        '--node-deployment-immediate-binding=false',
        '--node-deployment-base-delay',
        '1s',
        '--node-deployment-max-delay',
        '2s',
        '--prevent-volume-mode-conversion=false',
      ],
      { NODE_NAME: 'n1' },
    );
    assert.deepEqual(
      [d.nodeDeploymentImmediateBinding, d.nodeDeploymentBaseDelayMs, d.nodeDeploymentMaxDelayMs],
      [false, 1_000, 2_000],
    );
    assert.equal(d.preventVolumeModeConversion, false);
    assert.throws(
      () => parseRunCsiArgs(['--node-deployment-base-delay', '2m', '--node-deployment-max-delay', '1m']),
      /longer than --node-deployment-max-delay/,
    );
    assert.equal(managedByForNode('n1'), 'external-provisioner-n1');
    assert.equal(managedByForNode('x'.repeat(80)).length, 63);
  });
});

describe('run csi: one process provisions, resizes and publishes capacity', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let stub: StubCsiPlugin;
  let sidecar: CsiSidecar;
  const registry = new Registry();

  before(async () => {
    cluster = await startCluster({ controllers: true });
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
      qps: 0,
      userAgent: 'run-csi-test',
    });
    stub = await StubCsiPlugin.start({
      pluginCapabilities: ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'],
      controllerCapabilities: ['CREATE_DELETE_VOLUME', 'EXPAND_VOLUME', 'GET_CAPACITY'],
    });
    stub.capacityOf = (segment) => (segment.zone === 'za' ? 10n << 30n : 20n << 30n);
    stub.maximumVolumeSize = 5n << 30n;
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
    // The sidecar's own pod, owned by a StatefulSet: --capacity-ownerref-level 1 makes that the owner.
    await client.create(pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'csi-0',
        namespace: 'default',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'csi', uid: 'ss-uid', controller: true }],
      },
      spec: { containers: [{ name: 'c', image: 'x' }] },
    });
    const options = parseRunCsiArgs(
      [
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--csi-address',
        stub.address,
        '--leader-election',
        'none',
        '--health-address',
        '127.0.0.1:0',
        '--enable-capacity',
        '--capacity-poll-interval',
        '200ms',
        '--worker-threads',
        '4',
      ],
      { POD_NAMESPACE: 'default', POD_NAME: 'csi-0' },
    );
    sidecar = await startCsiSidecar(options, { logger: silentLogger, registry, startupIntervalMs: 10 });
  });
  after(async () => {
    await sidecar?.stop();
    await stub?.stop();
    client?.close();
    await cluster?.stop();
  });

  const sc = (name: string, extra: Partial<StorageClass> = {}): StorageClass => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: DRIVER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    allowVolumeExpansion: true,
    ...extra,
  });
  const ours = () => cluster.store.list('csistoragecapacities', { namespace: 'default' }).items as CSIStorageCapacity[];

  it('the driver name comes from GetPluginInfo; health is served', async () => {
    assert.equal(sidecar.driverName, DRIVER);
    assert.ok(sidecar.healthUrl);
    const res = await fetch(`${sidecar.healthUrl}/healthz`);
    assert.equal(res.status, 200);
  });

  it('provisions a claim, then expands it through ControllerExpandVolume (EXPAND_VOLUME)', async () => {
    await client.create(storageClasses, sc('fast'));
    const c = await client.create(
      persistentVolumeClaims,
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'data', namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast' },
      },
      { namespace: 'default' },
    );
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor(
      'claim Bound',
      () =>
        (cluster.store.get('persistentvolumeclaims', 'default', 'data') as PersistentVolumeClaim | undefined)?.status
          ?.phase === 'Bound',
      30_000,
    );
    const bound = cluster.store.get('persistentvolumeclaims', 'default', 'data') as PersistentVolumeClaim;
    await client.update(
      persistentVolumeClaims,
      { ...bound, spec: { ...bound.spec, resources: { requests: { storage: '2Gi' } } } },
      { namespace: 'default' },
    );
    await waitFor(
      'PV capacity 2Gi',
      () =>
        (cluster.store.get('persistentvolumes', undefined, pvName) as PersistentVolume | undefined)?.spec.capacity
          ?.storage === '2Gi',
      30_000,
    );
    assert.equal(stub.requests('ControllerExpandVolume')[0]?.volumeId, pvName);
  });

  it("capacity: one CSIStorageCapacity per segment x WaitForFirstConsumer class, csisc- names, external-provisioner's labels, maximumVolumeSize, owner", async () => {
    await client.create(
      storageClasses,
      sc('wffc', {
        volumeBindingMode: 'WaitForFirstConsumer',
        parameters: { type: 'ssd', 'csi.storage.k8s.io/fstype': 'ext4' },
      }),
    );
    const objects = await waitFor(
      'two capacity objects',
      () => (ours().filter((o) => o.storageClassName === 'wffc').length === 2 ? ours() : undefined),
      30_000,
    );
    assert.equal(ours().filter((o) => o.storageClassName === 'fast').length, 0, 'no capacity for an Immediate class');
    for (const o of objects) {
      assert.match(o.metadata.name ?? '', /^csisc-/);
      assert.equal(o.metadata.labels?.[LABEL_DRIVER_NAME], DRIVER);
      assert.equal(o.metadata.labels?.[LABEL_MANAGED_BY], 'external-provisioner');
      assert.equal(o.maximumVolumeSize, '5Gi');
      assert.deepEqual(o.metadata.ownerReferences, [
        { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'csi', uid: 'ss-uid', controller: true },
      ]);
    }
    const byZone = Object.fromEntries(objects.map((o) => [o.nodeTopology?.matchLabels?.zone, o.capacity]));
    assert.deepEqual(byZone, { za: '10Gi', zb: '20Gi' });
    const req = stub.requests('GetCapacity').at(-1);
    assert.deepEqual(req?.parameters, { type: 'ssd' }, "the csi.storage.k8s.io/ keys are ours, not the plugin's");
    const gauge = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value;
    assert.equal(await gauge('csistoragecapacities_desired_goal'), 2);
    await waitFor('current gauge', async () => (await gauge('csistoragecapacities_desired_current')) === 2);
  });

  it('capacity: the poll interval picks up a new GetCapacity answer', async () => {
    stub.capacityOf = (segment) => (segment.zone === 'za' ? 3n << 30n : 20n << 30n);
    await waitFor(
      'za at 3Gi',
      () => ours().some((o) => o.nodeTopology?.matchLabels?.zone === 'za' && o.capacity === '3Gi'),
      30_000,
    );
  });

  it('capacity: stale objects are removed (a segment whose CSINode went away, a deleted class)', async () => {
    await client.delete(csiNodes, 'node-b');
    await waitFor('zb object removed', () => !ours().some((o) => o.nodeTopology?.matchLabels?.zone === 'zb'), 30_000);
    await client.delete(storageClasses, 'wffc');
    await waitFor('no capacity objects', () => ours().length === 0, 30_000);
    // An object of ours that nothing wants (left by an earlier instance) is removed too.
    await client.create(
      csiStorageCapacities,
      {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSIStorageCapacity',
        metadata: {
          name: 'csisc-left',
          namespace: 'default',
          labels: { [LABEL_DRIVER_NAME]: DRIVER, [LABEL_MANAGED_BY]: 'external-provisioner' },
        },
        storageClassName: 'gone',
        capacity: '1Gi',
      },
      { namespace: 'default' },
    );
    await waitFor('left-over object removed', () => ours().length === 0, 30_000);
  });
  it('capacity: a standby parks its keys (no GetCapacity, no 5 s recheck) and publishes once it is elected (woken by the election, not a poll)', async () => {
    // Its own class: the stale-objects test deleted the others.
    await client.create(storageClasses, sc('standby-wffc', { volumeBindingMode: 'WaitForFirstConsumer' }));
    const lease = leaseNameFor(DRIVER);
    const now = new Date().toISOString().replace(/\.\d+Z$/, '.000000Z');
    await client.create(
      leases,
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: lease, namespace: 'default' },
        spec: { holderIdentity: 'someone-else', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now },
      },
      { namespace: 'default' },
    );
    const standby = await startCsiSidecar(
      parseRunCsiArgs(
        [
          '--kubeconfig',
          cluster.kubeconfigPath,
          '--csi-address',
          stub.address,
          '--leader-election',
          'lease',
          '--leader-election-lease-duration',
          '2s',
          '--leader-election-renew-deadline',
          '1s',
          '--leader-election-retry-period',
          '100ms',
          '--health-address',
          'off',
          '--enable-capacity',
          '--capacity-poll-interval',
          '1h',
        ],
        { POD_NAMESPACE: 'default' },
      ),
      { logger: silentLogger, registry: new Registry(), startupIntervalMs: 10 },
    );
    try {
      const capacity = standby.capacity!;
      await waitFor(
        'the standby parked its keys',
        () => capacity.desiredKeys().length > 0 && capacity.standbyKeys().length === capacity.desiredKeys().length,
        30_000,
      );
      const keys = capacity.desiredKeys().length;
      assert.equal(standby.controller.isLeader(), false);
      await client.delete(leases, lease, { namespace: 'default' });
      await waitFor('elected', () => standby.controller.isLeader(), 30_000);
      await waitFor('the parked keys went back on the queue', () => capacity.standbyKeys().length === 0, 30_000);
      await waitFor('the elected standby read GetCapacity for its keys', () => capacity.records.size >= keys, 30_000);
    } finally {
      await standby.stop();
      await client.delete(storageClasses, 'standby-wffc');
    }
  });

  it("reads Nodes, CSINodes and VolumeAttachments from informers: more claims list none of them again (external-provisioner's listers)", async () => {
    const reads = () =>
      cluster.audit
        .records()
        .filter(
          (r) =>
            r.client === userAgent('csi') &&
            ['nodes', 'csinodes', 'volumeattachments'].includes(r.resource) &&
            r.verb !== 'watch',
        )
        .reduce((n, r) => n + r.count, 0);
    const names = ['cost-1', 'cost-2', 'cost-3', 'cost-4', 'cost-5'];
    const claimOf = (name: string) =>
      cluster.store.get('persistentvolumeclaims', 'default', name) as PersistentVolumeClaim | undefined;
    // The first claim lets the informers sync; after it, further claims must not read these kinds from the API.
    await client.create(
      persistentVolumeClaims,
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'cost-0', namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'fast' },
      },
      { namespace: 'default' },
    );
    await waitFor('cost-0 Bound', () => claimOf('cost-0')?.status?.phase === 'Bound', 30_000);
    const before = reads();
    for (const name of names) {
      await client.create(
        persistentVolumeClaims,
        {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name, namespace: 'default' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Gi' } },
            storageClassName: 'fast',
          },
        },
        { namespace: 'default' },
      );
    }
    await waitFor('claims Bound', () => names.every((n) => claimOf(n)?.status?.phase === 'Bound'), 30_000);
    for (const name of ['cost-0', ...names])
      await client.delete(persistentVolumeClaims, name, { namespace: 'default' });
    await waitFor(
      'their PVs deleted',
      () =>
        !(cluster.store.list('persistentvolumes').items as PersistentVolume[]).some((v) =>
          v.spec.claimRef?.name?.startsWith('cost-'),
        ),
      30_000,
    );
    assert.equal(
      reads() - before,
      0,
      'GET/LIST of nodes, csinodes or volumeattachments while provisioning and deleting 5 claims',
    );
  });

  it('deploy/csi RBAC grants every (verb, resource) the sidecar used (the audit counter), after a delete too', async () => {
    await client.delete(persistentVolumeClaims, 'data', { namespace: 'default' });
    await waitFor(
      'PV deleted',
      () =>
        !(cluster.store.list('persistentvolumes').items as PersistentVolume[]).some(
          (v) => v.spec.claimRef?.name === 'data',
        ),
      30_000,
    );
    const used = usedKeys(cluster.audit.records(), (c) => c === userAgent('csi'));
    assert.ok(used.has('create persistentvolumes') && used.has('create csistoragecapacities'), [...used].join(', '));
    const grants = loadGrants(`${DEPLOY_DIR}csi`);
    const missing = [...used].filter((key) => !allows(grants, key)).sort();
    assert.deepEqual(missing, [], `used but not granted by deploy/csi RBAC (used: ${[...used].sort().join(', ')})`);
  });
});
