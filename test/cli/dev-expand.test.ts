// End to end with the real kubectl (skipped, saying so, without it): `kube-provisioner dev` as a separate
// process, a hostpath claim of the default class, `kubectl patch pvc … 2Gi`, and `kubectl get pvc` showing 2Gi with
// the resize events — what a user does on a laptop.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startCli, waitFor, type CliProcess } from './cli-helpers.ts';

let HAVE_KUBECTL = true;
try {
  execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
} catch {
  HAVE_KUBECTL = false;
}

describe(
  'kube-provisioner dev: growing a claim with kubectl',
  { skip: HAVE_KUBECTL ? false : 'kubectl not installed' },
  () => {
    let dataDir: string;
    let cli: CliProcess;
    const kubectl = (...args: string[]): Promise<string> =>
      new Promise((resolve, reject) => {
        execFile(
          'kubectl',
          ['--kubeconfig', join(dataDir, 'kubeconfig'), '--cache-dir', join(dataDir, 'kubectl-cache'), ...args],
          { timeout: 30_000 },
          (err, stdout, stderr) => {
            if (err) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr || err.message}`));
            else resolve(stdout);
          },
        );
      });

    before(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'kp-dev-expand-'));
      cli = startCli(['dev', '--data-dir', dataDir, '--port', '0']);
      await waitFor('the guide', () => cli.stdout().includes('Ctrl-C to stop'), 30_000);
    });
    after(async () => {
      cli?.child.kill('SIGINT');
      await cli?.exited;
      await rm(dataDir, { recursive: true, force: true });
    });

    it('kubectl patch pvc to 2Gi ends with kubectl get pvc showing 2Gi, with the events', async () => {
      const manifest = join(dataDir, 'pvc.yaml');
      await writeFile(
        manifest,
        'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: grows\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n',
      );
      await kubectl('apply', '-f', manifest);
      await waitFor(
        'Bound',
        async () => (await kubectl('get', 'pvc', 'grows', '-o', 'jsonpath={.status.phase}')) === 'Bound',
        30_000,
      );
      await kubectl('patch', 'pvc', 'grows', '-p', '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}');
      const row = await waitFor(
        'kubectl get pvc shows 2Gi',
        async () => {
          const out = await kubectl('get', 'pvc', 'grows', '--no-headers');
          return /\bBound\b/.test(out) && /\b2Gi\b/.test(out) ? out : undefined;
        },
        30_000,
      );
      assert.match(row, /^grows\s+Bound\s+pvc-\S+\s+2Gi\s+RWO\s+hostpath\b/);
      const pv = (await kubectl('get', 'pvc', 'grows', '-o', 'jsonpath={.spec.volumeName}')).trim();
      assert.equal((await kubectl('get', 'pv', pv, '-o', 'jsonpath={.spec.capacity.storage}')).trim(), '2Gi');
      const reasons = await waitFor('resize events', async () => {
        const out = await kubectl(
          'get',
          'events',
          '--field-selector',
          'involvedObject.name=grows',
          '-o',
          'jsonpath={.items[*].reason}',
        );
        return out.includes('VolumeResizeSuccessful') ? out : undefined;
      });
      for (const r of ['ExternalExpanding', 'Resizing', 'VolumeResizeSuccessful'])
        assert.ok(reasons.split(' ').includes(r), reasons);
    });
  },
);
