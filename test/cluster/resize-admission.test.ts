// The embedded cluster resizes claims as kube-apiserver and kube-controller-manager do: a Bound claim's request may
// grow when its class allows expansion (403 otherwise), may come back down after a failed expansion but never to
// status.capacity (422), an unbound claim's request is immutable (422), and a grown claim gets the expand
// controller's ExternalExpanding event. Over HTTPS with the project's client.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient } from '../../src/runtime/client.ts';
import { ForbiddenError, InvalidError } from '../../src/runtime/status-errors.ts';
import { persistentVolumeClaims, persistentVolumes, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { CoreEvent, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { waitFor } from '../support/wait.ts';

const NS = 'default';
let cluster: TestCluster;
let client: KubeClient;

async function boundClaim(name: string, className: string, size = '1Gi'): Promise<void> {
  await client.create(persistentVolumes, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pv-${name}` },
    spec: {
      capacity: { storage: size },
      accessModes: ['ReadWriteOnce'],
      storageClassName: className,
      hostPath: { path: `/tmp/${name}` },
      claimRef: { namespace: NS, name },
    },
  });
  await client.create(
    persistentVolumeClaims,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: NS },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: className },
    },
    { namespace: NS },
  );
  await waitFor(`${name} Bound`, () => claim(name)?.status?.phase === 'Bound');
}

const claim = (name: string) =>
  cluster.store.get('persistentvolumeclaims', NS, name) as PersistentVolumeClaim | undefined;

function request(name: string, size: string): Promise<unknown> {
  return client.patch(
    persistentVolumeClaims,
    name,
    { spec: { resources: { requests: { storage: size } } } },
    { namespace: NS, type: 'merge' },
  );
}

async function refusal(p: Promise<unknown>): Promise<{ code: number; message: string; cls: string }> {
  try {
    await p;
  } catch (e) {
    const err = e as InvalidError;
    return { code: err.status.code, message: err.status.message ?? '', cls: err.constructor.name };
  }
  throw new Error('the request was accepted');
}

describe('claim resize admission and events', () => {
  before(async () => {
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'resize-admission-test' });
    for (const [name, allow] of [
      ['elastic', true],
      ['fixed', false],
    ] as const) {
      await client.create(storageClasses, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name },
        provisioner: 'example.com/external',
        volumeBindingMode: 'Immediate',
        ...(allow ? { allowVolumeExpansion: true } : {}),
      });
    }
  });
  after(async () => {
    client.close();
    await cluster.stop();
  });

  it('grows a Bound claim of a class that allows it, with ExternalExpanding from volume_expand', async () => {
    await boundClaim('grows', 'elastic');
    await request('grows', '3Gi');
    assert.equal(claim('grows')?.spec.resources?.requests?.storage, '3Gi');
    const ev = await waitFor('ExternalExpanding', () =>
      (cluster.store.list('events').items as CoreEvent[]).find(
        (e) => e.involvedObject.name === 'grows' && e.reason === 'ExternalExpanding',
      ),
    );
    assert.equal(ev.message, 'waiting for an external controller to expand this PVC');
    assert.equal(ev.source?.component, 'volume_expand');
    assert.equal(ev.type, 'Normal');
  });

  it('lets the request come back down after a failed expansion, but not to status.capacity (422)', async () => {
    await boundClaim('recovers', 'elastic');
    await request('recovers', '5Gi');
    await request('recovers', '2Gi');
    assert.equal(claim('recovers')?.spec.resources?.requests?.storage, '2Gi');
    const r = await refusal(request('recovers', '1Gi'));
    assert.equal(r.code, 422);
    assert.equal(r.cls, InvalidError.name);
    assert.equal(
      r.message,
      'PersistentVolumeClaim "recovers" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity',
    );
  });

  it('refuses a shrink below status.capacity (422)', async () => {
    await boundClaim('shrinks', 'elastic');
    const r = await refusal(request('shrinks', '512Mi'));
    assert.equal(r.code, 422);
    assert.equal(
      r.message,
      'PersistentVolumeClaim "shrinks" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity',
    );
    assert.equal(claim('shrinks')?.spec.resources?.requests?.storage, '1Gi');
  });

  it('refuses growth when the class does not allow expansion (403)', async () => {
    await boundClaim('fixed-size', 'fixed');
    const r = await refusal(request('fixed-size', '2Gi'));
    assert.equal(r.code, 403);
    assert.equal(r.cls, ForbiddenError.name);
    assert.equal(
      r.message,
      'persistentvolumeclaims "fixed-size" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize',
    );
  });

  it('refuses a change to an unbound claim request (422, validation answers before admission)', async () => {
    await client.create(
      persistentVolumeClaims,
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'pending', namespace: NS },
        spec: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          storageClassName: 'elastic',
        },
      },
      { namespace: NS },
    );
    const r = await refusal(request('pending', '2Gi'));
    assert.equal(r.code, 422);
    assert.match(
      r.message,
      /^PersistentVolumeClaim "pending" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims/,
    );
  });
});
