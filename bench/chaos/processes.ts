// Child processes of the chaos harness and the reliability tests: `kube-provisioner <args>` started with
// `node --import tsx src/cli/main.ts`, its output collected (and optionally teed to a log file), waited for,
// signalled and killed by pid. Nothing here kills anything it did not start.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

/** A running `kube-provisioner` process. */
export interface CliProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code, or the signal name, once the process has ended. */
  readonly exited: Promise<number | string>;
  /** True once it has exited. */
  done(): boolean;
}

export interface StartCliOptions {
  env?: NodeJS.ProcessEnv;
  /** Extra node flags before the script (e.g. `--import ./bench/chaos/preload.ts`). */
  nodeArgs?: string[];
  /** Append stdout and stderr to this file as well. */
  logFile?: string;
  /** Keep at most this many characters of output in memory (default 1 MB; older output is dropped). */
  maxBuffered?: number;
}

/** Starts `node --import tsx src/cli/main.ts ...args` in the repository root. */
export function startCli(args: string[], opts: StartCliOptions = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', ...(opts.nodeArgs ?? []), 'src/cli/main.ts', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: opts.env ?? process.env,
  });
  const max = opts.maxBuffered ?? 1_000_000;
  let out = '';
  let err = '';
  let ended = false;
  const log: WriteStream | undefined = opts.logFile ? createWriteStream(opts.logFile, { flags: 'a' }) : undefined;
  child.stdout?.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-max);
    log?.write(d);
  });
  child.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-max);
    log?.write(d);
  });
  child.on('exit', () => {
    ended = true;
  });
  // 'close' comes after 'exit' once stdout and stderr have ended: every line has reached the log.
  const exited = new Promise<number | string>((resolve) => {
    child.on('close', (code, signal) => {
      ended = true;
      const status = code ?? signal ?? 'unknown';
      if (log) log.end(() => resolve(status));
      else resolve(status);
    });
  });
  return { child, pid: child.pid ?? -1, stdout: () => out, stderr: () => err, exited, done: () => ended };
}

/** Sends `signal` to the process if it is still running (by its own pid only). */
export function signalProcess(p: CliProcess, signal: NodeJS.Signals): void {
  if (!p.done()) p.child.kill(signal);
}

/** SIGTERM, then SIGKILL after `graceMs` if it has not exited; resolves with the exit status. */
export async function stopProcess(p: CliProcess, graceMs = 30_000): Promise<number | string> {
  if (p.done()) return p.exited;
  signalProcess(p, 'SIGTERM');
  const timer = setTimeout(() => signalProcess(p, 'SIGKILL'), graceMs);
  try {
    return await p.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `check` until it returns a value other than undefined/false/null; throws after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | null | Promise<T | undefined | false | null>,
  timeoutMs = 30_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false && v !== null) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
