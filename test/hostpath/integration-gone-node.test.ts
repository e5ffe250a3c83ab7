// Integration: gone nodes in daemonset mode. A Released Delete-policy node-local PV of ours whose Node has been
// missing for the grace period (an injected clock, so no waiting) is deleted from the API by another node's
// instance, with a VolumeNodeGone Warning naming the directory it could not reach; the directory is not touched.
// A shared-path PV of the gone node is deleted as usual (its directory is reachable). A PV whose node exists is
// left to that node's instance, however long it waits.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig, DEFAULT_NODE } from '../../src/hostpath/config/hostpath-config.ts';
import { REASON_NODE_GONE } from '../../src/hostpath/delete/gone-node.ts';
import {
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_KIND,
  ANN_HOSTPATH_NODE,
  ANN_HOSTPATH_ON_DELETE,
} from '../../src/hostpath/volume/volume-spec.ts';
import { NotFoundError } from '../../src/runtime/status-errors.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { nodes as nodeResource, persistentVolumes } from '../../src/runtime/resources.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import {
  exists,
  startHostPathEnv,
  startInstance,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const LOCAL = 'gone-node.kube-provisioner.io/local';
const GRACE_MS = 10 * 60_000;

describe('hostpath integration: volumes of gone nodes (daemonset mode)', () => {
  let env: HostPathEnv;
  let disk: string;
  let shared: string;
  let instance: Instance;
  const clock = new TestClock();

  before(async () => {
    env = await startHostPathEnv('kp-int-gone-');
    disk = path.join(env.tmp, 'disk');
    shared = path.join(env.tmp, 'shared');
    await fsp.mkdir(disk);
    await fsp.mkdir(shared);
    const config = validateHostPathConfig({
      storageClassConfigs: {
        local: { nodePathMap: [{ node: DEFAULT_NODE, paths: [disk] }] },
        shared: { sharedFileSystemPath: shared },
      },
    });
    instance = startInstance(env, {
      provisionerName: LOCAL,
      config,
      mode: 'daemonset',
      nodeName: env.localNode,
      // Resync revisits the volumes other nodes own: that is when a gone node's grace period is checked again.
      controller: { resyncPeriodMs: 100 },
      provisioner: {
        clock,
        goneNodeGraceMs: GRACE_MS,
        nodeExists: (name, signal) =>
          env.client.get(nodeResource, name, { signal }).then(
            () => true,
            (e: unknown) => (e instanceof NotFoundError ? false : undefined),
          ),
      },
    });
    await env.client.create(nodeResource, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-present' } });
  });

  after(async () => {
    await instance?.stop();
    await env?.stop();
  });

  /** A Released node-local PV of ours on `node`, with its directory (standing in for that node's disk). */
  async function releasedVolume(name: string, node: string, kind: 'node' | 'shared' = 'node'): Promise<string> {
    const base = kind === 'node' ? disk : shared;
    const dir = path.join(base, name);
    await fsp.mkdir(dir);
    await fsp.writeFile(path.join(dir, 'data'), 'on the node disk');
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name,
        annotations: {
          'pv.kubernetes.io/provisioned-by': LOCAL,
          [ANN_HOSTPATH_NODE]: node,
          [ANN_HOSTPATH_KIND]: kind,
          [ANN_HOSTPATH_BASE_PATH]: base,
          [ANN_HOSTPATH_ON_DELETE]: 'delete',
        },
      },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        local: { path: dir },
        nodeAffinity: {
          required: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [node] }] },
            ],
          },
        },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: 'default',
          name: `gone-claim-${name}`,
          uid: '00000000-0000-0000-0000-00000000beef',
        },
      },
    };
    await env.client.create(persistentVolumes, pv);
    return dir;
  }

  const ignoredCalls = (name: string) =>
    instance.calls.filter((c) => c.op === 'delete' && c.name === name && c.outcome === 'IgnoredError').length;

  it('after the grace period the PV of a gone node is deleted, its directory kept, and a Warning says so', async () => {
    const goneDir = await releasedVolume('pvc-on-gone-node', 'node-gone');
    const presentDir = await releasedVolume('pvc-on-present-node', 'node-present');
    const sharedDir = await releasedVolume('pvc-shared-of-gone-node', 'node-gone', 'shared');
    await waitFor('the volumes seen and left alone', () =>
      ['pvc-on-gone-node', 'pvc-on-present-node', 'pvc-shared-of-gone-node'].every((n) => ignoredCalls(n) > 0),
    );
    assert.ok(env.volume('pvc-on-gone-node'), 'within the grace period the PV stays');
    await clock.advance(GRACE_MS + 1000);
    // A shared-path volume of the gone node is reachable here: it is deleted as usual, directory included.
    await waitFor("the gone node's shared PV deleted", () => !env.volume('pvc-shared-of-gone-node'));
    assert.equal(await exists(sharedDir), false);
    await waitFor("the gone node's PV deleted", () => !env.volume('pvc-on-gone-node'));
    const ev = await waitFor('VolumeNodeGone event', () =>
      env.events('pvc-on-gone-node').find((e) => e.reason === REASON_NODE_GONE),
    );
    assert.equal(ev.type, 'Warning');
    assert.match(
      ev.message ?? '',
      new RegExp(`Node node-gone .* directory ${goneDir} could not be reached and was not deleted`),
    );
    assert.equal(await fsp.readFile(path.join(goneDir, 'data'), 'utf8'), 'on the node disk', 'nothing was touched');
    // The PV whose node exists is revisited after the clock moved, and still left to its node.
    const seen = ignoredCalls('pvc-on-present-node');
    await waitFor("the present node's PV revisited", () => ignoredCalls('pvc-on-present-node') > seen);
    assert.ok(env.volume('pvc-on-present-node'));
    assert.ok(await exists(presentDir));
  });
});
