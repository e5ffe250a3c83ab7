// Helpers of the CLI tests: spawn `kube-provisioner` as a child process and collect its output, and poll
// for a condition.
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor as poll, type Probe } from '../support/wait.ts';

export const ROOT = new URL('../../', import.meta.url).pathname;

/** A running `kube-provisioner` process with its output so far. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name) when the process ends. */
  exited: Promise<number | string>;
}

/** How a CLI process is started: its environment, when it is killed, and (as root) the user it runs as. */
export interface CliOptions {
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  user?: { uid: number; gid: number };
}

/** Starts `node --import tsx src/cli/main.ts ...args`; the process is killed after `timeoutMs` if still running. */
export function startCli(args: string[], opts: CliOptions = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: opts.env ?? process.env,
    ...(opts.user ?? {}),
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code ?? signal ?? 'unknown');
    });
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Runs the command to completion. */
export async function runCli(
  args: string[],
  opts: CliOptions = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = startCli(args, opts);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** The shared polling helper with the CLI tests' longer default (a child process starts first). */
export const waitFor = <T>(what: string, check: Probe<T>, timeoutMs = 20_000): Promise<T> =>
  poll(what, check, timeoutMs, 50);
