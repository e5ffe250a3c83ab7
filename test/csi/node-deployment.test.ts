// external-provisioner's --node-deployment with two nodes, each running the reference plugin (hostpath over CSI)
// and a `run csi --node-deployment` sidecar, against the embedded cluster:
// - checkNode/becomeOwner: an Immediate claim that no node was selected for is taken by exactly one node (the first
//   to write selected-node), and provisioned there by that node's sidecar;
// - becomeOwner's checkCapacity: a node whose GetCapacity has no room for the claim does not take it;
// - the reference plugin answers RESOURCE_EXHAUSTED when the selected node is full, and the sidecar reschedules
//   (selected-node removed), where it used to answer INVALID_ARGUMENT (infeasible, the claim stuck on that node);
// - --node-deployment-immediate-binding=false leaves Immediate claims alone.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { HOSTPATH_CSI_DRIVER } from '../../src/cli/csi-hostpath-plugin.ts';
import { parseRunCsiArgs } from '../../src/cli/csi-options.ts';
import { startCsiSidecar, type CsiSidecar } from '../../src/cli/run-csi.ts';
import { startCsiHostPathPlugin, type RunningCsiHostPathPlugin } from '../../src/cli/run-csi-hostpath-plugin.ts';
import { csiNodes } from '../../src/csi/kinds.ts';
import { JitteredBackoff } from '../../src/csi/node-ownership.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { nodes, persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE, LABEL_HOSTNAME } from '../../src/types/annotations.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const NODES = ['node-a', 'node-b'] as const;

describe('run csi --node-deployment: two nodes, two reference plugins, two sidecars', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let dir: string;
  const plugins: RunningCsiHostPathPlugin[] = [];
  const sidecars: CsiSidecar[] = [];
  let lazy: CsiSidecar | undefined;

  before(async () => {
    cluster = await startCluster({ controllers: true });
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
      qps: 0,
      userAgent: 'node-deployment-test',
    });
    dir = mkdtempSync(join(tmpdir(), 'csi-node-deployment-'));
    // Class `shared-room`: both nodes have 100Mi. `a-small`: node-a 2Mi, node-b 100Mi. `a-only`: node-a 4Mi only.
    const path = (node: string, cls: string) => {
      const p = join(dir, node, cls);
      mkdirSync(p, { recursive: true });
      return p;
    };
    const config = validateHostPathConfig({
      storageClassConfigs: {
        room: {
          nodePathMap: NODES.map((node) => ({ node, paths: [{ path: path(node, 'room'), capacity: '100Mi' }] })),
        },
        'a-small': {
          nodePathMap: [
            { node: 'node-a', paths: [{ path: path('node-a', 'a-small'), capacity: '2Mi' }] },
            { node: 'node-b', paths: [{ path: path('node-b', 'a-small'), capacity: '100Mi' }] },
          ],
        },
        'a-only': { nodePathMap: [{ node: 'node-a', paths: [{ path: path('node-a', 'a-only'), capacity: '4Mi' }] }] },
      },
    });
    for (const node of NODES) {
      await client.create(nodes, {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: node, labels: { [LABEL_HOSTNAME]: node } },
      });
      await client.create(csiNodes, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name: node },
        spec: { drivers: [{ name: HOSTPATH_CSI_DRIVER, nodeID: node, topologyKeys: [LABEL_HOSTNAME] }] },
      });
      plugins.push(
        await startCsiHostPathPlugin({
          endpoint: `unix://${join(dir, node, 'csi.sock')}`,
          config: { value: config },
          nodeName: node,
        }),
      );
    }
    const storageClass = (name: string, mode: StorageClass['volumeBindingMode'], config: string): StorageClass => ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: HOSTPATH_CSI_DRIVER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: mode,
      parameters: { storageClassConfig: config },
    });
    for (const c of [
      storageClass('room', 'Immediate', 'room'),
      storageClass('a-small', 'Immediate', 'a-small'),
      storageClass('a-only-wffc', 'WaitForFirstConsumer', 'a-only'),
    ])
      await client.create(storageClasses, c);
    for (const [i, node] of NODES.entries()) {
      const options = parseRunCsiArgs(
        [
          '--kubeconfig',
          cluster.kubeconfigPath,
          '--csi-address',
          plugins[i].server.address,
          '--node-deployment',
          '--health-address',
          'off',
          '--worker-threads',
          '4',
          '--extra-create-metadata',
          // Short delays keep the test quick; the race is the same as with the defaults (20 s, 1 min).
          '--node-deployment-base-delay',
          '50ms',
          '--node-deployment-max-delay',
          '400ms',
        ],
        { NODE_NAME: node, POD_NAMESPACE: 'kube-system' },
      );
      sidecars.push(
        await startCsiSidecar(options, {
          client,
          logger: silentLogger,
          registry: new Registry(),
          startupIntervalMs: 10,
        }),
      );
    }
  });
  after(async () => {
    await lazy?.stop();
    for (const s of sidecars) await s.stop();
    for (const p of plugins) await p.stop();
    client?.close();
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const claim = (
    name: string,
    className: string,
    size: string,
    annotations: Record<string, string> = {},
  ): PersistentVolumeClaim => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default', annotations },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: className,
    },
  });
  const getPVC = (name: string) =>
    cluster.store.get('persistentvolumeclaims', 'default', name) as PersistentVolumeClaim | undefined;
  const getPV = (name: string) =>
    cluster.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
  const affinityNode = (pv: PersistentVolume | undefined) =>
    pv?.spec.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.find((e) => e.key === LABEL_HOSTNAME)
      ?.values?.[0];
  const events = (name: string) =>
    (cluster.store.list('events').items as CoreEvent[]).filter((e) => e.involvedObject.name === name);

  it('checkNode/becomeOwner: each unselected Immediate claim is taken by exactly one node, whose sidecar provisions it on that node', async () => {
    const names = Array.from({ length: 6 }, (_, i) => `race-${i}`);
    for (const n of names)
      await client.create(persistentVolumeClaims, claim(n, 'room', '1Mi'), { namespace: 'default' });
    await waitFor('all raced claims Bound', () => names.every((n) => getPVC(n)?.status?.phase === 'Bound'), 60_000);
    for (const n of names) {
      const c = getPVC(n)!;
      const owner = c.metadata.annotations?.[ANN_SELECTED_NODE];
      assert.ok(owner === 'node-a' || owner === 'node-b', `${n} selected ${owner}`);
      assert.equal(affinityNode(getPV(c.spec.volumeName ?? '')), owner, `${n}: the PV is on the owner's node`);
    }
    const won = sidecars.map((s) => s.provisioner.ownership?.outcomes.won ?? 0);
    assert.equal(won[0] + won[1], names.length, `one win per claim (node-a ${won[0]}, node-b ${won[1]})`);
    await waitFor('no attempt left running', () => sidecars.every((s) => s.provisioner.ownership?.pending() === 0));
  });

  it("becomeOwner's checkCapacity: a node whose GetCapacity has no room for the claim does not take it", async () => {
    const names = ['big-0', 'big-1', 'big-2'];
    // 5Mi: node-a's a-small path holds 2Mi, node-b's 100Mi.
    for (const n of names)
      await client.create(persistentVolumeClaims, claim(n, 'a-small', '5Mi'), { namespace: 'default' });
    await waitFor('big claims Bound', () => names.every((n) => getPVC(n)?.status?.phase === 'Bound'), 60_000);
    for (const n of names) assert.equal(getPVC(n)?.metadata.annotations?.[ANN_SELECTED_NODE], 'node-b', n);
  });

  it('RESOURCE_EXHAUSTED from the reference plugin with a selected node is Reschedule: selected-node is removed', async () => {
    // node-a's a-only path holds 4Mi and no other node has one: the second 3Mi claim finds no room anywhere.
    await client.create(
      persistentVolumeClaims,
      claim('fill', 'a-only-wffc', '3Mi', { [ANN_SELECTED_NODE]: 'node-a' }),
      {
        namespace: 'default',
      },
    );
    await waitFor('fill Bound', () => getPVC('fill')?.status?.phase === 'Bound', 60_000);
    await client.create(
      persistentVolumeClaims,
      claim('full', 'a-only-wffc', '3Mi', { [ANN_SELECTED_NODE]: 'node-a' }),
      {
        namespace: 'default',
      },
    );
    await waitFor(
      'selected-node removed from full',
      () => getPVC('full') !== undefined && getPVC('full')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
      60_000,
    );
    assert.ok(
      events('full').some(
        (e) => e.reason === 'ProvisioningFailed' && /ResourceExhausted|RESOURCE_EXHAUSTED|free/.test(e.message ?? ''),
      ),
      JSON.stringify(events('full').map((e) => e.message)),
    );
    assert.equal(getPVC('full')?.status?.phase, 'Pending');
  });

  it('--node-deployment-immediate-binding=false: an instance leaves unselected Immediate claims alone', async () => {
    for (const s of sidecars) await s.stop();
    sidecars.length = 0;
    lazy = await startCsiSidecar(
      parseRunCsiArgs(
        [
          '--kubeconfig',
          cluster.kubeconfigPath,
          '--csi-address',
          plugins[0].server.address,
          '--node-deployment',
          '--node-deployment-immediate-binding=false',
          '--node-deployment-base-delay',
          '10ms',
          '--health-address',
          'off',
        ],
        { NODE_NAME: 'node-a', POD_NAMESPACE: 'kube-system' },
      ),
      { client, logger: silentLogger, registry: new Registry(), startupIntervalMs: 10 },
    );
    assert.equal(lazy.provisioner.ownership, undefined);
    await client.create(persistentVolumeClaims, claim('left-alone', 'room', '1Mi'), { namespace: 'default' });
    // A selected claim created after it is served: so the instance has seen left-alone by then.
    await client.create(persistentVolumeClaims, claim('selected', 'room', '1Mi', { [ANN_SELECTED_NODE]: 'node-a' }), {
      namespace: 'default',
    });
    await waitFor('selected Bound', () => getPVC('selected')?.status?.phase === 'Bound', 60_000);
    assert.equal(getPVC('left-alone')?.metadata.annotations?.[ANN_SELECTED_NODE], undefined);
    assert.equal(getPVC('left-alone')?.status?.phase, 'Pending');
  });
});

describe('node deployment delays (external-provisioner rateLimiterWithJitter)', () => {
  it('attempt n waits min(base·2ⁿ, max) minus up to one base of jitter; forget starts again from base', () => {
    let r = 0;
    const b = new JitteredBackoff(20_000, 60_000, () => r);
    assert.deepEqual([b.when('u'), b.when('u'), b.when('u'), b.when('u')], [20_000, 40_000, 60_000, 60_000]);
    b.forget('u');
    r = 0.75;
    assert.equal(b.when('u'), 5_000);
    assert.equal(b.when('other'), 5_000);
    r = 0.999_999;
    assert.ok(b.when('third') < 1, 'the first attempt may come at once');
    assert.equal(b.tracked(), 3);
  });
});
