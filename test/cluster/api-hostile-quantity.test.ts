// A tenant controls claim sizes: an absurd quantity must be refused with 422 at once, not parsed into a
// 100-million-digit number that stalls the API server (found by the reliability suite).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, ApiException } from '@kubernetes/client-node';
import { startCluster } from '../../src/testing/index.ts';

test(
  'a claim asking for 1e99999999 bytes gets 422 Invalid and the server keeps serving',
  { timeout: 60_000 },
  async () => {
    const cluster = await startCluster();
    try {
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      const claim = (name: string, storage: string) => ({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: 'default' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } } },
      });
      for (const storage of ['1e99999999', '9'.repeat(500)]) {
        const err = await core
          .createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claim('huge', storage) })
          .then(
            () => assert.fail(`${storage.slice(0, 20)} was accepted`),
            (e: unknown) => e,
          );
        assert.ok(err instanceof ApiException);
        assert.equal(err.code, 422);
        const status = JSON.parse(String(err.body));
        assert.equal(status.reason, 'Invalid');
        assert.equal(status.details.causes[0].field, 'spec.resources[storage]');
      }
      const ok = await core.createNamespacedPersistentVolumeClaim({ namespace: 'default', body: claim('fine', '1Gi') });
      assert.equal(ok.metadata?.name, 'fine');
    } finally {
      await cluster.stop();
    }
  },
);
