// local-path's `setup` and `teardown` ConfigMap scripts, run by the provisioner process itself (no helper pod):
// `sh -c <script>` with local-path's environment (VOL_DIR, VOL_MODE, VOL_SIZE_BYTES, VOL_USER, VOL_GROUP,
// VOL_PERM) and its arguments (-p <dir> -s <bytes> -m <mode> -a create|delete); the path is never part of the
// command string. The script runs in its own process group, and that group is killed when the script exits (as a
// helper pod's containers end with it), times out or is aborted: nothing it started in the background outlives it.
// A child that left the group (setsid, a double fork into a new session) is found by the run's environment marker
// (KUBE_PROVISIONER_SCRIPT_RUN, unique per run, inherited by everything the script starts) and by the run's marker
// file, an unlinked file handed to the script as fd 3 (inherited too, and kept by `unset`, `env -i` or sudo, which
// drop the environment): on Linux every process whose /proc/<pid>/environ carries the marker or whose fd 3 is that
// file is killed after the group, until none is left. Elsewhere only the group is killed. A process that both
// replaces its environment and closes fd 3 (a daemon closing every descriptor) escapes the sweep, as it would
// escape a pod only by leaving its cgroup: the sweep ends what a script leaves behind, it does not contain a
// hostile script.
// Output is captured, bounded, for the event and the log of a failure. runLoggedScript runs the configured one of
// a volume (none configured: nothing), and isRealDirectory is the check a directory passes before a script gets it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, openSync, unlinkSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Clock } from '../../runtime/clock.ts';
import { realClock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import type { VolumeScripts } from '../config/hostpath-config.ts';
import { hostFsOf, type HostFs } from './host-fs.ts';

/** Which script ran: setup (after the directory is created) or teardown (before it is removed). */
export type ScriptName = 'setup' | 'teardown';

/** One run of a setup or teardown script: the script, which one, the volume directory and size, its time limit, signal and clock. */
export interface VolumeScriptRun {
  script: string;
  name: ScriptName;
  /** The volume directory (VOL_DIR, -p). */
  volumeDir: string;
  /** The claim's size in bytes (VOL_SIZE_BYTES, -s). */
  sizeBytes: bigint;
  /** VOL_USER, VOL_GROUP, VOL_PERM (local-path renders them from its user/group/perm patterns; empty when unset). */
  user?: string;
  group?: string;
  perm?: string;
  timeoutMs: number;
  signal: AbortSignal;
  clock?: Clock;
  /** Bytes of output kept (stdout and stderr interleaved). Default 16 KiB. */
  maxOutputBytes?: number;
}

/** A script that exited non-zero, was killed, timed out or could not start. `output` is its captured output. */
export class VolumeScriptError extends Error {
  override name = 'VolumeScriptError';
  constructor(
    readonly script: ScriptName,
    readonly outcome: { exitCode?: number; signal?: string; timedOut: boolean; aborted: boolean },
    readonly output: string,
    options?: { cause?: unknown },
  ) {
    const how = outcome.timedOut
      ? 'timed out'
      : outcome.aborted
        ? 'was aborted'
        : outcome.signal
          ? `was killed by ${outcome.signal}`
          : `exited with ${outcome.exitCode}`;
    super(`the ${script} script ${how}${output.trim() ? `: ${output.trim()}` : ''}`, options);
  }
}

/** Runs one script to completion. Resolves with its output; rejects with VolumeScriptError. */
export function runVolumeScript(r: VolumeScriptRun): Promise<{ output: string }> {
  if (r.signal.aborted) return Promise.reject(r.signal.reason as Error);
  const clock = r.clock ?? realClock;
  const max = r.maxOutputBytes ?? 16 * 1024;
  const action = r.name === 'setup' ? 'create' : 'delete';
  const size = r.sizeBytes.toString();
  const runId = randomBytes(12).toString('hex');
  const fdMarker = openFdMarker(runId);
  return new Promise<{ output: string }>((resolve, reject) => {
    const child = spawn(
      'sh',
      ['-c', r.script, r.name, '-p', r.volumeDir, '-s', size, '-m', 'Filesystem', '-a', action],
      {
        // Only what a script needs: the provisioner's own environment (kube tokens, flags) is not its business.
        env: {
          PATH: process.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
          VOL_DIR: r.volumeDir,
          VOL_MODE: 'Filesystem',
          VOL_SIZE_BYTES: size,
          VOL_USER: r.user ?? '',
          VOL_GROUP: r.group ?? '',
          VOL_PERM: r.perm ?? '',
          [RUN_MARKER]: runId,
        },
        // fd 3: the run's marker file, inherited by everything the script starts unless it closes it.
        stdio: ['ignore', 'pipe', 'pipe', ...(fdMarker ? [fdMarker.fd] : [])],
        detached: true,
      },
    );
    // Piped above (stdout and stderr), whatever the type of the stdio list with the marker's fd says.
    const stdout = child.stdout!;
    const stderr = child.stderr!;
    const chunks: Buffer[] = [];
    let kept = 0;
    let truncated = false;
    const keep = (b: Buffer) => {
      if (kept >= max) {
        truncated = true;
        return;
      }
      const part = b.subarray(0, max - kept);
      chunks.push(part);
      kept += part.length;
      if (part.length < b.length) truncated = true;
    };
    stdout.on('data', keep);
    stderr.on('data', keep);
    let timedOut = false;
    let aborted = false;
    let exited = false;
    let swept: Promise<void> = Promise.resolve();
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      swept = swept.then(() => killMarked(runId, fdMarker?.key));
    };
    // The script is done: what it left running goes with it. (Its output pipes close once the group is gone.)
    child.on('exit', () => {
      exited = true;
      killGroup();
    });
    const timer = clock.setTimeout(() => {
      // A process that left the group (setsid) and still holds the output open: stop waiting for it.
      if (exited) {
        stdout.destroy();
        stderr.destroy();
        return;
      }
      timedOut = true;
      killGroup();
    }, r.timeoutMs);
    const onAbort = () => {
      aborted = true;
      killGroup();
    };
    r.signal.addEventListener('abort', onAbort, { once: true });
    const output = () => Buffer.concat(chunks).toString('utf8') + (truncated ? '\n[output truncated]' : '');
    const done = () => {
      timer.cancel();
      r.signal.removeEventListener('abort', onAbort);
    };
    child.on('error', (err) => {
      done();
      reject(new VolumeScriptError(r.name, { timedOut, aborted }, `${output()}${err.message}`, { cause: err }));
    });
    child.on('close', (code, sig) => {
      done();
      // Answer once the sweep is over: when the run's promise settles, nothing it started is left.
      void swept.then(() => settle(code, sig));
    });
    const settle = (code: number | null, sig: NodeJS.Signals | null) => {
      if (code === 0 && !timedOut && !aborted) resolve({ output: output() });
      else
        reject(
          new VolumeScriptError(
            r.name,
            { exitCode: code ?? undefined, signal: sig ?? undefined, timedOut, aborted },
            output(),
          ),
        );
    };
  }).finally(() => {
    if (fdMarker) closeSync(fdMarker.fd);
  });
}

// An unlinked file of this run, held open and handed to the script as fd 3: a process that dropped the environment
// marker (unset, `env -i`, sudo) still holds it. Undefined (environment marker only) where the file cannot be made.
function openFdMarker(runId: string): { fd: number; key: string } | undefined {
  const file = path.join(os.tmpdir(), `.kube-provisioner-script-run-${runId}`);
  let fd: number;
  try {
    fd = openSync(file, 'wx', 0o600);
  } catch {
    return undefined;
  }
  try {
    unlinkSync(file);
    const st = fstatSync(fd);
    return { fd, key: `${st.dev}:${st.ino}` };
  } catch {
    closeSync(fd);
    return undefined;
  }
}

/** The environment variable that marks every process of one script run (its value is unique per run). */
export const RUN_MARKER = 'KUBE_PROVISIONER_SCRIPT_RUN';
const MAX_SWEEPS = 20;
const NUL = Buffer.from([0]);

/**
 * Kills every process whose environment carries `RUN_MARKER=<runId>` (Linux: /proc/<pid>/environ; elsewhere
 * nothing), again until a pass finds none: a process may fork between the read and the kill. Processes of other
 * users are unreadable and skipped (they could not be killed either).
 */
async function killMarked(runId: string, fdKey?: string): Promise<void> {
  if (process.platform !== 'linux') return;
  const holdsMarkerFd = async (pid: string) => {
    if (fdKey === undefined) return false;
    const st = await stat(`/proc/${pid}/fd/3`).catch(() => undefined);
    return st !== undefined && `${st.dev}:${st.ino}` === fdKey;
  };
  // NUL-separated NAME=value entries: the marker is an entry of its own, the first or after a NUL.
  const marker = Buffer.from(`\0${RUN_MARKER}=${runId}\0`);
  for (let pass = 0; pass < MAX_SWEEPS; pass++) {
    // Never this process (it holds the marker file too, maybe as its own fd 3).
    const self = String(process.pid);
    const pids = (await readdir('/proc').catch(() => [] as string[])).filter((n) => /^\d+$/.test(n) && n !== self);
    let found = 0;
    await Promise.all(
      pids.map(async (pid) => {
        const env = await readFile(`/proc/${pid}/environ`).catch(() => undefined);
        if (!(env && Buffer.concat([NUL, env]).includes(marker)) && !(await holdsMarkerFd(pid))) return;
        found++;
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }),
    );
    if (found === 0) return;
  }
}

/** Runs a configured script (none configured: nothing), logging its output on failure. */
export async function runLoggedScript(r: {
  name: ScriptName;
  scripts: VolumeScripts;
  dir: string;
  bytes: bigint;
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
}): Promise<void> {
  const script = r.scripts[r.name];
  if (script === undefined) return;
  const log = r.logger.child({ path: r.dir, script: r.name });
  try {
    const { output } = await runVolumeScript({
      script,
      name: r.name,
      volumeDir: r.dir,
      sizeBytes: r.bytes,
      timeoutMs: r.scripts.timeoutMs,
      signal: r.signal,
      clock: r.clock,
    });
    if (output.trim()) log.debug({ output }, `${r.name} script output`);
  } catch (e) {
    if (e instanceof VolumeScriptError) log.warn({ output: e.output, ...e.outcome }, `${r.name} script failed`);
    throw e;
  }
}

/** The script is handed a path, and `sh` follows symlinks: run it only when no component of that path is one. */
export async function isRealDirectory(p: string, o?: { fs?: HostFs }): Promise<boolean> {
  const fs = hostFsOf(o);
  const st = await fs.lstat(p).catch(() => undefined);
  return st?.isDirectory() === true && (await fs.realpath(p).catch(() => undefined)) === p;
}
