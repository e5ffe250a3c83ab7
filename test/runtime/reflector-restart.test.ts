// A cluster that comes back without its history (an in-memory apiserver, or etcd restored from an old backup)
// answers a watch from our newer resourceVersion with 504 ResourceVersionTooLarge. The reflector must relist,
// as client-go does, instead of retrying the old version until the server's counter catches up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../../src/runtime/client.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { persistentVolumes } from '../../src/runtime/resources.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { startCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const pv = (name: string): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    storageClassName: 'x',
    capacity: { storage: '1Gi' },
    accessModes: ['ReadWriteOnce'],
    hostPath: { path: `/tmp/${name}` },
  },
});

/** Polls until `cond` holds (bounded): the shared waitFor with this file's argument order. */
const until = async (cond: () => boolean, what: string, ms = 15_000): Promise<void> => {
  await waitFor(what, cond, ms, 10);
};

test('a cluster restarted without its history: the informer relists and follows the new objects', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'kp-reflector-'));
  let cluster = await startCluster({ dataDir, controllers: false });
  const port = Number(new URL(cluster.url).port);
  const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, retryBaseDelayMs: 1 });
  const informer = new Informer<PersistentVolume>({
    client,
    resource: persistentVolumes,
    backoff: { initialMs: 10, maxMs: 50 },
  });
  const ac = new AbortController();
  try {
    for (let i = 0; i < 30; i++) await cluster.store.create('persistentvolumes', pv(`old-${i}`));
    informer.start(ac.signal);
    await informer.synced;
    assert.equal(informer.store.list().length, 30);
    await cluster.stop();
    // Same port, token and certificates, but no objects and a resourceVersion counter starting again from 1.
    await Promise.all(
      ['cluster.db', 'cluster.db-wal', 'cluster.db-shm'].map((f) => rm(join(dataDir, f), { force: true })),
    );
    cluster = await startCluster({ dataDir, port, controllers: false });
    await cluster.store.create('persistentvolumes', pv('new-0'));
    await until(
      () => informer.store.list().length === 1 && informer.store.get(undefined, 'new-0') !== undefined,
      'the informer to relist: old objects gone as tombstones, the new one present',
    );
    const tooLarge = cluster.audit.records().filter((r) => r.verb === 'watch' && r.resource === 'persistentvolumes');
    assert.ok(tooLarge.length >= 1, 'the informer watched the new server');
  } finally {
    ac.abort();
    informer.stop();
    client.close();
    await cluster.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
});
