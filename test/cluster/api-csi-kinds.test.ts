// The CSI kinds (storage.k8s.io/v1 CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment; v1beta1
// VolumeAttributesClass) and the snapshot kinds (snapshot.storage.k8s.io/v1, served as their CRDs define them)
// through @kubernetes/client-node: create, get, list, watch, update, patch and delete each, kube's 1.32 defaults
// and strategies (CSIDriver defaults and generation, VolumeAttachment status, CRD generation and status), and
// one 422 per kind with the cause kube-apiserver gives.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  StorageV1Api,
  StorageV1beta1Api,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { collectWatch, raw, type RawResponse } from './api-harness.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
interface Cause {
  reason: string;
  field: string;
  message: string;
}

const NS = 'csi-kinds';
const SNAP = { group: 'snapshot.storage.k8s.io', version: 'v1' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let cluster: TestCluster;
let storage: StorageV1Api;
let storageBeta: StorageV1beta1Api;
let custom: CustomObjectsApi;

before(async () => {
  cluster = await startCluster();
  storage = cluster.kubeConfig.makeApiClient(StorageV1Api);
  storageBeta = cluster.kubeConfig.makeApiClient(StorageV1beta1Api);
  custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  const ns = await raw(cluster, 'POST', '/api/v1/namespaces', { body: JSON.stringify({ metadata: { name: NS } }) });
  assert.equal(ns.status, 201, ns.text);
});
after(async () => {
  await cluster?.stop();
});

/** One kind's verbs through client-node, and the edits the round trip makes. */
interface KindCase {
  /** Collection path, for the watch. */
  path: string;
  create(): Promise<Obj>;
  get(): Promise<Obj>;
  list(): Promise<{ items: Obj[] }>;
  replace(o: Obj): Promise<Obj>;
  patch(body: Obj): Promise<Obj>;
  del(): Promise<unknown>;
  /** An allowed change for the update. */
  edit(o: Obj): void;
  /** A merge patch, and what it changes. */
  mergePatch: Obj;
  patched(o: Obj): void;
}

/** Runs create/get/list/watch/update/patch/delete for one kind and checks the watch saw every step. */
async function roundTrip(c: KindCase): Promise<Obj> {
  const watch = await collectWatch(cluster.kubeConfig, c.path);
  try {
    const created = await c.create();
    const name = created.metadata.name as string;
    assert.ok(created.metadata.uid);
    assert.equal((await c.get()).metadata.uid, created.metadata.uid);
    assert.ok((await c.list()).items.some((o) => o.metadata.name === name));
    const current = await c.get();
    c.edit(current);
    const updated = await c.replace(current);
    assert.notEqual(updated.metadata.resourceVersion, created.metadata.resourceVersion);
    const patched = await c.patch(c.mergePatch);
    c.patched(patched);
    await c.del();
    await watch.until((evs) => evs.filter((e) => e.object.metadata?.name === name).length >= 4);
    assert.deepEqual(
      watch.events.filter((e) => e.object.metadata?.name === name).map((e) => e.type),
      ['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED'],
    );
    return created;
  } finally {
    watch.stop();
  }
}

function assertInvalid(res: RawResponse, kind: string, field: string, reason: string, message: string | RegExp): void {
  assert.equal(res.status, 422, res.text);
  const status = res.json<{ reason: string; message: string; details: { kind: string; causes: Cause[] } }>();
  assert.equal(status.reason, 'Invalid');
  assert.equal(status.details.kind, kind);
  const hit = status.details.causes.find((c) => c.field === field && c.reason === reason);
  assert.ok(hit, `no ${reason} at ${field}: ${JSON.stringify(status.details.causes)}`);
  if (typeof message === 'string') assert.equal(hit.message, message);
  else assert.match(hit.message, message);
}

/** client-node's model instance as plain JSON (unset fields dropped). */
const plain = (o: unknown): unknown => JSON.parse(JSON.stringify(o));
const post = (path: string, body: Obj) => raw(cluster, 'POST', path, { body: JSON.stringify(body) });

describe('storage.k8s.io/v1 CSIDriver', () => {
  it('round-trips with 1.32 defaults; a change to what kubelet acts on is a new generation', async () => {
    const name = 'hostpath.csi.k8s.io';
    const created = await roundTrip({
      path: '/apis/storage.k8s.io/v1/csidrivers',
      create: () => storage.createCSIDriver({ body: { metadata: { name }, spec: {} } }),
      get: () => storage.readCSIDriver({ name }),
      list: () => storage.listCSIDriver(),
      replace: (o) => storage.replaceCSIDriver({ name, body: o as never }),
      patch: (body) => storage.patchCSIDriver({ name, body }, merge),
      del: () => storage.deleteCSIDriver({ name }),
      edit: (o) => (o.spec.podInfoOnMount = true),
      mergePatch: { spec: { requiresRepublish: true } },
      patched: (o) => {
        assert.equal(o.spec.requiresRepublish, true);
        assert.equal(o.metadata.generation, 1);
      },
    });
    assert.deepEqual(plain(created.spec), {
      attachRequired: true,
      podInfoOnMount: false,
      volumeLifecycleModes: ['Persistent'],
      storageCapacity: false,
      fsGroupPolicy: 'ReadWriteOnceWithFSType',
      requiresRepublish: false,
      seLinuxMount: false,
    });
    assert.equal(created.metadata.generation, undefined);
  });

  it('refuses a bad name, a short token and a change of attachRequired (422)', async () => {
    assertInvalid(
      await post('/apis/storage.k8s.io/v1/csidrivers', { metadata: { name: 'Bad_Driver' }, spec: {} }),
      'CSIDriver',
      'metadata.name',
      'FieldValueInvalid',
      /^Invalid value: "Bad_Driver": a lowercase RFC 1123 subdomain/,
    );
    assertInvalid(
      await post('/apis/storage.k8s.io/v1/csidrivers', {
        metadata: { name: 'x.example.com' },
        spec: { tokenRequests: [{ audience: 'a', expirationSeconds: 60 }] },
      }),
      'CSIDriver',
      'spec.tokenRequests[0].expirationSeconds',
      'FieldValueInvalid',
      'Invalid value: 60: may not specify a duration less than 10 minutes',
    );
    await storage.createCSIDriver({ body: { metadata: { name: 'fixed.example.com' }, spec: {} } });
    const res = await raw(cluster, 'PATCH', '/apis/storage.k8s.io/v1/csidrivers/fixed.example.com', {
      body: JSON.stringify({ spec: { attachRequired: false } }),
      contentType: 'application/merge-patch+json',
    });
    assertInvalid(
      res,
      'CSIDriver',
      'spec.attachedRequired',
      'FieldValueInvalid',
      'Invalid value: false: field is immutable',
    );
  });
});

describe('storage.k8s.io/v1 CSINode', () => {
  const node = (drivers: Obj[]) => ({ metadata: { name: 'node-a' }, spec: { drivers } }) as never;
  it('round-trips; a new driver may be added, and a strategic merge patch merges drivers by name', async () => {
    await roundTrip({
      path: '/apis/storage.k8s.io/v1/csinodes',
      create: () =>
        storage.createCSINode({ body: node([{ name: 'a.csi.io', nodeID: 'n-a', topologyKeys: ['topology.a/zone'] }]) }),
      get: () => storage.readCSINode({ name: 'node-a' }),
      list: () => storage.listCSINode(),
      replace: (o) => storage.replaceCSINode({ name: 'node-a', body: o as never }),
      patch: async (body) => {
        const res = await raw(cluster, 'PATCH', '/apis/storage.k8s.io/v1/csinodes/node-a', {
          body: JSON.stringify(body),
          contentType: 'application/strategic-merge-patch+json',
        });
        assert.equal(res.status, 200, res.text);
        return res.json<Obj>();
      },
      del: () => storage.deleteCSINode({ name: 'node-a' }),
      edit: (o) => o.spec.drivers.push({ name: 'b.csi.io', nodeID: 'n-b' }),
      mergePatch: { spec: { drivers: [{ name: 'c.csi.io', nodeID: 'n-c' }] } },
      patched: (o) => {
        assert.deepEqual(
          o.spec.drivers.map((d: Obj) => d.name),
          ['c.csi.io', 'a.csi.io', 'b.csi.io'],
        );
        assert.equal(o.spec.drivers[1].topologyKeys[0], 'topology.a/zone');
        assert.equal(o.spec.drivers[2].topologyKeys, null);
      },
    });
  });

  it('refuses duplicate drivers and topology keys, and a change to a registered driver (422)', async () => {
    assertInvalid(
      await post(
        '/apis/storage.k8s.io/v1/csinodes',
        node([
          { name: 'a.csi.io', nodeID: 'x' },
          { name: 'a.csi.io', nodeID: 'y' },
        ]),
      ),
      'CSINode',
      'spec.drivers[1].name',
      'FieldValueDuplicate',
      'Duplicate value: "a.csi.io"',
    );
    assertInvalid(
      await post(
        '/apis/storage.k8s.io/v1/csinodes',
        node([{ name: 'a.csi.io', nodeID: 'x', topologyKeys: ['k', 'k'] }]),
      ),
      'CSINode',
      'spec.drivers[0]',
      'FieldValueDuplicate',
      'Duplicate value: "k"',
    );
    assertInvalid(
      await post('/apis/storage.k8s.io/v1/csinodes', node([{ name: 'a.csi.io' }])),
      'CSINode',
      'spec.drivers[0].nodeID',
      'FieldValueRequired',
      'Required value',
    );
    await storage.createCSINode({
      body: { metadata: { name: 'node-b' }, spec: { drivers: [{ name: 'a.csi.io', nodeID: 'x' }] } },
    });
    const res = await raw(cluster, 'PUT', '/apis/storage.k8s.io/v1/csinodes/node-b', {
      body: JSON.stringify({
        metadata: { name: 'node-b' },
        spec: { drivers: [{ name: 'a.csi.io', nodeID: 'changed' }] },
      }),
    });
    assertInvalid(res, 'CSINode', 'spec.drivers', 'FieldValueInvalid', /field is immutable$/);
  });
});

describe('storage.k8s.io/v1 CSIStorageCapacity', () => {
  const name = 'csisc-abc';
  it('round-trips with canonical quantities; storageClassName and nodeTopology are immutable', async () => {
    await roundTrip({
      path: `/apis/storage.k8s.io/v1/namespaces/${NS}/csistoragecapacities`,
      create: () =>
        storage.createNamespacedCSIStorageCapacity({
          namespace: NS,
          body: {
            metadata: { name },
            storageClassName: 'fast',
            nodeTopology: { matchLabels: { zone: 'a' } },
            capacity: '1024Mi',
          },
        }),
      get: () => storage.readNamespacedCSIStorageCapacity({ name, namespace: NS }),
      list: () => storage.listNamespacedCSIStorageCapacity({ namespace: NS }),
      replace: (o) => storage.replaceNamespacedCSIStorageCapacity({ name, namespace: NS, body: o as never }),
      patch: (body) => storage.patchNamespacedCSIStorageCapacity({ name, namespace: NS, body }, merge),
      del: () => storage.deleteNamespacedCSIStorageCapacity({ name, namespace: NS }),
      edit: (o) => (o.maximumVolumeSize = '512Mi'),
      mergePatch: { capacity: '2048Mi' },
      patched: (o) => assert.equal(o.capacity, '2Gi'),
    });
    const path = `/apis/storage.k8s.io/v1/namespaces/${NS}/csistoragecapacities`;
    assert.equal((await post(path, { metadata: { name: 'csisc-x' }, storageClassName: 'fast' })).status, 201);
    const res = await raw(cluster, 'PATCH', `${path}/csisc-x`, {
      body: JSON.stringify({ storageClassName: 'slow' }),
      contentType: 'application/merge-patch+json',
    });
    assertInvalid(
      res,
      'CSIStorageCapacity',
      'storageClassName',
      'FieldValueInvalid',
      'Invalid value: "slow": field is immutable',
    );
  });

  it('refuses a missing storage class and a negative capacity (422)', async () => {
    const path = `/apis/storage.k8s.io/v1/namespaces/${NS}/csistoragecapacities`;
    assertInvalid(
      await post(path, { metadata: { name: 'csisc-y' } }),
      'CSIStorageCapacity',
      'storageClassName',
      'FieldValueInvalid',
      /^Invalid value: "": a lowercase RFC 1123 subdomain/,
    );
    assertInvalid(
      await post(path, { metadata: { name: 'csisc-z' }, storageClassName: 'fast', capacity: '-1Gi' }),
      'CSIStorageCapacity',
      'capacity',
      'FieldValueInvalid',
      'Invalid value: "-1Gi": must be greater than or equal to 0',
    );
  });
});

describe('storage.k8s.io/v1 VolumeAttachment', () => {
  const name = 'csi-0123abcd';
  const body = (extra: Obj = {}) => ({
    metadata: { name },
    spec: { attacher: 'hostpath.csi.k8s.io', nodeName: 'node-a', source: { persistentVolumeName: 'pvc-1' } },
    ...extra,
  });
  it('round-trips; client status is dropped on create and written through /status only', async () => {
    const created = await roundTrip({
      path: '/apis/storage.k8s.io/v1/volumeattachments',
      create: () => storage.createVolumeAttachment({ body: body({ status: { attached: true } }) }),
      get: () => storage.readVolumeAttachment({ name }),
      list: () => storage.listVolumeAttachment(),
      replace: (o) =>
        storage.replaceVolumeAttachmentStatus({
          name,
          body: { ...o, status: { attached: true, attachmentMetadata: { devicePath: '/dev/x' } } } as never,
        }),
      patch: (b) => storage.patchVolumeAttachment({ name, body: b }, merge),
      del: () => storage.deleteVolumeAttachment({ name }),
      edit: () => undefined,
      mergePatch: { metadata: { labels: { seen: 'yes' } }, status: { attached: false } },
      patched: (o) => {
        assert.equal(o.metadata.labels.seen, 'yes');
        assert.equal(o.status.attached, true, 'the main resource ignores status');
      },
    });
    assert.deepEqual(plain(created.status), { attached: false });
  });

  it('refuses a missing source, a bad attacher and a spec change (422)', async () => {
    assertInvalid(
      await post('/apis/storage.k8s.io/v1/volumeattachments', {
        metadata: { name: 'va-1' },
        spec: { attacher: 'a.csi.io', nodeName: 'n', source: {} },
      }),
      'VolumeAttachment',
      'spec.source',
      'FieldValueRequired',
      'Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName',
    );
    assertInvalid(
      await post(
        '/apis/storage.k8s.io/v1/volumeattachments',
        body({ metadata: { name: 'va-2' }, spec: { ...body().spec, attacher: 'Not_A_Driver' } }),
      ),
      'VolumeAttachment',
      'spec.attacher',
      'FieldValueInvalid',
      /^Invalid value: "Not_A_Driver": a lowercase RFC 1123 subdomain/,
    );
    await storage.createVolumeAttachment({ body: body({ metadata: { name: 'va-3' } }) });
    const res = await raw(cluster, 'PATCH', '/apis/storage.k8s.io/v1/volumeattachments/va-3', {
      body: JSON.stringify({ spec: { nodeName: 'node-b' } }),
      contentType: 'application/merge-patch+json',
    });
    assertInvalid(res, 'VolumeAttachment', 'spec', 'FieldValueInvalid', /field is immutable$/);
  });
});

describe('storage.k8s.io/v1beta1 VolumeAttributesClass', () => {
  it('is served at v1beta1, as in 1.32, and round-trips', async () => {
    const name = 'gold';
    await roundTrip({
      path: '/apis/storage.k8s.io/v1beta1/volumeattributesclasses',
      create: () =>
        storageBeta.createVolumeAttributesClass({
          body: { metadata: { name }, driverName: 'hostpath.csi.k8s.io', parameters: { iops: '1000' } },
        }),
      get: () => storageBeta.readVolumeAttributesClass({ name }),
      list: () => storageBeta.listVolumeAttributesClass(),
      replace: (o) =>
        storageBeta.replaceVolumeAttributesClass({
          name,
          body: { ...o, metadata: { ...o.metadata, labels: { tier: 'gold' } } } as never,
        }),
      patch: (body) => storageBeta.patchVolumeAttributesClass({ name, body }, merge),
      del: () => storageBeta.deleteVolumeAttributesClass({ name }),
      edit: () => undefined,
      mergePatch: { metadata: { annotations: { note: 'x' } } },
      patched: (o) => assert.equal(o.metadata.annotations.note, 'x'),
    });
    const group = await raw(cluster, 'GET', '/apis/storage.k8s.io');
    assert.deepEqual(
      group
        .json<{ preferredVersion: { version: string }; versions: Array<{ version: string }> }>()
        .versions.map((v) => v.version),
      ['v1', 'v1beta1'],
    );
    assert.equal((await raw(cluster, 'GET', '/apis/storage.k8s.io/v1/volumeattributesclasses')).status, 404);
  });

  it('refuses no parameters and a parameter change (422)', async () => {
    assertInvalid(
      await post('/apis/storage.k8s.io/v1beta1/volumeattributesclasses', {
        metadata: { name: 'empty' },
        driverName: 'a.csi.io',
      }),
      'VolumeAttributesClass',
      'parameters',
      'FieldValueRequired',
      'Required value: must contain at least one key/value pair',
    );
    await storageBeta.createVolumeAttributesClass({
      body: { metadata: { name: 'silver' }, driverName: 'a.csi.io', parameters: { iops: '1' } },
    });
    const res = await raw(cluster, 'PATCH', '/apis/storage.k8s.io/v1beta1/volumeattributesclasses/silver', {
      body: JSON.stringify({ parameters: { iops: '2' } }),
      contentType: 'application/merge-patch+json',
    });
    assertInvalid(
      res,
      'VolumeAttributesClass',
      'parameters',
      'FieldValueForbidden',
      'Forbidden: updates to parameters are forbidden.',
    );
  });
});

describe('snapshot.storage.k8s.io/v1 (the external-snapshotter CRDs)', () => {
  it('VolumeSnapshotClass round-trips through CustomObjectsApi with CRD generations', async () => {
    const name = 'csi-snap';
    const args = { ...SNAP, plural: 'volumesnapshotclasses' };
    const created = await roundTrip({
      path: '/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses',
      create: () =>
        custom.createClusterCustomObject({
          ...args,
          body: {
            apiVersion: 'snapshot.storage.k8s.io/v1',
            kind: 'VolumeSnapshotClass',
            metadata: { name },
            driver: 'hostpath.csi.k8s.io',
            deletionPolicy: 'Delete',
          },
        }),
      get: () => custom.getClusterCustomObject({ ...args, name }),
      list: () => custom.listClusterCustomObject(args),
      replace: (o) => custom.replaceClusterCustomObject({ ...args, name, body: o as never }),
      patch: (body) => custom.patchClusterCustomObject({ ...args, name, body }, merge),
      del: () => custom.deleteClusterCustomObject({ ...args, name }),
      edit: (o) => (o.parameters = { a: 'b' }),
      mergePatch: { metadata: { labels: { x: 'y' } } },
      patched: (o) => assert.equal(o.metadata.generation, 2, 'metadata changes keep the generation'),
    });
    assert.equal(created.metadata.generation, 1);
  });

  it('VolumeSnapshot round-trips; status only through /status; the generation counts spec changes', async () => {
    const name = 'snap-1';
    const args = { ...SNAP, plural: 'volumesnapshots', namespace: NS };
    const created = await roundTrip({
      path: `/apis/snapshot.storage.k8s.io/v1/namespaces/${NS}/volumesnapshots`,
      create: () =>
        custom.createNamespacedCustomObject({
          ...args,
          body: {
            apiVersion: 'snapshot.storage.k8s.io/v1',
            kind: 'VolumeSnapshot',
            metadata: { name },
            spec: { source: { persistentVolumeClaimName: 'data' } },
            status: { readyToUse: true },
          },
        }),
      get: () => custom.getNamespacedCustomObject({ ...args, name }),
      list: () => custom.listNamespacedCustomObject(args),
      replace: (o) =>
        custom.replaceNamespacedCustomObjectStatus({
          ...args,
          name,
          body: {
            ...o,
            status: { readyToUse: true, restoreSize: '1Gi', boundVolumeSnapshotContentName: 'snapcontent-1' },
          },
        }),
      patch: (body) => custom.patchNamespacedCustomObject({ ...args, name, body }, merge),
      del: () => custom.deleteNamespacedCustomObject({ ...args, name }),
      edit: () => undefined,
      mergePatch: { spec: { volumeSnapshotClassName: 'csi-snap' } },
      patched: (o) => {
        assert.equal(o.metadata.generation, 2);
        assert.equal(o.status.readyToUse, true);
      },
    });
    assert.equal(created.status, undefined, 'status is dropped on create');
    assert.equal(created.metadata.generation, 1);
  });

  it('VolumeSnapshotContent round-trips', async () => {
    const name = 'snapcontent-1';
    const args = { ...SNAP, plural: 'volumesnapshotcontents' };
    await roundTrip({
      path: '/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents',
      create: () =>
        custom.createClusterCustomObject({
          ...args,
          body: {
            apiVersion: 'snapshot.storage.k8s.io/v1',
            kind: 'VolumeSnapshotContent',
            metadata: { name },
            spec: {
              deletionPolicy: 'Delete',
              driver: 'hostpath.csi.k8s.io',
              source: { volumeHandle: 'vol-1' },
              volumeSnapshotRef: { name: 'snap-1', namespace: NS },
            },
          },
        }),
      get: () => custom.getClusterCustomObject({ ...args, name }),
      list: () => custom.listClusterCustomObject(args),
      replace: (o) =>
        custom.replaceClusterCustomObjectStatus({
          ...args,
          name,
          body: { ...o, status: { readyToUse: true, restoreSize: 1073741824, snapshotHandle: 'snap-9' } },
        }),
      patch: (body) => custom.patchClusterCustomObject({ ...args, name, body }, merge),
      del: () => custom.deleteClusterCustomObject({ ...args, name }),
      edit: () => undefined,
      mergePatch: { spec: { deletionPolicy: 'Retain' } },
      patched: (o) => assert.equal(o.status.restoreSize, 1073741824),
    });
  });

  it('refuses what the CRD schemas and their CEL rules refuse (422), and strategic merge patch (415)', async () => {
    const vs = `/apis/snapshot.storage.k8s.io/v1/namespaces/${NS}/volumesnapshots`;
    assertInvalid(
      await post(vs, {
        metadata: { name: 'two-sources' },
        spec: { source: { persistentVolumeClaimName: 'a', volumeSnapshotContentName: 'b' } },
      }),
      'VolumeSnapshot',
      'spec.source',
      'FieldValueInvalid',
      'Invalid value: "object": exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set',
    );
    assertInvalid(
      await post(vs, { metadata: { name: 'no-spec' } }),
      'VolumeSnapshot',
      'spec',
      'FieldValueRequired',
      'Required value',
    );
    assert.equal(
      (await post(vs, { metadata: { name: 'keep' }, spec: { source: { persistentVolumeClaimName: 'a' } } })).status,
      201,
    );
    const moved = await raw(cluster, 'PATCH', `${vs}/keep`, {
      body: JSON.stringify({ spec: { source: { persistentVolumeClaimName: 'b' } } }),
      contentType: 'application/merge-patch+json',
    });
    assertInvalid(
      moved,
      'VolumeSnapshot',
      'spec.source.persistentVolumeClaimName',
      'FieldValueInvalid',
      'Invalid value: "string": persistentVolumeClaimName is immutable',
    );
    const smp = await raw(cluster, 'PATCH', `${vs}/keep`, {
      body: '{}',
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(smp.status, 415, smp.text);
    assertInvalid(
      await post('/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses', {
        metadata: { name: 'c' },
        driver: 'd',
        deletionPolicy: 'Keep',
      }),
      'VolumeSnapshotClass',
      'deletionPolicy',
      'FieldValueNotSupported',
      'Unsupported value: "Keep": supported values: "Delete", "Retain"',
    );
    assertInvalid(
      await post('/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents', {
        metadata: { name: 'no-ns' },
        spec: {
          deletionPolicy: 'Delete',
          driver: 'd',
          source: { snapshotHandle: 'h' },
          volumeSnapshotRef: { name: 'x' },
        },
      }),
      'VolumeSnapshotContent',
      'spec.volumeSnapshotRef',
      'FieldValueInvalid',
      'Invalid value: "object": both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set',
    );
  });

  it('publishes the CRD schemas in OpenAPI v3 under their CRD names, and prunes unknown fields', async () => {
    const doc = await raw(cluster, 'GET', '/openapi/v3/apis/snapshot.storage.k8s.io/v1');
    assert.equal(doc.status, 200, doc.text);
    const schemas = doc.json<{ components: { schemas: Record<string, Obj> } }>().components.schemas;
    assert.ok(schemas['io.k8s.storage.snapshot.v1.VolumeSnapshot'], Object.keys(schemas).join(','));
    assert.ok(schemas['io.k8s.storage.snapshot.v1.VolumeSnapshotSpec'].properties.source);
    const res = await post(`/apis/snapshot.storage.k8s.io/v1/namespaces/${NS}/volumesnapshots`, {
      metadata: { name: 'pruned' },
      spec: { source: { persistentVolumeClaimName: 'a' }, bogus: 1 },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.json<Obj>().spec.bogus, undefined);
    assert.match(String(res.headers.warning), /unknown field \\"spec.bogus\\"/);
  });
});
