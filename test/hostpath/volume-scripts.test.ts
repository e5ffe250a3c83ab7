// local-path's setup/teardown scripts as real `sh` processes: the environment is local-path's and nothing of the
// provisioner's own, output is captured and bounded, and a timeout or an abort kills the whole process group
// (a background child included).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
  } catch {
    return false;
  }
  // A killed orphan may stay a zombie until init reaps it (a container's PID 1 may never do so): that is dead.
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return process.platform !== 'linux';
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

test(
  'a child that left the process group (setsid, a double fork) is found by its run marker and killed (Linux)',
  {
    skip: process.platform !== 'linux' && 'the /proc sweep is Linux only; elsewhere the group kill only',
  },
  async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-scripts-'));
    const started: number[] = [];
    try {
      const pidFile = path.join(tmp, 'pid');
      const grandFile = path.join(tmp, 'grand');
      // Its own session (so its own process group), output detached: the group kill cannot reach it.
      // The script waits until the child is in its new session (it wrote its pid), then exits 0.
      const untilWritten = `while [ ! -s ${pidFile} ]; do sleep 0.05; done; exit 0`;
      await run(`setsid sh -c 'echo $$ > ${pidFile}; exec sleep 300' >/dev/null 2>&1 </dev/null & ${untilWritten}`);
      const leaver = Number(await fsp.readFile(pidFile, 'utf8'));
      started.push(leaver);
      await waitFor('a child in its own session killed', () => !alive(leaver), 5_000);
      // A double fork into a new session that holds the script's stdout open, with a child of its own.
      await fsp.rm(pidFile);
      await run(`(setsid sh -c 'sleep 300 & echo $! > ${grandFile}; echo $$ > ${pidFile}; wait' &) ; ${untilWritten}`);
      const holder = Number(await fsp.readFile(pidFile, 'utf8'));
      const grandchild = Number(await fsp.readFile(grandFile, 'utf8'));
      started.push(holder, grandchild);
      await waitFor('a double-forked child holding stdout killed', () => !alive(holder), 5_000);
      await waitFor('and the child it started', () => !alive(grandchild), 5_000);
    } finally {
      for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  },
);

test(
  'a child that left the process group and dropped the run marker from its environment (unset, env -i) is still killed (Linux)',
  {
    skip: process.platform !== 'linux' && 'the /proc sweep is Linux only; elsewhere the group kill only',
  },
  async () => {
    const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-scripts-'));
    const started: number[] = [];
    try {
      const pidFile = path.join(tmp, 'pid');
      const untilWritten = `while [ ! -s ${pidFile} ]; do sleep 0.05; done; exit 0`;
      const child = `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 300' >/dev/null 2>&1 </dev/null &`;
      for (const [what, script] of [
        ['unset', `unset KUBE_PROVISIONER_SCRIPT_RUN; ${child} ${untilWritten}`],
        ['overwritten', `export KUBE_PROVISIONER_SCRIPT_RUN=x; ${child} ${untilWritten}`],
        [
          'env -i',
          `setsid env -i sh -c 'echo $$ > ${pidFile}; exec sleep 300' >/dev/null 2>&1 </dev/null & ${untilWritten}`,
        ],
      ]) {
        await fsp.rm(pidFile, { force: true });
        await run(script);
        const leaver = Number(await fsp.readFile(pidFile, 'utf8'));
        started.push(leaver);
        await waitFor(`a child in its own session without the marker (${what}) killed`, () => !alive(leaver), 5_000);
      }
    } finally {
      for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  },
);
