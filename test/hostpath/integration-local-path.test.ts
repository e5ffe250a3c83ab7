// Integration: a running hostpath service configured from a ConfigMap written in rancher/local-path-provisioner's
// format (config.json, setup, teardown, helperPod.yaml; a key spelled `sharedFilesystemPath` as local-path's
// own test configuration spells it), under local-path's provisioner name, against the embedded cluster with real
// temp directories and real `sh` processes. Covers the volumeType / defaultVolumeType annotations, the scripts
// (environment, arguments, failure output in a Warning event, cleanup, timeout), nodeAffinityKey without a node
// cache, helperPod.yaml accepted with a warning, and an edited script applied without a restart; and `explain`,
// given no --config or --config-map, runs the backend's checks with this ConfigMap, which the running instance names
// in its heartbeat Lease (as a real deployment's ConfigMap is found).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { explainPvc } from '../../src/cli/explain.ts';
import { startHostPathService, type HostPathService } from '../../src/cli/hostpath-service.ts';
import type { Logger } from '../../src/types/logger.ts';
import { configMaps, namespaces, nodes, pods } from '../../src/runtime/resources.ts';
import type { KubeObject, Node, PersistentVolume } from '../../src/types/k8s.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  createPod,
  deleteClaim,
  entriesBelow,
  exists,
  FAST_CONTROLLER,
  NS,
  startHostPathEnv,
  storageClass,
  waitFor,
  type HostPathEnv,
} from './integration-helpers.ts';

const LOCAL_PATH = 'rancher.io/local-path';
const CONFIG_NS = 'local-path-storage';

/** A logger keeping every warning message (the helperPod.yaml warning is only logged). */
function recordingLogger(warnings: string[]): Logger {
  const l: Logger = {
    debug() {},
    info() {},
    warn: (obj, msg) => void warnings.push(typeof obj === 'string' ? obj : (msg ?? '')),
    error() {},
    child: () => l,
  };
  return l;
}

describe('hostpath integration: local-path-provisioner ConfigMap, annotations and scripts', () => {
  let env: HostPathEnv;
  let disk: string;
  let shared: string;
  let log: string;
  let service: HostPathService;
  const stop = new AbortController();
  const warnings: string[] = [];

  before(async () => {
    env = await startHostPathEnv('kp-int-lp-');
    disk = path.join(env.tmp, 'opt-local-path-provisioner');
    shared = path.join(env.tmp, 'shared-fs');
    log = path.join(env.tmp, 'scripts.log');
    await fsp.mkdir(disk);
    await fsp.mkdir(shared);
    // local-path's stock scripts, plus a record of what each run saw and two failure switches by size.
    const setup = [
      '#!/bin/sh',
      'set -eu',
      `echo "setup VOL_DIR=$VOL_DIR VOL_MODE=$VOL_MODE VOL_SIZE_BYTES=$VOL_SIZE_BYTES VOL_USER=$VOL_USER args=$*" >> ${log}`,
      'if [ "$VOL_SIZE_BYTES" = "3145728" ]; then echo "xfs_quota: project limit failed" >&2; exit 3; fi',
      'if [ "$VOL_SIZE_BYTES" = "5242880" ]; then sleep 30; fi',
      'mkdir -m 0777 -p "$VOL_DIR"',
    ].join('\n');
    const teardown = [
      '#!/bin/sh',
      'set -eu',
      `echo "teardown VOL_DIR=$VOL_DIR VOL_SIZE_BYTES=$VOL_SIZE_BYTES args=$*" >> ${log}`,
      'if [ -e "$VOL_DIR/keep-me" ]; then echo "refusing: keep-me present" >&2; exit 1; fi',
      'rm -rf "$VOL_DIR"',
    ].join('\n');
    await env.client.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONFIG_NS } });
    await env.client.create(
      configMaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'local-path-config', namespace: CONFIG_NS },
        data: {
          'config.json': JSON.stringify({
            cmdTimeoutSeconds: 1,
            storageClassConfigs: {
              'local-path': { nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [disk] }] },
              'local-path-hostpath': { NodePathMap: [{ Node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', Paths: [disk] }] },
              'local-path-zone': { nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [disk] }] },
              'shared-fs': { sharedFilesystemPath: shared },
            },
          }),
          setup,
          teardown,
          'helperPod.yaml':
            'apiVersion: v1\nkind: Pod\nmetadata:\n  name: helper-pod\nspec:\n  containers:\n  - name: helper-pod\n    image: busybox\n',
        },
      } as KubeObject,
      { namespace: CONFIG_NS },
    );
    // nodeAffinityKey reads a label of the selected node: give the node one.
    const node = await env.client.get<Node>(nodes, env.localNode);
    await env.client.update(nodes, {
      ...node,
      metadata: { ...node.metadata, labels: { ...node.metadata.labels, 'example.com/rack': 'rack-7' } },
    });

    const wffc = { volumeBindingMode: 'WaitForFirstConsumer' as const };
    await createClass(env, storageClass('local-path', LOCAL_PATH, wffc));
    await createClass(
      env,
      storageClass('local-path-hostpath', LOCAL_PATH, {
        ...wffc,
        metadata: { name: 'local-path-hostpath', annotations: { defaultVolumeType: 'hostPath' } },
      }),
    );
    await createClass(
      env,
      storageClass('local-path-zone', LOCAL_PATH, { ...wffc, parameters: { nodeAffinityKey: 'example.com/rack' } }),
    );
    // A daemonset instance serves claims scheduled to its node, shared path or not.
    await createClass(env, storageClass('shared-fs', LOCAL_PATH, wffc));

    service = await startHostPathService(
      {
        client: env.client,
        provisionerName: LOCAL_PATH,
        mode: 'daemonset',
        nodeName: env.localNode,
        config: { configMap: { namespace: CONFIG_NS, name: 'local-path-config', key: 'config.json' } },
        controller: FAST_CONTROLLER,
        logger: recordingLogger(warnings),
      },
      stop.signal,
    );
  });

  after(async () => {
    stop.abort();
    await service?.done;
    await env?.stop();
  });

  /** A claim of `className` used by a pod (WaitForFirstConsumer), Bound; returns its PV. */
  async function provisioned(
    name: string,
    className: string,
    annotations?: Record<string, string>,
    size?: string,
  ): Promise<PersistentVolume> {
    await createClaim(env, claim(name, className, { annotations, size }));
    await createPod(env, `${name}-pod`, [name]);
    return boundVolume(env, name);
  }

  async function released(name: string, pv: PersistentVolume): Promise<void> {
    await env.client.delete(pods, `${name}-pod`, { namespace: NS });
    await deleteClaim(env, name);
    await waitFor(`PV ${pv.metadata.name} deleted`, () => !env.volume(pv.metadata.name ?? ''));
  }

  const scriptLog = async () => (await fsp.readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);

  it('helperPod.yaml is accepted, with one warning that no helper pods are used', () => {
    assert.equal(
      warnings.filter((w) => /helperPod\.yaml/.test(w) && /no helper pods/.test(w)).length,
      1,
      warnings.join('\n'),
    );
  });

  it("setup runs with local-path's environment and arguments; teardown runs before the directory is removed", async () => {
    const pv = await provisioned('plain', 'local-path');
    const dir = pv.spec.local?.path ?? '';
    assert.equal(path.dirname(dir), disk, "no annotation: a local PV (kube-provisioner's node-path default)");
    const line = (await scriptLog()).find((l) => l.startsWith(`setup VOL_DIR=${dir} `));
    assert.equal(
      line,
      `setup VOL_DIR=${dir} VOL_MODE=Filesystem VOL_SIZE_BYTES=1048576 VOL_USER= args=-p ${dir} -s 1048576 -m Filesystem -a create`,
    );
    await released('plain', pv);
    assert.ok(
      (await scriptLog()).includes(
        `teardown VOL_DIR=${dir} VOL_SIZE_BYTES=1048576 args=-p ${dir} -s 1048576 -m Filesystem -a delete`,
      ),
    );
    assert.equal(await exists(dir), false);
  });

  it('volumeType annotation on the claim and defaultVolumeType on the class: hostPath is DirectoryOrCreate, as local-path writes it', async () => {
    const byClaim = await provisioned('by-claim', 'local-path', { volumeType: 'hostPath' });
    assert.deepEqual(byClaim.spec.hostPath, {
      path: path.join(disk, `${byClaim.metadata.name}_${NS}_by-claim`),
      type: 'DirectoryOrCreate',
    });
    assert.equal(byClaim.spec.local, undefined);
    const byClass = await provisioned('by-class', 'local-path-hostpath');
    assert.equal(byClass.spec.hostPath?.type, 'DirectoryOrCreate');
    const claimWins = await provisioned('claim-wins', 'local-path-hostpath', { volumeType: 'Local' });
    assert.ok(claimWins.spec.local?.path, 'the claim annotation overrides the class default (case-insensitive)');
    await createClaim(env, claim('bad-type', 'local-path', { annotations: { volumeType: 'nfs' } }));
    await createPod(env, 'bad-type-pod', ['bad-type']);
    const ev = await waitFor('Warning event', () =>
      env.events('bad-type').find((e) => e.type === 'Warning' && /volumeType/.test(e.message ?? '')),
    );
    assert.match(ev.message ?? '', /"nfs" is not one of local, hostPath/);
  });

  it('nodeAffinityKey: the node is looked up through the API (no node cache), its label is the affinity', async () => {
    assert.equal(service.controller.options.nodeCache, false);
    const pv = await provisioned('racked', 'local-path-zone');
    assert.deepEqual(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions, [
      { key: 'example.com/rack', operator: 'In', values: ['rack-7'] },
    ]);
  });

  it('a key spelled sharedFilesystemPath (Go decodes keys case-insensitively) is the shared path', async () => {
    const pv = await provisioned('on-shared', 'shared-fs');
    assert.equal(path.dirname(pv.spec.hostPath?.path ?? ''), shared);
    assert.equal(pv.spec.nodeAffinity, undefined);
  });

  it('a failing setup: its output in a Warning event, the directory it was given removed again', async () => {
    await createClaim(env, claim('quota', 'local-path', { size: '3Mi' }));
    await createPod(env, 'quota-pod', ['quota']);
    const ev = await waitFor('Warning event with the script output', () =>
      env.events('quota').find((e) => e.type === 'Warning' && /xfs_quota: project limit failed/.test(e.message ?? '')),
    );
    assert.match(ev.message ?? '', /setup script exited with 3/);
    assert.deepEqual(
      (await entriesBelow(disk)).filter((e) => e.includes('_quota')),
      [],
      'nothing left of the failed attempts',
    );
    assert.equal(env.claim('quota')?.status?.phase, 'Pending');
  });

  it('a setup that outlives cmdTimeoutSeconds is killed and reported as timed out; nothing is left', async () => {
    await createClaim(env, claim('slow', 'local-path', { size: '5Mi' }));
    await createPod(env, 'slow-pod', ['slow']);
    await waitFor('timed-out event', () =>
      env.events('slow').find((e) => e.type === 'Warning' && /setup script timed out/.test(e.message ?? '')),
    );
    assert.deepEqual(
      (await entriesBelow(disk)).filter((e) => e.includes('_slow')),
      [],
    );
  });

  it('an edited script in the ConfigMap applies without a restart', async () => {
    const cm = await env.client.get<KubeObject & { data?: Record<string, string> }>(configMaps, 'local-path-config', {
      namespace: CONFIG_NS,
    });
    const marker = path.join(env.tmp, 'new-teardown.log');
    await env.client.update(configMaps, {
      ...cm,
      data: {
        ...cm.data,
        teardown: `${cm.data?.teardown ?? ''}`.replace('rm -rf', `echo "$VOL_DIR" >> ${marker}\nrm -rf`),
      },
    });
    // The first claim after the edit may still meet the old script: provision until one is torn down by the new one.
    await waitFor(
      'the new teardown ran',
      async () => {
        const name = `reloaded-${Math.random().toString(36).slice(2, 8)}`;
        const pv = await provisioned(name, 'local-path');
        await released(name, pv);
        return (await fsp.readFile(marker, 'utf8').catch(() => '')).includes(pv.spec.local?.path ?? '\0');
      },
      60_000,
    );
  });

  it('a failing teardown keeps the directory and its data; its output is reported on the volume', async () => {
    const pv = await provisioned('guarded', 'local-path');
    const dir = pv.spec.local?.path ?? '';
    await fsp.writeFile(path.join(dir, 'keep-me'), 'data');
    await env.client.delete(pods, 'guarded-pod', { namespace: NS });
    await deleteClaim(env, 'guarded');
    await waitFor('VolumeFailedDelete event', () =>
      env
        .events(pv.metadata.name ?? '')
        .find((e) => e.type === 'Warning' && /refusing: keep-me present/.test(e.message ?? '')),
    );
    assert.equal(await fsp.readFile(path.join(dir, 'keep-me'), 'utf8'), 'data');
    assert.ok(env.volume(pv.metadata.name ?? ''), 'the PV stays until the directory is cleaned up');
  });

  it("explain finds the ConfigMap through the running instance's heartbeat, without --config-map", async () => {
    // A class the ConfigMap does not list (and it has no top-level path): the backend's own check refuses it.
    await createClass(env, storageClass('unlisted', LOCAL_PATH));
    await createClaim(env, claim('unlisted-claim', 'unlisted'));
    const { explanation, text } = await waitFor('the heartbeat naming the ConfigMap', async () => {
      const e = await explainPvc(
        { namespace: NS, name: 'unlisted-claim' },
        { kubeconfig: env.cluster.kubeconfigPath, output: 'text' },
      );
      return /ConfigMap local-path-storage\/local-path-config key config\.json, named by the heartbeat of /.test(e.text)
        ? e
        : undefined;
    });
    assert.equal(explanation.decision.code, 'BackendInfeasible', text);
    assert.match(
      explanation.decision.reason,
      /storage class unlisted is not listed in the hostpath configuration/,
      text,
    );
  });
});
