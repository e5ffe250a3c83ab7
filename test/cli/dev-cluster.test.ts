// `dev` runs its embedded cluster in a worker thread (src/cli/dev-cluster.ts): the provisioner's client reaches it
// over HTTPS through the kubeconfig the worker wrote, stop() ends the thread and frees the port, a listen error
// keeps its code for the user's message, and the main-thread variant behaves the same.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startDevCluster, type ClusterThread } from '../../src/cli/dev-cluster.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/types/logger.ts';
import { namespaces } from '../../src/runtime/resources.ts';

async function listenerOn(port: number): Promise<Server> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}

for (const where of ['worker', 'main'] as ClusterThread[]) {
  describe(`dev cluster in the ${where} thread`, () => {
    let dataDir: string;
    before(async () => {
      dataDir = await mkdtemp(join(tmpdir(), `kp-dev-cluster-${where}-`));
    });
    after(async () => {
      await rm(dataDir, { recursive: true, force: true });
    });

    it('serves over HTTPS through its kubeconfig, and stop() frees the port', async () => {
      const cluster = await startDevCluster(
        where,
        { dataDir, port: 0, host: '127.0.0.1', logLevel: 'silent' },
        silentLogger,
      );
      const { kubeConfig } = loadKubeConfig({ path: cluster.kubeconfigPath });
      const client = new KubeClient({ kubeConfig, qps: 0 });
      try {
        assert.match(cluster.url, /^https:\/\/127\.0\.0\.1:\d+$/);
        const list = await client.list(namespaces);
        assert.ok(list.items.some((n) => n.metadata.name === 'default'));
      } finally {
        client.close();
        await cluster.stop();
        await cluster.stop(); // idempotent
      }
      const port = Number(new URL(cluster.url).port);
      (await listenerOn(port)).close(); // the port is free again
      let ended = false;
      void cluster.exited.then(() => (ended = true));
      await new Promise((r) => setImmediate(r));
      assert.equal(ended, false, 'a requested stop is not reported as the thread ending on its own');
    });

    it('reports a port in use with its code (EADDRINUSE), for the user message', async () => {
      const busy = await listenerOn(0);
      const port = (busy.address() as { port: number }).port;
      try {
        await assert.rejects(
          startDevCluster(where, { dataDir, port, host: '127.0.0.1', logLevel: 'silent' }, silentLogger),
          (err: NodeJS.ErrnoException) => {
            assert.equal(err.code, 'EADDRINUSE');
            return true;
          },
        );
      } finally {
        busy.close();
      }
    });
  });
}
