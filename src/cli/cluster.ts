// `kube-provisioner cluster`: runs the embedded Kubernetes-compatible API server until SIGINT/SIGTERM,
// writing DIR/kubeconfig and printing one line with `ready` and the URL once it serves.
import { Option, type Command } from 'commander';
import { join, resolve } from 'node:path';
import { startEmbeddedCluster } from '../cluster/embedded-cluster.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { persistenceNotice } from './persistence-notice.ts';
import { abortOnSignals } from './signals.ts';
import { EVENT_TTL_DEFAULT_MS, eventTtlArg } from './flags.ts';
import { describeListenError, parsePort } from './user-errors.ts';

export interface ClusterCommandOptions {
  dataDir: string;
  port: number;
  host: string;
  insecureHttp?: boolean;
  controllers?: boolean;
  /** Events last seen longer ago than this are deleted (kube-apiserver's --event-ttl; default 1 h). */
  eventTtl?: number;
}

/** Runs the cluster until `signal` aborts; resolves after a clean stop. */
export async function runCluster(
  opts: ClusterCommandOptions,
  io: { out(line: string): void; err(line: string): void },
  signal: AbortSignal,
): Promise<void> {
  const dataDir = resolve(opts.dataDir);
  // Before anything else is written under the data directory: a second instance must leave it untouched.
  const lock = await lockDataDir(dataDir, 'cluster');
  try {
    await runClusterLocked(opts, io, signal, dataDir, lock);
  } finally {
    await lock.release();
  }
}

async function runClusterLocked(
  opts: ClusterCommandOptions,
  io: { out(line: string): void; err(line: string): void },
  signal: AbortSignal,
  dataDir: string,
  lock: DataDirLock,
): Promise<void> {
  const cluster = await startEmbeddedCluster({
    dataDir,
    port: opts.port,
    host: opts.host,
    insecureHttp: opts.insecureHttp,
    controllers: opts.controllers,
    eventTtlMs: opts.eventTtl,
    onError: (err) =>
      io.err(
        `kube-provisioner cluster: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      ),
  }).catch((err: unknown) => {
    throw describeListenError(err, opts.host, opts.port);
  });
  await lock.setUrl(cluster.url);
  io.out(`kube-provisioner cluster ready at ${cluster.url} (kubeconfig: ${join(dataDir, 'kubeconfig')})`);
  if (opts.insecureHttp) io.err('warning: serving plain HTTP (--insecure-http): debugging only');
  const notice = persistenceNotice(cluster.persistence);
  if (notice) io.err(notice);
  await new Promise<void>((done) => {
    if (signal.aborted) return done();
    signal.addEventListener('abort', () => done(), { once: true });
  });
  await cluster.stop();
  io.err('kube-provisioner cluster stopped');
}

export function registerClusterCommand(program: Command): void {
  program
    .command('cluster')
    .description('run the embedded Kubernetes-compatible API server (HTTPS, bearer token, SQLite under --data-dir)')
    .option(
      '--data-dir <dir>',
      'where objects, certificates, token and kubeconfig are kept',
      '.kube-provisioner/cluster',
    )
    .option('--port <n>', 'port to listen on (0 = any free port)', parsePort, 6443)
    .option('--host <address>', 'address to bind', '127.0.0.1')
    .option('--insecure-http', 'serve plain HTTP instead of HTTPS (debugging only)')
    .option('--no-controllers', 'do not run the PV binder / protection / scheduler stand-in controllers')
    .addOption(
      new Option('--event-ttl <duration>', "delete Events last seen longer ago than this (kube-apiserver's flag)")
        .argParser(eventTtlArg)
        .default(EVENT_TTL_DEFAULT_MS, '1h'),
    )
    .action(async (opts: ClusterCommandOptions) => {
      const ac = new AbortController();
      const err = (l: string) => process.stderr.write(`${l}\n`);
      const removeHandlers = abortOnSignals(ac, { warn: (_o, msg) => err(msg ?? '') }, err);
      try {
        await runCluster(opts, { out: (l) => process.stdout.write(`${l}\n`), err }, ac.signal);
      } finally {
        removeHandlers();
      }
    });
}
