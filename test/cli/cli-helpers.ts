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

/** Starts `node --import tsx src/cli/main.ts ...args`; the process is killed after `timeoutMs` if still running. */
export function startCli(args: string[], opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): CliProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: opts.env ?? process.env,
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
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = startCli(args, opts);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** The shared polling helper with the CLI tests' longer default (a child process starts first). */
export const waitFor = <T>(what: string, check: Probe<T>, timeoutMs = 20_000): Promise<T> =>
  poll(what, check, timeoutMs, 50);
