// Integration: daemonset sharding with two node instances sharing one cluster and one configuration. Each
// instance (HostPathProvisioner in daemonset mode + its own ProvisionController, same provisioner name)
// provisions only the claims scheduled to its node, into its node's paths, and deletes only its node's volumes;
// the other instance declines or gets IgnoredError and records nothing (no event, no directory).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ensureLocalNode } from '../../src/cluster/controllers/local-node.ts';
import { validateHostPathConfig, type HostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { pods } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  createPod,
  deleteClaim,
  entriesBelow,
  exists,
  NS,
  startHostPathEnv,
  startInstance,
  storageClass,
  volumePath,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const PROVISIONER = 'shard.kube-provisioner.io/hostpath';
const NODE_B = 'node-b';

describe('hostpath integration: daemonset sharding with two node instances', () => {
  let env: HostPathEnv;
  let nodeA: string;
  let pathsA: string;
  let pathsB: string;
  let config: HostPathConfig;
  let a: Instance;
  let b: Instance;

  const start = (node: string) =>
    startInstance(env, {
      provisionerName: PROVISIONER,
      config,
      mode: 'daemonset',
      nodeName: node,
      identity: `ds-${node}`,
    });
  /** Events recorded by the instance of `node` (its recorder's component is `<provisioner>_<identity>`). */
  const eventsBy = (node: string) =>
    (
      env.cluster.store.list('events').items as Array<{ reportingComponent?: string; source?: { component?: string } }>
    ).filter((e) => (e.reportingComponent ?? e.source?.component) === `${PROVISIONER}_ds-${node}`);

  before(async () => {
    env = await startHostPathEnv('kp-int-shard-');
    nodeA = env.localNode;
    // The kit's store is the cluster's ClusterStore behind a narrow interface; this helper needs the whole of it.
    ensureLocalNode(env.cluster.store as Parameters<typeof ensureLocalNode>[0], NODE_B);
    pathsA = path.join(env.tmp, 'node-a-disk');
    pathsB = path.join(env.tmp, 'node-b-disk');
    await fsp.mkdir(pathsA);
    await fsp.mkdir(pathsB);
    config = validateHostPathConfig({
      nodePathMap: [
        { node: nodeA, paths: [pathsA] },
        { node: NODE_B, paths: [pathsB] },
      ],
    });
    a = start(nodeA);
    b = start(NODE_B);
    await createClass(env, storageClass('node-local', PROVISIONER, { volumeBindingMode: 'WaitForFirstConsumer' }));
  });

  after(async () => {
    await a?.stop();
    await b?.stop();
    await env?.stop();
  });

  it("a claim scheduled to node A is provisioned by A's instance only, into A's paths", async () => {
    await createClaim(env, claim('on-a', 'node-local'));
    await createPod(env, 'pod-a', ['on-a'], nodeA);
    const pv = await boundVolume(env, 'on-a');
    assert.equal(env.claim('on-a')?.metadata.annotations?.[ANN_SELECTED_NODE], nodeA);
    assert.equal(path.dirname(volumePath(pv)), pathsA);
    assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values, [nodeA]);
    assert.deepEqual(
      a.calls.filter((c) => c.op === 'provision').map((c) => c.outcome),
      ['ok'],
    );
    assert.deepEqual(b.calls, [], "B's instance never provisioned A's claim");
    assert.deepEqual(await entriesBelow(pathsB), []);
  });

  it("a claim scheduled to node B is provisioned by B's instance only, into B's paths", async () => {
    await createClaim(env, claim('on-b', 'node-local'));
    await createPod(env, 'pod-b', ['on-b'], NODE_B);
    const pv = await boundVolume(env, 'on-b');
    assert.equal(path.dirname(volumePath(pv)), pathsB);
    assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values, [NODE_B]);
    assert.equal(a.calls.filter((c) => c.op === 'provision').length, 1, "A's instance did not touch B's claim");
    assert.equal((await entriesBelow(pathsA)).length, 1, "only A's own volume in A's paths");
  });

  it("with A's instance down, B gets IgnoredError for A's released volume, records nothing; A deletes it when back", async () => {
    const pv = await boundVolume(env, 'on-a');
    const pvName = pv.metadata.name ?? '';
    await a.stop();
    const eventsOfB = eventsBy(NODE_B).length;
    await env.client.delete(pods, 'pod-a', { namespace: NS });
    await deleteClaim(env, 'on-a');
    await waitFor("B's delete() ignored", () =>
      b.calls.some((c) => c.op === 'delete' && c.name === pvName && c.outcome === 'IgnoredError'),
    );
    assert.ok(env.volume(pvName), 'the PV waits for its own node');
    assert.ok(await exists(volumePath(pv)), "B never touched A's directory");
    assert.equal(eventsBy(NODE_B).length, eventsOfB, 'IgnoredError: no event from B');
    assert.equal(
      env.events(pvName).some((e) => e.reason === 'VolumeFailedDelete'),
      false,
    );

    a = start(nodeA);
    await waitFor('PV deleted by A', () => !env.volume(pvName));
    assert.equal(await exists(volumePath(pv)), false);
    assert.deepEqual(
      a.calls.filter((c) => c.op === 'delete').map((c) => c.outcome),
      ['ok'],
    );
    assert.equal(
      b.calls.some((c) => c.op === 'delete' && c.outcome !== 'IgnoredError'),
      false,
      'B never deleted anything',
    );
    assert.equal((await entriesBelow(pathsB)).length, 1, "B's volume is untouched");
  });
});
