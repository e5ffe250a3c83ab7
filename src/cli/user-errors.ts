// Clear messages for the usual mistakes when a command starts: a port out of range, a port already taken (by an
// earlier instance, or by k3s on 6443), a kubeconfig that does not exist (the same words whether the path came
// from --kubeconfig or from $KUBECONFIG). Node's own messages name neither the flag nor the way out.
import { existsSync } from 'node:fs';
import { delimiter } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { loadKubeConfig, type KubeConfigSource } from '../runtime/kubeconfig.ts';
import { type RestConfig } from '../runtime/rest-config.ts';

/** A command could not start, for a reason the user can fix; the message says how. */
export class StartupError extends Error {
  override name = 'StartupError';
}

/** commander parser of `--port`: an integer 0..65535 (0 = any free port). */
export function parsePort(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535)
    throw new InvalidArgumentError(`"${v}" is not a port: use 1-65535, or 0 for any free port`);
  return n;
}

/**
 * Turns a listen failure of the API server into a StartupError that says what to do; other errors are returned
 * as they are.
 */
export function describeListenError(err: unknown, host: string, port: number): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') {
    return new StartupError(
      `port ${port} on ${host} is already in use: another kube-provisioner (or k3s, which also uses 6443) may be running there. ` +
        'Stop it, or pass --port 0 to take any free port (the kubeconfig then names the port chosen).',
    );
  }
  if (code === 'EACCES')
    return new StartupError(
      `not allowed to listen on ${host}:${port} (ports below 1024 need privileges): pass another --port, or --port 0`,
    );
  if (code === 'EADDRNOTAVAIL')
    return new StartupError(`${host} is not an address of this machine: pass another --host`);
  return err;
}

/**
 * loadKubeConfig (whose one message for a missing file is the same for --kubeconfig and $KUBECONFIG), with
 * kubectl's reading of a $KUBECONFIG list: the files of it that do not exist are skipped; none at all is the
 * loader's missing-file error.
 */
export function loadCliKubeConfig(o: { path?: string; context?: string; env?: NodeJS.ProcessEnv }): {
  kubeConfig: RestConfig;
  source: KubeConfigSource;
} {
  let env = o.env ?? process.env;
  if (!o.path && env.KUBECONFIG) {
    const files = env.KUBECONFIG.split(delimiter).filter(Boolean);
    const present = files.filter((f) => existsSync(f));
    if (present.length > 0 && present.length < files.length) env = { ...env, KUBECONFIG: present.join(delimiter) };
  }
  return loadKubeConfig({ path: o.path, context: o.context, env });
}
