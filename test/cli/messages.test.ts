// Clear messages for the usual mistakes, through the command as a process: a busy port names --port 0 and an
// instance already running, an out-of-range port says what is allowed, and a missing kubeconfig gets the same
// message whether it came from --kubeconfig or from $KUBECONFIG.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from './cli-helpers.ts';

describe('startup messages', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-msg-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a busy port: exit 1, mentions --port 0 and an instance already running, no Node internals', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      for (const cmd of ['dev', 'cluster']) {
        const r = await runCli([cmd, '--data-dir', join(dir, cmd), '--port', String(port)], { timeoutMs: 30_000 });
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stderr, new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use`));
        assert.match(r.stderr, /another kube-provisioner/);
        assert.match(r.stderr, /--port 0/);
        assert.doesNotMatch(r.stderr, /EADDRINUSE/);
      }
    } finally {
      server.close();
    }
  });

  it('an invalid port is refused before anything starts', async () => {
    for (const cmd of ['dev', 'cluster']) {
      const r = await runCli([cmd, '--data-dir', join(dir, 'never'), '--port', '99999'], { timeoutMs: 30_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /"99999" is not a port: use 1-65535, or 0 for any free port/);
      assert.doesNotMatch(r.stderr, /options\.port/);
    }
  });

  it('a missing kubeconfig: the same message for --kubeconfig and KUBECONFIG, for run hostpath and explain', async () => {
    const missing = join(dir, 'no-such-kubeconfig');
    const config = ['--config', join(dir, 'c.json')];
    const viaFlag = await runCli(['run', 'hostpath', '--kubeconfig', missing, ...config]);
    const viaEnv = await runCli(['run', 'hostpath', ...config], { env: { ...process.env, KUBECONFIG: missing } });
    const explainFlag = await runCli(['explain', 'pvc', 'x', '--kubeconfig', missing]);
    const explainEnv = await runCli(['explain', 'pvc', 'x'], { env: { ...process.env, KUBECONFIG: missing } });
    for (const r of [viaFlag, viaEnv, explainFlag, explainEnv]) {
      assert.equal(r.code, 1, r.stderr);
      assert.ok(r.stderr.includes(`kubeconfig ${missing} does not exist`), r.stderr);
      assert.doesNotMatch(r.stderr, /ENOENT/);
    }
    const strip = (s: string) => s.replace(/ \(from [^)]+\)/, '');
    assert.equal(strip(viaFlag.stderr), strip(viaEnv.stderr));
  });
});
