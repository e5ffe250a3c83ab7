// `kube-provisioner cluster` as a real process: it prints a ready line with the URL, writes a working
// kubeconfig under --data-dir, and exits cleanly (code 0) on SIGTERM.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

describe('kube-provisioner cluster', () => {
  it('serves until SIGTERM with the kubeconfig it writes', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'kp-cli-'));
    dirs.push(dataDir);
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'cluster', '--data-dir', dataDir, '--port', '0', '--no-controllers'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      const readyLine = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const line = out.split('\n').find((l) => l.includes('ready'));
          if (line) resolve(line);
        });
        child.once('exit', (code) => reject(new Error(`exited early (${code}): ${stderr}`)));
      });
      const url = /https:\/\/127\.0\.0\.1:\d+/.exec(readyLine)?.[0];
      assert.ok(url, readyLine);
      const kc = new KubeConfig();
      kc.loadFromFile(join(dataDir, 'kubeconfig'));
      assert.equal(kc.getCurrentCluster()?.server, url);
      const namespaces = await kc.makeApiClient(CoreV1Api).listNamespace();
      assert.ok(namespaces.items.some((n) => n.metadata?.name === 'default'));
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, stderr);
  });
});
