// The cluster controllers seen through @kubernetes/client-node over real HTTPS (startCluster), with a tiny
// external provisioner written here: it provisions claims annotated for it (for WaitForFirstConsumer claims
// only once a node is selected) and deletes the Released PVs it owns, as sig-storage-lib does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, StorageV1Api, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { localNodeName } from '../../src/cluster/controllers/index.ts';
import { waitFor } from '../support/wait.ts';

const PROVISIONER = 'example.com/test-provisioner';
let cluster: TestCluster;
let core: CoreV1Api;
let storage: StorageV1Api;

/** The test's provisioner: one pass over claims and volumes. */
async function provisionerPass(api: CoreV1Api, opts: { deleteReleased: boolean }): Promise<void> {
  const claims = await api.listPersistentVolumeClaimForAllNamespaces();
  const classes = new Map((await storage.listStorageClass()).items.map((c) => [c.metadata?.name, c]));
  for (const c of claims.items) {
    const ann = c.metadata?.annotations ?? {};
    if (c.spec?.volumeName || ann['volume.kubernetes.io/storage-provisioner'] !== PROVISIONER) continue;
    const cls = classes.get(c.spec?.storageClassName ?? '');
    if (cls?.volumeBindingMode === 'WaitForFirstConsumer' && !ann['volume.kubernetes.io/selected-node']) continue;
    const name = `pvc-${c.metadata?.uid}`;
    try {
      await api.createPersistentVolume({
        body: {
          metadata: { name, annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
          spec: {
            capacity: { storage: c.spec?.resources?.requests?.storage ?? '1Gi' },
            accessModes: c.spec?.accessModes,
            storageClassName: c.spec?.storageClassName,
            persistentVolumeReclaimPolicy: cls?.reclaimPolicy ?? 'Delete',
            hostPath: { path: `/tmp/${name}` },
            claimRef: {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              namespace: c.metadata?.namespace,
              name: c.metadata?.name,
              uid: c.metadata?.uid,
              resourceVersion: c.metadata?.resourceVersion,
            },
          },
        },
      });
    } catch {
      // already provisioned in an earlier pass
    }
  }
  if (!opts.deleteReleased) return;
  for (const pv of (await api.listPersistentVolume()).items) {
    if (
      pv.status?.phase === 'Released' &&
      pv.spec?.persistentVolumeReclaimPolicy === 'Delete' &&
      pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'] === PROVISIONER &&
      !pv.metadata.deletionTimestamp
    ) {
      await api.deletePersistentVolume({ name: pv.metadata.name! });
    }
  }
}

function claimBody(name: string, storageClassName?: string): V1PersistentVolumeClaim {
  return {
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName },
  };
}

async function eventsFor(
  namespace: string,
  name: string,
): Promise<Array<{ reason?: string; type?: string; source?: string }>> {
  const list = await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.map((e) => ({ reason: e.reason, type: e.type, source: e.source?.component }));
}

before(async () => {
  cluster = await startCluster({ controllers: { resyncMs: 500 } });
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  storage = cluster.kubeConfig.makeApiClient(StorageV1Api);
  await storage.createStorageClass({
    body: { metadata: { name: 'ext' }, provisioner: PROVISIONER, reclaimPolicy: 'Delete' },
  });
  await storage.createStorageClass({
    body: { metadata: { name: 'wffc' }, provisioner: PROVISIONER, volumeBindingMode: 'WaitForFirstConsumer' },
  });
});
after(async () => {
  await cluster?.stop();
});

test('a node for this machine exists, Ready, with the hostname label', async () => {
  const node = await core.readNode({ name: localNodeName() });
  assert.equal(node.metadata?.labels?.['kubernetes.io/hostname'], localNodeName());
  assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
});

test('external provisioning end to end: annotations, event, binding, release, deletion', async () => {
  await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claimBody('ext-claim', 'ext') });
  const annotated = await waitFor('storage-provisioner annotations', async () => {
    const c = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'ext-claim' });
    return c.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner'] ? c : undefined;
  });
  assert.equal(annotated.metadata?.annotations?.['volume.beta.kubernetes.io/storage-provisioner'], PROVISIONER);
  const evs = await waitFor('ExternalProvisioning event', async () => {
    const e = await eventsFor('default', 'ext-claim');
    return e.some((x) => x.reason === 'ExternalProvisioning') ? e : undefined;
  });
  assert.deepEqual(
    evs.find((e) => e.reason === 'ExternalProvisioning'),
    { reason: 'ExternalProvisioning', type: 'Normal', source: 'persistentvolume-controller' },
  );

  await provisionerPass(core, { deleteReleased: false });
  const bound = await waitFor('claim Bound', async () => {
    const c = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'ext-claim' });
    return c.status?.phase === 'Bound' ? c : undefined;
  });
  const pvName = `pvc-${annotated.metadata?.uid}`;
  assert.equal(bound.spec?.volumeName, pvName);
  assert.deepEqual(bound.metadata?.annotations, {
    'pv.kubernetes.io/bind-completed': 'yes',
    'pv.kubernetes.io/bound-by-controller': 'yes',
    'volume.beta.kubernetes.io/storage-provisioner': PROVISIONER,
    'volume.kubernetes.io/storage-provisioner': PROVISIONER,
  });
  assert.equal(bound.status?.capacity?.storage, '1Gi');
  assert.deepEqual(bound.status?.accessModes, ['ReadWriteOnce']);
  const pv = await core.readPersistentVolume({ name: pvName });
  assert.equal(pv.status?.phase, 'Bound');
  assert.deepEqual(pv.metadata?.annotations, { 'pv.kubernetes.io/provisioned-by': PROVISIONER });
  assert.deepEqual(pv.metadata?.finalizers, ['kubernetes.io/pv-protection']);

  await core.deleteNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'ext-claim' });
  await waitFor(
    'PV Released',
    async () => (await core.readPersistentVolume({ name: pvName })).status?.phase === 'Released',
  );
  await provisionerPass(core, { deleteReleased: true });
  await waitFor(
    'PV gone',
    async () => !(await core.listPersistentVolume()).items.some((v) => v.metadata?.name === pvName),
  );
});

test('pre-existing PV: the matching one binds, a mismatching one stays Available', async () => {
  const pv = (name: string, storageClassName: string, storageSize: string) =>
    core.createPersistentVolume({
      body: {
        metadata: { name },
        spec: {
          capacity: { storage: storageSize },
          accessModes: ['ReadWriteOnce'],
          storageClassName,
          hostPath: { path: `/tmp/${name}` },
        },
      },
    });
  await pv('static-other-class', 'other', '5Gi');
  await pv('static-too-small', 'manual', '100Mi');
  await pv('static-ok', 'manual', '2Gi');
  await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claimBody('static-claim', 'manual') });
  const c = await waitFor('static claim Bound', async () => {
    const x = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'static-claim' });
    return x.status?.phase === 'Bound' ? x : undefined;
  });
  assert.equal(c.spec?.volumeName, 'static-ok');
  assert.equal(c.status?.capacity?.storage, '2Gi');
  for (const name of ['static-other-class', 'static-too-small']) {
    assert.equal((await core.readPersistentVolume({ name })).status?.phase, 'Available', name);
  }
  assert.equal(
    (await core.readPersistentVolume({ name: 'static-ok' })).metadata?.annotations?.[
      'pv.kubernetes.io/bound-by-controller'
    ],
    'yes',
  );
});

test('default class: set at create on a claim without class, an explicit "" is kept', async () => {
  await storage.createStorageClass({
    body: {
      metadata: { name: 'dflt', annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: PROVISIONER,
    },
  });
  try {
    const created = await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: claimBody('no-class'),
    });
    assert.equal(created.spec?.storageClassName, 'dflt');
    const explicit = await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: claimBody('empty-class', ''),
    });
    assert.equal(explicit.spec?.storageClassName, '');
  } finally {
    await storage.deleteStorageClass({ name: 'dflt' });
  }
});

test('WaitForFirstConsumer: waits for a pod, then selected-node, provisioning, and the pod is bound to the node', async () => {
  await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claimBody('late', 'wffc') });
  await waitFor('WaitForFirstConsumer event', async () =>
    (await eventsFor('default', 'late')).some((e) => e.reason === 'WaitForFirstConsumer'),
  );
  await provisionerPass(core, { deleteReleased: false });
  let c = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'late' });
  assert.equal(c.metadata?.annotations?.['volume.kubernetes.io/selected-node'], undefined);
  assert.equal(c.spec?.volumeName, undefined, 'nothing provisioned before a consumer exists');

  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'consumer' },
      spec: {
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'late' } }],
      },
    },
  });
  c = await waitFor('selected-node', async () => {
    const x = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'late' });
    return x.metadata?.annotations?.['volume.kubernetes.io/selected-node'] ? x : undefined;
  });
  assert.equal(c.metadata?.annotations?.['volume.kubernetes.io/selected-node'], localNodeName());
  const pod = await waitFor('pod bound to the node', async () => {
    // The binder annotates the claim for the provisioner right after selected-node appears: keep provisioning.
    await provisionerPass(core, { deleteReleased: false });
    const p = await core.readNamespacedPod({ namespace: 'default', name: 'consumer' });
    return p.spec?.nodeName ? p : undefined;
  });
  assert.equal(pod.spec?.nodeName, localNodeName());
  assert.equal(
    (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'late' })).status?.phase,
    'Bound',
  );
});

test('protection: a claim in use stays Terminating until its pod is gone', async () => {
  await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claimBody('used', 'ext') });
  await core.createNamespacedPod({
    namespace: 'default',
    body: {
      metadata: { name: 'user' },
      spec: {
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'used' } }],
      },
    },
  });
  await core.deleteNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'used' });
  const terminating = await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'used' });
  assert.ok(terminating.metadata?.deletionTimestamp);
  assert.deepEqual(terminating.metadata?.finalizers, ['kubernetes.io/pvc-protection']);
  // After a resync has been worked off, it is still there: the pod holds it.
  cluster.controllers!.resync();
  await cluster.controllers!.idle();
  assert.ok(
    (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'used' })).metadata
      ?.deletionTimestamp,
  );
  await core.deleteNamespacedPod({ namespace: 'default', name: 'user' });
  await waitFor(
    'claim gone',
    async () =>
      !(await core.listNamespacedPersistentVolumeClaim({ namespace: 'default' })).items.some(
        (x) => x.metadata?.name === 'used',
      ),
  );
});

test('bad input: a claim of a missing class gets ProvisioningFailed and others still bind', async () => {
  await core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: claimBody('ghost-class', 'does-not-exist'),
  });
  await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claimBody('fine', 'ext') });
  await waitFor('ProvisioningFailed', async () =>
    (await eventsFor('default', 'ghost-class')).some((e) => e.reason === 'ProvisioningFailed' && e.type === 'Warning'),
  );
  await waitFor(
    'annotated',
    async () =>
      (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'fine' })).metadata?.annotations?.[
        'volume.kubernetes.io/storage-provisioner'
      ] === PROVISIONER,
  );
  await provisionerPass(core, { deleteReleased: false });
  await waitFor(
    'fine Bound',
    async () =>
      (await core.readNamespacedPersistentVolumeClaim({ namespace: 'default', name: 'fine' })).status?.phase ===
      'Bound',
  );
});
