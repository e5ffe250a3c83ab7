// The cluster controllers on an in-process store (no HTTP): binding, release, reclaim, protection, default
// class, the scheduler stand-in and bad input, each driven the way a provisioner and a user would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import { startClusterControllers, type ClusterControllers } from '../../src/cluster/controllers/index.ts';
import type { CoreEvent, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';

function setup(): { store: ClusterStore; ctl: ClusterControllers } {
  const store = new ClusterStore();
  for (const name of ['default', 'ns']) {
    if (!store.get('namespaces', undefined, name))
      store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  }
  const ctl = startClusterControllers(store, { nodeName: 'node-a', resyncMs: 60_000 });
  return { store, ctl };
}
const cls = (name: string, extra: Record<string, unknown> = {}): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name, ...(extra.metadata ?? {}) },
  provisioner: 'example.com/p',
  ...extra,
  ...(extra.metadata ? { metadata: { name, ...(extra.metadata as object) } } : {}),
});
const claim = (name: string, spec: Partial<PersistentVolumeClaim['spec']> = {}): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace: 'ns' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...spec },
});
const volume = (
  name: string,
  spec: Partial<PersistentVolume['spec']> = {},
  meta: Partial<KubeObject['metadata']> = {},
): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name, ...meta },
  spec: {
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    persistentVolumeReclaimPolicy: 'Retain',
    hostPath: { path: `/tmp/${name}` },
    ...spec,
  },
});
const pod = (name: string, claimName: string, spec: Partial<Pod['spec']> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ns' },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }],
    ...spec,
  },
});
const getClaim = (store: ClusterStore, name: string) =>
  store.get('persistentvolumeclaims', 'ns', name) as PersistentVolumeClaim | undefined;
const getVolume = (store: ClusterStore, name: string) =>
  store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
const events = (store: ClusterStore, name: string) =>
  (store.list('events').items as CoreEvent[])
    .filter((e) => e.involvedObject.name === name)
    .map((e) => `${e.type} ${e.reason}`);

/** What an external provisioner does for a claim: a PV named pvc-<uid> with claimRef and provisioned-by. */
function provision(
  store: ClusterStore,
  c: PersistentVolumeClaim,
  policy: 'Delete' | 'Retain' = 'Delete',
): PersistentVolume {
  return store.create(
    'persistentvolumes',
    volume(
      `pvc-${c.metadata.uid}`,
      {
        storageClassName: c.spec.storageClassName ?? '',
        persistentVolumeReclaimPolicy: policy,
        claimRef: {
          kind: 'PersistentVolumeClaim',
          apiVersion: 'v1',
          namespace: 'ns',
          name: c.metadata.name,
          uid: c.metadata.uid,
          resourceVersion: c.metadata.resourceVersion,
        },
      },
      { annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } },
    ),
  ) as PersistentVolume;
}

test('external provisioning: annotations, event, binding with exact annotations, release on claim deletion', async () => {
  const { store, ctl } = setup();
  try {
    store.create('storageclasses', cls('fast'));
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'fast' }));
    await ctl.idle();
    let c = getClaim(store, 'c')!;
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'], 'example.com/p');
    assert.equal(c.metadata.annotations?.['volume.beta.kubernetes.io/storage-provisioner'], 'example.com/p');
    assert.deepEqual(c.metadata.finalizers, ['kubernetes.io/pvc-protection']);
    assert.ok(events(store, 'c').includes('Normal ExternalProvisioning'));

    const pv = provision(store, c);
    await ctl.idle();
    c = getClaim(store, 'c')!;
    const v = getVolume(store, pv.metadata.name!)!;
    assert.equal(c.status?.phase, 'Bound');
    assert.equal(c.spec.volumeName, pv.metadata.name);
    assert.deepEqual(c.status?.capacity, { storage: '1Gi' });
    assert.deepEqual(c.status?.accessModes, ['ReadWriteOnce']);
    assert.equal(c.metadata.annotations?.['pv.kubernetes.io/bind-completed'], 'yes');
    assert.equal(c.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    assert.equal(v.status?.phase, 'Bound');
    assert.equal(
      v.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'],
      undefined,
      'the provisioner bound it, not the controller',
    );
    assert.deepEqual(v.metadata.finalizers, ['kubernetes.io/pv-protection']);

    store.delete('persistentvolumeclaims', 'ns', 'c');
    await ctl.idle();
    assert.equal(getClaim(store, 'c'), undefined, 'no pod uses it: protection finalizer removed');
    assert.equal(getVolume(store, pv.metadata.name!)?.status?.phase, 'Released', 'left to its external provisioner');
    store.delete('persistentvolumes', undefined, pv.metadata.name!);
    await ctl.idle();
    assert.equal(getVolume(store, pv.metadata.name!), undefined, 'Released: pv-protection lets it go');
  } finally {
    await ctl.stop();
  }
});

test('pre-existing PVs: smallest match binds; each mismatching criterion is skipped', async () => {
  const { store, ctl } = setup();
  try {
    store.create(
      'persistentvolumes',
      volume('too-small', { capacity: { storage: '500Mi' }, storageClassName: 'manual' }),
    );
    store.create('persistentvolumes', volume('wrong-class', { storageClassName: 'other' }));
    store.create(
      'persistentvolumes',
      volume('wrong-mode', { storageClassName: 'manual', accessModes: ['ReadOnlyMany'] }),
    );
    store.create('persistentvolumes', volume('block', { storageClassName: 'manual', volumeMode: 'Block' }));
    store.create('persistentvolumes', volume('unlabelled', { storageClassName: 'manual' }));
    store.create(
      'persistentvolumes',
      volume('big', { storageClassName: 'manual', capacity: { storage: '10Gi' } }, { labels: { tier: 'gold' } }),
    );
    store.create(
      'persistentvolumes',
      volume('fit', { storageClassName: 'manual', capacity: { storage: '2Gi' } }, { labels: { tier: 'gold' } }),
    );
    await ctl.idle();
    assert.equal(getVolume(store, 'fit')?.status?.phase, 'Available');
    store.create(
      'persistentvolumeclaims',
      claim('c', { storageClassName: 'manual', selector: { matchLabels: { tier: 'gold' } } }),
    );
    await ctl.idle();
    assert.equal(getClaim(store, 'c')?.spec.volumeName, 'fit');
    assert.equal(getClaim(store, 'c')?.status?.phase, 'Bound');
    assert.deepEqual(getClaim(store, 'c')?.status?.capacity, { storage: '2Gi' });
    const fit = getVolume(store, 'fit')!;
    assert.equal(fit.spec.claimRef?.name, 'c');
    assert.equal(fit.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'], 'yes');
    for (const name of ['too-small', 'wrong-class', 'wrong-mode', 'block', 'unlabelled', 'big']) {
      assert.equal(getVolume(store, name)?.status?.phase, 'Available', name);
    }
    // Without a class the claim gets nothing (no default class) and says so.
    store.create('persistentvolumeclaims', claim('none', { storageClassName: '' }));
    await ctl.idle();
    assert.equal(getClaim(store, 'none')?.status?.phase, 'Pending');
    assert.ok(events(store, 'none').includes('Normal FailedBinding'));
  } finally {
    await ctl.stop();
  }
});

test('default class at create (newest wins) and retroactively; explicit "" kept', async () => {
  const { store, ctl } = setup();
  try {
    store.create('persistentvolumeclaims', claim('early'));
    store.create('persistentvolumeclaims', claim('explicit', { storageClassName: '' }));
    await ctl.idle();
    assert.equal(getClaim(store, 'early')?.spec.storageClassName, undefined);
    const def = { 'storageclass.kubernetes.io/is-default-class': 'true' };
    store.create('storageclasses', cls('std', { metadata: { annotations: def } }));
    await ctl.idle();
    assert.equal(getClaim(store, 'early')?.spec.storageClassName, 'std', 'retroactive default');
    assert.equal(getClaim(store, 'explicit')?.spec.storageClassName, '');
    store.create('persistentvolumeclaims', claim('late'));
    assert.equal(getClaim(store, 'late')?.spec.storageClassName, 'std', 'admission sets it at create');
  } finally {
    await ctl.stop();
  }
});

test('WaitForFirstConsumer: waits, selected-node when a pod uses it, pod bound once Bound, re-pick after removal', async () => {
  const { store, ctl } = setup();
  try {
    store.create('storageclasses', cls('late', { volumeBindingMode: 'WaitForFirstConsumer' }));
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'late' }));
    await ctl.idle();
    let c = getClaim(store, 'c')!;
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/selected-node'], undefined);
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'], undefined);
    assert.ok(events(store, 'c').includes('Normal WaitForFirstConsumer'));

    store.create('pods', pod('p', 'c'));
    await ctl.idle();
    c = getClaim(store, 'c')!;
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-a');
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/storage-provisioner'], 'example.com/p');
    assert.equal((store.get('pods', 'ns', 'p') as Pod).spec.nodeName, undefined, 'not before the claim is Bound');

    // The provisioner asks for rescheduling: the stand-in selects again.
    const { 'volume.kubernetes.io/selected-node': _drop, ...rest } = c.metadata.annotations ?? {};
    store.update('persistentvolumeclaims', { ...c, metadata: { ...c.metadata, annotations: rest } });
    await ctl.idle();
    c = getClaim(store, 'c')!;
    assert.equal(c.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-a');

    provision(store, c);
    await ctl.idle();
    assert.equal(getClaim(store, 'c')?.status?.phase, 'Bound');
    assert.equal((store.get('pods', 'ns', 'p') as Pod).spec.nodeName, 'node-a');
  } finally {
    await ctl.stop();
  }
});

test('scheduler respects nodeSelector, allowedTopologies and static PV node affinity', async () => {
  const { store, ctl } = setup();
  try {
    store.create('nodes', {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-b', labels: { zone: 'b' } },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    });
    store.update(
      'nodes',
      { ...store.get('nodes', undefined, 'node-b')!, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      { subresource: 'status' },
    );
    store.create(
      'storageclasses',
      cls('zonal', {
        volumeBindingMode: 'WaitForFirstConsumer',
        allowedTopologies: [{ matchLabelExpressions: [{ key: 'zone', values: ['b'] }] }],
      }),
    );
    store.create('persistentvolumeclaims', claim('z', { storageClassName: 'zonal' }));
    store.create('pods', pod('pz', 'z'));
    await ctl.idle();
    assert.equal(getClaim(store, 'z')?.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-b');

    store.create('storageclasses', {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'local' },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    store.create(
      'persistentvolumes',
      volume('local-a', {
        storageClassName: 'local',
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-a'] }] },
            ],
          },
        },
      }),
    );
    store.create('persistentvolumeclaims', claim('l', { storageClassName: 'local' }));
    store.create('pods', pod('pl', 'l'));
    await ctl.idle();
    assert.equal(
      getClaim(store, 'l')?.spec.volumeName,
      'local-a',
      'the static local PV is bound through the scheduler',
    );
    assert.equal((store.get('pods', 'ns', 'pl') as Pod).spec.nodeName, 'node-a');

    store.create('storageclasses', cls('late', { volumeBindingMode: 'WaitForFirstConsumer' }));
    store.create('persistentvolumeclaims', claim('s', { storageClassName: 'late' }));
    store.create('pods', pod('ps', 's', { nodeSelector: { zone: 'nowhere' } }));
    store.create('persistentvolumeclaims', claim('t', { storageClassName: 'late' }));
    store.create('pods', pod('pt', 't', { nodeSelector: { zone: 'b' } }));
    await ctl.idle();
    assert.equal(
      getClaim(store, 's')?.metadata.annotations?.['volume.kubernetes.io/selected-node'],
      undefined,
      'no node matches the nodeSelector',
    );
    assert.equal((store.get('pods', 'ns', 'ps') as Pod).spec.nodeName, undefined);
    assert.equal(getClaim(store, 't')?.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-b');
  } finally {
    await ctl.stop();
  }
});

test('a pod created with spec.nodeName: its WaitForFirstConsumer claim gets that node', async () => {
  const { store, ctl } = setup();
  try {
    store.create('nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-z' } });
    store.update(
      'nodes',
      { ...store.get('nodes', undefined, 'node-z')!, status: { conditions: [{ type: 'Ready', status: 'True' }] } },
      { subresource: 'status' },
    );
    store.create('storageclasses', cls('late', { volumeBindingMode: 'WaitForFirstConsumer' }));
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'late' }));
    store.create('pods', pod('pinned', 'c', { nodeName: 'node-z' }));
    await ctl.idle();
    assert.equal(getClaim(store, 'c')?.metadata.annotations?.['volume.kubernetes.io/selected-node'], 'node-z');
    assert.equal((store.get('pods', 'ns', 'pinned') as Pod).spec.nodeName, 'node-z');
  } finally {
    await ctl.stop();
  }
});

test('protection: a claim used by a running pod stays Terminating until the pod finishes; bound PV stays too', async () => {
  const { store, ctl } = setup();
  try {
    store.create('persistentvolumes', volume('v', { storageClassName: 'manual' }));
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'manual' }));
    store.create('pods', pod('p', 'c'));
    await ctl.idle();
    assert.equal(getClaim(store, 'c')?.status?.phase, 'Bound');
    store.delete('persistentvolumes', undefined, 'v');
    store.delete('persistentvolumeclaims', 'ns', 'c');
    await ctl.idle();
    assert.ok(getClaim(store, 'c')?.metadata.deletionTimestamp, 'Terminating while the pod runs');
    assert.ok(getVolume(store, 'v')?.metadata.deletionTimestamp, 'Bound PV Terminating');
    const p = store.get('pods', 'ns', 'p') as Pod;
    store.update('pods', { ...p, status: { phase: 'Succeeded' } }, { subresource: 'status' });
    await ctl.idle();
    assert.equal(getClaim(store, 'c'), undefined);
    assert.equal(getVolume(store, 'v'), undefined, 'Released (Retain) and deleted: protection lets it go');
  } finally {
    await ctl.stop();
  }
});

test('reclaim Delete of a PV no external provisioner owns: the binder deletes it', async () => {
  const { store, ctl } = setup();
  try {
    store.create(
      'persistentvolumes',
      volume('v', { storageClassName: 'manual', persistentVolumeReclaimPolicy: 'Delete' }),
    );
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'manual' }));
    await ctl.idle();
    assert.equal(getVolume(store, 'v')?.status?.phase, 'Bound');
    store.delete('persistentvolumeclaims', 'ns', 'c');
    await ctl.idle();
    assert.equal(getVolume(store, 'v'), undefined);
  } finally {
    await ctl.stop();
  }
});

test('bad input: missing claim, two PVs for one claim, missing class; everything else still binds', async () => {
  const { store, ctl } = setup();
  try {
    store.create('storageclasses', cls('fast'));
    store.create(
      'persistentvolumes',
      volume('orphan', {
        storageClassName: 'fast',
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'ghost', uid: '1234' },
      }),
    );
    store.create('persistentvolumeclaims', claim('nocls', { storageClassName: 'missing' }));
    const c = store.create('persistentvolumeclaims', claim('c', { storageClassName: 'fast' })) as PersistentVolumeClaim;
    await ctl.idle();
    const first = provision(store, getClaim(store, 'c')!);
    await ctl.idle();
    const second = store.create('persistentvolumes', {
      ...volume('dup', {
        storageClassName: 'fast',
        persistentVolumeReclaimPolicy: 'Delete',
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'c', uid: c.metadata.uid },
      }),
      metadata: { name: 'dup', annotations: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' } },
    });
    store.create('persistentvolumeclaims', claim('ok', { storageClassName: 'fast' }));
    await ctl.idle();
    provision(store, getClaim(store, 'ok')!);
    await ctl.idle();

    assert.equal(getVolume(store, 'orphan')?.status?.phase, 'Released');
    assert.deepEqual(events(store, 'orphan'), [], 'kube-controller-manager releases it without an event');
    assert.ok(events(store, 'nocls').includes('Warning ProvisioningFailed'));
    const failed = (store.list('events').items as CoreEvent[]).find(
      (e) => e.involvedObject.name === 'nocls' && e.reason === 'ProvisioningFailed',
    );
    assert.equal(failed?.message, 'storageclass.storage.k8s.io "missing" not found');
    assert.equal(getClaim(store, 'c')?.spec.volumeName, first.metadata.name);
    assert.equal(
      getVolume(store, second.metadata.name!)?.status?.phase,
      'Released',
      'the duplicate goes back to its provisioner',
    );
    assert.deepEqual(events(store, 'dup'), []);
    assert.equal(getClaim(store, 'ok')?.status?.phase, 'Bound');
  } finally {
    await ctl.stop();
  }
});

test('the event correlator forgets a claim once it is Bound, and any object once it is deleted', async () => {
  const { store, ctl } = setup();
  try {
    store.create('storageclasses', cls('fast'));
    for (const name of ['a', 'b']) store.create('persistentvolumeclaims', claim(name, { storageClassName: 'fast' }));
    await ctl.idle();
    assert.equal(ctl.eventsRemembered(), 2, 'ExternalProvisioning of each pending claim');
    provision(store, getClaim(store, 'a')!);
    await ctl.idle();
    assert.equal(getClaim(store, 'a')?.status?.phase, 'Bound');
    assert.equal(ctl.eventsRemembered(), 1, 'the Bound claim is forgotten');
    store.delete('persistentvolumeclaims', 'ns', 'b');
    await ctl.idle();
    assert.equal(ctl.eventsRemembered(), 0, 'the deleted claim is forgotten');
  } finally {
    await ctl.stop();
  }
});

test('resync re-emits ExternalProvisioning as one event with a growing count', async () => {
  const { store, ctl } = setup();
  try {
    store.create('storageclasses', cls('fast'));
    store.create('persistentvolumeclaims', claim('c', { storageClassName: 'fast' }));
    await ctl.idle();
    const count = () =>
      (store.list('events').items as CoreEvent[])
        .filter((e) => e.reason === 'ExternalProvisioning')
        .map((e) => e.count);
    const before = count();
    assert.equal(before.length, 1);
    ctl.resync();
    await ctl.idle();
    assert.deepEqual(count(), [before[0]! + 1]);
  } finally {
    await ctl.stop();
  }
});
