// Integration: the bad-input rows of the hostpath issue that test/reliability does not cover, under a real
// controller and the embedded cluster: base paths that are a symlink, missing or a file; invalid mode/uid/gid
// values and a misspelt parameter; selected nodes that are not node names or do not exist (with the node cache).
// Each claim gets a Warning event saying what is wrong, nothing is created outside the roots (nor inside them),
// and the provisioner keeps serving a good claim created afterwards.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
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

const PROVISIONER = 'bad-input.kube-provisioner.io/hostpath';

interface Row {
  name: string;
  className: string;
  parameters?: Record<string, string>;
  annotations?: Record<string, string>;
  message: RegExp;
}

describe('hostpath integration: bad input', () => {
  let env: HostPathEnv;
  let root: string;
  let nodes: string;
  let outside: string;
  let instance: Instance;
  let outsideBefore: string[];
  let tmpBefore: string[];

  const rows = (): Row[] => [
    { name: 'base-symlink', className: 'base-symlink', message: /base path .*\/link is a symlink/ },
    {
      name: 'base-missing',
      className: 'base-missing',
      message: /base path .*\/missing does not exist \(is the disk mounted\?\)/,
    },
    { name: 'base-file', className: 'base-file', message: /base path .*\/a-file is not a directory/ },
    {
      name: 'mode-letters',
      className: 'mode-letters',
      parameters: { mode: 'rwxr-xr-x' },
      message: /"mode": "rwxr-xr-x" must be an octal/,
    },
    {
      name: 'uid-fraction',
      className: 'uid-fraction',
      parameters: { uid: '1.5' },
      message: /"uid": "1.5" must be a numeric id/,
    },
    {
      name: 'gid-name',
      className: 'gid-name',
      parameters: { gid: 'wheel' },
      message: /"gid": "wheel" must be a numeric id/,
    },
    {
      name: 'param-misspelt',
      className: 'param-misspelt',
      parameters: { pathpattern: '${.PV.name}' },
      message: /"pathpattern": unknown parameter/,
    },
    {
      name: 'node-not-a-name',
      className: 'node-local',
      annotations: { [ANN_SELECTED_NODE]: '../../etc' },
      message: /infeasible error.*selected node "\.\.\/\.\.\/etc" is not a valid node name/,
    },
    {
      name: 'node-upper-case',
      className: 'node-local',
      annotations: { [ANN_SELECTED_NODE]: 'Node-1' },
      message: /is not a valid node name/,
    },
  ];

  before(async () => {
    env = await startHostPathEnv('kp-int-bad-');
    root = path.join(env.tmp, 'root');
    nodes = path.join(env.tmp, 'nodes');
    outside = path.join(env.tmp, 'outside');
    await fsp.mkdir(root);
    await fsp.mkdir(nodes);
    await fsp.mkdir(outside);
    await fsp.writeFile(path.join(outside, 'keep'), 'outside the roots');
    await fsp.symlink(outside, path.join(env.tmp, 'link'));
    await fsp.writeFile(path.join(env.tmp, 'a-file'), 'not a directory');
    outsideBefore = await entriesBelow(outside);
    tmpBefore = (await fsp.readdir(env.tmp)).sort();

    const good = { sharedFileSystemPath: root };
    const config = validateHostPathConfig({
      storageClassConfigs: {
        good,
        'mode-letters': good,
        'uid-fraction': good,
        'gid-name': good,
        'param-misspelt': good,
        'base-symlink': { sharedFileSystemPath: path.join(env.tmp, 'link') },
        'base-missing': { sharedFileSystemPath: path.join(env.tmp, 'missing') },
        'base-file': { sharedFileSystemPath: path.join(env.tmp, 'a-file') },
        'node-local': { nodePathMap: [{ node: env.localNode, paths: [nodes] }] },
      },
    });
    // The node cache lets the controller check that a selected node exists (else: Reschedule).
    instance = startInstance(env, {
      provisionerName: PROVISIONER,
      config,
      mode: 'deployment',
      nodeName: env.localNode,
      controller: { nodeCache: true },
    });
    for (const r of rows()) {
      if (r.className !== 'node-local')
        await createClass(
          env,
          storageClass(r.className, PROVISIONER, r.parameters ? { parameters: r.parameters } : {}),
        );
    }
    await createClass(env, storageClass('node-local', PROVISIONER, { volumeBindingMode: 'WaitForFirstConsumer' }));
    await createClass(env, storageClass('good', PROVISIONER));
    for (const r of rows())
      await createClaim(env, claim(r.name, r.className, r.annotations ? { annotations: r.annotations } : {}));
  });

  after(async () => {
    await instance?.stop();
    await env?.stop();
  });

  for (const r of rows()) {
    it(`${r.name}: a Warning event says what is wrong, nothing is created`, async () => {
      const ev = await waitFor(`ProvisioningFailed on ${r.name}`, () =>
        env.events(r.name, PROVISIONER).find((e) => e.reason === 'ProvisioningFailed'),
      );
      assert.equal(ev.type, 'Warning');
      assert.match(ev.message ?? '', r.message);
      assert.notEqual(env.claim(r.name)?.status?.phase, 'Bound');
      assert.equal(
        env.volumes().some((v) => v.spec.claimRef?.name === r.name),
        false,
        'no PV',
      );
    });
  }

  it('a selected node that does not exist (node cache on) is rescheduled: selected-node removed, nothing created', async () => {
    await createClaim(env, claim('node-gone', 'node-local', { annotations: { [ANN_SELECTED_NODE]: 'no-such-node' } }));
    const ev = await waitFor('ProvisioningFailed', () =>
      env.events('node-gone', PROVISIONER).find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.match(ev.message ?? '', /selected node no-such-node does not exist; asking the scheduler for another node/);
    await waitFor(
      'selected-node removed',
      () => env.claim('node-gone')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
    );
    assert.equal(
      instance.calls.some((c) => c.op === 'provision' && c.name.endsWith(env.claim('node-gone')?.metadata.uid ?? '?')),
      false,
      'provision() is never called for a node that does not exist',
    );
  });

  it('afterwards: the provisioner still serves, and nothing was created outside (or inside) the roots', async () => {
    await createClaim(env, claim('good-last', 'good'));
    const pv = await boundVolume(env, 'good-last');
    assert.equal(path.dirname(volumePath(pv)), root);
    assert.deepEqual(await entriesBelow(outside), outsideBefore, 'the symlinked base path was never followed');
    assert.deepEqual((await fsp.readdir(env.tmp)).sort(), tmpBefore, 'the missing base path was not created');
    assert.equal(await fsp.readFile(path.join(env.tmp, 'a-file'), 'utf8'), 'not a directory');
    assert.deepEqual(await entriesBelow(root), [path.basename(volumePath(pv))], 'only the good volume in the root');
    assert.deepEqual(await entriesBelow(nodes), [], 'no directory for the claims with a bad node');
    // Node names were refused before provision(): the provisioner was never asked.
    const badNodeUids = ['node-not-a-name', 'node-upper-case'].map((n) => env.claim(n)?.metadata.uid ?? '?');
    assert.equal(
      instance.calls.some((c) => badNodeUids.some((u) => c.name.endsWith(u))),
      false,
    );
  });
});
