// local-path's setup/teardown scripts as real `sh` processes: the environment is local-path's and nothing of the
// provisioner's own, output is captured and bounded, and a timeout or an abort kills the whole process group
// (a background child included).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { runVolumeScript, VolumeScriptError } from '../../src/hostpath/disk/volume-scripts.ts';
import { waitFor } from '../support/wait.ts';

const run = (script: string, extra: Partial<Parameters<typeof runVolumeScript>[0]> = {}) =>
  runVolumeScript({
    script,
    name: 'setup',
    volumeDir: '/vol/dir',
    sizeBytes: 1024n,
    timeoutMs: 10_000,
    signal: new AbortController().signal,
    ...extra,
  });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test("environment and arguments are local-path's; the provisioner's environment is not passed on", async () => {
  process.env.KP_SECRET_FOR_TEST = 'token';
  try {
    const { output } = await run(
      'echo "$VOL_DIR|$VOL_MODE|$VOL_SIZE_BYTES|$VOL_USER|$VOL_GROUP|$VOL_PERM|$0|$*|${KP_SECRET_FOR_TEST:-unset}"',
      { user: '1000', perm: '0770' },
    );
    assert.equal(
      output,
      '/vol/dir|Filesystem|1024|1000||0770|setup|-p /vol/dir -s 1024 -m Filesystem -a create|unset\n',
    );
    const teardown = await run('echo "$*"', { name: 'teardown' });
    assert.equal(teardown.output, '-p /vol/dir -s 1024 -m Filesystem -a delete\n');
  } finally {
    delete process.env.KP_SECRET_FOR_TEST;
  }
});

test('a non-zero exit is a VolumeScriptError with the output; output is bounded', async () => {
  await assert.rejects(
    run('echo out; echo err >&2; exit 4'),
    (e: unknown) =>
      e instanceof VolumeScriptError &&
      e.outcome.exitCode === 4 &&
      /out/.test(e.output) &&
      /err/.test(e.output) &&
      /exited with 4/.test(e.message),
  );
  const { output } = await run('i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done', {
    maxOutputBytes: 100,
  });
  assert.ok(output.startsWith('0123456789\n') && output.endsWith('[output truncated]'), output);
  assert.ok(Buffer.byteLength(output) < 200);
});

test('a timeout and an abort kill the script and what it started', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-scripts-'));
  try {
    const pidFile = path.join(tmp, 'pid');
    const script = `sleep 60 & echo $! > ${pidFile}; wait`;
    await assert.rejects(
      run(script, { timeoutMs: 200 }),
      (e: unknown) => e instanceof VolumeScriptError && e.outcome.timedOut,
    );
    const child = Number(await fsp.readFile(pidFile, 'utf8'));
    await waitFor('background child killed', () => !alive(child), 5_000);

    const ac = new AbortController();
    const running = run(script, { signal: ac.signal });
    await waitFor(
      'pid written again',
      async () => Number(await fsp.readFile(pidFile, 'utf8').catch(() => '0')) !== child,
    );
    ac.abort();
    await assert.rejects(running, (e: unknown) => e instanceof VolumeScriptError && e.outcome.aborted);
    const second = Number(await fsp.readFile(pidFile, 'utf8'));
    await waitFor('second child killed', () => !alive(second), 5_000);
    const aborted = new AbortController();
    aborted.abort();
    await assert.rejects(run('true', { signal: aborted.signal }));
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});

test('a script that exits 0 takes what it started in the background with it, as a helper pod would', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-scripts-'));
  try {
    const pidFile = path.join(tmp, 'pid');
    // Detached from the script's output, so nothing but the process group ties it to the script.
    await run(`sleep 300 >/dev/null 2>&1 </dev/null & echo $! > ${pidFile}; exit 0`);
    const child = Number(await fsp.readFile(pidFile, 'utf8'));
    await waitFor('background child of a finished script killed', () => !alive(child), 5_000);
    // Holding the script's stdout open does not keep the script "running" either.
    await run(`sleep 300 & echo $! > ${pidFile}; exit 0`);
    const holder = Number(await fsp.readFile(pidFile, 'utf8'));
    await waitFor('background child holding stdout killed', () => !alive(holder), 5_000);
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});
