// `kube-provisioner dev`: a complete local setup in one process: the embedded cluster (persistent under
// --data-dir, kubeconfig at DIR/kubeconfig) with its controllers and this machine as a node, in a worker thread
// of its own (dev-cluster.ts; --cluster-thread main keeps it on the main thread), StorageClasses
// `hostpath` (default, Immediate, shared path) and `hostpath-local` (WaitForFirstConsumer, node path), and
// the hostpath provisioner with volumes under DIR/volumes and its configuration in DIR/hostpath-config.json
// (hot-reloaded). Prints a short guide, then serves until SIGINT/SIGTERM, or with --demo N creates N claims,
// prints a summary (and with --demo-compare the same against an instant in-memory provisioner) and exits.
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError, Option } from 'commander';
import { localNodeName } from '../cluster/controllers/index.ts';
import { DEFAULT_NODE } from '../hostpath/config/hostpath-config.ts';
import { KubeClient } from '../runtime/client.ts';
import { AlreadyExistsError } from '../runtime/status-errors.ts';
import { loadKubeConfig } from '../runtime/kubeconfig.ts';
import { createLogger } from '../runtime/pino-logger.ts';
import { type Logger } from '../types/logger.ts';
import { storageClasses } from '../runtime/resources.ts';
import type { StorageClass } from '../types/k8s.ts';
import { ANN_DEFAULT_STORAGE_CLASS } from '../types/annotations.ts';
import { errorMessage } from '../types/error-message.ts';
import { formatDemoSummary, runDemo, type DemoResult } from './demo.ts';
import { formatComparison, runMemoryDemo } from './demo-compare.ts';
import { DEV_CSI_CLASSES, startDevCsi } from './dev-csi.ts';
import { startHostPathService } from './hostpath-service.ts';
import { CLUSTER_THREADS, startDevCluster, type ClusterThread } from './dev-cluster.ts';
import { printProvisioningOutcomes } from './dev-outcomes.ts';
import { persistenceNotice } from './persistence-notice.ts';
import { EVENT_TTL_DEFAULT_MS, eventTtlArg, LOG_LEVELS, type LogLevel } from './flags.ts';
import { DEFAULT_PROVISIONER_NAME } from './hostpath-options.ts';
import { abortOnSignals } from './signals.ts';
import { lockDataDir, type DataDirLock } from './data-dir-lock.ts';
import { describeListenError, parsePort } from './user-errors.ts';
import { userAgent } from './version.ts';

export interface DevOptions {
  dataDir: string;
  port: number;
  host: string;
  /** Create this many claims, print a summary, exit. */
  demo?: number;
  /** Also run the demo against an instant in-memory provisioner and print the comparison. */
  demoCompare?: boolean;
  demoTimeoutMs: number;
  workerThreads: number;
  /** `host:port` for /healthz, /readyz and /metrics of the provisioner; undefined = off. */
  metricsAddress?: string;
  /** CSI mode as well: the reference CSI plugin, its registration, the CSI sidecar and the csi-hostpath classes. */
  csi?: boolean;
  logLevel: LogLevel;
  /** Where the embedded cluster runs: a worker thread of its own (default), or the main thread. */
  clusterThread?: ClusterThread;
  /** Events last seen longer ago than this are deleted by the cluster (`--event-ttl`, default 1 h). */
  eventTtlMs?: number;
}

export interface DevIo {
  /** One line, or several joined by newlines (the outcome printer hands over one turn's lines at once). */
  out(line: string): void;
  /** The progress bar's stream. */
  progress: { write(text: string): void; isTTY?: boolean; columns?: number };
}

/** The example claim and pod the guide applies, as shipped in the package (examples/ is in its files). */
const EXAMPLE_CLAIM = fileURLToPath(new URL('../../examples/pvc.yaml', import.meta.url));

/** Class names and where their volumes go, relative to DIR/volumes. */
export const DEV_CLASSES = { shared: 'hostpath', local: 'hostpath-local' } as const;

/**
 * The StorageClasses `dev` creates (also used by tests). `onDelete: delete` is written in the class: a shared path
 * archives by default (nfs-subdir's rule), and dev's walkthrough promises that deleting the claim removes its
 * directory, so the class says so where `kubectl get storageclass -o yaml` shows it.
 */
export function devStorageClasses(provisioner: string): StorageClass[] {
  const base = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    provisioner,
    reclaimPolicy: 'Delete' as const,
    allowVolumeExpansion: true,
  };
  const parameters = { pathPattern: '${.PVC.namespace}/${.PVC.name}-${.PV.name}', onDelete: 'delete' };
  return [
    {
      ...base,
      metadata: { name: DEV_CLASSES.shared, annotations: { [ANN_DEFAULT_STORAGE_CLASS]: 'true' } },
      volumeBindingMode: 'Immediate',
      parameters,
    },
    {
      ...base,
      metadata: { name: DEV_CLASSES.local },
      volumeBindingMode: 'WaitForFirstConsumer',
      parameters,
    },
  ];
}

/**
 * The first-run configuration: the shared path at the top level, the default for every class the configuration
 * does not list (`hostpath`, and any class a user creates for the provisioner); this node's path for `hostpath-local`.
 */
export function devConfig(volumesDir: string): object {
  return {
    sharedFileSystemPath: join(volumesDir, 'shared'),
    storageClassConfigs: {
      [DEV_CLASSES.local]: { nodePathMap: [{ node: DEFAULT_NODE, paths: [join(volumesDir, 'local')] }] },
    },
  };
}

/** What a demo run measured: the hostpath run, and the in-memory baseline with --demo-compare. */
export interface DevDemoResults {
  hostpath: DemoResult;
  memory?: DemoResult;
  /** With --csi: the same demo through the CSI sidecar and the reference plugin. */
  csi?: DemoResult;
}

/** Runs dev until `signal` aborts (or the demo ends). Returns the demo results, if any. */
export async function runDev(o: DevOptions, io: DevIo, signal: AbortSignal): Promise<DevDemoResults | undefined> {
  const logger = createLogger({ level: o.logLevel, name: 'kube-provisioner' });
  const dataDir = resolve(o.dataDir);
  // Before anything else is written under the data directory: a second instance must leave it untouched.
  const lock = await lockDataDir(dataDir, 'dev');
  try {
    return await runDevLocked(o, io, signal, logger, dataDir, lock);
  } finally {
    await lock.release();
  }
}

async function runDevLocked(
  o: DevOptions,
  io: DevIo,
  signal: AbortSignal,
  logger: Logger,
  dataDir: string,
  lock: DataDirLock,
): Promise<DevDemoResults | undefined> {
  const volumesDir = join(dataDir, 'volumes');
  await mkdir(join(volumesDir, 'shared'), { recursive: true });
  await mkdir(join(volumesDir, 'local'), { recursive: true });
  const configFile = join(dataDir, 'hostpath-config.json');
  if (!existsSync(configFile)) await writeFile(configFile, `${JSON.stringify(devConfig(volumesDir), null, 2)}\n`);

  const cluster = await startDevCluster(
    o.clusterThread ?? 'worker',
    { dataDir, port: o.port, host: o.host, logLevel: o.logLevel, eventTtlMs: o.eventTtlMs },
    logger,
  ).catch((err: unknown) => {
    throw describeListenError(err, o.host, o.port);
  });
  const stopService = new AbortController();
  const onAbort = () => stopService.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  // The cluster's thread ending on its own stops everything (and dev fails with its reason).
  let clusterFailure: Error | undefined;
  void cluster.exited.then((err) => {
    clusterFailure = err;
    logger.error({ err: err.message }, 'embedded cluster stopped unexpectedly');
    stopService.abort(err);
  });
  let client: KubeClient | undefined;
  let outcomes: Promise<unknown> | undefined;
  let stopCsi: (() => Promise<void>) | undefined;
  const startedAt = Date.now();
  try {
    await lock.setUrl(cluster.url);
    const { kubeConfig } = loadKubeConfig({ path: cluster.kubeconfigPath });
    // The cluster is local: no client-side rate limit.
    client = new KubeClient({ kubeConfig, qps: 0, userAgent: userAgent(`${DEFAULT_PROVISIONER_NAME}, dev`) });
    for (const sc of devStorageClasses(DEFAULT_PROVISIONER_NAME)) {
      await client.create(storageClasses, sc).catch((err: unknown) => {
        if (!(err instanceof AlreadyExistsError)) throw err;
      });
    }
    const nodeName = localNodeName();
    const service = await startHostPathService(
      {
        client,
        provisionerName: DEFAULT_PROVISIONER_NAME,
        mode: 'deployment',
        nodeName,
        config: { file: configFile },
        // Capacity is enforced: a path without a configured capacity holds at most what its disk has free.
        freeSpaceCapacity: true,
        // provision() honours its AbortSignal: a short drain keeps Ctrl-C within seconds.
        controller: { leaderElection: { mode: 'none' }, threadiness: o.workerThreads, shutdownTimeoutMs: 3000 },
        healthAddress: o.metricsAddress,
        metricsAddress: o.metricsAddress,
        logger,
      },
      stopService.signal,
    );
    // CSI mode: the reference plugin (a child process) on DIR/csi/csi.sock and the sidecar, next to the in-process
    // hostpath provisioner.
    // Its own metrics registry: the sidecar's controller registers the same controller metrics as the hostpath one.
    const csi = o.csi
      ? await startDevCsi({
          client,
          dataDir,
          nodeName,
          workerThreads: o.workerThreads,
          logger,
          logLevel: o.logLevel,
          signal: stopService.signal,
        })
      : undefined;
    stopCsi = csi?.stop;
    // Short paths when under the working directory (the default), absolute ones otherwise.
    const show = (p: string) => {
      const r = relative(process.cwd(), p);
      return r && !r.startsWith('..') ? r : p;
    };
    io.out(`kube-provisioner dev: cluster ready at ${cluster.url}, node ${nodeName}`);
    io.out(`  export KUBECONFIG=${cluster.kubeconfigPath}`);
    io.out('  kubectl get storageclass,nodes');
    io.out(`  kubectl apply -f ${show(EXAMPLE_CLAIM)}`);
    io.out("  kubectl wait --for=jsonpath='{.status.phase}'=Bound pvc/example-data --timeout=30s");
    io.out(
      '  kubectl wait --for=condition=Ready pod/example-writer --timeout=30s   (containers are not run: the pod is Ready once its volume mounts)',
    );
    io.out('  kube-provisioner explain pvc NAME   (why a claim is Pending: finds this configuration by itself)');
    io.out(
      `  volumes: ${show(join(volumesDir, 'shared'))} (class ${DEV_CLASSES.shared}, default), ${show(join(volumesDir, 'local'))} (class ${DEV_CLASSES.local})`,
    );
    io.out(`  configuration (hot-reloaded): ${show(configFile)}`);
    if (service.metricsUrl) io.out(`  metrics: ${service.metricsUrl}`);
    if (csi) {
      io.out(
        `  CSI mode: plugin ${csi.sidecar.driverName} on ${show(csi.plugin.socketPath)} (run csi-hostpath-plugin, pid ${csi.plugin.child.pid}), sidecar (run csi) in-process; classes ${DEV_CSI_CLASSES.shared} (Immediate), ${DEV_CSI_CLASSES.local} (WaitForFirstConsumer)`,
      );
      io.out(
        `  CSI volumes: ${show(join(volumesDir, 'csi-shared'))}, ${show(join(volumesDir, 'csi-local'))}; plugin configuration: ${show(csi.configFile)}`,
      );
    }
    const notice = persistenceNotice(cluster.persistence);
    if (notice) io.out(notice);

    let result: DevDemoResults | undefined;
    if (o.demo !== undefined) {
      const demo = {
        client,
        count: o.demo,
        timeoutMs: o.demoTimeoutMs,
        progress: io.progress,
        signal: AbortSignal.any([signal, stopService.signal]),
      };
      result = { hostpath: await runDemo({ ...demo, storageClassName: DEV_CLASSES.shared }) };
      io.out(formatDemoSummary(result.hostpath));
      if (csi && !signal.aborted) {
        result.csi = await runDemo({ ...demo, storageClassName: DEV_CSI_CLASSES.shared });
        io.out(`demo (CSI: sidecar + reference plugin): ${formatDemoSummary(result.csi).replace(/^demo: /, '')}`);
        io.out(formatCsiComparison(result.hostpath, result.csi));
      }
      if (o.demoCompare && !signal.aborted) {
        result.memory = await runMemoryDemo({
          ...demo,
          registry: service.registry,
          logger,
          threadiness: o.workerThreads,
        });
        io.out(`demo (instant in-memory provisioner): ${formatDemoSummary(result.memory).replace(/^demo: /, '')}`);
        io.out(formatComparison(result.hostpath, result.memory));
      }
      stopService.abort(new Error('demo finished'));
    } else {
      io.out('  Ctrl-C to stop');
      outcomes = printProvisioningOutcomes(client, startedAt, io.out, stopService.signal).catch((err: unknown) =>
        logger.warn({ err: err instanceof Error ? err.message : String(err) }, 'cannot show provisioning outcomes'),
      );
    }
    await service.done;
    await stopCsi?.();
    await outcomes;
    if (clusterFailure) throw clusterFailure;
    return result;
  } finally {
    stopService.abort(new Error('dev stopping'));
    await stopCsi?.().catch((err: unknown) => logger.warn({ err: errorMessage(err) }, 'stopping CSI mode'));
    signal.removeEventListener('abort', onAbort);
    client?.close();
    await cluster.stop();
  }
}

/** The line comparing the CSI path with the in-process hostpath provisioner (the target: ratio >= 0.5). */
export function formatCsiComparison(hostpath: DemoResult, csi: DemoResult): string {
  const ratio = hostpath.claimsPerSecond > 0 ? csi.claimsPerSecond / hostpath.claimsPerSecond : 0;
  return `demo: CSI reached ${csi.claimsPerSecond.toFixed(1)} claims/s vs ${hostpath.claimsPerSecond.toFixed(1)} in-process: ratio ${ratio.toFixed(2)}`;
}

function intArg(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min) throw new InvalidArgumentError(`"${v}" is not an integer >= ${min}`);
    return n;
  };
}

/** Registers `dev`. */
export function registerDevCommand(program: Command): void {
  const dev = new Command('dev')
    .description('run the embedded cluster, this machine as a node, and the hostpath provisioner, all in one process')
    .addOption(
      new Option('--data-dir <dir>', 'cluster data, kubeconfig and volumes (kept between runs)').default(
        '.kube-provisioner',
      ),
    )
    .addOption(new Option('--port <n>', 'API server port (0 = any free port)').argParser(parsePort).default(6443))
    .addOption(new Option('--host <address>', 'API server bind address').default('127.0.0.1'))
    .addOption(
      new Option('--demo <n>', 'create N claims, print claims/s and p50/p99 time to Bound, then exit').argParser(
        intArg(1),
      ),
    )
    .addOption(
      new Option('--demo-compare', 'after the demo, run it again against an instant in-memory provisioner and compare'),
    )
    .addOption(
      new Option('--demo-timeout <seconds>', 'give up waiting for the demo claims after this')
        .argParser(intArg(1))
        .default(120),
    )
    .addOption(new Option('--worker-threads <n>', 'provisioner claim workers').argParser(intArg(1)).default(4))
    .addOption(
      new Option(
        '--csi',
        'CSI mode too: the reference CSI plugin (hostpath over CSI) on DIR/csi/csi.sock, the CSI sidecar, classes csi-hostpath and csi-hostpath-local',
      ),
    )
    .addOption(
      new Option('--metrics-address <host:port>', "serve the provisioner's /metrics, /healthz and /readyz here"),
    )
    .addOption(
      new Option('--log-level <level>', 'log level (JSON logs on stderr)').choices([...LOG_LEVELS]).default('warn'),
    )
    .addOption(
      new Option(
        '--cluster-thread <where>',
        'run the embedded cluster in a worker thread of its own (a second core) or in the main thread',
      )
        .choices([...CLUSTER_THREADS])
        .default('worker'),
    )
    .addOption(
      new Option(
        '--event-ttl <duration>',
        "the cluster deletes Events last seen longer ago than this (kube-apiserver's flag)",
      )
        .argParser(eventTtlArg)
        .default(EVENT_TTL_DEFAULT_MS, '1h'),
    );
  dev.action(
    async (f: {
      dataDir: string;
      port: number;
      host: string;
      demo?: number;
      demoCompare?: boolean;
      demoTimeout: number;
      workerThreads: number;
      metricsAddress?: string;
      csi?: boolean;
      logLevel: LogLevel;
      clusterThread: ClusterThread;
      eventTtl: number;
    }) => {
      const stop = new AbortController();
      const removeHandlers = abortOnSignals(stop, createLogger({ level: f.logLevel }), (line) =>
        process.stderr.write(`${line}\n`),
      );
      try {
        const result = await runDev(
          { ...f, demoTimeoutMs: f.demoTimeout * 1000, eventTtlMs: f.eventTtl },
          { out: (line) => process.stdout.write(`${line}\n`), progress: process.stderr },
          stop.signal,
        );
        // Stopped by a signal: a clean stop (exit 0), not a failed demo.
        const incomplete = (r?: DemoResult) => r !== undefined && r.bound < r.requested && !r.interrupted;
        if (result && (incomplete(result.hostpath) || incomplete(result.memory) || incomplete(result.csi)))
          process.exitCode = 1;
      } finally {
        removeHandlers();
      }
    },
  );
  program.addCommand(dev);
}
