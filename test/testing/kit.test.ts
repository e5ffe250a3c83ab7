// kube-provisioner/testing as an author uses it: startCluster()'s ready client and typed helpers, waitFor() with
// the ready-made conditions against a running ProvisionController, fault rules scoped to a create by the name
// in its body, and the conformance suite failing a provisioner that breaks the contract.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ProvisionController, persistentVolumeClaims, persistentVolumes, silentLogger, storageClasses,
  type PersistentVolumeClaim, type Provisioner,
} from 'kube-provisioner';
import { ServerError } from 'kube-provisioner/runtime';
import { conditions, provisionerConformance, startCluster, waitFor, WaitTimeoutError, type TestCluster } from 'kube-provisioner/testing';
import { DirectoryProvisioner } from '../../examples/directory-provisioner/provisioner.ts';

const NAME = 'directory.example.com/kit';

function claim(name: string, storage: string, className = 'kit'): PersistentVolumeClaim {
  return {
    apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName: className },
  };
}

describe('test kit against a running controller', () => {
  let cluster: TestCluster;
  let controller: ProvisionController;
  let baseDir: string;

  before(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'kp-kit-'));
    cluster = await startCluster();
    controller = new ProvisionController(cluster.client, NAME, new DirectoryProvisioner({ baseDir, nodeName: 'node-a' }), {
      leaderElection: { mode: 'none' }, retry: { backoffBaseMs: 20 }, logger: silentLogger,
    });
    void controller.run();
    await cluster.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'kit' }, provisioner: NAME, reclaimPolicy: 'Delete',
    });
  });
  after(async () => {
    await controller.stop();
    await cluster.stop();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('typed create/get, claim Bound, PV deleted after the claim is', async () => {
    const created = await cluster.create(persistentVolumeClaims, claim('data', '10Mi'));
    const bound = await waitFor(cluster.client, persistentVolumeClaims, 'data', conditions.claimBound(), { namespace: 'default', timeoutMs: 20_000 });
    const pvName = bound?.spec.volumeName ?? '';
    assert.equal(pvName, `pvc-${created.metadata.uid}`);
    const pv = await cluster.get(persistentVolumes, pvName); // a PersistentVolume, no cast
    assert.equal(pv.spec.capacity?.storage, '10Mi');
    await cluster.client.delete(persistentVolumeClaims, 'data', { namespace: 'default' });
    assert.equal(await waitFor(cluster.client, persistentVolumes, pvName, conditions.deleted(pv.metadata.uid), { timeoutMs: 20_000 }), undefined);
  });

  it('claim Pending with a ProvisioningFailed event; eventSeen; a timeout names what was awaited', async () => {
    await cluster.create(persistentVolumeClaims, claim('too-big', '5Gi'));
    const pending = await waitFor(cluster.client, persistentVolumeClaims, 'too-big', conditions.claimPendingWithEvent('ProvisioningFailed'), { namespace: 'default', timeoutMs: 20_000 });
    assert.equal(pending?.status?.phase ?? 'Pending', 'Pending');
    await waitFor(cluster.client, persistentVolumeClaims, 'too-big', conditions.eventSeen('ProvisioningFailed'), { namespace: 'default' });
    await assert.rejects(
      waitFor(cluster.client, persistentVolumeClaims, 'too-big', conditions.claimBound(), { namespace: 'default', timeoutMs: 200 }),
      (err: unknown) => err instanceof WaitTimeoutError && /not claim Bound/.test(err.message) && err.last?.metadata.name === 'too-big',
    );
  });

  it('a fault rule naming an object fails the create of that name only (the name is in the body)', async () => {
    cluster.faults.add({ verb: 'create', resource: 'persistentvolumeclaims', name: 'faulty', status: 500, count: 1 });
    await cluster.create(persistentVolumeClaims, claim('unrelated', '1Mi', 'none'));
    await assert.rejects(cluster.create(persistentVolumeClaims, claim('faulty', '1Mi', 'none')), (err: unknown) => err instanceof ServerError && err.code === 500);
    assert.equal(cluster.store.get('persistentvolumeclaims', 'default', 'faulty'), undefined, 'nothing was stored');
    await cluster.create(persistentVolumeClaims, claim('faulty', '1Mi', 'none')); // the rule was used up
  });
});

describe('the conformance suite fails a provisioner that breaks the contract', () => {
  // A provisioner that is not idempotent and ignores its AbortSignal.
  let n = 0;
  const broken: Provisioner = {
    provision: async (o) => ({ volume: { metadata: { name: o.pvName }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/v/${++n}` } } } }),
    delete: async () => {},
  };
  const results = new Map<string, unknown>();
  before(async () => {
    const tests: Array<[string, () => Promise<void>]> = [];
    provisionerConformance({
      make: () => ({ provisioner: broken, storageClass: { metadata: { name: 'x' }, provisioner: 'x' } }),
      runner: { describe: (_name, fn) => fn(), it: (name, fn) => tests.push([name, fn]) },
    });
    for (const [name, fn] of tests) results.set(name, await fn().then(() => 'passed', (err: unknown) => err));
  });
  it('reports the broken items and passes the kept ones', () => {
    const failed = [...results].filter(([, r]) => r !== 'passed').map(([name]) => name);
    assert.deepEqual(failed.sort(), ['an aborted signal stops provision and delete before they act', 'provision is idempotent for the same pvName']);
  });
});
