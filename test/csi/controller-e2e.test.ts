// CSI mode end to end: a ProvisionController with CsiProvisioner's controller options drives the stub plugin over
// its unix socket, against the embedded cluster with its own controllers (PV binder, protection, resize admission).
// The states external-provisioner's checkError gives (in background across the claim's deletion, Reschedule,
// final with backoff, infeasible), the PV lifecycle with secrets, the VolumeAttachment guard, clones with their
// cloning-protection finalizer, expansion, and the ListVolumes leak inventory. CSINode and VolumeAttachment are not
// served by this embedded cluster yet: those reads come from a map (OverlayAccess), everything else is the API.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { CloneProtection } from '../../src/csi/clone-protection.ts';
import { KubeClusterAccess } from '../../src/csi/cluster-access.ts';
import { FINALIZER_CLONE_PROTECTION } from '../../src/csi/content-source.ts';
import type { CSINode, VolumeAttachment } from '../../src/csi/kinds.ts';
import { CsiProvisioner } from '../../src/csi/csi-provisioner.ts';
import { mergeOptions } from '../../src/controller/options/controller-options.ts';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { persistentVolumeClaims, pods, secrets, storageClasses } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { StubCsiPlugin } from '../../src/testing/csi-stub-plugin.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const DRIVER = 'stub.csi.kube-provisioner.io';

/** The API for everything the embedded cluster serves; CSINodes and VolumeAttachments from maps until it serves them. */
class OverlayAccess extends KubeClusterAccess {
  csiNodes = new Map<string, CSINode>();
  attachments: VolumeAttachment[] = [];
  override async getCSINode(name: string) {
    return this.csiNodes.get(name);
  }
  override async listCSINodes() {
    return [...this.csiNodes.values()];
  }
  override async volumeAttachmentsOf(pv: string) {
    return this.attachments.filter((a) => a.spec.source.persistentVolumeName === pv);
  }
}

interface Env {
  cluster: TestCluster;
  client: KubeClient;
  stub: StubCsiPlugin;
  access: OverlayAccess;
  provisioner: CsiProvisioner;
  ctrl: ProvisionController;
  stop(): Promise<void>;
}

async function startEnv(
  stubOptions: Parameters<typeof StubCsiPlugin.start>[0],
  extra: { timeoutMs?: number; leakInventory?: boolean } = {},
): Promise<Env> {
  const cluster = await startCluster({ controllers: true });
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
    qps: 0,
    userAgent: 'csi-e2e',
  });
  const stub = await StubCsiPlugin.start(stubOptions);
  const access = new OverlayAccess(client);
  const registry = new Registry();
  let provisioner: CsiProvisioner;
  try {
    provisioner = await CsiProvisioner.start({
      address: stub.address,
      cluster: access,
      registry,
      timeoutMs: extra.timeoutMs ?? 5000,
      startupIntervalMs: 10,
      logger: silentLogger,
    });
  } catch (err) {
    // Nothing may keep the test process alive after a failed start.
    await stub.stop();
    client.close();
    await cluster.stop();
    throw err;
  }
  const ctrl = new ProvisionController(client, provisioner.driverName, provisioner, {
    ...mergeOptions(provisioner.controllerOptions(), {
      leaderElection: { mode: 'none' },
      threadiness: 4,
      ...(extra.leakInventory ? { leakInventory: { enabled: true, gracePeriodMs: 0, intervalMs: 3_600_000 } } : {}),
    }),
    logger: silentLogger,
    registry,
  });
  const stopped = new AbortController();
  const clones = new CloneProtection({ client, cluster: access, logger: silentLogger });
  const running = [ctrl.run(stopped.signal), clones.run(stopped.signal)];
  return {
    cluster,
    client,
    stub,
    access,
    provisioner,
    ctrl,
    stop: async () => {
      stopped.abort();
      await Promise.all(running);
      provisioner.close();
      await stub.stop();
      client.close();
      await cluster.stop();
    },
  };
}

function storageClass(name: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: DRIVER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    ...extra,
  };
}
function claim(
  name: string,
  className: string,
  spec: Partial<PersistentVolumeClaim['spec']> = {},
  annotations: Record<string, string> = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default', annotations },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Gi' } },
      storageClassName: className,
      ...spec,
    },
  };
}
const getPV = (e: Env, name: string) =>
  e.cluster.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
const getPVC = (e: Env, name: string) =>
  e.cluster.store.get('persistentvolumeclaims', 'default', name) as PersistentVolumeClaim | undefined;
const events = (e: Env, name: string) =>
  (e.cluster.store.list('events').items as CoreEvent[]).filter((ev) => ev.involvedObject.name === name);
const createClaim = (e: Env, c: PersistentVolumeClaim) =>
  e.client.create(persistentVolumeClaims, c, { namespace: 'default' });
const deleteClaim = (e: Env, name: string) => e.client.delete(persistentVolumeClaims, name, { namespace: 'default' });

describe('CSI mode through ProvisionController: checkError states', () => {
  let e: Env;
  before(async () => {
    // The deadline is short for the hanging call of the first test, long enough for a loaded machine's other calls.
    e = await startEnv(
      { pluginCapabilities: ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS'] },
      { timeoutMs: 1500 },
    );
    for (const sc of [storageClass('std'), storageClass('wffc', { volumeBindingMode: 'WaitForFirstConsumer' })])
      await e.client.create(storageClasses, sc);
    // Topology for every test of this suite: two nodes, zone keys on their CSINodes.
    for (const [node, zone] of [
      ['node-a', 'za'],
      ['node-b', 'zb'],
    ]) {
      e.access.csiNodes.set(node, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name: node },
        spec: { drivers: [{ name: DRIVER, nodeID: node, topologyKeys: ['zone'] }] },
      });
      e.cluster.store.create('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { zone } } });
    }
  });
  after(() => e?.stop());

  it('checkError: DEADLINE_EXCEEDED is in background: the same name is retried after the claim is deleted, then deleted', async () => {
    const c = await createClaim(e, claim('slow', 'std'));
    const name = `pvc-${c.metadata.uid}`;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // First call: no answer until the 1.5 s deadline. Second call: held until the claim is gone, then created.
    e.stub.script('CreateVolume', { hang: true }, { call: e.stub.count('CreateVolume') + 1 });
    e.stub.script('CreateVolume', { after: gate }, { call: e.stub.count('CreateVolume') + 2 });
    await waitFor('the claim in progress after DEADLINE_EXCEEDED', () =>
      e.ctrl.claimsInProgress().includes(c.metadata.uid ?? ''),
    );
    await waitFor(
      'the second CreateVolume',
      () => e.stub.requests('CreateVolume').filter((r) => r.name === name).length >= 2,
    );
    await deleteClaim(e, 'slow');
    await waitFor('claim gone', () => !getPVC(e, 'slow'));
    release();
    await waitFor(
      'DeleteVolume of the volume created for the deleted claim',
      () => e.stub.requests('DeleteVolume').some((r) => r.volumeId === name),
      20_000,
    );
    await waitFor('PV gone', () => !getPV(e, name));
    assert.ok(
      e.stub.requests('CreateVolume').filter((r) => r.name === name).length >= 2,
      'CreateVolume asked again with the same name',
    );
    assert.equal(e.stub.volumes.has(name), false, 'nothing leaked in the plugin');
  });

  it('checkError: RESOURCE_EXHAUSTED with a selected node is Reschedule: selected-node is removed', async () => {
    e.stub.script('CreateVolume', { error: 'ResourceExhausted', message: 'zone za is full' });
    await createClaim(e, claim('full', 'wffc', {}, { [ANN_SELECTED_NODE]: 'node-a' }));
    await waitFor(
      'selected-node removed',
      () => getPVC(e, 'full')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
    );
    const req = e.stub.requests('CreateVolume').at(-1);
    assert.deepEqual(req?.accessibilityRequirements, {
      requisite: [{ segments: { zone: 'za' } }, { segments: { zone: 'zb' } }],
      preferred: [{ segments: { zone: 'za' } }, { segments: { zone: 'zb' } }],
    });
  });

  it('a missing CSINode for the selected node is Reschedule (external-provisioner #1438), with no CreateVolume', async () => {
    const before = e.stub.count('CreateVolume');
    await createClaim(e, claim('nocsinode', 'wffc', {}, { [ANN_SELECTED_NODE]: 'node-gone' }));
    await waitFor(
      'selected-node removed',
      () => getPVC(e, 'nocsinode')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
    );
    assert.equal(e.stub.count('CreateVolume'), before);
  });

  it('checkError: a final code (INTERNAL) is retried with backoff from --retry-interval-start, with a ProvisioningFailed event', async () => {
    e.stub.script('CreateVolume', { error: 'Internal', message: 'backend hiccup' });
    const c = await createClaim(e, claim('hiccup', 'std'));
    const pv = await waitFor('PV after the retry', () => getPV(e, `pvc-${c.metadata.uid}`), 20_000);
    assert.equal(pv.spec.csi?.volumeHandle, `pvc-${c.metadata.uid}`);
    assert.ok(
      events(e, 'hiccup').some((ev) => ev.reason === 'ProvisioningFailed' && /backend hiccup/.test(ev.message ?? '')),
    );
    assert.equal(e.ctrl.options.retry.backoffBaseMs, 1000);
  });

  it('INVALID_ARGUMENT is infeasible: "Retries will be delayed", and no new call until the claim changes', async () => {
    e.stub.script('CreateVolume', { error: 'InvalidArgument', message: 'unsupported type' });
    const c = await createClaim(e, claim('invalid', 'std'));
    const name = `pvc-${c.metadata.uid}`;
    await waitFor('infeasible event', () =>
      events(e, 'invalid').some((ev) => /Retries will be delayed/.test(ev.message ?? '')),
    );
    const calls = () => e.stub.requests('CreateVolume').filter((r) => r.name === name).length;
    assert.equal(calls(), 1);
    const current = getPVC(e, 'invalid') as PersistentVolumeClaim;
    await e.client.update(
      persistentVolumeClaims,
      { ...current, metadata: { ...current.metadata, labels: { fixed: 'yes' } } },
      { namespace: 'default' },
    );
    await waitFor('PV once the claim changed', () => getPV(e, name));
    assert.equal(calls(), 2);
  });
});

describe('CSI mode through ProvisionController: volumes', () => {
  let e: Env;
  before(async () => {
    e = await startEnv(
      { controllerCapabilities: ['CREATE_DELETE_VOLUME', 'CLONE_VOLUME', 'EXPAND_VOLUME', 'LIST_VOLUMES'] },
      { leakInventory: true },
    );
    await e.client.create(secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'default-creds', namespace: 'default' },
      data: { key: Buffer.from('v').toString('base64') },
    });
    await e.client.create(
      storageClasses,
      storageClass('secret', {
        allowVolumeExpansion: true,
        parameters: {
          'csi.storage.k8s.io/provisioner-secret-name': '${pvc.namespace}-creds',
          'csi.storage.k8s.io/provisioner-secret-namespace': '${pvc.namespace}',
          'csi.storage.k8s.io/controller-expand-secret-name': 'default-creds',
          'csi.storage.k8s.io/controller-expand-secret-namespace': 'default',
        },
      }),
    );
  });
  after(() => e?.stop());

  it('Provision then Delete: secrets into CreateVolume, through the deletion-secret annotations into DeleteVolume; refused while a VolumeAttachment names the PV', async () => {
    const c = await createClaim(e, claim('data', 'secret'));
    const name = `pvc-${c.metadata.uid}`;
    await waitFor('claim Bound', () => getPVC(e, 'data')?.status?.phase === 'Bound');
    assert.deepEqual(e.stub.requests('CreateVolume').find((r) => r.name === name)?.secrets, { key: 'v' });
    const pv = getPV(e, name) as PersistentVolume;
    assert.equal(pv.metadata.annotations?.['volume.kubernetes.io/provisioner-deletion-secret-name'], 'default-creds');
    assert.deepEqual(pv.spec.csi?.controllerExpandSecretRef, { name: 'default-creds', namespace: 'default' });
    e.access.attachments.push({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: 'va-1' },
      spec: { attacher: DRIVER, nodeName: 'node-a', source: { persistentVolumeName: name } },
    });
    await deleteClaim(e, 'data');
    await waitFor('VolumeFailedDelete while attached', () =>
      events(e, name).some(
        (ev) => ev.reason === 'VolumeFailedDelete' && /still attached to node node-a/.test(ev.message ?? ''),
      ),
    );
    assert.equal(e.stub.requests('DeleteVolume').filter((r) => r.volumeId === name).length, 0);
    e.access.attachments.length = 0;
    await waitFor('PV deleted once detached', () => !getPV(e, name), 20_000);
    assert.deepEqual(e.stub.requests('DeleteVolume').find((r) => r.volumeId === name)?.secrets, { key: 'v' });
  });

  it('expansion through ControllerExpandVolume with the expand secret; the claim gets the new capacity', async () => {
    const c = await createClaim(e, claim('grow', 'secret'));
    await waitFor('claim Bound', () => getPVC(e, 'grow')?.status?.phase === 'Bound');
    const current = getPVC(e, 'grow') as PersistentVolumeClaim;
    await e.client.update(
      persistentVolumeClaims,
      { ...current, spec: { ...current.spec, resources: { requests: { storage: '2Gi' } } } },
      { namespace: 'default' },
    );
    await waitFor('claim capacity 2Gi', () => getPVC(e, 'grow')?.status?.capacity?.storage === '2Gi', 20_000);
    const req = e.stub.requests('ControllerExpandVolume').find((r) => r.volumeId === `pvc-${c.metadata.uid}`);
    assert.deepEqual(req?.secrets, { key: 'v' });
    assert.deepEqual(req?.capacityRange, { requiredBytes: 2n << 30n });
    assert.equal(getPV(e, `pvc-${c.metadata.uid}`)?.spec.capacity?.storage, '2Gi');
  });

  it('expansion: INVALID_ARGUMENT marks the claim ControllerResizeInfeasible', async () => {
    await createClaim(e, claim('nogrow', 'secret'));
    await waitFor('claim Bound', () => getPVC(e, 'nogrow')?.status?.phase === 'Bound');
    e.stub.script('ControllerExpandVolume', { error: 'InvalidArgument', message: 'too big' });
    const current = getPVC(e, 'nogrow') as PersistentVolumeClaim;
    await e.client.update(
      persistentVolumeClaims,
      { ...current, spec: { ...current.spec, resources: { requests: { storage: '9Gi' } } } },
      { namespace: 'default' },
    );
    await waitFor(
      'ControllerResizeInfeasible',
      () => getPVC(e, 'nogrow')?.status?.allocatedResourceStatuses?.storage === 'ControllerResizeInfeasible',
      20_000,
    );
  });

  it('expansion: FAILED_PRECONDITION means in use: no new ControllerExpandVolume while a pod uses the claim, expanded once it is gone', async () => {
    const c = await createClaim(e, claim('busy', 'secret'));
    const name = `pvc-${c.metadata.uid}`;
    await waitFor('claim Bound', () => getPVC(e, 'busy')?.status?.phase === 'Bound');
    await e.client.create(
      pods,
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'user', namespace: 'default' },
        spec: {
          containers: [{ name: 'c', image: 'busybox' }],
          volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'busy' } }],
        },
      },
      { namespace: 'default' },
    );
    e.stub.script('ControllerExpandVolume', {
      error: 'FailedPrecondition',
      message: 'volume is published and the plugin expands offline',
    });
    const current = getPVC(e, 'busy') as PersistentVolumeClaim;
    await e.client.update(
      persistentVolumeClaims,
      { ...current, spec: { ...current.spec, resources: { requests: { storage: '3Gi' } } } },
      { namespace: 'default' },
    );
    const expandCalls = () => e.stub.requests('ControllerExpandVolume').filter((r) => r.volumeId === name).length;
    await waitFor(
      'a retry refused without calling the plugin',
      () =>
        events(e, 'busy').some((ev) => ev.reason === 'VolumeResizeFailed' && /currently in-use/.test(ev.message ?? '')),
      20_000,
    );
    assert.equal(expandCalls(), 1, 'only the first attempt reached the plugin');
    await e.client.delete(pods, 'user', { namespace: 'default' });
    await waitFor(
      'claim capacity 3Gi once the pod is gone',
      () => getPVC(e, 'busy')?.status?.capacity?.storage === '3Gi',
      20_000,
    );
    assert.equal(expandCalls(), 2);
  });

  it('clone: volume_content_source from the source PVC; cloning-protection holds the source until no clone is Pending', async () => {
    const src = await createClaim(e, claim('src', 'secret'));
    await waitFor('source Bound', () => getPVC(e, 'src')?.status?.phase === 'Bound');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    e.stub.script('CreateVolume', { after: gate });
    const cl = await createClaim(
      e,
      claim('copy', 'secret', { dataSource: { kind: 'PersistentVolumeClaim', name: 'src' } }),
    );
    await waitFor('finalizer on the source', () =>
      getPVC(e, 'src')?.metadata.finalizers?.includes(FINALIZER_CLONE_PROTECTION),
    );
    await deleteClaim(e, 'src');
    await waitFor('source Terminating', () => getPVC(e, 'src')?.metadata.deletionTimestamp !== undefined);
    assert.ok(getPVC(e, 'src'), 'held while the clone is Pending');
    release();
    await waitFor('clone Bound', () => getPVC(e, 'copy')?.status?.phase === 'Bound', 20_000);
    await waitFor('source gone', () => !getPVC(e, 'src'), 20_000);
    const req = e.stub.requests('CreateVolume').find((r) => r.name === `pvc-${cl.metadata.uid}`);
    assert.deepEqual(req?.volumeContentSource, { volume: { volumeId: `pvc-${src.metadata.uid}` } });
  });

  it('leak inventory: a plugin volume with our prefix and no PV is reported (never deleted by default)', async () => {
    e.stub.volumes.set('pvc-orphan', { volumeId: 'pvc-orphan', name: 'pvc-orphan', capacityBytes: 1n, parameters: {} });
    e.stub.volumes.set('not-ours', { volumeId: 'not-ours', name: 'not-ours', capacityBytes: 1n, parameters: {} });
    const report = await e.ctrl.takeLeakInventory();
    assert.deepEqual(report?.leaked, ['pvc-orphan']);
    assert.deepEqual(report?.deleted, []);
    assert.ok(e.stub.volumes.has('pvc-orphan'));
  });
});
