// explain tells the truth: for each common reason a claim stays Pending, `explain pvc` (given the provisioner's
// configuration, as `run hostpath` takes it) names the reason the provisioner would give, with the provisioner name
// filled in: an invalid class parameter, a class missing from the configuration, ReadWriteMany on node paths (with
// and without a selected node), WaitForFirstConsumer with no pod, a class that does not exist. With the real
// controller running beside it, explain shows the claim's last ProvisioningFailed / ProvisioningSucceeded events
// and when the infeasible slow retry is due. Against the embedded cluster, through the CLI's own function and as
// a process (text and -o json).
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { explainPvc } from '../../src/cli/explain.ts';
import { DEFAULT_PROVISIONER_NAME } from '../../src/cli/hostpath-options.ts';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { DEFAULT_NODE, validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { coreEvents, persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { AccessMode, CoreEvent, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { runCli, waitFor } from './cli-helpers.ts';

const P = DEFAULT_PROVISIONER_NAME;

describe('explain tells the truth', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let dir: string;
  let configFile: string;
  let controller: ProvisionController;
  let running: Promise<void>;
  let node: string;

  const sc = (name: string, extra: Partial<StorageClass> = {}): StorageClass =>
    ({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name },
      provisioner: P,
      volumeBindingMode: 'Immediate',
      ...extra,
    }) as StorageClass;
  const pvc = (
    name: string,
    className: string,
    o: { modes?: AccessMode[]; annotations?: Record<string, string> } = {},
  ): PersistentVolumeClaim =>
    ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default', ...(o.annotations ? { annotations: o.annotations } : {}) },
      spec: {
        accessModes: o.modes ?? ['ReadWriteOnce'],
        storageClassName: className,
        resources: { requests: { storage: '1Mi' } },
      },
    }) as PersistentVolumeClaim;
  const explain = (name: string, extra: { config?: string } = {}) =>
    explainPvc(
      { namespace: 'default', name },
      { kubeconfig: cluster.kubeconfigPath, output: 'text', config: configFile, ...extra },
    );

  before(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'kp-explain-')));
    await mkdir(join(dir, 'shared'));
    await mkdir(join(dir, 'local'));
    const raw = {
      storageClassConfigs: {
        ok: { sharedFileSystemPath: join(dir, 'shared') },
        'bad-param': { sharedFileSystemPath: join(dir, 'shared') },
        local: { nodePathMap: [{ node: DEFAULT_NODE, paths: [join(dir, 'local')] }] },
      },
    };
    configFile = join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify(raw));
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    node = cluster.store.list('nodes').items[0]?.metadata.name ?? '';
    for (const c of [
      sc('ok'),
      sc('bad-param', { parameters: { archiveOnDelete: 'yes' } }),
      sc('unconfigured'),
      sc('local', { volumeBindingMode: 'WaitForFirstConsumer' }),
    ]) {
      await client.create(storageClasses, c);
    }
    // The real controller with the same configuration, so that events exist to be shown.
    const provisioner = new HostPathProvisioner({ config: validateHostPathConfig(raw), nodeName: node });
    controller = new ProvisionController(client, P, provisioner, {
      leaderElection: { mode: 'none' },
      logger: silentLogger,
      retry: { infeasibleDelayMs: 600_000 },
    });
    running = controller.run();
    await client.create(persistentVolumeClaims, pvc('c-ok', 'ok'));
    await client.create(persistentVolumeClaims, pvc('c-bad-param', 'bad-param'));
    await client.create(persistentVolumeClaims, pvc('c-unconfigured', 'unconfigured'));
    await client.create(
      persistentVolumeClaims,
      pvc('c-rwx', 'local', { modes: ['ReadWriteMany'], annotations: { [ANN_SELECTED_NODE]: node } }),
    );
    await client.create(persistentVolumeClaims, pvc('c-rwx-no-pod', 'local', { modes: ['ReadWriteMany'] }));
    await client.create(persistentVolumeClaims, pvc('c-wffc', 'local'));
    await client.create(persistentVolumeClaims, pvc('c-no-class', 'does-not-exist'));
    const failedOf = async (name: string) =>
      (
        await client.list<CoreEvent>(coreEvents, { namespace: 'default', fieldSelector: `involvedObject.name=${name}` })
      ).items.some((e) => e.reason === 'ProvisioningFailed');
    await waitFor(
      "the controller's failures",
      async () => (await failedOf('c-unconfigured')) && (await failedOf('c-bad-param')) && (await failedOf('c-rwx')),
    );
    await waitFor(
      'c-ok Bound',
      async () =>
        (await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'c-ok', { namespace: 'default' })).status
          ?.phase === 'Bound',
    );
  });
  after(async () => {
    await controller?.stop();
    await running;
    client?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('class parameter archiveOnDelete: "yes" -> refused, the parameter named', async () => {
    const { explanation: e, text } = await explain('c-bad-param');
    assert.equal(e.decision.code, 'BackendInfeasible');
    assert.equal(e.decision.action, 'reject');
    assert.match(e.decision.reason, /archiveOnDelete/);
    assert.match(text, /^Decision: reject \(BackendInfeasible\) for provisioner kube-provisioner\.io\/hostpath$/m);
  });

  it('class missing from storageClassConfigs -> infeasible; last failure and next retry shown', async () => {
    const { explanation: e, text } = await explain('c-unconfigured');
    assert.equal(e.decision.code, 'BackendInfeasible');
    assert.match(e.decision.reason, /storage class unconfigured is not listed in the hostpath configuration/);
    assert.equal(e.lastFailed?.reason, 'ProvisioningFailed');
    assert.match(e.lastFailed?.message ?? '', /infeasible error/);
    assert.ok(
      e.nextRetryAt && Date.parse(e.nextRetryAt) > Date.parse(e.lastFailed?.lastSeen ?? ''),
      `next retry ${e.nextRetryAt}`,
    );
    assert.match(text, /^Last failure: Warning ProvisioningFailed .*infeasible error/m);
    assert.match(
      text,
      /^Next retry: \d{4}-.*slow retry after an infeasible error; at once if the claim, its class or the provisioner's configuration changes$/m,
    );
  });

  it('ReadWriteMany on a node-local class -> infeasible, with a selected node and before any (no pod)', async () => {
    for (const name of ['c-rwx', 'c-rwx-no-pod']) {
      const { explanation: e } = await explain(name);
      assert.equal(e.decision.code, 'BackendInfeasible', `${name}: ${e.decision.reason}`);
      assert.match(e.decision.reason, /access mode ReadWriteMany is not possible on node-local paths/);
    }
  });

  it('WaitForFirstConsumer with no pod -> says it waits for a consumer', async () => {
    const { explanation: e, text } = await explain('c-wffc');
    assert.equal(e.decision.code, 'WaitForFirstConsumer');
    assert.equal(e.decision.action, 'wait');
    assert.match(e.decision.reason, /waiting for first consumer: no pod uses this claim yet/);
    assert.match(text, /pods using the claim: none/);
  });

  it('a class that does not exist -> StorageClassNotFound, provisioner name filled in', async () => {
    const { explanation: e, text } = await explain('c-no-class');
    assert.equal(e.decision.code, 'StorageClassNotFound');
    assert.equal(e.provisionerName, P);
    assert.match(text, /^Decision: wait \(StorageClassNotFound\) for provisioner kube-provisioner\.io\/hostpath$/m);
    assert.match(e.decision.reason, /StorageClass "does-not-exist" not found/);
  });

  it('a provisioned claim shows its last success; without a configuration the backend checks are said not to run', async () => {
    const { explanation: e } = await explain('c-ok');
    assert.equal(e.lastSucceeded?.reason, 'ProvisioningSucceeded');
    assert.match(e.lastSucceeded?.message ?? '', /Successfully provisioned volume pvc-/);
    const noConfig = await explainPvc(
      { namespace: 'default', name: 'c-unconfigured' },
      { kubeconfig: cluster.kubeconfigPath, output: 'text' },
    );
    assert.match(noConfig.text, /backend checks: not run/);
  });

  it('as a process: human-readable by default, -o json for scripts', async () => {
    const text = await runCli([
      'explain',
      'pvc',
      'default/c-bad-param',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--config',
      configFile,
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Why: .*archiveOnDelete/m);
    const json = await runCli([
      'explain',
      'pvc',
      'default/c-unconfigured',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--config',
      configFile,
      '-o',
      'json',
    ]);
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as {
      decision: { code: string };
      provisionerName: string;
      lastFailed?: { reason: string };
      nextRetryAt?: string;
    };
    assert.equal(parsed.decision.code, 'BackendInfeasible');
    assert.equal(parsed.provisionerName, P);
    assert.equal(parsed.lastFailed?.reason, 'ProvisioningFailed');
    assert.ok(parsed.nextRetryAt);
  });
});
