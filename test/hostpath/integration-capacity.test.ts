// Integration: capacity per base path under a real controller and the embedded cluster. A claim larger than
// what is left gets an Infeasible Warning on the shared path (Immediate), and on a node path too when no other
// node has paths for the class (rescheduling could not help: see integration-capacity-backoff); after a restart of the
// provisioner the allocation is rebuilt from the existing PVs (the on-disk records removed to prove it).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig, type HostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  entriesBelow,
  startHostPathEnv,
  startInstance,
  storageClass,
  volumePath,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const SHARED = 'capacity.kube-provisioner.io/shared';
const LOCAL = 'capacity.kube-provisioner.io/local';
const MI = 1n << 20n;

describe('hostpath integration: capacity, reschedule and restart', () => {
  let env: HostPathEnv;
  let shared: string;
  let nodes: string;
  let config: HostPathConfig;
  let sharedInstance: Instance;
  let localInstance: Instance;

  const start = () => {
    sharedInstance = startInstance(env, {
      provisionerName: SHARED,
      config,
      mode: 'deployment',
      nodeName: env.localNode,
    });
    localInstance = startInstance(env, { provisionerName: LOCAL, config, mode: 'daemonset', nodeName: env.localNode });
  };
  const failures = (name: string, provisioner: string) =>
    env.events(name, provisioner).filter((e) => e.reason === 'ProvisioningFailed');

  before(async () => {
    env = await startHostPathEnv('kp-int-capacity-');
    shared = path.join(env.tmp, 'shared');
    nodes = path.join(env.tmp, 'nodes');
    await fsp.mkdir(shared);
    await fsp.mkdir(nodes);
    config = validateHostPathConfig({
      storageClassConfigs: {
        'shared-10mi': { sharedFileSystemPath: { path: shared, capacity: '10Mi' } },
        'local-10mi': { nodePathMap: [{ node: env.localNode, paths: [{ path: nodes, capacity: '10Mi' }] }] },
      },
    });
    start();
    await createClass(env, storageClass('shared-10mi', SHARED));
    await createClass(env, storageClass('local-10mi', LOCAL, { volumeBindingMode: 'WaitForFirstConsumer' }));
  });

  after(async () => {
    await sharedInstance?.stop();
    await localInstance?.stop();
    await env?.stop();
  });

  it('Immediate on the shared path: a claim bigger than what is left gets an Infeasible Warning and nothing on disk', async () => {
    await createClaim(env, claim('shared-first', 'shared-10mi', { size: '6Mi' }));
    await boundVolume(env, 'shared-first');
    const before = await entriesBelow(shared);
    await createClaim(env, claim('shared-too-big', 'shared-10mi', { size: '6Mi' }));
    const ev = await waitFor('ProvisioningFailed', () => failures('shared-too-big', SHARED)[0]);
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', /infeasible error/);
    assert.match(ev.message ?? '', /no base path has 6Mi free/);
    assert.notEqual(env.claim('shared-too-big')?.status?.phase, 'Bound');
    assert.deepEqual(await entriesBelow(shared), before, 'nothing created for the refused claim');
    assert.deepEqual(
      sharedInstance.provisioner
        .allocations()
        .filter((a) => a.basePath === shared)
        .map((a) => [a.basePath, a.allocated, a.capacity]),
      [[shared, 6n * MI, 10n * MI]],
    );
  });

  it('WaitForFirstConsumer on the only node with paths: a claim that does not fit is infeasible, selected node kept', async () => {
    await createClaim(
      env,
      claim('local-first', 'local-10mi', { size: '6Mi', annotations: { [ANN_SELECTED_NODE]: env.localNode } }),
    );
    await boundVolume(env, 'local-first');
    const before = await entriesBelow(nodes);
    // Selected by hand (no pod), so the scheduler stand-in does not select the node again after the reschedule.
    await createClaim(
      env,
      claim('local-too-big', 'local-10mi', { size: '6Mi', annotations: { [ANN_SELECTED_NODE]: env.localNode } }),
    );
    const ev = await waitFor('ProvisioningFailed', () => failures('local-too-big', LOCAL)[0]);
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', /infeasible error.*no node has 6Mi free/);
    assert.equal(env.claim('local-too-big')?.metadata.annotations?.[ANN_SELECTED_NODE], env.localNode);
    assert.notEqual(env.claim('local-too-big')?.status?.phase, 'Bound');
    assert.deepEqual(await entriesBelow(nodes), before);
  });

  it('after a restart the allocation is rebuilt from the PVs: still full, and exactly the rest still fits', async () => {
    await sharedInstance.stop();
    await localInstance.stop();
    // Without the records on disk, only the PVs in the API can tell the new instances what is allocated.
    await fsp.rm(path.join(shared, '.kube-provisioner'), { recursive: true, force: true });
    await fsp.rm(path.join(nodes, '.kube-provisioner'), { recursive: true, force: true });
    start();
    await createClaim(env, claim('shared-after-restart', 'shared-10mi', { size: '5Mi' }));
    const ev = await waitFor('ProvisioningFailed after restart', () => failures('shared-after-restart', SHARED)[0]);
    assert.match(ev.message ?? '', /no base path has 5Mi free/);
    await createClaim(env, claim('shared-rest', 'shared-10mi', { size: '4Mi' }));
    const pv = await boundVolume(env, 'shared-rest');
    assert.equal(path.dirname(volumePath(pv)), shared);
    assert.deepEqual(
      sharedInstance.provisioner
        .allocations()
        .filter((a) => a.basePath === shared)
        .map((a) => [a.basePath, a.allocated, a.volumes]),
      [[shared, 10n * MI, 2]],
    );

    await createClaim(
      env,
      claim('local-after-restart', 'local-10mi', { size: '5Mi', annotations: { [ANN_SELECTED_NODE]: env.localNode } }),
    );
    const refused = await waitFor('refused after restart', () => failures('local-after-restart', LOCAL)[0]);
    assert.match(refused.message ?? '', /no node has 5Mi free/);
  });
});
