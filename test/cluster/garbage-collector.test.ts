// The garbage collector through client-node over HTTPS, as kube-apiserver 1.32 and kube-controller-manager's
// garbage collector behave: the DELETE answer and finalizers per propagation policy (store.go
// deletionFinalizersForGarbageCollection), Background (owner gone at once, dependents after), Foreground (owner
// answered with deletionTimestamp + `foregroundDeletion`; dependents first, those with blockOwnerDeletion hold the
// owner, down a chain), Orphan and the legacy orphanDependents (`orphan` finalizer, ownerReferences removed), the
// kinds' default policies (events: unsupported), dependents whose owner is absent or has another uid, and
// namespaced/cluster-scoped owners (garbagecollector.go attemptToDeleteItem, classifyReferences, isDangling).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1ConfigMap,
  type V1OwnerReference,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';
import { raw } from './api-harness.ts';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NS = 'gc';
const DEPLOYMENTS = `/apis/apps/v1/namespaces/${NS}/deployments`;
let c: TestCluster;
let core: CoreV1Api;
let apps: AppsV1Api;
let rbac: RbacAuthorizationV1Api;

before(async () => {
  c = await startCluster();
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  apps = c.kubeConfig.makeApiClient(AppsV1Api);
  rbac = c.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});
after(() => c.stop());

/** Creates a Deployment and answers an ownerReference to it. */
async function owner(name: string, extra: Partial<V1OwnerReference> = {}): Promise<V1OwnerReference> {
  const d = await apps.createNamespacedDeployment({
    namespace: NS,
    body: {
      metadata: { name },
      spec: {
        selector: { matchLabels: { app: name } },
        template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'c', image: 'x' }] } },
      },
    },
  });
  return { apiVersion: 'apps/v1', kind: 'Deployment', name, uid: d.metadata!.uid!, ...extra };
}

async function dependent(name: string, owners: V1OwnerReference[], finalizers?: string[]): Promise<V1ConfigMap> {
  return core.createNamespacedConfigMap({
    namespace: NS,
    body: { metadata: { name, ownerReferences: owners, finalizers } },
  });
}

async function exists(p: Promise<unknown>): Promise<boolean> {
  try {
    await p;
    return true;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return false;
    throw err;
  }
}
const configMapExists = (name: string) => exists(core.readNamespacedConfigMap({ name, namespace: NS }));
const deploymentExists = (name: string) => exists(apps.readNamespacedDeployment({ name, namespace: NS }));
const gone = (what: string, probe: () => Promise<boolean>) => waitFor(`${what} deleted`, async () => !(await probe()));
const settled = () => c.controllers!.idle();

async function deleteDeployment(name: string, options: Obj): Promise<{ status: number; body: Obj }> {
  const res = await raw(c, 'DELETE', `${DEPLOYMENTS}/${name}`, {
    body: JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', ...options }),
  });
  return { status: res.status, body: res.json<Obj>() };
}

async function release(name: string): Promise<void> {
  await core.patchNamespacedConfigMap({ name, namespace: NS, body: [{ op: 'remove', path: '/metadata/finalizers' }] });
}

describe('garbage collector', () => {
  it('Background (the apps/v1 default): deletes the owner at once, then its dependents', async () => {
    const ref = await owner('bg');
    await dependent('bg-a', [ref]);
    await dependent('bg-b', [{ ...ref, blockOwnerDeletion: true, controller: true }]);
    const status = await apps.deleteNamespacedDeployment({ name: 'bg', namespace: NS });
    assert.equal(status.status, 'Success');
    assert.equal(await deploymentExists('bg'), false);
    await gone('bg-a', () => configMapExists('bg-a'));
    await gone('bg-b', () => configMapExists('bg-b'));
  });

  it('Foreground: answers the owner with foregroundDeletion, deletes dependents first; blocking ones hold the owner', async () => {
    const ref = await owner('fg');
    await dependent('fg-blocking', [{ ...ref, blockOwnerDeletion: true }], ['example.com/hold']);
    await dependent('fg-free', [ref]);
    const res = await deleteDeployment('fg', { propagationPolicy: 'Foreground' });
    assert.equal(res.status, 200);
    assert.equal(res.body.kind, 'Deployment');
    assert.ok(res.body.metadata.deletionTimestamp);
    assert.deepEqual(res.body.metadata.finalizers, ['foregroundDeletion']);
    await gone('fg-free', () => configMapExists('fg-free'));
    await waitFor(
      'blocking dependent terminating',
      async () =>
        (await core.readNamespacedConfigMap({ name: 'fg-blocking', namespace: NS })).metadata!.deletionTimestamp,
    );
    await settled();
    // The blocking dependent still exists (its own finalizer): the owner waits.
    const waiting = await apps.readNamespacedDeployment({ name: 'fg', namespace: NS });
    assert.deepEqual(waiting.metadata!.finalizers, ['foregroundDeletion']);
    await release('fg-blocking');
    await gone('fg', () => deploymentExists('fg'));
  });

  it('Foreground down a chain: a dependent with dependents of its own is deleted in the foreground too', async () => {
    const ref = await owner('chain');
    const middle = await dependent('chain-middle', [{ ...ref, blockOwnerDeletion: true }]);
    const middleRef = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      name: 'chain-middle',
      uid: middle.metadata!.uid!,
      blockOwnerDeletion: true,
    };
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'chain-leaf', ownerReferences: [middleRef], finalizers: ['example.com/hold'] } },
    });
    await deleteDeployment('chain', { propagationPolicy: 'Foreground' });
    await waitFor('middle in foreground deletion', async () => {
      const m = await core.readNamespacedConfigMap({ name: 'chain-middle', namespace: NS });
      return m.metadata!.deletionTimestamp && m.metadata!.finalizers?.includes('foregroundDeletion');
    });
    await waitFor(
      'leaf terminating',
      async () => (await core.readNamespacedSecret({ name: 'chain-leaf', namespace: NS })).metadata!.deletionTimestamp,
    );
    await settled();
    assert.equal(await deploymentExists('chain'), true);
    assert.equal(await configMapExists('chain-middle'), true);
    await core.patchNamespacedSecret({
      name: 'chain-leaf',
      namespace: NS,
      body: [{ op: 'remove', path: '/metadata/finalizers' }],
    });
    await gone('chain-middle', () => configMapExists('chain-middle'));
    await gone('chain', () => deploymentExists('chain'));
  });

  it('Orphan: answers the owner with the orphan finalizer, removes only its ownerReferences, then the owner', async () => {
    const ref = await owner('orph');
    const other = await owner('orph-other');
    await dependent('orph-a', [{ ...ref, blockOwnerDeletion: true }, other]);
    const res = await deleteDeployment('orph', { propagationPolicy: 'Orphan' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.metadata.finalizers, ['orphan']);
    await gone('orph', () => deploymentExists('orph'));
    await settled();
    const kept = await core.readNamespacedConfigMap({ name: 'orph-a', namespace: NS });
    assert.deepEqual(
      kept.metadata!.ownerReferences!.map((r) => r.name),
      ['orph-other'],
    );
  });

  it('the legacy orphanDependents=true orphans, orphanDependents=false collects', async () => {
    const keep = await owner('legacy-keep');
    await dependent('legacy-keep-a', [keep]);
    const res = await raw(c, 'DELETE', `${DEPLOYMENTS}/legacy-keep?orphanDependents=true`);
    assert.equal(res.json<Obj>().metadata.finalizers[0], 'orphan');
    await gone('legacy-keep', () => deploymentExists('legacy-keep'));
    await settled();
    assert.equal(
      (await core.readNamespacedConfigMap({ name: 'legacy-keep-a', namespace: NS })).metadata!.ownerReferences,
      undefined,
    );

    const drop = await owner('legacy-drop');
    await dependent('legacy-drop-a', [drop]);
    const dropped = await deleteDeployment('legacy-drop', { orphanDependents: false });
    assert.equal(dropped.status, 200);
    assert.equal(dropped.body.status, 'Success');
    await gone('legacy-drop-a', () => configMapExists('legacy-drop-a'));
  });

  it('a second DELETE switches the pending policy, as the store updates the GC finalizers', async () => {
    const ref = await owner('switch');
    await dependent('switch-a', [{ ...ref, blockOwnerDeletion: true }], ['example.com/hold']);
    const first = await deleteDeployment('switch', { propagationPolicy: 'Foreground' });
    assert.deepEqual(first.body.metadata.finalizers, ['foregroundDeletion']);
    await waitFor(
      'dependent terminating',
      async () => (await core.readNamespacedConfigMap({ name: 'switch-a', namespace: NS })).metadata!.deletionTimestamp,
    );
    const second = await deleteDeployment('switch', { propagationPolicy: 'Orphan' });
    assert.deepEqual(second.body.metadata.finalizers, ['orphan']);
    assert.equal(second.body.metadata.deletionTimestamp, first.body.metadata.deletionTimestamp);
    await gone('switch', () => deploymentExists('switch'));
    await release('switch-a');
  });

  it('collects dependents whose owner is absent: never created, deleted before, or another object with the name', async () => {
    await dependent('absent-never', [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'never', uid: '00000000-0000-0000-0000-000000000000' },
    ]);
    const before = await owner('absent-before');
    await apps.deleteNamespacedDeployment({ name: 'absent-before', namespace: NS });
    await dependent('absent-deleted', [before]);
    await owner('absent-renamed');
    await dependent('absent-uid', [
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'absent-renamed', uid: 'not-its-uid' },
    ]);
    for (const name of ['absent-never', 'absent-deleted', 'absent-uid']) await gone(name, () => configMapExists(name));
    assert.equal(await deploymentExists('absent-renamed'), true);
  });

  it('keeps a dependent with a live owner and drops only its reference to an absent one', async () => {
    const live = await owner('mixed-live');
    await dependent('mixed-a', [
      live,
      { apiVersion: 'apps/v1', kind: 'Deployment', name: 'mixed-gone', uid: 'gone-uid' },
    ]);
    await waitFor('dangling reference removed', async () => {
      const cm = await core.readNamespacedConfigMap({ name: 'mixed-a', namespace: NS });
      return cm.metadata!.ownerReferences?.length === 1 && cm.metadata!.ownerReferences[0].name === 'mixed-live';
    });
  });

  it('collects a namespaced dependent of a cluster-scoped owner', async () => {
    const role = await rbac.createClusterRole({ body: { metadata: { name: 'gc-owner' }, rules: [] } });
    await dependent('of-cluster-role', [
      { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'gc-owner', uid: role.metadata!.uid! },
    ]);
    await settled();
    assert.equal(await configMapExists('of-cluster-role'), true);
    await rbac.deleteClusterRole({ name: 'gc-owner' });
    await gone('of-cluster-role', () => configMapExists('of-cluster-role'));
  });

  it('never collects a cluster-scoped dependent of a namespaced owner (an invalid reference)', async () => {
    await rbac.createClusterRole({
      body: {
        metadata: {
          name: 'gc-invalid',
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'nowhere', uid: 'nowhere-uid' }],
        },
        rules: [],
      },
    });
    await settled();
    assert.equal(await exists(rbac.readClusterRole({ name: 'gc-invalid' })), true);
  });

  it('events do not support propagation: a Foreground delete removes the event at once', async () => {
    await core.createNamespacedEvent({
      namespace: NS,
      body: {
        metadata: { name: 'ev' },
        involvedObject: { kind: 'Pod', name: 'p', namespace: NS },
        reason: 'R',
        message: 'm',
        type: 'Normal',
      },
    });
    const res = await raw(c, 'DELETE', `/api/v1/namespaces/${NS}/events/ev`, {
      body: JSON.stringify({ propagationPolicy: 'Foreground' }),
    });
    assert.equal(res.json<Obj>().status, 'Success', res.text);
    assert.equal(await exists(core.readNamespacedEvent({ name: 'ev', namespace: NS })), false);
  });

  it('refuses the orphan and foregroundDeletion finalizers together', async () => {
    const res = await raw(c, 'POST', `/api/v1/namespaces/${NS}/configmaps`, {
      body: JSON.stringify({ metadata: { name: 'both', finalizers: ['orphan', 'foregroundDeletion'] } }),
    });
    assert.equal(res.status, 422, res.text);
    const cause = res.json<Obj>().details.causes[0];
    assert.deepEqual(cause, {
      reason: 'FieldValueInvalid',
      message:
        'Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set',
      field: 'metadata.finalizers',
    });
  });
});
