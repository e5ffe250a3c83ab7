// DELETE answers kind by kind, as kube-apiserver 1.32's registries give them (k8s.io/apiserver
// registry/generic/registry/store.go Delete and finalizeDelete, endpoints/handlers/delete.go): the deleted object
// for the kinds whose storage sets ReturnDeletedObject (k/k pkg/registry/<group>/<kind>/storage), a Success
// Status {details: name, group, kind (the resource), uid} for the others; the object with its deletionTimestamp
// while finalizers hold it (whatever the kind); the same answers for dry runs, which delete nothing; 202 when a
// legacy `orphanDependents: false` request leaves the object pending. Raw HTTPS, because a typed client reads
// every answer into the type it expects (client-node reads all of them as V1Status).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { pvBody, pvcBody, raw, type RawResponse } from './api-harness.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NS = 'delete-answers';
let c: TestCluster;

const send = (method: string, path: string, body?: unknown): Promise<RawResponse> =>
  raw(
    c,
    method,
    path,
    body === undefined
      ? {}
      : { body: JSON.stringify(body), contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined },
  );

before(async () => {
  // Without the cluster's controllers nothing adds protection finalizers: deletions are immediate.
  c = await startCluster({ controllers: false });
  const ns = await send('POST', '/api/v1/namespaces', { metadata: { name: NS } });
  assert.equal(ns.status, 201, ns.text);
});
after(() => c.stop());

const podSpec = { containers: [{ name: 'c', image: 'busybox:1' }] };
const template = (app: string) => ({ metadata: { labels: { app } }, spec: podSpec });
const roleRef = (kind: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind, name: 'view' });

interface Row {
  /** Collection path. */
  path: string;
  body: (name: string) => Obj;
  /** What kube-apiserver answers for an immediate deletion: the object, or a Status. */
  answer: 'object' | 'status';
  group?: string;
}

// One row per served kind: ReturnDeletedObject as set in each kind's registry/<kind>/storage/storage.go.
const KINDS: Record<string, Row> = {
  namespaces: { path: '/api/v1/namespaces', body: (name) => ({ metadata: { name } }), answer: 'object' },
  nodes: { path: '/api/v1/nodes', body: (name) => ({ metadata: { name } }), answer: 'status' },
  pods: {
    path: `/api/v1/namespaces/${NS}/pods`,
    body: (name) => ({ metadata: { name }, spec: podSpec }),
    answer: 'object',
  },
  persistentvolumes: { path: '/api/v1/persistentvolumes', body: (name) => pvBody(name), answer: 'object' },
  persistentvolumeclaims: {
    path: `/api/v1/namespaces/${NS}/persistentvolumeclaims`,
    body: (name) => pvcBody(name),
    answer: 'object',
  },
  configmaps: {
    path: `/api/v1/namespaces/${NS}/configmaps`,
    body: (name) => ({ metadata: { name } }),
    answer: 'status',
  },
  secrets: { path: `/api/v1/namespaces/${NS}/secrets`, body: (name) => ({ metadata: { name } }), answer: 'status' },
  serviceaccounts: {
    path: `/api/v1/namespaces/${NS}/serviceaccounts`,
    body: (name) => ({ metadata: { name } }),
    answer: 'object',
  },
  events: {
    path: `/api/v1/namespaces/${NS}/events`,
    body: (name) => ({
      metadata: { name },
      involvedObject: { kind: 'Pod', name: 'p', namespace: NS },
      reason: 'Tested',
      message: 'm',
      type: 'Normal',
    }),
    answer: 'status',
  },
  'events.events.k8s.io': {
    path: `/apis/events.k8s.io/v1/namespaces/${NS}/events`,
    body: (name) => ({
      metadata: { name },
      eventTime: '2025-01-02T03:04:05.000000Z',
      reportingController: 'example.com/tester',
      reportingInstance: 'i',
      action: 'Test',
      reason: 'Tested',
      type: 'Normal',
      regarding: { kind: 'Pod', name: 'p', namespace: NS },
    }),
    answer: 'status',
    group: 'events.k8s.io',
  },
  storageclasses: {
    path: '/apis/storage.k8s.io/v1/storageclasses',
    body: (name) => ({ metadata: { name }, provisioner: 'example.com/p' }),
    answer: 'object',
    group: 'storage.k8s.io',
  },
  leases: {
    path: `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
    body: (name) => ({ metadata: { name }, spec: {} }),
    answer: 'status',
    group: 'coordination.k8s.io',
  },
  clusterroles: {
    path: '/apis/rbac.authorization.k8s.io/v1/clusterroles',
    body: (name) => ({ metadata: { name }, rules: [] }),
    answer: 'status',
    group: 'rbac.authorization.k8s.io',
  },
  clusterrolebindings: {
    path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
    body: (name) => ({ metadata: { name }, roleRef: roleRef('ClusterRole'), subjects: [] }),
    answer: 'status',
    group: 'rbac.authorization.k8s.io',
  },
  roles: {
    path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/roles`,
    body: (name) => ({ metadata: { name }, rules: [] }),
    answer: 'status',
    group: 'rbac.authorization.k8s.io',
  },
  rolebindings: {
    path: `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}/rolebindings`,
    body: (name) => ({ metadata: { name }, roleRef: roleRef('ClusterRole'), subjects: [] }),
    answer: 'status',
    group: 'rbac.authorization.k8s.io',
  },
  deployments: {
    path: `/apis/apps/v1/namespaces/${NS}/deployments`,
    body: (name) => ({
      metadata: { name },
      spec: { selector: { matchLabels: { app: name } }, template: template(name) },
    }),
    answer: 'status',
    group: 'apps',
  },
  daemonsets: {
    path: `/apis/apps/v1/namespaces/${NS}/daemonsets`,
    body: (name) => ({
      metadata: { name },
      spec: { selector: { matchLabels: { app: name } }, template: template(name) },
    }),
    answer: 'status',
    group: 'apps',
  },
};

async function create(row: Row, name: string, extraMeta: Obj = {}): Promise<Obj> {
  const body = row.body(name);
  body.metadata = { ...body.metadata, ...extraMeta };
  const res = await send('POST', row.path, body);
  assert.equal(res.status, 201, res.text);
  return res.json<Obj>();
}

function assertAnswer(res: RawResponse, row: Row, resource: string, created: Obj, label: string): void {
  assert.equal(res.status, 200, `${label}: ${res.text}`);
  const body = res.json<Obj>();
  if (row.answer === 'status') {
    const details: Obj = {
      name: created.metadata.name,
      ...(row.group ? { group: row.group } : {}),
      kind: resource.split('.')[0],
      uid: created.metadata.uid,
    };
    assert.deepEqual(body, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }, label);
    // Go writes the fields in struct order.
    assert.equal(
      res.text.trimEnd(),
      JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }),
      label,
    );
  } else {
    assert.equal(body.kind, created.kind, `${label}: ${res.text}`);
    assert.equal(body.metadata.uid, created.metadata.uid, label);
  }
}

describe('DELETE answers per kind', () => {
  it('answers the object or a Success Status as each kind registry does', async () => {
    for (const [resource, row] of Object.entries(KINDS)) {
      const created = await create(row, 'gone');
      const res = await send('DELETE', `${row.path}/gone`);
      assertAnswer(res, row, resource, created, resource);
    }
  });

  it('answers a dry run like the deletion and deletes nothing', async () => {
    for (const [i, [resource, row]] of Object.entries(KINDS).entries()) {
      if (resource === 'namespaces') continue; // namespace deletion always goes through Terminating
      const name = `kept-${i}`; // core and events.k8s.io events share one storage
      const created = await create(row, name);
      const res = await send('DELETE', `${row.path}/${name}?dryRun=All`);
      assertAnswer(res, row, resource, created, `${resource} dry run`);
      const still = await send('GET', `${row.path}/${name}`);
      assert.equal(still.status, 200, `${resource} dry run deleted the object`);
      assert.equal(still.json<Obj>().metadata.deletionTimestamp, undefined);
    }
  });

  it('answers the object with its deletionTimestamp while a finalizer holds it, whatever the kind', async () => {
    for (const [resource, row] of Object.entries(KINDS)) {
      if (resource === 'namespaces') continue;
      const created = await create(row, 'held', { finalizers: ['example.com/hold'] });
      const res = await send('DELETE', `${row.path}/held`);
      assert.equal(res.status, 200, `${resource}: ${res.text}`);
      const body = res.json<Obj>();
      assert.equal(body.kind, created.kind, `${resource}: ${res.text}`);
      assert.ok(body.metadata.deletionTimestamp, resource);
      assert.equal(body.metadata.deletionGracePeriodSeconds, 0, resource);
      // Deleting again changes nothing and answers the object again.
      const again = await send('DELETE', `${row.path}/held`);
      assert.equal(again.status, 200, resource);
      assert.equal(again.json<Obj>().metadata.resourceVersion, body.metadata.resourceVersion, resource);
      const release = await send('PATCH', `${row.path}/held`, { metadata: { finalizers: null } });
      assert.equal(release.status, 200, release.text);
      assert.equal((await send('GET', `${row.path}/held`)).status, 404, resource);
    }
  });

  it('answers 202 Accepted when orphanDependents=false leaves the object pending', async () => {
    const row = KINDS.deployments;
    await create(row, 'accepted', { finalizers: ['example.com/hold'] });
    const res = await send('DELETE', `${row.path}/accepted`, {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      orphanDependents: false,
    });
    assert.equal(res.status, 202, res.text);
    assert.equal(res.json<Obj>().kind, 'Deployment');
    // Deleted at once: 200, whatever the option.
    await create(KINDS.configmaps, 'accepted');
    const now = await send('DELETE', `${KINDS.configmaps.path}/accepted?orphanDependents=false`);
    assert.equal(now.status, 200, now.text);
    assert.equal(now.json<Obj>().status, 'Success');
  });

  it('bumps a generation once when the deletion starts (markAsDeleting)', async () => {
    const row = KINDS.deployments;
    const created = await create(row, 'generation', { finalizers: ['example.com/hold'] });
    assert.equal(created.metadata.generation, 1);
    const res = await send('DELETE', `${row.path}/generation`);
    assert.equal(res.json<Obj>().metadata.generation, 2);
  });
});
