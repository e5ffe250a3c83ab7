// Integration: deployment mode never creates a node-local directory for another node. A claim scheduled to a
// node that is not the deployment's own is refused with a Warning event saying how to fix it, or (with
// otherNodeClaims `ignore`) left to that node's daemonset instance of the same provisioner name, which creates
// it. Embedded cluster with a second Node object, real temp directories standing for each node's disk.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { nodes } from '../../src/runtime/resources.ts';
import type { Node } from '../../src/types/k8s.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  createPod,
  entriesBelow,
  startHostPathEnv,
  startInstance,
  storageClass,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const REFUSING = 'other-node.kube-provisioner.io/refuse';
const SHARDED = 'other-node.kube-provisioner.io/sharded';
const OTHER = 'other-node';

describe('hostpath integration: deployment mode and claims of other nodes', () => {
  let env: HostPathEnv;
  let localDisk: string;
  let otherDisk: string;
  const instances: Instance[] = [];
  let sharded: Instance;
  let nodeInstance: Instance;

  before(async () => {
    env = await startHostPathEnv('kp-int-other-');
    localDisk = path.join(env.tmp, 'local-disk');
    otherDisk = path.join(env.tmp, 'other-disk');
    await fsp.mkdir(localDisk);
    await fsp.mkdir(otherDisk);
    const other = await env.client.create<Node>(nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: OTHER, labels: { 'kubernetes.io/hostname': OTHER } },
    });
    // Schedulable: Ready, as a kubelet would report it.
    await env.client.patch(
      nodes,
      OTHER,
      { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }] } },
      { subresource: 'status' },
    );
    assert.ok(other.metadata.uid);
    const config = validateHostPathConfig({
      nodePathMap: [
        { node: env.localNode, paths: [localDisk] },
        { node: OTHER, paths: [otherDisk] },
      ],
    });
    instances.push(
      startInstance(env, { provisionerName: REFUSING, config, mode: 'deployment', nodeName: env.localNode }),
    );
    sharded = startInstance(env, {
      provisionerName: SHARDED,
      config,
      mode: 'deployment',
      nodeName: env.localNode,
      identity: 'deployment',
      provisioner: { otherNodeClaims: 'ignore' },
    });
    nodeInstance = startInstance(env, {
      provisionerName: SHARDED,
      config,
      mode: 'daemonset',
      nodeName: OTHER,
      identity: 'other-node-instance',
    });
    instances.push(sharded, nodeInstance);
    const wffc = { volumeBindingMode: 'WaitForFirstConsumer' as const };
    await createClass(env, storageClass('refusing', REFUSING, wffc));
    await createClass(env, storageClass('sharded', SHARDED, wffc));
  });

  after(async () => {
    for (const i of instances) await i.stop();
    await env?.stop();
  });

  it('refused with a Warning event that says how to fix it; nothing is created on either disk', async () => {
    await createClaim(env, claim('elsewhere', 'refusing'));
    await createPod(env, 'elsewhere-pod', ['elsewhere'], OTHER);
    const ev = await waitFor('Warning event', () =>
      env.events('elsewhere').find((e) => e.type === 'Warning' && /scheduled to node other-node/.test(e.message ?? '')),
    );
    assert.match(ev.message ?? '', /deploy\/node-local/);
    assert.match(ev.message ?? '', /--other-node-claims=ignore/);
    assert.deepEqual(await entriesBelow(otherDisk), []);
    assert.deepEqual(await entriesBelow(localDisk), []);
    assert.equal(env.claim('elsewhere')?.status?.phase, 'Pending');
  });

  it("with otherNodeClaims ignore: the node's own instance creates it, the deployment keeps its own node", async () => {
    await createClaim(env, claim('remote', 'sharded'));
    await createPod(env, 'remote-pod', ['remote'], OTHER);
    const pv = await boundVolume(env, 'remote');
    assert.equal(path.dirname(pv.spec.local?.path ?? ''), otherDisk);
    assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values, [OTHER]);
    assert.ok(nodeInstance.calls.some((c) => c.op === 'provision' && c.outcome === 'ok'));
    assert.ok(
      !sharded.calls.some((c) => c.op === 'provision' && c.outcome === 'ok'),
      'the deployment created nothing for the other node',
    );

    await createClaim(env, claim('here', 'sharded'));
    await createPod(env, 'here-pod', ['here'], env.localNode);
    const own = await boundVolume(env, 'here');
    assert.equal(path.dirname(own.spec.local?.path ?? ''), localDisk, "its own node's claims are the deployment's");
  });
});
