// End to end: `kube-provisioner dev --demo 20` as a separate process: the summary line, one real directory per
// claim under DIR/volumes, the kubeconfig, exit code 0. Then a second run on the same data dir, serving until
// SIGINT: the first run's claims are still there, a new claim is provisioned, SIGINT stops it with exit code 0.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { runCli, startCli, waitFor } from './cli-helpers.ts';

const SUMMARY =
  /^demo: (\d+)\/(\d+) claims Bound in ([\d.]+) s \(([\d.]+) claims\/s\); time to Bound p50 (\d+) ms, p99 (\d+) ms, max (\d+) ms$/m;

/** Volume directories of the demo: DIR/volumes/shared/default/<claim>-<pv>. */
async function volumeDirs(dataDir: string): Promise<string[]> {
  const ns = join(dataDir, 'volumes', 'shared', 'default');
  if (!existsSync(ns)) return [];
  const entries = await readdir(ns, { withFileTypes: true });
  return entries.filter((e) => e.isDirectory() && e.name.startsWith('demo-')).map((e) => e.name);
}

describe('kube-provisioner dev --demo', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kp-dev-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('provisions 20 claims, prints the summary and the guide, compares with the in-memory provisioner, exits 0', async () => {
    const r = await runCli(['dev', '--data-dir', dataDir, '--demo', '20', '--demo-compare', '--port', '0']);
    assert.equal(r.code, 0, r.stderr);
    const m = SUMMARY.exec(r.stdout);
    assert.ok(m, `no summary line in:\n${r.stdout}`);
    assert.equal(m[1], '20');
    assert.equal(m[2], '20');
    assert.ok(Number(m[4]) > 0, 'claims/s');
    assert.ok(Number(m[5]) <= Number(m[6]) && Number(m[6]) <= Number(m[7]), 'p50 <= p99 <= max');
    assert.match(
      r.stdout,
      new RegExp(`export KUBECONFIG=${join(dataDir, 'kubeconfig').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
    );
    assert.match(r.stdout, /kubectl apply -f examples\/pvc\.yaml/);
    assert.match(r.stdout, /^demo \(instant in-memory provisioner\): 20\/20 claims Bound in [\d.]+ s/m);
    assert.match(
      r.stdout,
      /^demo: the instant in-memory provisioner reached [\d.]+ claims\/s vs [\d.]+ with directories; filesystem share of the time to Bound: \d+% at p50, \d+% at p99$/m,
    );
    // Not a terminal: the progress is a few plain lines on stderr, ending at 20/20.
    assert.match(r.stderr, /demo: 20\/20 Bound/);
    assert.equal((await volumeDirs(dataDir)).length, 20);
    assert.ok(existsSync(join(dataDir, 'kubeconfig')));
    assert.ok(existsSync(join(dataDir, 'hostpath-config.json')));
  });

  it('without --demo it serves on the same data dir (claims persisted) until SIGINT, then stops cleanly', async () => {
    const cli = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
    try {
      await waitFor('the guide', () => cli.stdout().includes('Ctrl-C to stop'), 30_000);
      const { kubeConfig } = loadKubeConfig({ path: join(dataDir, 'kubeconfig') });
      const client = new KubeClient({ kubeConfig, qps: 0 });
      try {
        const before = await client.list<PersistentVolumeClaim>(persistentVolumeClaims, { namespace: 'default' });
        assert.equal(
          before.items.filter((c) => c.status?.phase === 'Bound').length,
          20,
          "the first run's hostpath claims survived the restart",
        );
        assert.ok(
          before.items.every((c) => c.spec.storageClassName === 'hostpath'),
          'the in-memory comparison cleaned up its claims',
        );
        await client.create(persistentVolumeClaims, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'after-restart', namespace: 'default' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
        } as PersistentVolumeClaim);
        await waitFor('the new claim Bound', async () => {
          const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'after-restart', {
            namespace: 'default',
          });
          return c.status?.phase === 'Bound';
        });
      } finally {
        client.close();
      }
      const dirs = await readdir(join(dataDir, 'volumes', 'shared', 'default'));
      assert.ok(
        dirs.some((d) => d.startsWith('after-restart-pvc-')),
        'the default class put it under volumes/shared',
      );
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr());
      assert.match(cli.stderr(), /received SIGINT, shutting down/);
    } finally {
      cli.child.kill('SIGKILL');
    }
  });
});
