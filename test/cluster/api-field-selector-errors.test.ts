// Field selector errors as kube-apiserver 1.32 words them (handlers/get.go turns a field label conversion error
// into 400 BadRequest): kinds without a conversion function of their own accept only metadata.name and
// metadata.namespace (k8s.io/apimachinery runtime DefaultMetaV1FieldSelectorConversion: `"x" is not a known
// field selector: only "metadata.name", "metadata.namespace"`); kinds with one (Pod, Node, Namespace, Secret,
// Event: k/k pkg/apis/core/v1/conversion.go) answer `field label not supported: x`, Node and Namespace refusing
// metadata.namespace too.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiException, AppsV1Api, CoreV1Api, StorageV1Api } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';

interface Status {
  code: number;
  reason: string;
  message: string;
}

let c: TestCluster;
let core: CoreV1Api;
let apps: AppsV1Api;
let storage: StorageV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  apps = c.kubeConfig.makeApiClient(AppsV1Api);
  storage = c.kubeConfig.makeApiClient(StorageV1Api);
});
after(() => c.stop());

async function badRequest(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof ApiException, String(err));
    const body = (typeof err.body === 'string' ? JSON.parse(err.body) : err.body) as Status;
    assert.equal(err.code, 400, JSON.stringify(body));
    assert.equal(body.reason, 'BadRequest');
    return body.message;
  }
  return assert.fail('expected a 400');
}

const known = (label: string) => `"${label}" is not a known field selector: only "metadata.name", "metadata.namespace"`;

describe('field selector errors', () => {
  it('names the only known fields for kinds without a conversion of their own', async () => {
    assert.equal(
      await badRequest(apps.listNamespacedDeployment({ namespace: 'default', fieldSelector: 'spec.replicas=1' })),
      known('spec.replicas'),
    );
    assert.equal(
      await badRequest(core.listPersistentVolume({ fieldSelector: 'spec.storageClassName=fast' })),
      known('spec.storageClassName'),
    );
    assert.equal(
      await badRequest(
        core.listNamespacedPersistentVolumeClaim({ namespace: 'default', fieldSelector: 'status.phase=Bound' }),
      ),
      known('status.phase'),
    );
    assert.equal(await badRequest(storage.listStorageClass({ fieldSelector: 'provisioner=x' })), known('provisioner'));
    // Watches go through the same conversion.
    assert.equal(
      await badRequest(core.listNamespacedConfigMap({ namespace: 'default', watch: true, fieldSelector: 'data.x=1' })),
      known('data.x'),
    );
    // The known ones still work, metadata.namespace on a cluster-scoped kind included.
    const pvs = await core.listPersistentVolume({ fieldSelector: 'metadata.namespace=,metadata.name=none' });
    assert.deepEqual(pvs.items, []);
  });

  it('answers "field label not supported" for kinds with their own conversion', async () => {
    assert.equal(
      await badRequest(core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.foo=bar' })),
      'field label not supported: spec.foo',
    );
    assert.equal(
      await badRequest(core.listNamespacedSecret({ namespace: 'default', fieldSelector: 'data.x=1' })),
      'field label not supported: data.x',
    );
    assert.equal(
      await badRequest(core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'note=x' })),
      'field label not supported: note',
    );
    // Node and Namespace accept metadata.name but not metadata.namespace.
    assert.equal(
      await badRequest(core.listNode({ fieldSelector: 'metadata.namespace=' })),
      'field label not supported: metadata.namespace',
    );
    assert.equal(
      await badRequest(core.listNamespace({ fieldSelector: 'metadata.namespace=' })),
      'field label not supported: metadata.namespace',
    );
    const nodes = await core.listNode({ fieldSelector: 'metadata.name=none,spec.unschedulable=true' });
    assert.deepEqual(nodes.items, []);
  });

  it('reads the legacy spec.host of pods as spec.nodeName', async () => {
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'placed' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'x' }] } },
    });
    const pods = await core.listNamespacedPod({ namespace: 'default', fieldSelector: 'spec.host=n1' });
    assert.deepEqual(
      pods.items.map((p) => p.metadata!.name),
      ['placed'],
    );
  });
});
