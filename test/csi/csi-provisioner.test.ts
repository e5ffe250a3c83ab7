// CsiProvisioner against the stub plugin, with the cluster as a map (FakeCluster): the CreateVolume request and the
// PV external-provisioner makes, the reply checks (zero capacity, too small, no content source), the error states,
// clones, snapshots, VolumeAttributesClass, DeleteVolume's secrets and VolumeAttachment guard, external-resizer's
// expansion, and the ListVolumes inventory. Each test is named after the upstream behaviour.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { FINALIZER_CLONE_PROTECTION, FINALIZER_SNAPSHOT_SOURCE_PROTECTION } from '../../src/csi/content-source.ts';
import { CsiProvisioner, type CsiProvisionerStartOptions } from '../../src/csi/csi-provisioner.ts';
import { VolumeInUseError } from '../../src/csi/resize.ts';
import { ANN_DELETION_SECRET_NAME, ANN_DELETION_SECRET_NAMESPACE } from '../../src/csi/secrets.ts';
import {
  IgnoredError,
  InfeasibleError,
  ProvisioningError,
  type ProvisionOptions,
} from '../../src/controller/provisioner.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { StubCsiPlugin, type StubPluginOptions } from '../../src/testing/csi-stub-plugin.ts';
import { FakeCluster } from './fake-cluster.ts';

const DRIVER = 'stub.csi.kube-provisioner.io';
const signal = new AbortController().signal;
const open: Array<{ stop(): Promise<void> } | { close(): void }> = [];
after(async () => {
  for (const o of open) await ('stop' in o ? o.stop() : o.close());
});

async function setup(
  stubOptions: StubPluginOptions = {},
  settings: Partial<CsiProvisionerStartOptions> = {},
  events?: Array<[string, string]>,
) {
  const stub = await StubCsiPlugin.start(stubOptions);
  open.push(stub); // stopped after the suite even if the start below fails (a running server keeps the process alive)
  const cluster = new FakeCluster();
  const p = await CsiProvisioner.start({
    address: stub.address,
    cluster,
    startupIntervalMs: 10,
    identity: 'test-identity',
    timeoutMs: 2000,
    ...settings,
    ...(events ? { events: { event: (_o, _t, reason, message) => events.push([reason, message]) } } : {}),
  });
  open.push(p);
  return { stub, cluster, p };
}

function sc(extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast', uid: 'sc-uid' },
    provisioner: DRIVER,
    reclaimPolicy: 'Delete',
    ...extra,
  };
}
function pvc(
  extra: Partial<PersistentVolumeClaim['spec']> = {},
  meta: Partial<PersistentVolumeClaim['metadata']> = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'data',
      namespace: 'team-a',
      uid: 'c1a1-uid',
      annotations: { 'volume.kubernetes.io/storage-provisioner': DRIVER },
      ...meta,
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: 'fast',
      ...extra,
    },
  };
}
const opts = (claim = pvc(), storageClass = sc(), extra: Partial<ProvisionOptions> = {}): ProvisionOptions => ({
  claim,
  storageClass,
  pvName: `pvc-${claim.metadata.uid}`,
  ...extra,
});
const GiB = 1n << 30n;

describe('CsiProvisioner.Provision', () => {
  it('CreateVolume: name = PV name, required_bytes = request and no limit, stripped parameters, one capability per mode, provisioner secrets', async () => {
    const { stub, cluster, p } = await setup();
    cluster.secret('secrets', 'data-prov', { token: 's3cret' });
    const storageClass = sc({
      parameters: {
        type: 'ssd',
        'csi.storage.k8s.io/fstype': 'xfs',
        'csi.storage.k8s.io/provisioner-secret-name': '${pvc.name}-prov',
        'csi.storage.k8s.io/provisioner-secret-namespace': 'secrets',
        'csi.storage.k8s.io/node-stage-secret-name': 'stage',
        'csi.storage.k8s.io/node-stage-secret-namespace': '${pvc.namespace}',
      },
      mountOptions: ['noatime'],
    });
    await p.provision(opts(pvc({ accessModes: ['ReadWriteOnce', 'ReadOnlyMany'] }), storageClass), signal);
    const [req] = stub.requests('CreateVolume');
    assert.equal(req.name, 'pvc-c1a1-uid');
    assert.deepEqual(req.capacityRange, { requiredBytes: GiB });
    assert.deepEqual(req.parameters, { type: 'ssd' });
    assert.deepEqual(req.secrets, { token: 's3cret' });
    assert.deepEqual(req.volumeCapabilities, [
      { mount: { fsType: 'xfs', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
      { mount: { fsType: 'xfs', mountFlags: ['noatime'] }, accessMode: { mode: 'MULTI_NODE_READER_ONLY' } },
    ]);
  });

  it('the PV: CSI source with handle, context and identity, fstype, secret refs, deletion-secret annotations, reclaim policy, mount options, mode', async () => {
    const { p } = await setup();
    const storageClass = sc({
      parameters: {
        'csi.storage.k8s.io/fstype': 'ext4',
        'csi.storage.k8s.io/node-publish-secret-name': 'np',
        'csi.storage.k8s.io/node-publish-secret-namespace': 'ns1',
      },
      mountOptions: ['ro'],
      reclaimPolicy: 'Retain',
    });
    const { volume } = await p.provision(opts(pvc({ volumeMode: 'Filesystem' }), storageClass), signal);
    assert.equal(volume.metadata.name, 'pvc-c1a1-uid');
    assert.deepEqual(volume.metadata.annotations, {
      [ANN_DELETION_SECRET_NAME]: '',
      [ANN_DELETION_SECRET_NAMESPACE]: '',
    });
    assert.deepEqual(volume.spec.capacity, { storage: '1Gi' });
    assert.deepEqual(volume.spec.csi, {
      driver: DRIVER,
      volumeHandle: 'pvc-c1a1-uid',
      fsType: 'ext4',
      volumeAttributes: { 'storage.kubernetes.io/csiProvisionerIdentity': 'test-identity', 'stub/created-by': 'stub' },
      nodePublishSecretRef: { name: 'np', namespace: 'ns1' },
    });
    assert.equal(volume.spec.persistentVolumeReclaimPolicy, 'Retain');
    assert.deepEqual(volume.spec.mountOptions, ['ro']);
    assert.equal(volume.spec.volumeMode, 'Filesystem');
  });

  it('capacity_bytes 0 in the reply: the PV gets the request', async () => {
    const { p } = await setup({ zeroCapacity: true });
    const { volume } = await p.provision(opts(pvc({ resources: { requests: { storage: '3Gi' } } })), signal);
    assert.deepEqual(volume.spec.capacity, { storage: '3Gi' });
  });

  it('a reply smaller than the request: DeleteVolume with the provisioner secrets, then InBackground', async () => {
    const { stub, p } = await setup();
    stub.script('CreateVolume', { reply: { volume: { volumeId: 'small', capacityBytes: 1024n } } });
    await assert.rejects(
      p.provision(opts(), signal),
      (e: unknown) =>
        e instanceof ProvisioningError && e.state === 'InBackground' && /less than requested/.test(e.message),
    );
    assert.deepEqual(stub.requests('DeleteVolume'), [{ volumeId: 'small' }]);
  });

  it('--extra-create-metadata: CreateVolume parameters get csi.storage.k8s.io/pvc/name, pvc/namespace and pv/name; not without the flag', async () => {
    const { stub, p } = await setup({}, { extraCreateMetadata: true });
    await p.provision(opts(pvc(), sc({ parameters: { type: 'ssd' } })), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].parameters, {
      type: 'ssd',
      'csi.storage.k8s.io/pvc/name': 'data',
      'csi.storage.k8s.io/pvc/namespace': 'team-a',
      'csi.storage.k8s.io/pv/name': 'pvc-c1a1-uid',
    });
    const plain = await setup();
    await plain.p.provision(opts(pvc(), sc({ parameters: { type: 'ssd' } })), signal);
    assert.deepEqual(plain.stub.requests('CreateVolume')[0].parameters, { type: 'ssd' });
  });

  it('--controller-publish-readonly: a claim whose only mode is ReadOnlyMany gets spec.csi.readOnly; other claims, and no flag, do not', async () => {
    const { p } = await setup({}, { controllerPublishReadOnly: true });
    assert.equal(
      (await p.provision(opts(pvc({ accessModes: ['ReadOnlyMany'] })), signal)).volume.spec.csi?.readOnly,
      true,
    );
    assert.notEqual(
      (await p.provision(opts(pvc({ accessModes: ['ReadOnlyMany', 'ReadWriteMany'] })), signal)).volume.spec.csi
        ?.readOnly,
      true,
    );
    assert.notEqual((await p.provision(opts(pvc()), signal)).volume.spec.csi?.readOnly, true);
    const plain = await setup();
    assert.notEqual(
      (await plain.p.provision(opts(pvc({ accessModes: ['ReadOnlyMany'] })), signal)).volume.spec.csi?.readOnly,
      true,
    );
  });

  it('--node-deployment (checkNode): only claims selected for this node; only PVs whose node affinity admits it are deleted or expanded', async () => {
    const { p } = await setup(
      { controllerCapabilities: ['CREATE_DELETE_VOLUME', 'EXPAND_VOLUME'] },
      { node: { name: 'n1', labels: { zone: 'z1' } } },
    );
    assert.equal(p.shouldProvision(pvc({}, { annotations: { 'volume.kubernetes.io/selected-node': 'n1' } })), true);
    assert.equal(p.shouldProvision(pvc({}, { annotations: { 'volume.kubernetes.io/selected-node': 'n2' } })), false);
    assert.equal(p.shouldProvision(pvc()), false, 'Immediate claims are not raced for');
    const pv = (zone: string | undefined): PersistentVolume =>
      ({
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: 'pv' },
        spec: {
          csi: { driver: DRIVER, volumeHandle: 'h' },
          ...(zone
            ? {
                nodeAffinity: {
                  required: {
                    nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: [zone] }] }],
                  },
                },
              }
            : {}),
        },
      }) as PersistentVolume;
    assert.deepEqual(
      [p.shouldDelete(pv('z1')), p.shouldDelete(pv('z2')), p.shouldDelete(pv(undefined))],
      [true, false, false],
    );
    assert.deepEqual([p.shouldExpand(pv('z1')), p.shouldExpand(pv('z2'))], [true, false]);
    const central = await setup();
    assert.deepEqual([central.p.shouldProvision(pvc()), central.p.shouldDelete(pv(undefined))], [true, true]);
  });

  it('Block claims: a block capability and no fstype on the PV', async () => {
    const { stub, p } = await setup({}, { defaultFsType: 'ext4' });
    const { volume } = await p.provision(opts(pvc({ volumeMode: 'Block' })), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].volumeCapabilities, [
      { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    ]);
    assert.equal(volume.spec.csi?.fsType, undefined);
    assert.equal(p.supportsBlock(), true);
  });

  it('checkError through provision(): DEADLINE_EXCEEDED is InBackground, INVALID_ARGUMENT infeasible, RESOURCE_EXHAUSTED without topology Finished', async () => {
    const { stub, p } = await setup({}, { timeoutMs: 1000 }); // the hanging call ends at this deadline
    stub.script('CreateVolume', { hang: true });
    await assert.rejects(
      p.provision(opts(), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'InBackground',
    );
    stub.script('CreateVolume', { error: 'InvalidArgument', message: 'bad type' });
    await assert.rejects(
      p.provision(opts(), signal),
      (e: unknown) => e instanceof InfeasibleError && /bad type/.test(e.message),
    );
    stub.script('CreateVolume', { error: 'ResourceExhausted' });
    await assert.rejects(
      p.provision(opts(pvc(), sc(), { selectedNodeName: 'n1' }), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'Finished',
    );
  });

  it('topology: RESOURCE_EXHAUSTED with a selected node is Reschedule; a missing CSINode is Reschedule before any call; the PV gets node affinity', async () => {
    const { stub, cluster, p } = await setup({
      pluginCapabilities: ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'],
      accessibleTopology: [{ zone: 'z1' }],
    });
    cluster.node('n1', { zone: 'z1' }, ['zone']).node('n2', { zone: 'z2' }, ['zone']);
    const { volume } = await p.provision(opts(pvc(), sc(), { selectedNodeName: 'n1' }), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].accessibilityRequirements, {
      requisite: [{ segments: { zone: 'z1' } }, { segments: { zone: 'z2' } }],
      preferred: [{ segments: { zone: 'z1' } }, { segments: { zone: 'z2' } }],
    });
    assert.deepEqual(volume.spec.nodeAffinity, {
      required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['z1'] }] }] },
    });
    stub.script('CreateVolume', { error: 'ResourceExhausted' });
    await assert.rejects(
      p.provision(opts(pvc(), sc(), { selectedNodeName: 'n2' }), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'Reschedule',
    );
    const calls = stub.count('CreateVolume');
    await assert.rejects(
      p.provision(opts(pvc(), sc(), { selectedNodeName: 'gone' }), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'Reschedule',
    );
    assert.equal(stub.count('CreateVolume'), calls, 'no CreateVolume for a node without CSINode');
  });

  it('an API failure while preparing (secret read) is NoChange; a missing secret too', async () => {
    const { p, cluster } = await setup();
    const storageClass = sc({
      parameters: {
        'csi.storage.k8s.io/provisioner-secret-name': 's',
        'csi.storage.k8s.io/provisioner-secret-namespace': 'n',
      },
    });
    await assert.rejects(
      p.provision(opts(pvc(), storageClass), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'NoChange' && /not found/.test(e.message),
    );
    cluster.failReads = new Error('connection refused');
    await assert.rejects(
      p.provision(opts(pvc(), storageClass), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'NoChange',
    );
  });

  it('VolumeAttributesClass: mutable_parameters when the plugin has MODIFY_VOLUME; refused without it or for another driver', async () => {
    const { stub, cluster, p } = await setup({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'MODIFY_VOLUME'] });
    cluster.vacs.set('gold', {
      apiVersion: 'storage.k8s.io/v1beta1',
      kind: 'VolumeAttributesClass',
      metadata: { name: 'gold' },
      driverName: DRIVER,
      parameters: { iops: '5000' },
    });
    cluster.vacs.set('foreign', {
      apiVersion: 'storage.k8s.io/v1beta1',
      kind: 'VolumeAttributesClass',
      metadata: { name: 'foreign' },
      driverName: 'other.csi',
      parameters: {},
    });
    const { volume } = await p.provision(opts(pvc({ volumeAttributesClassName: 'gold' })), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].mutableParameters, { iops: '5000' });
    assert.equal(volume.spec.volumeAttributesClassName, 'gold');
    await assert.rejects(p.provision(opts(pvc({ volumeAttributesClassName: 'foreign' })), signal), InfeasibleError);
    const plain = await setup();
    await assert.rejects(
      plain.p.provision(opts(pvc({ volumeAttributesClassName: 'gold' })), signal),
      (e: unknown) => e instanceof InfeasibleError && /MODIFY_VOLUME/.test(e.message),
    );
  });

  it('a data source of another kind belongs to a populator: IgnoredError and a Provisioning event', async () => {
    const events: Array<[string, string]> = [];
    const { p } = await setup({}, {}, events);
    await assert.rejects(
      p.provision(opts(pvc({ dataSource: { apiGroup: 'example.com', kind: 'Backup', name: 'b' } })), signal),
      IgnoredError,
    );
    assert.deepEqual(events, [['Provisioning', 'Assuming an external populator will provision the volume']]);
  });
});

describe('CsiProvisioner clones and snapshots (getPVCSource, getSnapshotSource)', () => {
  function sourceObjects(cluster: FakeCluster, extra: { pvMode?: 'Block'; driver?: string; size?: string } = {}) {
    cluster.claims.set('team-a/src', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'src', namespace: 'team-a', uid: 'src-uid' },
      spec: {
        storageClassName: 'fast',
        volumeName: 'pv-src',
        resources: { requests: { storage: extra.size ?? '1Gi' } },
      },
      status: { phase: 'Bound' },
    });
    cluster.volumes.set('pv-src', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-src' },
      spec: {
        csi: { driver: extra.driver ?? DRIVER, volumeHandle: 'handle-src' },
        claimRef: { namespace: 'team-a', name: 'src', uid: 'src-uid' },
        ...(extra.pvMode ? { volumeMode: extra.pvMode } : {}),
      },
      status: { phase: 'Bound' },
    });
  }
  const clone = () => pvc({ dataSource: { kind: 'PersistentVolumeClaim', name: 'src' } });

  it('a PVC source becomes volume_content_source with its handle, after the cloning-protection finalizer is put on the source', async () => {
    const { stub, cluster, p } = await setup({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CLONE_VOLUME'] });
    sourceObjects(cluster);
    await p.provision(opts(clone()), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].volumeContentSource, { volume: { volumeId: 'handle-src' } });
    assert.deepEqual(cluster.finalizerWrites, [
      { op: 'add', kind: 'PersistentVolumeClaim', key: 'team-a/src', finalizer: FINALIZER_CLONE_PROTECTION },
    ]);
  });

  it('refused without CLONE_VOLUME (final); the source must be the same driver, mode, and no larger (NoChange)', async () => {
    const plain = await setup();
    sourceObjects(plain.cluster);
    await assert.rejects(
      plain.p.provision(opts(clone()), signal),
      (e: unknown) => e instanceof InfeasibleError && /CLONE_VOLUME/.test(e.message),
    );
    for (const [extra, want] of [
      [{ driver: 'other' }, /not bound or invalid/],
      [{ pvMode: 'Block' as const }, /same volume mode/],
      [{ size: '2Gi' }, /greater than or equal/],
    ] as const) {
      const { cluster, p } = await setup({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CLONE_VOLUME'] });
      sourceObjects(cluster, extra);
      await assert.rejects(
        p.provision(opts(clone()), signal),
        (e: unknown) => e instanceof ProvisioningError && e.state === 'NoChange' && want.test(e.message),
      );
    }
  });

  it('a reply without content_source: the volume is deleted again and the state is InBackground', async () => {
    const { stub, cluster, p } = await setup({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CLONE_VOLUME'] });
    sourceObjects(cluster);
    stub.script('CreateVolume', { reply: { volume: { volumeId: 'no-source', capacityBytes: GiB } } });
    await assert.rejects(
      p.provision(opts(clone()), signal),
      (e: unknown) =>
        e instanceof ProvisioningError && e.state === 'InBackground' && /content source missing/.test(e.message),
    );
    assert.deepEqual(stub.requests('DeleteVolume'), [{ volumeId: 'no-source' }]);
  });

  it('a ready VolumeSnapshot becomes snapshot_id; the source-protection finalizer is put on, then taken off after the restore', async () => {
    const { stub, cluster, p } = await setup({
      controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CREATE_DELETE_SNAPSHOT'],
    });
    cluster.snapshots.set('team-a/snap', {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'snap', namespace: 'team-a', uid: 'snap-uid' },
      spec: { source: { persistentVolumeClaimName: 'src' } },
      status: { boundVolumeSnapshotContentName: 'content-1', readyToUse: false, restoreSize: '1Gi' },
    });
    cluster.contents.set('content-1', {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotContent',
      metadata: { name: 'content-1' },
      spec: {
        deletionPolicy: 'Delete',
        driver: DRIVER,
        volumeSnapshotRef: { name: 'snap', namespace: 'team-a', uid: 'snap-uid' },
        source: { volumeHandle: 'h' },
      },
      status: { snapshotHandle: 'snap-handle' },
    });
    const restore = pvc({ dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' } });
    await assert.rejects(
      p.provision(opts(restore), signal),
      (e: unknown) => e instanceof ProvisioningError && e.state === 'NoChange' && /not Ready/.test(e.message),
    );
    cluster.snapshots.get('team-a/snap')!.status!.readyToUse = true;
    await p.provision(opts(restore), signal);
    assert.deepEqual(stub.requests('CreateVolume')[0].volumeContentSource, { snapshot: { snapshotId: 'snap-handle' } });
    assert.deepEqual(
      cluster.finalizerWrites.map((w) => `${w.op} ${w.kind} ${w.finalizer}`),
      [
        `add VolumeSnapshot ${FINALIZER_SNAPSHOT_SOURCE_PROTECTION}`,
        `remove VolumeSnapshot ${FINALIZER_SNAPSHOT_SOURCE_PROTECTION}`,
      ],
    );
  });
});

describe('CsiProvisioner.Delete', () => {
  const pv = (annotations: Record<string, string> = {}): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pvc-1', uid: 'pv-uid', annotations },
    spec: {
      csi: { driver: DRIVER, volumeHandle: 'handle-1' },
      storageClassName: 'fast',
      claimRef: { namespace: 'team-a', name: 'data' },
    },
  });

  it("DeleteVolume with the secret named by the PV's deletion-secret annotations", async () => {
    const { stub, cluster, p } = await setup();
    cluster.secret('secrets', 'del', { key: 'v' });
    await p.delete(pv({ [ANN_DELETION_SECRET_NAME]: 'del', [ANN_DELETION_SECRET_NAMESPACE]: 'secrets' }), signal);
    assert.deepEqual(stub.requests('DeleteVolume'), [{ volumeId: 'handle-1', secrets: { key: 'v' } }]);
  });

  it("without the annotations, the secret comes from the class's provisioner secret (templates resolved for the claim)", async () => {
    const { stub, cluster, p } = await setup();
    cluster.secret('team-a', 'data-creds', { k: '1' });
    cluster.classes.set(
      'fast',
      sc({
        parameters: {
          'csi.storage.k8s.io/provisioner-secret-name': '${pvc.name}-creds',
          'csi.storage.k8s.io/provisioner-secret-namespace': '${pvc.namespace}',
        },
      }),
    );
    await p.delete(pv(), signal);
    assert.deepEqual(stub.requests('DeleteVolume'), [{ volumeId: 'handle-1', secrets: { k: '1' } }]);
  });

  it('canDeleteVolume: refused while a VolumeAttachment names the PV (no DeleteVolume)', async () => {
    const { stub, cluster, p } = await setup();
    cluster.attachments.push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'va' },
      spec: { attacher: DRIVER, nodeName: 'n1', source: { persistentVolumeName: 'pvc-1' } },
    });
    await assert.rejects(p.delete(pv(), signal), /still attached to node n1/);
    assert.equal(stub.count('DeleteVolume'), 0);
  });
});

describe('CsiProvisioner.expand (external-resizer)', () => {
  const bound = (extra: Partial<PersistentVolume['spec']> = {}): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: 'pvc-1', uid: 'u' },
    spec: {
      csi: {
        driver: DRIVER,
        volumeHandle: 'pvc-1',
        fsType: 'ext4',
        controllerExpandSecretRef: { name: 'exp', namespace: 'secrets' },
      },
      accessModes: ['ReadWriteOnce'],
      mountOptions: ['noatime'],
      claimRef: { namespace: 'team-a', name: 'data' },
      capacity: { storage: '1Gi' },
      ...extra,
    },
  });
  const expanding = {
    controllerCapabilities: ['CREATE_DELETE_VOLUME', 'EXPAND_VOLUME'] as Array<
      'CREATE_DELETE_VOLUME' | 'EXPAND_VOLUME'
    >,
  };

  it("ControllerExpandVolume with the volume id, required bytes, the controller-expand secret and the PV's capability", async () => {
    const { stub, cluster, p } = await setup(expanding);
    cluster.secret('secrets', 'exp', { x: 'y' });
    await p.provision(opts(pvc({}, { uid: '1' })), signal);
    const result = await p.expand!(bound(), '2Gi', signal);
    assert.deepEqual(result, { capacity: '2Gi', nodeExpansionRequired: false });
    assert.deepEqual(stub.requests('ControllerExpandVolume'), [
      {
        volumeId: 'pvc-1',
        capacityRange: { requiredBytes: 2n * GiB },
        secrets: { x: 'y' },
        volumeCapability: {
          mount: { fsType: 'ext4', mountFlags: ['noatime'] },
          accessMode: { mode: 'SINGLE_NODE_WRITER' },
        },
      },
    ]);
    assert.equal(p.shouldExpand(bound()), true);
    assert.equal(
      p.shouldExpand(bound({ csi: { driver: 'other', volumeHandle: 'x' } })),
      false,
      "CanSupport: only this driver's PVs",
    );
  });

  it('IsInfeasibleError: INVALID_ARGUMENT, OUT_OF_RANGE, NOT_FOUND are InfeasibleError; RESOURCE_EXHAUSTED is retried (a plain error)', async () => {
    const { stub, cluster, p } = await setup(expanding);
    cluster.secret('secrets', 'exp', {});
    for (const code of ['InvalidArgument', 'OutOfRange', 'NotFound'] as const) {
      stub.script('ControllerExpandVolume', { error: code });
      await assert.rejects(p.expand!(bound(), '2Gi', signal), InfeasibleError, code);
    }
    stub.script('ControllerExpandVolume', { error: 'ResourceExhausted' });
    await assert.rejects(
      p.expand!(bound(), '2Gi', signal),
      (e: unknown) => !(e instanceof InfeasibleError) && e instanceof Error,
    );
  });

  it('FAILED_PRECONDITION (in use): no new ControllerExpandVolume while a pod uses the claim; called again once none does', async () => {
    const { stub, cluster, p } = await setup(expanding);
    cluster.secret('secrets', 'exp', {});
    await p.provision(opts(pvc({}, { uid: '1' })), signal);
    stub.script('ControllerExpandVolume', { error: 'FailedPrecondition', message: 'volume is published' });
    cluster.podsUsing.add('team-a/data');
    await assert.rejects(p.expand!(bound(), '2Gi', signal), VolumeInUseError);
    await assert.rejects(p.expand!(bound(), '2Gi', signal), VolumeInUseError);
    assert.equal(stub.count('ControllerExpandVolume'), 1, 'the second attempt waited for the pod');
    cluster.podsUsing.clear();
    assert.equal((await p.expand!(bound(), '2Gi', signal)).capacity, '2Gi');
    assert.equal(stub.count('ControllerExpandVolume'), 2);
  });

  it('a node-only plugin takes the trivial path: no call, the node expands', async () => {
    const { stub, p } = await setup({ volumeExpansion: 'ONLINE' });
    assert.deepEqual(await p.expand!(bound(), '5Gi', signal), { capacity: '5Gi', nodeExpansionRequired: true });
    assert.equal(stub.count('ControllerExpandVolume'), 0);
  });

  it('no expansion hook at all without EXPAND_VOLUME or a VolumeExpansion capability', async () => {
    const { p } = await setup();
    assert.equal(p.expand, undefined);
  });
});

describe('CsiProvisioner leak inventory (ListVolumes)', () => {
  it('lists every page; a handle with a PV is that PV, a handle with our prefix and no PV is reported by its handle, others are left out', async () => {
    const { stub, cluster, p } = await setup({ controllerCapabilities: ['CREATE_DELETE_VOLUME', 'LIST_VOLUMES'] });
    for (const id of ['pvc-a', 'pvc-b', 'foreign-1', 'handle-c'])
      stub.volumes.set(id, { volumeId: id, name: id, capacityBytes: 1n, parameters: {} });
    cluster.volumes.set('pvc-c', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-c' },
      spec: { csi: { driver: DRIVER, volumeHandle: 'handle-c' } },
    });
    cluster.volumes.set('pvc-a', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-a' },
      spec: { csi: { driver: DRIVER, volumeHandle: 'pvc-a' } },
    });
    stub.script('ListVolumes', {
      reply: { entries: [{ volume: { volumeId: 'foreign-1' } }, { volume: { volumeId: 'handle-c' } }], nextToken: '2' },
    });
    const listed = await p.listVolumes!(signal);
    assert.deepEqual(stub.requests('ListVolumes'), [{}, { startingToken: '2' }]);
    assert.deepEqual(listed.map((v) => v.name).sort(), ['pvc-a', 'pvc-b', 'pvc-c']);
    assert.deepEqual(p.controllerOptions().leakInventory, { enabled: true });
  });

  it('no listVolumes hook without LIST_VOLUMES', async () => {
    const { p } = await setup();
    assert.equal(p.listVolumes, undefined);
    assert.equal(p.controllerOptions().leakInventory, undefined);
  });
});
