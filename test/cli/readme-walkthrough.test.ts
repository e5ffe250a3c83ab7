// README.md's walkthrough, as a user runs it (skipped, saying so, without kubectl): `kube-provisioner dev` in an
// empty working directory (with the package's examples/ beside it), then the README's own commands, read from its
// Quick start block and run one by one with sh: kubectl apply, wait Bound, the volume's directory listed, pod Ready,
// patch to 2Gi, delete. Then what the README promises: the claim grew to 2Gi, and after the delete the PV and the
// directory are gone.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { persistentVolumeClaims, persistentVolumes } from '../../src/runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { kubectlInstalled } from '../support/kubectl.ts';
import { fencedBlocks } from '../package/doc-project.ts';
import { ROOT, waitFor } from './cli-helpers.ts';

/** The README's walkthrough: the shell block after "prints what to do next". */
function walkthrough(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = fencedBlocks(readme.slice(readme.indexOf('prints what')), 'sh')[0] ?? '';
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter(Boolean);
}

describe(
  "README's walkthrough against `kube-provisioner dev`",
  { skip: kubectlInstalled() ? false : 'kubectl not installed' },
  () => {
    let cwd: string;
    let dev: ReturnType<typeof spawn>;
    let out = '';
    let client: KubeClient;
    const kubeconfig = () => join(cwd, '.kube-provisioner', 'kubeconfig');
    const sh = (line: string): Promise<string> =>
      new Promise((resolve, reject) => {
        execFile(
          'sh',
          ['-c', line],
          {
            cwd,
            timeout: 60_000,
            env: { ...process.env, KUBECONFIG: kubeconfig(), KUBECACHEDIR: join(cwd, 'kubectl-cache') },
          },
          (err, stdout, stderr) => {
            if (err) reject(new Error(`${line}: ${stderr || err.message}`));
            else resolve(stdout);
          },
        );
      });

    before(async () => {
      cwd = await mkdtemp(join(tmpdir(), 'kp-readme-'));
      await symlink(join(ROOT, 'examples'), join(cwd, 'examples'), 'dir');
      // dev as `kube-provisioner dev` runs it, from this working directory (its default data dir is ./.kube-provisioner).
      dev = spawn(
        process.execPath,
        ['--import', import.meta.resolve('tsx'), join(ROOT, 'src', 'cli', 'main.ts'), 'dev', '--port', '0'],
        { cwd, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      dev.stdout?.on('data', (d: Buffer) => (out += d.toString()));
      await waitFor('dev serving', () => out.includes('Ctrl-C to stop'), 60_000);
      client = new KubeClient({ kubeConfig: loadKubeConfig({ path: kubeconfig() }).kubeConfig, qps: 0 });
    });
    after(async () => {
      client?.close();
      if (dev && dev.exitCode === null) {
        const exited = new Promise((r) => dev.once('exit', r));
        dev.kill('SIGINT');
        await exited;
      }
      await rm(cwd, { recursive: true, force: true });
    });

    it('every command works, the claim grows to 2Gi, and the delete removes the PV and the directory', async () => {
      const lines = walkthrough();
      assert.equal(lines[0], 'export KUBECONFIG=$PWD/.kube-provisioner/kubeconfig');
      assert.ok(
        lines.some((l) => l.startsWith('kubectl delete')),
        lines.join('\n'),
      );
      let volume: PersistentVolume | undefined;
      let directory = '';
      for (const line of lines.slice(1)) {
        if (line.startsWith('kubectl delete')) {
          // Before the delete: what the earlier lines promised.
          const claim = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'example-data', {
            namespace: 'default',
          });
          volume = await client.get<PersistentVolume>(persistentVolumes, claim.spec.volumeName ?? '');
          directory = volume.spec.hostPath?.path ?? volume.spec.local?.path ?? '';
          assert.ok(existsSync(directory), directory);
          await waitFor(
            'the claim grown to 2Gi',
            async () =>
              (
                await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'example-data', {
                  namespace: 'default',
                })
              ).status?.capacity?.storage === '2Gi',
            30_000,
          );
        }
        const output = await sh(line);
        if (line.startsWith('ls ')) assert.match(output, /^example-data-pvc-/m, 'the volume directory is listed');
      }
      const pvName = volume?.metadata.name ?? '';
      await waitFor(
        'the PV gone',
        async () =>
          !(await client.list<PersistentVolume>(persistentVolumes)).items.some((v) => v.metadata.name === pvName),
        30_000,
      );
      await waitFor('the directory gone', () => !existsSync(directory), 30_000);
      assert.deepEqual(
        (await readdir(join(cwd, '.kube-provisioner', 'volumes', 'shared', 'default'))).filter((n) =>
          n.startsWith('archived-'),
        ),
        [],
        'nothing archived',
      );
    });
  },
);
