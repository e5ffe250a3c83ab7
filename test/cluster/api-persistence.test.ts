// Persistence across a restart on the same data dir: every object survives with its resourceVersion,
// new resourceVersions continue upwards, the kubeconfig/token/CA are reused, and a watch resumed from an old
// resourceVersion gets 410 Expired while one resumed from the current resourceVersion sees new events.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1PersistentVolume, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { collectWatch, pvBody, pvcBody } from './api-harness.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('persistence', () => {
  it('keeps objects and resourceVersions across a restart, and resumes watches correctly', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kp-persist-'));
    dirs.push(dataDir);
    let c: TestCluster = await startCluster({ dataDir, controllers: false });
    let core = c.kubeConfig.makeApiClient(CoreV1Api);
    const pv = await core.createPersistentVolume({ body: pvBody('persisted') as V1PersistentVolume });
    const pvc = await core.createNamespacedPersistentVolumeClaim({
      namespace: 'default',
      body: pvcBody('claim') as V1PersistentVolumeClaim,
    });
    await core.deleteNamespacedPersistentVolumeClaim({ name: 'claim', namespace: 'default' });
    const beforeList = await core.listPersistentVolume();
    const lastRv = beforeList.metadata!.resourceVersion!;
    const kubeconfig = await readFile(c.kubeconfigPath, 'utf8');
    assert.equal(c.kubeconfigPath, join(dataDir, 'kubeconfig'));
    await c.stop();

    c = await startCluster({ dataDir, controllers: false });
    try {
      core = c.kubeConfig.makeApiClient(CoreV1Api);
      assert.equal(await readFile(c.kubeconfigPath, 'utf8').then((k) => k.includes(c.token)), true);
      assert.equal(kubeconfig.includes(c.token), true, 'the token survives the restart');
      const again = await core.readPersistentVolume({ name: 'persisted' });
      assert.equal(again.metadata!.uid, pv.metadata!.uid);
      assert.equal(again.metadata!.resourceVersion, pv.metadata!.resourceVersion);
      const claims = await core.listNamespacedPersistentVolumeClaim({ namespace: 'default' });
      assert.equal(claims.items.length, 0, 'the deleted claim stays deleted');
      assert.equal(claims.metadata!.resourceVersion, lastRv, 'no write happened since the last one before the stop');

      const stale = await collectWatch(c.kubeConfig, '/api/v1/persistentvolumes', {
        resourceVersion: pvc.metadata!.resourceVersion,
      });
      await stale.done;
      assert.equal(stale.events[0]?.type, 'ERROR');
      assert.equal(stale.events[0].object.code, 410);

      const resumed = await collectWatch(c.kubeConfig, '/api/v1/persistentvolumes', { resourceVersion: lastRv });
      try {
        const next = await core.createPersistentVolume({ body: pvBody('after-restart') as V1PersistentVolume });
        assert.ok(Number(next.metadata!.resourceVersion) > Number(lastRv));
        await resumed.until((e) => e.length === 1);
        assert.equal(resumed.events[0].type, 'ADDED');
        assert.equal(resumed.events[0].object.metadata.name, 'after-restart');
      } finally {
        resumed.stop();
      }
    } finally {
      await c.stop();
    }
  });
});
