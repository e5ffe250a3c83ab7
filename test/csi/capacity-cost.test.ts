// What capacity publishing costs, counted (not timed) at 10 and 1,000 topology segments: one GetCapacity and one
// create per (class x segment) on the first pass, and API reads that do not grow with the number of segments
// (informers: one list, in pages of 500, and one watch per kind). Against the embedded cluster's audit counter.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { CapacityController } from '../../src/csi/capacity-publisher.ts';
import type { CsiClient } from '../../src/csi/csi-client.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const DRIVER = 'cost.csi.example.com';

describe('capacity publishing cost at 10 and 1,000 segments', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });

  async function measure(n: number, tag: string): Promise<{ getCapacity: number; creates: number; reads: number }> {
    const agent = `capacity-cost-${tag}`;
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
      qps: 0,
      userAgent: agent,
    });
    const ns = `cost-${tag}`;
    cluster.store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    for (let i = 0; i < n; i++) {
      const name = `${tag}-node-${i}`;
      cluster.store.create('nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name, labels: { [`${tag}/zone`]: `z${i}` } },
      });
      cluster.store.create('csinodes', {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name },
        spec: { drivers: [{ name: `${DRIVER}.${tag}`, nodeID: name, topologyKeys: [`${tag}/zone`] }] },
      });
    }
    await client.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: `wffc-${tag}` },
      provisioner: `${DRIVER}.${tag}`,
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    let calls = 0;
    const csi = { call: async () => ((calls += 1), { availableCapacity: 1n << 30n }) } as unknown as Pick<
      CsiClient,
      'call'
    >;
    const loop = new CapacityController({
      client,
      csi,
      driverName: `${DRIVER}.${tag}`,
      namespace: ns,
      pollIntervalMs: 3_600_000,
      registry: new Registry(),
      logger: silentLogger,
    });
    const stop = new AbortController();
    const running = loop.run(stop.signal);
    try {
      await waitFor(
        `${n} capacity objects`,
        () => cluster.store.list('csistoragecapacities', { namespace: ns }).items.length === n,
        120_000,
        50,
      );
    } finally {
      stop.abort();
      await running;
      client.close();
    }
    const mine = cluster.audit.records().filter((r) => r.client === agent);
    const sum = (keep: (verb: string, resource: string) => boolean) =>
      mine.filter((r) => keep(r.verb, r.resource)).reduce((n, r) => n + r.count, 0);
    return {
      getCapacity: calls,
      creates: sum((verb, resource) => verb === 'create' && resource === 'csistoragecapacities'),
      reads: sum((verb) => verb === 'list' || verb === 'watch' || verb === 'get'),
    };
  }

  it('one GetCapacity and one create per segment; reads grow only by list pages', async () => {
    const small = await measure(10, 's');
    const large = await measure(1000, 'l');
    assert.deepEqual([small.getCapacity, small.creates], [10, 10]);
    assert.deepEqual([large.getCapacity, large.creates], [1000, 1000]);
    // Reads are one list (in pages of 500) and one watch per informer: 1,000 more Nodes and CSINodes add list pages only.
    const extraPages = 2 * Math.ceil(1000 / 500);
    assert.ok(large.reads <= small.reads + extraPages, `reads at 10: ${small.reads}, at 1,000: ${large.reads}`);
  });
});
