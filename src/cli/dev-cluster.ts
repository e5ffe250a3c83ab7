// Where `dev` runs its embedded cluster. By default in a worker thread: the API server with its controllers
// (binder, scheduler and kubelet stand-ins) gets an event loop, and a core, of its own, and the provisioner in
// the main thread talks to it over HTTPS through the kubeconfig, as a deployment talks to kube-apiserver.
// `main` runs it in the main thread (one event loop, as before; for comparison and profiling).
// The worker dies with the process (a second Ctrl-C, a crash); a worker that ends on its own is reported through
// `exited`, so `dev` stops instead of provisioning against a server that is gone.
import { createWriteStream, renameSync } from 'node:fs';
import { extname } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { newModuleWorker } from '../cluster/common/module-worker.ts';
import { startEmbeddedCluster, type EmbeddedCluster } from '../cluster/embedded-cluster.ts';
import type { Logger } from '../types/logger.ts';
import { workerResourceLimits } from '../runtime/heap-policy.ts';
import type { LogLevel } from './flags.ts';
import { errorMessage } from '../types/error-message.ts';

export type ClusterThread = 'worker' | 'main';
export const CLUSTER_THREADS: readonly ClusterThread[] = ['worker', 'main'];

/** What the cluster thread is started with (structured-clonable). */
export interface ClusterThreadOptions {
  dataDir: string;
  port: number;
  host: string;
  logLevel: LogLevel;
  /** Events last seen longer ago than this are deleted (`--event-ttl`). */
  eventTtlMs?: number;
}

/** Messages from the cluster thread. */
export type ClusterThreadMessage =
  | { type: 'ready'; url: string; kubeconfigPath: string; persistence: EmbeddedCluster['persistence'] }
  | { type: 'start-failed'; message: string; code?: string }
  | { type: 'stopped'; error?: string };

export interface DevCluster {
  url: string;
  kubeconfigPath: string;
  /** Where the cluster keeps its objects (SQLite, or memory when the driver is unavailable). */
  persistence: EmbeddedCluster['persistence'];
  /** Settles with an error if the cluster's thread ends before stop() (never for `main`). */
  exited: Promise<Error>;
  /** Stops the cluster (and ends its thread); idempotent. */
  stop(): Promise<void>;
}

/** How long stop() waits for the worker's clean stop (database closed) before terminating it. */
const STOP_TIMEOUT_MS = 10_000;

/** Starts the cluster in the chosen thread; rejects like startEmbeddedCluster (with the listen error's code). */
export async function startDevCluster(
  where: ClusterThread,
  opts: ClusterThreadOptions,
  logger: Logger,
): Promise<DevCluster> {
  if (where === 'main') {
    const cluster = await startEmbeddedCluster({
      ...opts,
      onError: (err) => logger.error({ err: errorMessage(err) }, 'embedded cluster error'),
    });
    let stopping: Promise<void> | undefined;
    return {
      url: cluster.url,
      kubeconfigPath: cluster.kubeconfigPath,
      persistence: cluster.persistence,
      exited: new Promise(() => {}),
      stop: () => (stopping ??= cluster.stop()),
    };
  }
  return startWorkerCluster(opts);
}

/** A Worker running dev-cluster-worker: the compiled .js from dist/, or the .ts source through tsx. */
function newClusterWorker(opts: ClusterThreadOptions): Worker {
  const ext = extname(fileURLToPath(import.meta.url));
  // Under the heap policy (applied by `dev` at start) the worker's young generation is held at 2 x 4 MB by V8:
  // without a limit it doubles to 2 x 16 MB in a burst, where nothing checks it (the policy's check sees only the
  // main thread's heap).
  return newModuleWorker(new URL(`./dev-cluster-worker${ext}`, import.meta.url), {
    workerData: opts,
    resourceLimits: workerResourceLimits(),
  });
}

/**
 * With `node --heapsnapshot-signal=SIG`, node writes the main thread's heap on SIG; this writes the cluster thread's
 * too (`Heap.<time>.cluster-worker.heapsnapshot` in the working directory, renamed from `.partial` once complete),
 * so a profile of `dev` sees both heaps (bench:dev --heap-snapshot).
 */
function snapshotWorkerOnSignal(worker: Worker): () => void {
  const signal = process.execArgv
    .find((a) => a.startsWith('--heapsnapshot-signal='))
    ?.slice('--heapsnapshot-signal='.length) as NodeJS.Signals | undefined;
  if (!signal) return () => {};
  const write = () => {
    const file = `Heap.${new Date().toISOString().replace(/[:.]/g, '')}.cluster-worker.heapsnapshot`;
    void worker
      .getHeapSnapshot()
      .then((snapshot) => pipeline(snapshot, createWriteStream(`${file}.partial`)))
      .then(() => renameSync(`${file}.partial`, file))
      .catch((err: unknown) => process.stderr.write(`cluster thread heap snapshot failed: ${errorMessage(err)}\n`));
  };
  process.on(signal, write);
  return () => process.off(signal, write);
}

function startWorkerCluster(opts: ClusterThreadOptions): Promise<DevCluster> {
  const worker = newClusterWorker(opts);
  const stopSnapshots = snapshotWorkerOnSignal(worker);
  let stopRequested = false;
  let stopping: Promise<void> | undefined;
  let settleExited: (err: Error) => void = () => {};
  const exited = new Promise<Error>((resolve) => (settleExited = resolve));
  let lastError: unknown;
  const gone = new Promise<number>((resolve) => worker.once('exit', resolve));
  worker.on('error', (err) => (lastError = err));
  void gone.then((code) => {
    stopSnapshots();
    if (!stopRequested)
      settleExited(
        new Error(
          `the embedded cluster's thread ended (exit code ${code})${lastError ? `: ${errorMessage(lastError)}` : ''}`,
        ),
      );
  });

  const stop = (): Promise<void> => {
    stopRequested = true;
    return (stopping ??= (async () => {
      const stopped = new Promise<ClusterThreadMessage>((resolve) =>
        worker.on('message', (m: ClusterThreadMessage) => m.type === 'stopped' && resolve(m)),
      );
      worker.postMessage({ type: 'stop' });
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([
        stopped,
        gone.then(() => undefined),
        new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
      await worker.terminate();
      if (outcome === 'timeout')
        throw new Error(
          `the embedded cluster did not stop within ${STOP_TIMEOUT_MS / 1000} s; its thread was terminated`,
        );
      if (outcome?.type === 'stopped' && outcome.error)
        throw new Error(`stopping the embedded cluster: ${outcome.error}`);
    })());
  };

  return new Promise<DevCluster>((resolve, reject) => {
    const onMessage = (m: ClusterThreadMessage) => {
      if (m.type === 'ready') {
        worker.off('message', onMessage);
        resolve({ url: m.url, kubeconfigPath: m.kubeconfigPath, persistence: m.persistence, exited, stop });
      } else if (m.type === 'start-failed') {
        worker.off('message', onMessage);
        stopRequested = true;
        void worker.terminate();
        reject(Object.assign(new Error(m.message), m.code ? { code: m.code } : {}));
      }
    };
    worker.on('message', onMessage);
    void gone.then((code) =>
      reject(
        new Error(
          `the embedded cluster's thread ended before it was ready (exit code ${code})${lastError ? `: ${errorMessage(lastError)}` : ''}`,
        ),
      ),
    );
  });
}
