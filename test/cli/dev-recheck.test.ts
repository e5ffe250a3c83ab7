// `dev` as a process: a claim whose class is missing from the hostpath configuration is refused as infeasible
// (a concise line in the terminal), and fixing the configuration file provisions it at once (hot reload
// re-checks blocked claims) instead of after the 5-minute slow retry; its outcome line follows.
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import type { PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { DEFAULT_PROVISIONER_NAME } from '../../src/cli/options.ts';
import { startCli, waitFor, type CliProcess } from './cli-helpers.ts';

describe('dev: configuration fix re-checks blocked claims; outcomes in the terminal', () => {
  let dataDir: string;
  let cli: CliProcess;
  let client: KubeClient;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kp-recheck-'));
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
      apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'extra' }, provisioner: DEFAULT_PROVISIONER_NAME, volumeBindingMode: 'Immediate',
    } as StorageClass);
    await client.create(persistentVolumeClaims, {
      apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'late', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'extra', resources: { requests: { storage: '1Mi' } } },
    } as PersistentVolumeClaim);
    await waitFor('the refusal in the terminal', () => /^claim default\/late: not provisioned: .*infeasible.*extra is not listed/m.test(cli.stdout()), 30_000);

    const file = join(dataDir, 'hostpath-config.json');
    const config = JSON.parse(await readFile(file, 'utf8')) as { storageClassConfigs: Record<string, unknown> };
    await mkdir(join(dataDir, 'volumes', 'extra'));
    config.storageClassConfigs.extra = { sharedFileSystemPath: join(dataDir, 'volumes', 'extra') };
    await writeFile(file, JSON.stringify(config));
    // Far below the 5-minute slow retry: only the re-check after the reload can bind it within this bound.
    await waitFor('the claim Bound after the fix', async () => {
      const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'late', { namespace: 'default' });
      return c.status?.phase === 'Bound';
    }, 60_000);
    await waitFor('the success line', () => /^claim default\/late: Successfully provisioned volume pvc-/m.test(cli.stdout()), 30_000);
    assert.equal(cli.stdout().match(/^claim default\/late: not provisioned/gm)?.length, 1, cli.stdout());
  });
});
