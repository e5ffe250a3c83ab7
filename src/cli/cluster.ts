// `kube-provisioner cluster`: runs the embedded Kubernetes-compatible API server until SIGINT/SIGTERM,
// writing DIR/kubeconfig and printing one line with `ready` and the URL once it serves.
import type { Command } from 'commander';
import { join, resolve } from 'node:path';
import { startEmbeddedCluster } from '../cluster/embedded-cluster.ts';

export interface ClusterCommandOptions {
  dataDir: string;
  port: number;
  host: string;
  insecureHttp?: boolean;
  controllers?: boolean;
}

/** Runs the cluster until `signal` aborts; resolves after a clean stop. */
export async function runCluster(opts: ClusterCommandOptions, io: { out(line: string): void; err(line: string): void }, signal: AbortSignal): Promise<void> {
  const dataDir = resolve(opts.dataDir);
  const cluster = await startEmbeddedCluster({
    dataDir,
    port: opts.port,
    host: opts.host,
    insecureHttp: opts.insecureHttp,
    controllers: opts.controllers,
    onError: (err) => io.err(`kube-provisioner cluster: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`),
  });
  io.out(`kube-provisioner cluster ready at ${cluster.url} (kubeconfig: ${join(dataDir, 'kubeconfig')})`);
  if (opts.insecureHttp) io.err('warning: serving plain HTTP (--insecure-http): debugging only');
  await new Promise<void>((done) => {
    if (signal.aborted) return done();
    signal.addEventListener('abort', () => done(), { once: true });
  });
  await cluster.stop();
  io.err('kube-provisioner cluster stopped');
}

function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`invalid port: ${v}`);
  return n;
}

export function registerClusterCommand(program: Command): void {
  program
    .command('cluster')
    .description('run the embedded Kubernetes-compatible API server (HTTPS, bearer token, SQLite under --data-dir)')
    .option('--data-dir <dir>', 'where objects, certificates, token and kubeconfig are kept', '.kube-provisioner/cluster')
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, 6443)
    .option('--host <address>', 'address to bind', '127.0.0.1')
    .option('--insecure-http', 'serve plain HTTP instead of HTTPS (debugging only)')
    .option('--no-controllers', 'do not run the PV binder / protection / scheduler stand-in controllers')
    .action(async (opts: ClusterCommandOptions) => {
      const ac = new AbortController();
      const stop = () => ac.abort();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await runCluster(opts, { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) }, ac.signal);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    });
}
