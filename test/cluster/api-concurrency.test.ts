// Optimistic concurrency under contention, through client-node over HTTPS: concurrent read-modify-write loops
// that retry on 409 never lose an increment, and a watcher sees strictly increasing resourceVersions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, CoreV1Api } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { collectWatch } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
});
after(() => c.stop());

describe('concurrency', () => {
  it('loses no update when writers race and retry on Conflict', async () => {
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'counter' }, data: { n: '0' } },
    });
    const w = await collectWatch(c.kubeConfig, '/api/v1/namespaces/default/configmaps', {
      fieldSelector: 'metadata.name=counter',
    });
    const writers = 6;
    const perWriter = 10;
    let conflicts = 0;
    const increment = async () => {
      for (;;) {
        const cm = await core.readNamespacedConfigMap({ name: 'counter', namespace: 'default' });
        cm.data = { n: String(Number(cm.data!.n) + 1) };
        try {
          await core.replaceNamespacedConfigMap({ name: 'counter', namespace: 'default', body: cm });
          return;
        } catch (err) {
          if (!(err instanceof ApiException && err.code === 409)) throw err;
          conflicts++;
        }
      }
    };
    try {
      await Promise.all(
        Array.from({ length: writers }, async () => {
          for (let i = 0; i < perWriter; i++) await increment();
        }),
      );
      const final = await core.readNamespacedConfigMap({ name: 'counter', namespace: 'default' });
      assert.equal(final.data!.n, String(writers * perWriter));
      assert.ok(conflicts > 0, 'the writers did race');
      await w.until((e) => e.length === writers * perWriter + 1);
      const rvs = w.events.map((e) => Number(e.object.metadata.resourceVersion));
      for (let i = 1; i < rvs.length; i++)
        assert.ok(rvs[i] > rvs[i - 1], `resourceVersions increase: ${rvs[i - 1]} -> ${rvs[i]}`);
      assert.deepEqual(
        w.events.map((e) => Number(e.object.data.n)),
        Array.from({ length: writers * perWriter + 1 }, (_, i) => i),
      );
    } finally {
      w.stop();
    }
  });
});
