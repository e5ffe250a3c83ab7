// Integration: the hostpath provisioner under a real ProvisionController against the embedded cluster (PV binder,
// scheduler stand-in) on real temp directories. Both modes (deployment: shared path, Immediate class;
// daemonset: node paths, WaitForFirstConsumer class, a pod selecting the node) and every onDelete policy
// (delete removes, retain keeps, archive renames without collisions) plus the Retain reclaim policy.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig, DEFAULT_NODE } from '../../src/hostpath/config/hostpath-config.ts';
import { pods } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { Pod } from '../../src/types/k8s.ts';
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

const SHARED = 'integration.kube-provisioner.io/shared';
const LOCAL = 'integration.kube-provisioner.io/local';

describe('hostpath integration: modes and onDelete policies', () => {
  let env: HostPathEnv;
  let shared: string;
  let nodes: string;
  let deployment: Instance;
  let daemonset: Instance;

  before(async () => {
    env = await startHostPathEnv('kp-int-modes-');
    shared = path.join(env.tmp, 'shared');
    nodes = path.join(env.tmp, 'nodes');
    await fsp.mkdir(shared);
    await fsp.mkdir(nodes);
    const sharedSet = { sharedFileSystemPath: shared };
    const config = validateHostPathConfig({
      storageClassConfigs: {
        shared: sharedSet,
        'on-delete-retain': sharedSet,
        'on-delete-archive': sharedSet,
        'reclaim-retain': sharedSet,
        local: { nodePathMap: [{ node: DEFAULT_NODE, paths: [nodes] }] },
      },
    });
    deployment = startInstance(env, { provisionerName: SHARED, config, mode: 'deployment', nodeName: env.localNode });
    daemonset = startInstance(env, { provisionerName: LOCAL, config, mode: 'daemonset', nodeName: env.localNode });
    await createClass(env, storageClass('shared', SHARED));
    await createClass(env, storageClass('on-delete-retain', SHARED, { parameters: { onDelete: 'retain' } }));
    await createClass(
      env,
      storageClass('on-delete-archive', SHARED, {
        parameters: { onDelete: 'archive', pathPattern: '${.PVC.namespace}/${.PVC.name}/${.PV.name}' },
      }),
    );
    await createClass(env, storageClass('reclaim-retain', SHARED, { reclaimPolicy: 'Retain' }));
    await createClass(env, storageClass('local', LOCAL, { volumeBindingMode: 'WaitForFirstConsumer' }));
  });

  after(async () => {
    await deployment?.stop();
    await daemonset?.stop();
    await env?.stop();
  });

  it('deployment mode, shared path, Immediate: a ReadWriteMany claim is Bound to a hostPath PV without node affinity', async () => {
    const created = await createClaim(
      env,
      claim('shared-rwx', 'shared', { size: '5Mi', spec: { accessModes: ['ReadWriteMany'] } }),
    );
    const pv = await boundVolume(env, 'shared-rwx');
    assert.equal(pv.metadata.name, `pvc-${created.metadata.uid}`);
    assert.equal(pv.spec.hostPath?.type, 'Directory');
    assert.equal(pv.spec.local, undefined);
    assert.equal(pv.spec.nodeAffinity, undefined, 'every node reaches the shared path');
    assert.deepEqual(pv.spec.accessModes, ['ReadWriteMany']);
    assert.deepEqual(pv.spec.capacity, { storage: '5Mi' });
    const dir = volumePath(pv);
    assert.equal(path.dirname(dir), shared);
    assert.ok((await fsp.lstat(dir)).isDirectory());
    await waitFor('ProvisioningSucceeded', () =>
      env.events('shared-rwx', SHARED).some((e) => e.reason === 'ProvisioningSucceeded'),
    );
    assert.equal(daemonset.calls.length, 0, 'the other provisioner name never saw it');

    await deleteClaim(env, 'shared-rwx');
    await waitFor('PV deleted', () => !env.volume(pv.metadata.name ?? ''));
    assert.equal(await exists(dir), false, 'the volume directory itself is gone');
    assert.ok(
      await exists(path.join(shared, `archived-${path.basename(dir)}`)),
      'a shared path archives by default, as nfs-subdir does',
    );
  });

  it('daemonset mode, node paths, WaitForFirstConsumer: nothing until a pod selects the node, then a local PV on it', async () => {
    await createClaim(env, claim('node-data', 'local'));
    const waiting = await waitFor('explanation', () => daemonset.controller.explain(NS, 'node-data'));
    // Without selected-node a daemonset instance declines the claim (it is nobody's yet).
    assert.ok(['wait', 'ignore'].includes(waiting.decision.action), waiting.decision.reason);
    assert.deepEqual(await entriesBelow(nodes), []);
    assert.equal(daemonset.calls.length, 0);

    await createPod(env, 'consumer', ['node-data']);
    const pv = await boundVolume(env, 'node-data');
    assert.equal(env.claim('node-data')?.metadata.annotations?.[ANN_SELECTED_NODE], env.localNode);
    assert.equal(pv.spec.hostPath, undefined);
    const dir = pv.spec.local?.path ?? '';
    assert.equal(path.dirname(dir), nodes);
    assert.ok((await fsp.lstat(dir)).isDirectory());
    assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions, [
      { key: 'kubernetes.io/hostname', operator: 'In', values: [env.localNode] },
    ]);
    await waitFor(
      'pod placed on the node',
      () => (env.cluster.store.get('pods', NS, 'consumer') as Pod | undefined)?.spec.nodeName === env.localNode,
    );
    assert.deepEqual(
      daemonset.calls.map((c) => c.outcome),
      ['ok'],
    );

    await env.client.delete(pods, 'consumer', { namespace: NS });
    await deleteClaim(env, 'node-data');
    await waitFor('PV deleted', () => !env.volume(pv.metadata.name ?? ''));
    assert.equal(await exists(dir), false);
  });

  it('onDelete retain: the PV is deleted, the directory and its data are kept', async () => {
    const pv = await provisionWithData('kept', 'on-delete-retain');
    await deleteClaim(env, 'kept');
    await waitFor('PV deleted', () => !env.volume(pv.metadata.name ?? ''));
    assert.equal(await fsp.readFile(path.join(volumePath(pv), 'data'), 'utf8'), 'kept');
    assert.ok(deployment.calls.some((c) => c.op === 'delete' && c.name === pv.metadata.name && c.outcome === 'ok'));
  });

  it('reclaimPolicy Retain: the PV stays Released, delete() is never called, the directory stays', async () => {
    const pv = await provisionWithData('retained', 'reclaim-retain');
    assert.equal(pv.spec.persistentVolumeReclaimPolicy, 'Retain');
    await deleteClaim(env, 'retained');
    await waitFor('PV Released', () => env.volume(pv.metadata.name ?? '')?.status?.phase === 'Released');
    assert.equal(await fsp.readFile(path.join(volumePath(pv), 'data'), 'utf8'), 'retained');
    assert.equal(
      deployment.calls.some((c) => c.op === 'delete' && c.name === pv.metadata.name),
      false,
    );
  });

  it('onDelete archive: renamed in place with the data, two volumes of the same claim name never collide', async () => {
    const archived: string[] = [];
    for (const round of ['first', 'second']) {
      const pv = await provisionWithData('archived', 'on-delete-archive', round);
      const dir = volumePath(pv);
      assert.equal(path.dirname(dir), path.join(shared, NS, 'archived'));
      await deleteClaim(env, 'archived');
      await waitFor('PV deleted', () => !env.volume(pv.metadata.name ?? ''));
      await waitFor('claim gone', () => !env.claim('archived'));
      assert.equal(await exists(dir), false, 'the volume directory itself is gone');
      const names = (await fsp.readdir(path.dirname(dir))).filter((n) => n.startsWith(`archived-${pv.metadata.name}`));
      assert.deepEqual(names, [`archived-${pv.metadata.name}`], 'archived-<directory name>, as nfs-subdir names it');
      assert.equal(await fsp.readFile(path.join(path.dirname(dir), names[0], 'data'), 'utf8'), round);
      archived.push(names[0]);
    }
    assert.notEqual(archived[0], archived[1]);
    assert.deepEqual(
      (await fsp.readdir(path.join(shared, NS, 'archived'))).sort(),
      [...archived].sort(),
      'both archives kept side by side',
    );
  });

  /** A Bound claim of `className` whose volume holds a file `data` containing `content`. */
  async function provisionWithData(name: string, className: string, content = name) {
    await createClaim(env, claim(name, className));
    const pv = await boundVolume(env, name);
    await fsp.writeFile(path.join(volumePath(pv), 'data'), content);
    return pv;
  }
});
