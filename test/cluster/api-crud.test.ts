// Create/update/patch/delete semantics of the embedded API server, through @kubernetes/client-node over HTTPS:
// system metadata, AlreadyExists, optimistic concurrency, no-op writes, status subresource, finalizers,
// preconditions, patch types, Lease/Event update rules.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { Status } from '../../src/types/k8s.ts';
import { pvcBody, raw } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;
let coord: CoordinationV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  coord = c.kubeConfig.makeApiClient(CoordinationV1Api);
});
after(() => c.stop());

async function failure(p: Promise<unknown>): Promise<{ code: number; status: Status }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiException) {
      const body = typeof err.body === 'string' ? (JSON.parse(err.body) as Status) : (err.body as Status);
      return { code: err.code, status: body };
    }
    throw err;
  }
  assert.fail('expected the request to fail');
}

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

function createPvc(name: string, extra: Record<string, unknown> = {}): Promise<V1PersistentVolumeClaim> {
  return core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: pvcBody(name, extra) as V1PersistentVolumeClaim,
  });
}

describe('create', () => {
  it('fills uid, creationTimestamp, a decimal resourceVersion and defaults, and discards status', async () => {
    const pvc = await createPvc('create-meta', { status: { phase: 'Bound' } });
    assert.match(pvc.metadata!.uid!, /^[0-9a-f-]{36}$/);
    assert.match(String(pvc.metadata!.resourceVersion), /^\d+$/);
    const rawGet = await raw(c, 'GET', '/api/v1/namespaces/default/persistentvolumeclaims/create-meta');
    const obj = rawGet.json<{
      metadata: { creationTimestamp: string };
      spec: { volumeMode: string };
      status: { phase: string };
    }>();
    assert.match(obj.metadata.creationTimestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    assert.equal(obj.spec.volumeMode, 'Filesystem');
    assert.equal(obj.status.phase, 'Pending');
  });

  it('answers 409 AlreadyExists with the kube message', async () => {
    await createPvc('dup');
    const { code, status } = await failure(createPvc('dup'));
    assert.equal(code, 409);
    assert.equal(status.reason, 'AlreadyExists');
    assert.equal(status.message, 'persistentvolumeclaims "dup" already exists');
    assert.deepEqual(status.details, { name: 'dup', kind: 'persistentvolumeclaims' });
  });

  it('generates names from generateName', async () => {
    const pvc = await createPvc('', { metadata: { generateName: 'gen-' } });
    assert.match(pvc.metadata!.name!, /^gen-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('answers 404 for a namespace that does not exist', async () => {
    const { code, status } = await failure(
      core.createNamespacedPersistentVolumeClaim({ namespace: 'nope', body: pvcBody('x') as V1PersistentVolumeClaim }),
    );
    assert.equal(code, 404);
    assert.equal(status.message, 'namespaces "nope" not found');
  });

  it('starts with the default namespaces', async () => {
    const names = (await core.listNamespace()).items.map((n) => n.metadata!.name);
    for (const ns of ['default', 'kube-system']) assert.ok(names.includes(ns), ns);
  });
});

describe('update', () => {
  it('rejects a stale resourceVersion with 409 Conflict and bumps the version on success', async () => {
    const pvc = await createPvc('upd');
    pvc.metadata!.labels = { a: '1' };
    const updated = await core.replaceNamespacedPersistentVolumeClaim({ name: 'upd', namespace: 'default', body: pvc });
    assert.ok(Number(updated.metadata!.resourceVersion) > Number(pvc.metadata!.resourceVersion));
    pvc.metadata!.labels = { a: '2' };
    const { code, status } = await failure(
      core.replaceNamespacedPersistentVolumeClaim({ name: 'upd', namespace: 'default', body: pvc }),
    );
    assert.equal(code, 409);
    assert.equal(status.reason, 'Conflict');
    assert.equal(
      status.message,
      'Operation cannot be fulfilled on persistentvolumeclaims "upd": the object has been modified; please apply your changes to the latest version and try again',
    );
  });

  it('does not bump the resourceVersion for a write that changes nothing', async () => {
    const pvc = await createPvc('noop');
    const again = await core.replaceNamespacedPersistentVolumeClaim({ name: 'noop', namespace: 'default', body: pvc });
    assert.equal(again.metadata!.resourceVersion, pvc.metadata!.resourceVersion);
    const patched = await core.patchNamespacedPersistentVolumeClaim(
      { name: 'noop', namespace: 'default', body: { metadata: { labels: {} } } },
      merge,
    );
    assert.equal(patched.metadata!.resourceVersion, pvc.metadata!.resourceVersion);
  });

  it('ignores status on the main resource and spec on /status', async () => {
    const pvc = await createPvc('st');
    pvc.status = { phase: 'Bound' };
    const main = await core.replaceNamespacedPersistentVolumeClaim({ name: 'st', namespace: 'default', body: pvc });
    assert.equal(main.status!.phase, 'Pending');
    main.status = { phase: 'Bound' };
    main.spec!.volumeName = 'sneaky';
    const viaStatus = await core.replaceNamespacedPersistentVolumeClaimStatus({
      name: 'st',
      namespace: 'default',
      body: main,
    });
    assert.equal(viaStatus.status!.phase, 'Bound');
    assert.equal(viaStatus.spec!.volumeName, undefined);
    const patched = await core.patchNamespacedPersistentVolumeClaimStatus(
      { name: 'st', namespace: 'default', body: { status: { phase: 'Lost' }, spec: { volumeName: 'x' } } },
      merge,
    );
    assert.equal(patched.status!.phase, 'Lost');
    assert.equal(patched.spec!.volumeName, undefined);
  });

  it('enforces the Lease rules: PUT needs a resourceVersion, PUT on a missing Lease creates it', async () => {
    const lease = {
      metadata: { name: 'leader', namespace: 'default' },
      spec: { holderIdentity: 'a', leaseDurationSeconds: 15 },
    };
    const created = await coord.replaceNamespacedLease({ name: 'leader', namespace: 'default', body: lease });
    assert.equal(created.spec!.holderIdentity, 'a');
    const { code, status } = await failure(
      coord.replaceNamespacedLease({ name: 'leader', namespace: 'default', body: lease }),
    );
    assert.equal(code, 422);
    assert.equal(
      status.message,
      'leases.coordination.k8s.io "leader" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    );
    const res = await raw(c, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/default/leases/fresh', {
      body: JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'fresh' },
        spec: { renewTime: '2025-01-02T03:04:05.123456Z' },
      }),
    });
    assert.equal(res.status, 201);
    assert.equal(res.json<{ spec: { renewTime: string } }>().spec.renewTime, '2025-01-02T03:04:05.123456Z');
    // A leader's cached Lease (with its old resourceVersion) PUT after the Lease was deleted: created, not 404.
    const cached = {
      ...created,
      metadata: { ...created.metadata, resourceVersion: created.metadata!.resourceVersion },
    };
    await coord.deleteNamespacedLease({ name: 'leader', namespace: 'default' });
    const recreated = await raw(c, 'PUT', '/apis/coordination.k8s.io/v1/namespaces/default/leases/leader', {
      body: JSON.stringify(cached),
    });
    assert.equal(recreated.status, 201);
    const body = recreated.json<{ metadata: { uid: string; resourceVersion: string } }>();
    assert.notEqual(body.metadata.uid, created.metadata!.uid);
    assert.ok(Number(body.metadata.resourceVersion) > Number(created.metadata!.resourceVersion));
  });
});

describe('patch', () => {
  it('applies merge, JSON and strategic merge patches and rejects apply-patch with 415', async () => {
    await createPvc('p', { metadata: { finalizers: ['a/one'] } });
    const m = await core.patchNamespacedPersistentVolumeClaim(
      { name: 'p', namespace: 'default', body: { metadata: { labels: { x: 'y' } } } },
      merge,
    );
    assert.deepEqual(m.metadata!.labels, { x: 'y' });
    const j = await core.patchNamespacedPersistentVolumeClaim(
      { name: 'p', namespace: 'default', body: [{ op: 'add', path: '/metadata/annotations', value: { k: 'v' } }] },
      jsonPatch,
    );
    assert.deepEqual(j.metadata!.annotations, { k: 'v' });
    const s = await core.patchNamespacedPersistentVolumeClaim(
      { name: 'p', namespace: 'default', body: { metadata: { finalizers: ['b/two'] } } },
      strategic,
    );
    assert.deepEqual([...s.metadata!.finalizers!].sort(), ['a/one', 'b/two']);
    const failed = await failure(
      core.patchNamespacedPersistentVolumeClaim(
        { name: 'p', namespace: 'default', body: [{ op: 'test', path: '/metadata/name', value: 'other' }] },
        jsonPatch,
      ),
    );
    assert.equal(failed.code, 422);
    const apply = await raw(c, 'PATCH', '/api/v1/namespaces/default/persistentvolumeclaims/p?fieldManager=t', {
      body: '{}',
      contentType: 'application/apply-patch+yaml',
    });
    assert.equal(apply.status, 415);
    assert.equal(apply.json<Status>().reason, 'UnsupportedMediaType');
    const missing = await failure(
      core.patchNamespacedPersistentVolumeClaim({ name: 'gone', namespace: 'default', body: {} }, merge),
    );
    assert.equal(missing.code, 404);
  });

  it('conflicts when a patch carries a stale resourceVersion', async () => {
    await createPvc('prv');
    const { code } = await failure(
      core.patchNamespacedPersistentVolumeClaim(
        { name: 'prv', namespace: 'default', body: { metadata: { resourceVersion: '1', labels: { a: 'b' } } } },
        merge,
      ),
    );
    assert.equal(code, 409);
  });
});

describe('delete', () => {
  it('sets deletionTimestamp while finalizers remain, then removes the object when the last one goes', async () => {
    await createPvc('fin', { metadata: { finalizers: ['example.com/hold'] } });
    const marked = await core.deleteNamespacedPersistentVolumeClaim({ name: 'fin', namespace: 'default' });
    assert.ok((marked as V1PersistentVolumeClaim).metadata!.deletionTimestamp);
    const still = await core.readNamespacedPersistentVolumeClaim({ name: 'fin', namespace: 'default' });
    assert.ok(still.metadata!.deletionTimestamp);
    const again = await core.deleteNamespacedPersistentVolumeClaim({ name: 'fin', namespace: 'default' });
    assert.equal((again as V1PersistentVolumeClaim).metadata!.resourceVersion, still.metadata!.resourceVersion);
    const added = await failure(
      core.patchNamespacedPersistentVolumeClaim(
        { name: 'fin', namespace: 'default', body: { metadata: { finalizers: ['example.com/hold', 'x.io/new'] } } },
        merge,
      ),
    );
    assert.equal(added.code, 422);
    assert.match(added.status.message!, /no new finalizers can be added if the object is being deleted/);
    await core.patchNamespacedPersistentVolumeClaim(
      { name: 'fin', namespace: 'default', body: { metadata: { finalizers: null } } },
      merge,
    );
    const gone = await failure(core.readNamespacedPersistentVolumeClaim({ name: 'fin', namespace: 'default' }));
    assert.equal(gone.code, 404);
    assert.equal(gone.status.message, 'persistentvolumeclaims "fin" not found');
  });

  it('checks uid and resourceVersion preconditions', async () => {
    const pvc = await createPvc('pre');
    const uid = await failure(
      core.deleteNamespacedPersistentVolumeClaim({
        name: 'pre',
        namespace: 'default',
        body: { preconditions: { uid: 'not-it' } },
      }),
    );
    assert.equal(uid.code, 409);
    assert.equal(
      uid.status.message,
      `Operation cannot be fulfilled on PersistentVolumeClaim "pre": the UID in the precondition (not-it) does not match the UID in record (${pvc.metadata!.uid}). The object might have been deleted and then recreated`,
    );
    const rv = await failure(
      core.deleteNamespacedPersistentVolumeClaim({
        name: 'pre',
        namespace: 'default',
        body: { preconditions: { resourceVersion: '1' } },
      }),
    );
    assert.equal(rv.code, 409);
    await core.deleteNamespacedPersistentVolumeClaim({
      name: 'pre',
      namespace: 'default',
      body: { preconditions: { uid: pvc.metadata!.uid } },
    });
  });

  it('answers a Success Status for kinds that do not return the deleted object', async () => {
    await coord.createNamespacedLease({ namespace: 'default', body: { metadata: { name: 'bye' }, spec: {} } });
    const res = await raw(c, 'DELETE', '/apis/coordination.k8s.io/v1/namespaces/default/leases/bye');
    assert.equal(res.status, 200);
    const body = res.json<Status>();
    assert.equal(body.status, 'Success');
    assert.equal(body.details!.kind, 'leases');
    assert.equal(body.details!.group, 'coordination.k8s.io');
  });

  it('deletes a collection by label selector', async () => {
    await createPvc('col-a', { metadata: { labels: { batch: 'x' } } });
    await createPvc('col-b', { metadata: { labels: { batch: 'x' } } });
    await createPvc('col-c', { metadata: { labels: { batch: 'y' } } });
    await core.deleteCollectionNamespacedPersistentVolumeClaim({ namespace: 'default', labelSelector: 'batch=x' });
    const left = await core.listNamespacedPersistentVolumeClaim({ namespace: 'default', labelSelector: 'batch' });
    assert.deepEqual(
      left.items.map((p) => p.metadata!.name),
      ['col-c'],
    );
  });

  it('terminates a namespace: content deleted, namespace removed once empty', async () => {
    await core.createNamespace({ body: { metadata: { name: 'doomed' } } });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: 'doomed',
      body: pvcBody('held', { metadata: { finalizers: ['x.io/f'] } }) as V1PersistentVolumeClaim,
    });
    await core.deleteNamespace({ name: 'doomed' });
    const ns = await core.readNamespace({ name: 'doomed' });
    assert.equal(ns.status!.phase, 'Terminating');
    const refused = await failure(
      core.createNamespacedPersistentVolumeClaim({
        namespace: 'doomed',
        body: pvcBody('late') as V1PersistentVolumeClaim,
      }),
    );
    assert.equal(refused.code, 403);
    await core.patchNamespacedPersistentVolumeClaim(
      { name: 'held', namespace: 'doomed', body: { metadata: { finalizers: null } } },
      merge,
    );
    assert.equal((await failure(core.readNamespace({ name: 'doomed' }))).code, 404);
    assert.equal((await failure(core.deleteNamespace({ name: 'default' }))).code, 403);
  });
});

describe('request variants', () => {
  it('runs every check for dryRun=All but stores nothing', async () => {
    const res = await raw(c, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims?dryRun=All', {
      body: JSON.stringify(pvcBody('dry')),
    });
    assert.equal(res.status, 201);
    assert.equal(res.json<{ metadata: { name: string } }>().metadata.name, 'dry');
    assert.equal(
      (await failure(core.readNamespacedPersistentVolumeClaim({ name: 'dry', namespace: 'default' }))).code,
      404,
    );
    const invalidDry = await raw(c, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims?dryRun=All', {
      body: JSON.stringify({ ...pvcBody('dry2'), spec: {} }),
    });
    assert.equal(invalidDry.status, 422);
  });

  it('decodes the protobuf bodies kubectl create namespace/configmap/secret send', async () => {
    // Protobuf wire format by hand: field key = (number << 3) | wiretype 2 (length-delimited), lengths < 128.
    const ld = (no: number, payload: Buffer) => Buffer.concat([Buffer.from([(no << 3) | 2, payload.length]), payload]);
    const s = (v: string) => Buffer.from(v);
    const typeMeta = ld(1, Buffer.concat([ld(1, s('v1')), ld(2, s('ConfigMap'))]));
    const meta = ld(
      1,
      Buffer.concat([ld(1, s('from-proto')), ld(11, Buffer.concat([ld(1, s('app')), ld(2, s('demo'))]))]),
    );
    const data = ld(2, Buffer.concat([ld(1, s('key')), ld(2, s('value'))]));
    const body = Buffer.concat([
      Buffer.from('k8s\0'),
      typeMeta,
      ld(2, Buffer.concat([meta, data])),
      ld(3, s('')),
      ld(4, s('')),
    ]);
    const res = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
      body,
      contentType: 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(res.status, 201, res.text);
    const cm = await core.readNamespacedConfigMap({ name: 'from-proto', namespace: 'default' });
    assert.deepEqual(cm.data, { key: 'value' });
    assert.deepEqual(cm.metadata!.labels, { app: 'demo' });
    const garbage = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: Buffer.from('k8s\0\x0a\xff'),
      contentType: 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(garbage.status, 400);
  });
});
