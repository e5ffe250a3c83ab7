// The docs cannot drift from the code: every flag of `run hostpath`, `dev` and `explain pvc` (with its
// environment variable and default) is in docs/configuration.md, and the metric names a running hostpath
// provisioner serves are exactly those of docs/metrics.md. Also checks that examples/pvc.yaml, the claim the
// dev guide tells people to apply, is provisioned and Bound with the dev StorageClasses, and that the hostpath
// metrics report its allocation and disk usage.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command, type Option } from 'commander';
import { parseAllDocuments } from 'yaml';
import { devStorageClasses, devConfig, registerDevCommand } from '../../src/cli/dev.ts';
import { registerExplainCommand } from '../../src/cli/explain.ts';
import { startHostPathService } from '../../src/cli/hostpath-service.ts';
import { GENERATED_TABLES, replaceTable } from '../../src/cli/generated-docs.ts';
import { envVarOf } from '../../src/cli/flags.ts';
import { DEFAULT_PROVISIONER_NAME } from '../../src/cli/hostpath-options.ts';
import { registerRunCommand } from '../../src/cli/run-hostpath.ts';
import { parseHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { persistentVolumeClaims, pods, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { KubeObject, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { ROOT, waitFor } from './cli-helpers.ts';

const configurationDoc = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
const metricsDoc = readFileSync(join(ROOT, 'docs/metrics.md'), 'utf8');

function commands(): Map<string, Command> {
  const program = new Command();
  registerRunCommand(program);
  registerDevCommand(program);
  registerExplainCommand(program);
  const find = (path: string[]) =>
    path.reduce<Command>((c, name) => c.commands.find((s) => s.name() === name) as Command, program);
  return new Map([
    ['run hostpath', find(['run', 'hostpath'])],
    ['run csi-hostpath-plugin', find(['run', 'csi-hostpath-plugin'])],
    ['dev', find(['dev'])],
    ['explain pvc', find(['explain', 'pvc'])],
  ]);
}

describe('docs/configuration.md', () => {
  it('documents every flag of every command, with its environment variable and default', () => {
    const missing: string[] = [];
    for (const [name, cmd] of commands()) {
      assert.ok(cmd, name);
      for (const o of cmd.options as Option[]) {
        const long = o.long ?? '';
        if (!new RegExp(`${long}(?![-a-z])`).test(configurationDoc)) missing.push(`${name} ${long}`);
        const env = envVarOf(o);
        if (name === 'run hostpath' && env && !configurationDoc.includes(`\`${env}\``))
          missing.push(`${name} ${long}: env ${env}`);
        if (name === 'run hostpath' && o.defaultValue !== undefined) {
          const shown = o.defaultValueDescription ?? String(o.defaultValue);
          const row = configurationDoc.split('\n').find((l) => l.startsWith(`| \`${long}`));
          if (!row?.includes(`\`${shown}\``)) missing.push(`${name} ${long}: default ${shown}`);
        }
      }
    }
    assert.deepEqual(missing, []);
  });

  it('has every generated table (controller options, library options, StorageClass parameters) as its table renders it', () => {
    const stale: string[] = [];
    for (const t of GENERATED_TABLES) {
      const text = readFileSync(join(ROOT, t.file), 'utf8');
      const table = t.render();
      assert.ok(table.split('\n').length > 3, `${t.marker} renders rows`);
      if (replaceTable(text, t.marker, table) !== text) stale.push(`${t.file} <!-- ${t.marker} -->:\n${table}`);
    }
    assert.deepEqual(stale, [], 'stale generated tables: run `npm run gen:docs`');
  });

  it('replaceTable swaps exactly the table after its marker, and refuses a missing marker', () => {
    const text = 'intro\n<!-- m (note) -->\n| a |\n|---|\n| old |\n\nafter\n| other |';
    assert.equal(
      replaceTable(text, 'm', '| a |\n|---|\n| new |'),
      'intro\n<!-- m (note) -->\n| a |\n|---|\n| new |\n\nafter\n| other |',
    );
    assert.throws(() => replaceTable(text, 'missing', '| x |'), /no <!-- missing -->/);
  });
});

describe('docs/metrics.md and examples/pvc.yaml against a running provisioner', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let dir: string;
  const stop = new AbortController();
  let service: Awaited<ReturnType<typeof startHostPathService>>;

  before(async () => {
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    dir = await mkdtemp(join(tmpdir(), 'kp-docs-'));
    await mkdir(join(dir, 'shared'));
    await mkdir(join(dir, 'local'));
    for (const sc of devStorageClasses(DEFAULT_PROVISIONER_NAME)) await client.create(storageClasses, sc);
    service = await startHostPathService(
      {
        client,
        provisionerName: DEFAULT_PROVISIONER_NAME,
        mode: 'deployment',
        nodeName: 'docs-node',
        config: { value: parseHostPathConfig(JSON.stringify(devConfig(dir))) },
        controller: { leaderElection: { mode: 'none' } },
        healthAddress: '127.0.0.1:0',
        metricsAddress: '127.0.0.1:0',
        volumeUsageIntervalMs: 100,
        logger: silentLogger,
      },
      stop.signal,
    );
  });
  after(async () => {
    stop.abort();
    await service?.done;
    client?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('examples/pvc.yaml: the claim is Bound under DIR/volumes/shared and the pod is accepted', async () => {
    const docs = parseAllDocuments(await readFile(join(ROOT, 'examples/pvc.yaml'), 'utf8')).map(
      (d) => d.toJS() as KubeObject,
    );
    const pvc = docs.find((d) => d.kind === 'PersistentVolumeClaim') as PersistentVolumeClaim;
    const pod = docs.find((d) => d.kind === 'Pod');
    assert.ok(pvc && pod);
    await client.create(persistentVolumeClaims, pvc);
    await client.create(pods, pod);
    const bound = await waitFor('the example claim Bound', async () => {
      const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, pvc.metadata.name ?? '', {
        namespace: 'default',
      });
      return c.status?.phase === 'Bound' ? c : undefined;
    });
    assert.equal(bound.spec.storageClassName, 'hostpath', 'the default class');
  });

  it('hostpath metrics: allocation of the example claim, and its disk usage once a file is written', async () => {
    const url = service.metricsUrl ?? '';
    const shared = join(dir, 'shared');
    const text = await (await fetch(url)).text();
    assert.match(
      text,
      new RegExp(`^hostpath_base_path_allocated_bytes\\{base_path="${shared}",scope="shared"\\} 104857600$`, 'm'),
      '100Mi allocated',
    );
    assert.match(text, new RegExp(`^hostpath_base_path_volumes\\{base_path="${shared}",scope="shared"\\} 1$`, 'm'));
    const claimDir = (await readdir(join(shared, 'default'))).find((d) => d.startsWith('example-data-'));
    assert.ok(claimDir);
    await writeFile(join(shared, 'default', claimDir, 'data.bin'), Buffer.alloc(1 << 20, 1));
    await waitFor('usage >= 1 MiB', async () => {
      const t = await (await fetch(url)).text();
      const m =
        /^hostpath_volume_used_bytes\{persistentvolume="pvc-[^"]+",namespace="default",persistentvolumeclaim="example-data"\} (\d+)$/m.exec(
          t,
        );
      return m && Number(m[1]) >= 1 << 20;
    });
  });

  it('serves exactly the metric names the doc lists', async () => {
    const url = service.metricsUrl ?? '';
    // Wait for one usage refresh after the example volume exists.
    const text = await waitFor('hostpath_volume_used_bytes', async () => {
      const t = await (await fetch(url)).text();
      return t.includes('hostpath_volume_used_bytes{') ? t : undefined;
    });
    const served = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const documented = new Set(
      [...metricsDoc.matchAll(/`((?:controller|workqueue|hostpath|process|nodejs)_[a-z0-9_]+)`/g)].map((m) => m[1]),
    );
    // The doc abbreviates the event-loop-lag family as "(and _min, _max...)": expand it.
    for (const s of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'])
      documented.add(`nodejs_eventloop_lag_${s}_seconds`);
    const undocumented = [...served].filter((n) => !documented.has(n));
    const notServed = [...documented].filter((n) => !served.has(n));
    assert.deepEqual(undocumented, [], 'served but not in docs/metrics.md');
    assert.deepEqual(notServed, [], 'in docs/metrics.md but not served');
  });
});
