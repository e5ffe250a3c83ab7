// `dev` as a process, one session: a claim whose class is missing from the hostpath configuration is refused as
// infeasible (a concise line in the terminal), and fixing the configuration file provisions it at once (hot
// reload re-checks blocked claims) instead of after the 5-minute slow retry; its outcome line follows. Capacity is
// enforced by default: claims larger than the disk's free space (8Ei, 1e30) get the infeasible event.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { coreEvents, nodes, persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { CoreEvent, Node, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { DEFAULT_PROVISIONER_NAME } from '../../src/cli/hostpath-options.ts';
import { explainPvc } from '../../src/cli/explain.ts';
import { startCli, waitFor, type CliProcess } from './cli-helpers.ts';

describe('dev session: re-check after a configuration fix, outcomes in the terminal, capacity', () => {
  let dataDir: string;
  let cli: CliProcess;
  let client: KubeClient;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kp-recheck-'));
    // A configuration that lists its classes and has no top-level default path (dev's own first-run file has one):
    // a class it does not list is refused until the file lists it.
    await mkdir(join(dataDir, 'volumes', 'shared'), { recursive: true });
    await writeFile(
      join(dataDir, 'hostpath-config.json'),
      JSON.stringify({
        storageClassConfigs: {
          hostpath: { sharedFileSystemPath: join(dataDir, 'volumes', 'shared') },
          'hostpath-local': {
            nodePathMap: [{ node: 'DEFAULT_PATH_FOR_NON_LISTED_NODES', paths: [join(dataDir, 'volumes', 'local')] }],
          },
        },
      }),
    );
    await mkdir(join(dataDir, 'volumes', 'local'), { recursive: true });
    cli = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
    await waitFor('dev serving', () => cli.stdout().includes('Ctrl-C to stop'), 30_000);
    client = new KubeClient({ kubeConfig: loadKubeConfig({ path: join(dataDir, 'kubeconfig') }).kubeConfig, qps: 0 });
  });
  after(async () => {
    client?.close();
    cli.child.kill('SIGINT');
    await cli.exited;
    await rm(dataDir, { recursive: true, force: true });
  });

  it('infeasible until the class is configured, then Bound at once, each outcome printed once', async () => {
    await client.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'extra' },
      provisioner: DEFAULT_PROVISIONER_NAME,
      volumeBindingMode: 'Immediate',
    } as StorageClass);
    await client.create(persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'late', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'extra', resources: { requests: { storage: '1Mi' } } },
    } as PersistentVolumeClaim);
    await waitFor(
      'the refusal in the terminal',
      () => /^claim default\/late: not provisioned: .*infeasible.*extra is not listed/m.test(cli.stdout()),
      30_000,
    );

    const file = join(dataDir, 'hostpath-config.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as { storageClassConfigs: Record<string, unknown> };
    await mkdir(join(dataDir, 'volumes', 'extra'));
    config.storageClassConfigs.extra = { sharedFileSystemPath: join(dataDir, 'volumes', 'extra') };
    await writeFile(file, JSON.stringify(config));
    // Far below the 5-minute slow retry: only the re-check after the reload can bind it within this bound.
    await waitFor(
      'the claim Bound after the fix',
      async () => {
        const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'late', { namespace: 'default' });
        return c.status?.phase === 'Bound';
      },
      60_000,
    );
    await waitFor(
      'the success line',
      () => /^claim default\/late: Successfully provisioned volume pvc-/m.test(cli.stdout()),
      30_000,
    );
    // Each outcome once. On a loaded machine the claim can reach the controller before its class does, which is a
    // distinct first outcome ("storageclass ... not found"), so lines are counted per outcome, not in total.
    const refusals = cli.stdout().match(/^claim default\/late: not provisioned: .*$/gm) ?? [];
    assert.equal(new Set(refusals).size, refusals.length, cli.stdout());
    assert.equal(refusals.filter((l) => /infeasible/.test(l)).length, 1, cli.stdout());
  });

  it("claims larger than the free space of the volumes' filesystem are refused as infeasible; 1Mi is Bound", async () => {
    const create = (
      name: string,
      size: string,
      extra: Partial<PersistentVolumeClaim['spec']> = {},
      annotations?: Record<string, string>,
    ) =>
      client.create(persistentVolumeClaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name, namespace: 'default', ...(annotations ? { annotations } : {}) },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, ...extra },
      } as PersistentVolumeClaim);
    const node = (await client.list<Node>(nodes)).items[0]?.metadata.name ?? '';
    await create('huge-8ei', '8Ei');
    await create('huge-1e30', '1e30');
    await create('huge-local', '8Ei', { storageClassName: 'hostpath-local' }, { [ANN_SELECTED_NODE]: node });
    await create('small', '1Mi');
    await waitFor(
      'the small claim Bound',
      async () =>
        (await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'small', { namespace: 'default' })).status
          ?.phase === 'Bound',
    );
    for (const name of ['huge-8ei', 'huge-1e30', 'huge-local']) {
      const ev = await waitFor(`the infeasible event of ${name}`, async () => {
        const list = await client.list<CoreEvent>(coreEvents, {
          namespace: 'default',
          fieldSelector: `involvedObject.name=${name}`,
        });
        return list.items.find((e) => e.reason === 'ProvisioningFailed');
      });
      assert.equal(ev.type, 'Warning');
      assert.match(ev.message ?? '', /infeasible error.*(free|capacity)/);
      const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, name, { namespace: 'default' });
      assert.notEqual(c.status?.phase, 'Bound');
    }
    await waitFor(
      'the refusals in the terminal',
      () =>
        /^claim default\/huge-8ei: not provisioned/m.test(cli.stdout()) &&
        /^claim default\/huge-1e30: not provisioned/m.test(cli.stdout()),
    );
  });
});

describe("dev's own configuration and classes", () => {
  let dataDir: string;
  let cli: CliProcess;
  let client: KubeClient;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kp-devclass-'));
    cli = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
    await waitFor('dev serving', () => cli.stdout().includes('Ctrl-C to stop'), 30_000);
    client = new KubeClient({ kubeConfig: loadKubeConfig({ path: join(dataDir, 'kubeconfig') }).kubeConfig, qps: 0 });
  });
  after(async () => {
    client?.close();
    cli.child.kill('SIGINT');
    await cli.exited;
    await rm(dataDir, { recursive: true, force: true });
  });

  it("dev's classes say onDelete: delete", async () => {
    for (const name of ['hostpath', 'hostpath-local']) {
      assert.equal((await client.get<StorageClass>(storageClasses, name)).parameters?.onDelete, 'delete', name);
    }
  });

  it('a class the user creates is served from the default shared path, with its own pathPattern', async () => {
    await client.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'patterned' },
      provisioner: DEFAULT_PROVISIONER_NAME,
      volumeBindingMode: 'Immediate',
      parameters: { pathPattern: 'mine/${.PVC.name}' },
    } as StorageClass);
    await client.create(persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'mine', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'patterned',
        resources: { requests: { storage: '1Mi' } },
      },
    } as PersistentVolumeClaim);
    await waitFor(
      'Bound',
      async () =>
        (await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'mine', { namespace: 'default' })).status
          ?.phase === 'Bound',
      30_000,
    );
    assert.ok(
      existsSync(join(dataDir, 'volumes', 'shared', 'mine', 'mine')),
      'the directory follows the class pattern under the default shared path',
    );
  });

  it("explain runs the backend's checks with dev's configuration, found without --config", async () => {
    await client.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'bad-mode' },
      provisioner: DEFAULT_PROVISIONER_NAME,
      volumeBindingMode: 'Immediate',
      parameters: { mode: 'rwx' },
    } as StorageClass);
    await client.create(persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'bad-mode', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'bad-mode',
        resources: { requests: { storage: '1Mi' } },
      },
    } as PersistentVolumeClaim);
    const { explanation, text } = await explainPvc(
      { namespace: 'default', name: 'bad-mode' },
      { kubeconfig: join(dataDir, 'kubeconfig'), output: 'text' },
    );
    assert.equal(explanation.decision.code, 'BackendInfeasible', text);
    assert.match(text, /mode/);
    assert.match(
      text,
      new RegExp(
        `hostpath configuration: file ${join(dataDir, 'hostpath-config.json').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, named by the heartbeat of `,
      ),
    );
  });
});
