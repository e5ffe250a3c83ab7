// Protobuf request bodies for every served kind, decoded from the generated schema: a hand-encoded PVC
// (Quantity map, pointer string kept when empty, embedded PersistentVolumeSource of a PV), kubectl's
// imperative create commands (which send protobuf), and the 415 that names the decodable kinds.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { raw } from './api-harness.ts';
import { envelope, msg, num, str } from '../support/protobuf-encoding.ts';
import { yamlDecodeCounts } from '../../src/cluster/schema/yaml-decode.ts';

const run = promisify(execFile);
let c: TestCluster;
const PB = 'application/vnd.kubernetes.protobuf';

before(async () => {
  c = await startCluster({ controllers: false });
});
after(() => c.stop());

describe('large protobuf bodies are decoded in the worker thread', () => {
  it('a 600 KiB ConfigMap: decoded off the loop, its data whole; a bad one gets the 400 the loop gives', async () => {
    const entries = Array.from({ length: 40_000 }, (_, i) => msg(2, str(1, `k${i}`), str(2, `v${i}`)));
    const before = yamlDecodeCounts().protobufOffThread;
    const res = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: envelope('v1', 'ConfigMap', Buffer.concat([msg(1, str(1, 'pb-large')), ...entries])),
      contentType: PB,
    });
    assert.equal(res.status, 201, res.text.slice(0, 300));
    assert.equal(yamlDecodeCounts().protobufOffThread - before, 1, 'decoded in the worker');
    const data = res.json<{ data: Record<string, string> }>().data;
    assert.equal(Object.keys(data).length, 40_000);
    assert.equal(data.k39999, 'v39999');
    // A map entry whose length runs past the message: the same 400 as a small body's, from the worker.
    const messages: string[] = [];
    for (const padding of [0, 40_000]) {
      const pad = Array.from({ length: padding }, (_, i) => msg(2, str(1, `p${i}`), str(2, 'v')));
      const broken = Buffer.concat([msg(1, str(1, 'pb-bad')), ...pad, Buffer.from([0x12, 0x7f, 0x0a])]);
      const bad = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
        body: envelope('v1', 'ConfigMap', broken),
        contentType: PB,
      });
      assert.equal(bad.status, 400, bad.text.slice(0, 300));
      messages.push(bad.json<{ message: string }>().message);
    }
    assert.equal(messages[1], messages[0]);
    assert.notEqual(messages[0], '');
    // An unknown kind: 415 from the worker too.
    const unknown = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: envelope('v1', 'Nope', Buffer.concat(entries)),
      contentType: PB,
    });
    assert.equal(unknown.status, 415, unknown.text.slice(0, 300));
  });
});

describe('protobuf bodies decoded from the schema', () => {
  it('decodes a PVC: metadata, access modes, Quantity requests, and an explicit empty storageClassName', async () => {
    const body = Buffer.concat([
      msg(1, str(1, 'pb-claim'), msg(11, str(1, 'app'), str(2, 'x'))),
      msg(2, str(1, 'ReadWriteOnce'), msg(2, msg(2, str(1, 'storage'), msg(2, str(1, '2Gi')))), str(5, '')),
    ]);
    const res = await raw(c, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', {
      body: envelope('v1', 'PersistentVolumeClaim', body),
      contentType: PB,
    });
    assert.equal(res.status, 201, res.text);
    const pvc = res.json<{ metadata: { labels: Record<string, string> }; spec: Record<string, unknown> }>();
    assert.deepEqual(pvc.metadata.labels, { app: 'x' });
    assert.deepEqual(pvc.spec.accessModes, ['ReadWriteOnce']);
    assert.deepEqual(pvc.spec.resources, { requests: { storage: '2Gi' } });
    assert.equal(pvc.spec.storageClassName, '');
  });

  it('decodes a PV whose hostPath sits in the embedded PersistentVolumeSource message', async () => {
    const spec = Buffer.concat([
      msg(1, str(1, 'storage'), msg(2, str(1, '1Gi'))),
      msg(2, msg(3, str(1, '/tmp/pb-pv'))),
      str(3, 'ReadWriteOnce'),
    ]);
    const res = await raw(c, 'POST', '/api/v1/persistentvolumes', {
      body: envelope('v1', 'PersistentVolume', Buffer.concat([msg(1, str(1, 'pb-pv')), msg(2, spec)])),
      contentType: PB,
    });
    assert.equal(res.status, 201, res.text);
    const pv = res.json<{ spec: { hostPath: { path: string }; capacity: Record<string, string> } }>();
    assert.equal(pv.spec.hostPath.path, '/tmp/pb-pv');
    assert.deepEqual(pv.spec.capacity, { storage: '1Gi' });
  });

  it('decodes a Lease with MicroTime and int32 fields', async () => {
    // renewTime 2025-01-02T03:04:05.123456Z = seconds 1735787045, nanos 123456000
    const spec = Buffer.concat([str(1, 'me'), num(2, 15), msg(4, num(1, 1735787045), num(2, 123456000))]);
    const res = await raw(c, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', {
      body: envelope('coordination.k8s.io/v1', 'Lease', Buffer.concat([msg(1, str(1, 'pb-lease')), msg(2, spec)])),
      contentType: PB,
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.json<{ spec: unknown }>().spec, {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      renewTime: '2025-01-02T03:04:05.123456Z',
    });
  });

  it("rejects a time outside Go's range with 400 and a kind without a schema with a 415 naming the decodable kinds", async () => {
    const spec = Buffer.concat([str(1, 'me'), msg(4, num(1, 999_999_999_999))]);
    const bad = await raw(c, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', {
      body: envelope('coordination.k8s.io/v1', 'Lease', Buffer.concat([msg(1, str(1, 'pb-bad')), msg(2, spec)])),
      contentType: PB,
    });
    assert.equal(bad.status, 400);
    const job = await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: envelope('batch/v1', 'Job', msg(1, str(1, 'j'))),
      contentType: PB,
    });
    assert.equal(job.status, 415);
    const message = job.json<{ message: string }>().message;
    for (const kind of [
      'v1 PersistentVolumeClaim',
      'apps/v1 Deployment',
      'rbac.authorization.k8s.io/v1 RoleBinding',
      'storage.k8s.io/v1 StorageClass',
    ]) {
      assert.ok(message.includes(kind), `${kind} in: ${message}`);
    }
  });
});

const hasKubectl = await run('kubectl', ['version', '--client']).then(
  () => true,
  () => false,
);

describe(
  'kubectl imperative create (protobuf bodies)',
  { skip: hasKubectl ? false : 'kubectl is not installed' },
  () => {
    it('creates deployment, serviceaccount, role, rolebinding, clusterrole and clusterrolebinding', async () => {
      const k = (...args: string[]) => run('kubectl', args, { env: { ...process.env, KUBECONFIG: c.kubeconfigPath } });
      await k('create', 'deployment', 'web', '--image=nginx', '--replicas=2');
      await k('create', 'serviceaccount', 'robot');
      await k('create', 'role', 'reader', '--verb=get,list', '--resource=pods');
      await k('create', 'rolebinding', 'reader-robot', '--role=reader', '--serviceaccount=default:robot');
      await k('create', 'clusterrole', 'nodes', '--verb=get', '--resource=nodes');
      await k('create', 'clusterrolebinding', 'nodes-alice', '--clusterrole=nodes', '--user=alice');
      const apps = c.kubeConfig.makeApiClient(AppsV1Api);
      const rbac = c.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      const core = c.kubeConfig.makeApiClient(CoreV1Api);
      const d = await apps.readNamespacedDeployment({ namespace: 'default', name: 'web' });
      assert.equal(d.spec!.replicas, 2);
      assert.equal(d.spec!.template.spec!.containers[0].image, 'nginx');
      assert.deepEqual(d.spec!.selector.matchLabels, { app: 'web' });
      assert.ok(await core.readNamespacedServiceAccount({ namespace: 'default', name: 'robot' }));
      assert.deepEqual((await rbac.readNamespacedRole({ namespace: 'default', name: 'reader' })).rules![0].verbs, [
        'get',
        'list',
      ]);
      const rb = await rbac.readNamespacedRoleBinding({ namespace: 'default', name: 'reader-robot' });
      assert.deepEqual(JSON.parse(JSON.stringify(rb.subjects)), [
        { kind: 'ServiceAccount', name: 'robot', namespace: 'default' },
      ]);
      assert.equal((await rbac.readClusterRole({ name: 'nodes' })).rules![0].resources![0], 'nodes');
      const crb = await rbac.readClusterRoleBinding({ name: 'nodes-alice' });
      assert.equal(crb.roleRef.name, 'nodes');
      assert.equal(crb.subjects![0].name, 'alice');
    });
  },
);
