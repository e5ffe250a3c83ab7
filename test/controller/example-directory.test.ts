// The example provisioner (examples/directory-provisioner) run the way its authors would test it: through the
// public entry points `kube-provisioner` and `kube-provisioner/testing`, against the embedded cluster and its
// controllers. Claim -> Bound with a real directory -> claim deleted -> directory and PV gone.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  KubeClient,
  ProvisionController,
  silentLogger,
  type CoreEvent,
  type PersistentVolumeClaim,
  type StorageClass,
} from 'kube-provisioner';
import { startCluster, type TestCluster } from 'kube-provisioner/testing';
import { DirectoryProvisioner } from '../../examples/directory-provisioner/provisioner.ts';
import { waitFor } from '../support/wait.ts';

const NAME = 'directory.example.com/local';

describe('example: directory provisioner', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let baseDir: string;
  let controller: ProvisionController;

  before(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'directory-provisioner-'));
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    controller = new ProvisionController(client, NAME, new DirectoryProvisioner({ baseDir, nodeName: 'node-a' }), {
      leaderElection: { mode: 'none' },
      addFinalizer: true,
      retry: { backoffBaseMs: 20 },
      logger: silentLogger,
    });
    void controller.run();
    const sc: StorageClass = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'dirs' },
      provisioner: NAME,
      reclaimPolicy: 'Delete',
    };
    cluster.store.create('storageclasses', sc);
  });
  after(async () => {
    await controller.stop();
    client.close();
    await cluster.stop();
    await rm(baseDir, { recursive: true, force: true });
  });

  const until = <T>(fn: () => T | undefined | false, what: string): Promise<T> => waitFor(what, fn, 10_000);

  it('provisions a directory for a claim and removes it when the claim is deleted', async () => {
    const pvc: PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Mi' } }, storageClassName: 'dirs' },
    };
    const created = cluster.store.create('persistentvolumeclaims', pvc);
    const dir = join(baseDir, `pvc-${created.metadata.uid}`);
    await until(
      () =>
        (cluster.store.get('persistentvolumeclaims', 'default', 'data') as PersistentVolumeClaim | undefined)?.status
          ?.phase === 'Bound',
      'Bound',
    );
    assert.ok(existsSync(join(dir, '.claim')));
    cluster.store.delete('persistentvolumeclaims', 'default', 'data');
    await until(() => !cluster.store.get('persistentvolumes', undefined, `pvc-${created.metadata.uid}`), 'PV deleted');
    assert.equal(existsSync(dir), false);
  });

  it('refuses a claim larger than the backend limit with a slow-retry event', async () => {
    const pvc: PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'huge', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '5Gi' } }, storageClassName: 'dirs' },
    };
    cluster.store.create('persistentvolumeclaims', pvc);
    const ev = await until(
      () =>
        (cluster.store.list('events').items as CoreEvent[]).find(
          (e) => e.involvedObject.name === 'huge' && e.reason === 'ProvisioningFailed',
        ),
      'ProvisioningFailed event',
    );
    assert.match(ev.message ?? '', /infeasible error\. Retries will be delayed\. requested 5Gi exceeds/);
  });
});
