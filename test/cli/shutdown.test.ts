// Shutdown in every long-running mode: SIGINT or SIGTERM ends `dev`, `dev --demo N` (mid-demo), `run hostpath`
// and `cluster` with exit code 0 (a second signal forces exit code 130), and an interrupted demo leaves no volume
// directory that has neither its PersistentVolume nor a pending claim to resume it. Waits are bounded polls on the process's exit; how fast it stops is a
// benchmark-style figure, not asserted here (the bound only keeps a hang from stalling the suite).
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { abortOnSignals } from '../../src/cli/signals.ts';
import { startCli, waitFor, type CliProcess } from './cli-helpers.ts';

/** The exit code once the process ended, polling at most `ms` (the process is killed after that). */
async function exitWithin(cli: CliProcess, ms = 30_000): Promise<number | string> {
  let code: number | string | undefined;
  void cli.exited.then((c) => (code = c));
  try {
    await waitFor('the process to exit after the signal', () => code !== undefined, ms);
  } finally {
    cli.child.kill('SIGKILL');
  }
  return cli.exited;
}

describe('shutdown on SIGINT/SIGTERM', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-stop-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('dev --demo N stops mid-demo on SIGINT with exit 0, and every volume directory has its PV', async () => {
    const dataDir = join(dir, 'demo');
    const cli = startCli(['dev', '--data-dir', dataDir, '--port', '0', '--demo', '100000', '--demo-timeout', '600']);
    // A hang guard, not a speed check: a cold tsx start of dev took over 60 s at a load average of 19 on 2 cores.
    await waitFor('claims being Bound', () => /demo: [1-9]\d*\/100000 Bound|Bound, \d+ created/.test(cli.stderr()) || readdirCount(dataDir) > 5, 180_000);
    cli.child.kill('SIGINT');
    assert.equal(await exitWithin(cli), 0, cli.stderr());
    assert.match(cli.stderr(), /received SIGINT, shutting down/);
    assert.match(cli.stdout(), /^demo: \d+\/100000 claims Bound .*\(interrupted\)$/m);
    // Nothing half-created: a directory either has its saved PV, or belongs to a claim that is still Pending
    // under the deterministic PV name, which the next start provisions again (idempotently) into that directory.
    const cluster = await startEmbeddedCluster({ dataDir, controllers: false });
    try {
      const pvs = cluster.store.list('persistentvolumes').items as PersistentVolume[];
      const claims = cluster.store.list('persistentvolumeclaims').items as PersistentVolumeClaim[];
      const paths = new Set(pvs.map((pv) => pv.spec.hostPath?.path ?? pv.spec.local?.path));
      const pendingDirs = new Set(claims.filter((c) => c.status?.phase !== 'Bound').map((c) => `${c.metadata.name}-pvc-${c.metadata.uid}`));
      const base = join(dataDir, 'volumes', 'shared', 'default');
      const dirs = existsSync(base) ? await readdir(base) : [];
      assert.ok(dirs.length > 0, 'the demo created volumes before the signal');
      const orphans = dirs.filter((d) => !paths.has(join(base, d)) && !pendingDirs.has(d));
      assert.deepEqual(orphans, [], 'volume directories with neither a PersistentVolume nor a pending claim');
    } finally {
      await cluster.stop();
    }
  });

  it('dev stops on SIGTERM with exit 0; a second signal forces exit 130', async () => {
    const dataDir = join(dir, 'dev');
    const cli = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
    await waitFor('dev serving', () => cli.stdout().includes('Ctrl-C to stop'), 30_000);
    cli.child.kill('SIGTERM');
    assert.equal(await exitWithin(cli), 0, cli.stderr());

    const again = startCli(['dev', '--data-dir', dataDir, '--port', '0', '--demo', '100000', '--demo-timeout', '600']);
    await waitFor('dev serving again', () => again.stdout().includes('configuration (hot-reloaded)'), 30_000);
    again.child.kill('SIGINT');
    await waitFor('the first signal seen', () => again.stderr().includes('shutting down'), 30_000);
    again.child.kill('SIGINT');
    // Whether the second signal lands before the graceful shutdown has finished depends on the machine's speed:
    // 130 when it does; 0 when the shutdown won the race; and when it lands after the handlers were removed but
    // before the process exited, Node's default action ends it by that signal. Never a hang or an error exit.
    // The forced exit itself is tested without a race below.
    const code = await exitWithin(again);
    assert.ok(code === 0 || code === 130 || code === 'SIGINT', `${String(code)}\n${again.stderr()}`);
  });

  it('the first signal aborts, the second forces exit 130 (signal handling without a process race)', () => {
    const source = Object.assign(new EventEmitter(), { exits: [] as number[], exit(code: number) { this.exits.push(code); } });
    const controller = new AbortController();
    const lines: string[] = [];
    const warned: unknown[] = [];
    const remove = abortOnSignals(controller, { warn: (o: unknown) => warned.push(o) }, (l) => lines.push(l), source);
    source.emit('SIGTERM', 'SIGTERM');
    assert.equal(controller.signal.aborted, true);
    assert.deepEqual(source.exits, []);
    assert.match(lines[0] ?? '', /received SIGTERM, shutting down/);
    source.emit('SIGINT', 'SIGINT');
    assert.deepEqual(source.exits, [130]);
    assert.equal(warned.length, 1);
    remove();
    assert.equal(source.listenerCount('SIGINT') + source.listenerCount('SIGTERM'), 0);
  });

  it('cluster stops on SIGINT and on SIGTERM with exit 0', async () => {
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      const cli = startCli(['cluster', '--data-dir', join(dir, `cluster-${sig}`), '--port', '0']);
      await waitFor('the cluster serving', () => cli.stdout().includes('ready at'), 30_000);
      cli.child.kill(sig);
      assert.equal(await exitWithin(cli), 0, cli.stderr());
      assert.match(cli.stderr(), /kube-provisioner cluster stopped/);
    }
  });

  it('run hostpath stops on SIGTERM with exit 0', async () => {
    const cluster = await startEmbeddedCluster({});
    try {
      const config = join(dir, 'hostpath.json');
      await writeFile(config, JSON.stringify({ storageClassConfigs: { x: { sharedFileSystemPath: join(dir, 'vols') } } }));
      const cli = startCli(['run', 'hostpath', '--kubeconfig', cluster.kubeconfigPath, '--config', config, '--leader-election', 'none']);
      // A guard against a hang, not a speed claim: a cold tsx start of `run hostpath` took over 30 s at load 21.
      await waitFor('the provisioner running', () => cli.stdout().includes('kube-provisioner run hostpath: provisioner'), 120_000);
      cli.child.kill('SIGTERM');
      assert.equal(await exitWithin(cli), 0, cli.stderr());
      assert.match(cli.stdout(), /run hostpath: stopped/);
    } finally {
      await cluster.stop();
    }
  });
});

function readdirCount(dataDir: string): number {
  try {
    return readdirSync(join(dataDir, 'volumes', 'shared', 'default')).length;
  } catch {
    return 0;
  }
}
