// One measured run of the controller benchmark: a fresh embedded cluster (in this process, with its PV binder),
// a ProvisionController in a child process (bench/controller-process.ts), N claims created with bounded
// concurrency by a separate client, PVCs watched in the cluster's store for the first phase=Bound, then an idle
// period with the short resync still running. API requests come from the cluster's audit counter, keyed by the
// controller's client name (its User-Agent), so the creator and the cluster's own controllers are not counted.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import type { ProvisionControllerOptions } from '../src/index.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { persistentVolumeClaims, storageClasses } from '../src/runtime/resources.ts';
import { startCluster, type Audit } from '../src/testing/index.ts';
import { ANN_STORAGE_PROVISIONER } from '../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../src/types/k8s.ts';
import type { ChildMessage, ControllerProcessConfig, ParentMessage } from './controller-process.ts';

export const PROVISIONER_NAME = 'bench.kube-provisioner.io/instant';
const CLASS_NAME = 'bench-instant';
const CREATOR = 'bench-creator';

export interface RunConfig {
  size: number;
  mode: string;
  runIndex: number;
  options: ProvisionControllerOptions;
  /** Controller client budget (0 = unlimited). */
  qps: number;
  burst: number;
  concurrency: number;
  idleMs: number;
  /** Give up waiting for Bound after this long (the run is then reported as incomplete). */
  timeoutMs: number;
  /** Extra node flags for the controller process (e.g. --cpu-prof). */
  childNodeArgs: string[];
  /**
   * The controller process's entry: `tsx` runs bench/controller-process.ts on the sources; a path runs that
   * plain-JavaScript copy of it on the compiled dist/ (see prepareDistChild).
   */
  child: 'tsx' | { script: string };
  /** Write a heap snapshot of the controller here when every claim is Bound (the end of the burst). */
  heapSnapshotPath?: string;
}

/** Requests of the controller's client, by `verb resource` (status codes summed). */
export type RequestCounts = Record<string, number>;

export interface RunResult {
  size: number;
  mode: string;
  runIndex: number;
  bound: number;
  /** Seconds from the first create sent to the last claim Bound. */
  elapsedS: number;
  claimsPerS: number;
  p50Ms: number;
  p99Ms: number;
  /** Controller requests from ready to events drained, by `verb resource`. */
  load: RequestCounts;
  /** Controller requests answered 409 Conflict during the load phase. */
  conflicts: number;
  /** Controller requests during the idle period, by `verb resource`. */
  idle: RequestCounts;
  ctrlCpuMs: number;
  /** RSS at the end of the idle period. */
  ctrlRssMB: number;
  /**
   * Peak RSS of the controller process over the run (getrusage maxrss, read at the end; read when every claim was
   * Bound instead when a heap snapshot is taken, because writing the snapshot inflates RSS).
   */
  ctrlPeakRssMB: number;
  /** Largest heapUsed sampled every 50 ms during the run, and heapUsed when every claim was Bound. */
  ctrlPeakHeapMB: number;
  ctrlHeapAtBoundMB: number;
  /** RSS when the controller was ready (caches synced, no claims yet). */
  ctrlRssReadyMB: number;
  /** Heap retained after a full GC at the end (caches and bookkeeping). */
  ctrlHeapMB: number;
  clusterCpuMs: number;
  eventsDropped: number;
  eventsDrainS: number;
  provisionCalls: number;
  /**
   * Median time of each stage of a claim's way to Bound, in ms: create sent -> stored (API server), stored ->
   * annotated with storage-provisioner (cluster PV binder), annotated -> PV stored (our controller), PV stored ->
   * claim Bound (cluster PV binder).
   */
  stagesMs: { apiCreate: number; binderAnnotate: number; controller: number; binderBind: number };
  /** Seconds from the first create sent to the last claim created / annotated / PV created. */
  lastCreatedS: number;
  lastAnnotatedS: number;
  lastVolumeS: number;
  /** JSON size of one Bound claim and its PV as the API serves them (what each cache entry decodes from). */
  objectBytes: { claim: number; volume: number };
}

class ControllerChild {
  private readonly waiters: Array<{ type: ChildMessage['type']; resolve: (m: ChildMessage) => void }> = [];
  private failure: Error | undefined;
  readonly exited: Promise<void>;

  constructor(readonly child: ChildProcess) {
    child.on('message', (m: ChildMessage) => {
      if (m.type === 'error') this.fail(new Error(`controller process: ${m.message}`));
      const i = this.waiters.findIndex((w) => w.type === m.type);
      if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(m);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', () => {
        this.fail(new Error('controller process exited'));
        resolve();
      }),
    );
  }

  private fail(err: Error): void {
    this.failure ??= err;
    for (const w of this.waiters.splice(0)) w.resolve({ type: 'error', message: err.message });
  }

  async request<T extends ChildMessage['type']>(
    type: T,
    send?: ParentMessage,
  ): Promise<Extract<ChildMessage, { type: T }>> {
    if (this.failure) throw this.failure;
    const reply = new Promise<ChildMessage>((resolve) => this.waiters.push({ type, resolve }));
    if (send) this.child.send(send);
    const m = await reply;
    if (m.type === 'error' && type !== 'error') throw new Error(m.message);
    return m as Extract<ChildMessage, { type: T }>;
  }

  /** Graceful stop; kills this child (by its own handle) if it does not exit within 20 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.connected) {
      await within(
        this.request('stopped', { type: 'stop' }).catch(() => undefined),
        20_000,
      );
    }
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resolves `p`, or undefined after `ms`; the timer never outlives the race. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<undefined>((r) => {
        timer = setTimeout(r, ms, undefined);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function snapshot(audit: Audit, client: string): { counts: RequestCounts; conflicts: number } {
  const counts: RequestCounts = {};
  let conflicts = 0;
  for (const r of audit.records()) {
    if (r.client !== client) continue;
    const key = `${r.verb} ${r.resource}`;
    counts[key] = (counts[key] ?? 0) + r.count;
    if (r.code === 409) conflicts += r.count;
  }
  return { counts, conflicts };
}

function diff(after: RequestCounts, before: RequestCounts): RequestCounts {
  const out: RequestCounts = {};
  for (const [k, v] of Object.entries(after)) {
    const d = v - (before[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function claim(i: number): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: `claim-${String(i).padStart(5, '0')}`, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: CLASS_NAME },
  };
}

/** Creates `n` claims with at most `concurrency` requests in flight; records when each create was sent. */
async function createClaims(
  client: KubeClient,
  n: number,
  concurrency: number,
  sentAt: Map<string, number>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      const c = claim(next++);
      sentAt.set(c.metadata.name ?? '', performance.now());
      await client.create(persistentVolumeClaims, c, { namespace: 'default' });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane));
}

/** Runs one (size, mode) measurement from a fresh cluster to a stopped controller. */
export async function runOnce(cfg: RunConfig): Promise<RunResult> {
  const cluster = await startCluster({ controllers: true });
  const clientName = `bench-controller-${cfg.mode}-${cfg.size}-${cfg.runIndex}`;
  const creator = new KubeClient({ kubeConfig: cluster.kubeConfig, userAgent: CREATOR, qps: 0 });
  let child: ControllerChild | undefined;
  let unwatch: (() => void) | undefined;
  try {
    const sc: StorageClass = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: CLASS_NAME },
      provisioner: PROVISIONER_NAME,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
    };
    await creator.create(storageClasses, sc);

    const childCfg: ControllerProcessConfig = {
      kubeconfigPath: cluster.kubeconfigPath,
      provisionerName: PROVISIONER_NAME,
      clientName,
      qps: cfg.qps,
      burst: cfg.burst,
      options: cfg.options,
    };
    const entry =
      cfg.child === 'tsx'
        ? [
            '--conditions=kube-provisioner:source',
            '--import',
            'tsx',
            fileURLToPath(new URL('./controller-process.ts', import.meta.url)),
          ]
        : [cfg.child.script];
    child = new ControllerChild(
      spawn(process.execPath, ['--expose-gc', ...cfg.childNodeArgs, ...entry], {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, BENCH_CONTROLLER: JSON.stringify(childCfg) },
      }),
    );
    await child.request('ready');
    const cpuBefore = await child.request('stats', { type: 'stats' });
    const before = snapshot(cluster.audit, clientName);
    const clusterCpu0 = process.cpuUsage();

    // First time each claim is seen Bound, straight from the store's watch (no HTTP between).
    const sentAt = new Map<string, number>();
    const boundAt = new Map<string, number>();
    const storedAt = new Map<string, number>();
    const annotatedAt = new Map<string, number>();
    const volumeAt = new Map<string, number>();
    let allBound: () => void = () => {};
    const done = new Promise<void>((r) => {
      allBound = r;
    });
    unwatch = cluster.store.watch(
      'persistentvolumeclaims',
      { namespace: 'default', resourceVersion: String(cluster.store.resourceVersion) },
      (ev) => {
        const c = ev.object as PersistentVolumeClaim;
        const name = c.metadata.name ?? '';
        const now = performance.now();
        if (!storedAt.has(name)) storedAt.set(name, now);
        if (c.metadata.annotations?.[ANN_STORAGE_PROVISIONER] && !annotatedAt.has(name)) annotatedAt.set(name, now);
        if (c.status?.phase === 'Bound' && !boundAt.has(name)) {
          boundAt.set(name, performance.now());
          if (boundAt.size === cfg.size) allBound();
        }
      },
    );

    const unwatchVolumes = cluster.store.watch(
      'persistentvolumes',
      { resourceVersion: String(cluster.store.resourceVersion) },
      (ev) => {
        const ref = (ev.object as PersistentVolume).spec.claimRef?.name ?? '';
        if (!volumeAt.has(ref)) volumeAt.set(ref, performance.now());
      },
    );
    const prevUnwatch = unwatch;
    unwatch = () => {
      prevUnwatch();
      unwatchVolumes();
    };

    const t0 = performance.now();
    await createClaims(creator, cfg.size, cfg.concurrency, sentAt);
    await within(done, cfg.timeoutMs);
    const tBound = performance.now();
    const cpuAtBound = await child.request('stats', { type: 'stats' });
    if (cfg.heapSnapshotPath) await child.request('snapshot', { type: 'snapshot', path: cfg.heapSnapshotPath });
    const clusterCpu = process.cpuUsage(clusterCpu0);

    // Events are written asynchronously: let them drain so they are counted in the load phase, not as idle.
    await child.request('flushed', { type: 'flush' });
    const tDrained = performance.now();
    const after = snapshot(cluster.audit, clientName);
    await sleep(cfg.idleMs);
    const idleEnd = snapshot(cluster.audit, clientName);
    const final = await child.request('stats', { type: 'stats', gc: true });

    const sampleClaim = cluster.store.get('persistentvolumeclaims', 'default', claim(0).metadata.name ?? '') as
      PersistentVolumeClaim | undefined;
    const sampleVolume = sampleClaim?.spec.volumeName
      ? cluster.store.get('persistentvolumes', undefined, sampleClaim.spec.volumeName)
      : undefined;
    const latencies: number[] = [];
    let lastBound = t0;
    for (const [name, at] of boundAt) {
      latencies.push(at - (sentAt.get(name) ?? t0));
      lastBound = Math.max(lastBound, at);
    }
    latencies.sort((a, b) => a - b);
    const stage = (from: Map<string, number>, to: Map<string, number>) => {
      const d: number[] = [];
      for (const [name, at] of to) {
        const start = from.get(name);
        if (start !== undefined) d.push(at - start);
      }
      return percentile(
        d.sort((a, b) => a - b),
        50,
      );
    };
    const lastOf = (m: Map<string, number>) => (Math.max(t0, ...m.values()) - t0) / 1000;
    const elapsedS = (boundAt.size === cfg.size ? lastBound - t0 : tBound - t0) / 1000;
    return {
      size: cfg.size,
      mode: cfg.mode,
      runIndex: cfg.runIndex,
      bound: boundAt.size,
      elapsedS,
      claimsPerS: boundAt.size / elapsedS,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      load: diff(after.counts, before.counts),
      conflicts: after.conflicts - before.conflicts,
      idle: diff(idleEnd.counts, after.counts),
      ctrlCpuMs: cpuAtBound.cpuUserMs + cpuAtBound.cpuSystemMs - cpuBefore.cpuUserMs - cpuBefore.cpuSystemMs,
      ctrlRssMB: final.rssBytes / 2 ** 20,
      ctrlPeakRssMB: (cfg.heapSnapshotPath ? cpuAtBound.maxRssBytes : final.maxRssBytes) / 2 ** 20,
      ctrlPeakHeapMB: (cfg.heapSnapshotPath ? cpuAtBound.maxHeapUsedBytes : final.maxHeapUsedBytes) / 2 ** 20,
      ctrlHeapAtBoundMB: cpuAtBound.heapUsedBytes / 2 ** 20,
      ctrlRssReadyMB: cpuBefore.rssBytes / 2 ** 20,
      ctrlHeapMB: (final.retainedHeapBytes ?? final.heapUsedBytes) / 2 ** 20,
      clusterCpuMs: (clusterCpu.user + clusterCpu.system) / 1000,
      eventsDropped: final.events.droppedQueueFull + final.events.droppedSpam + final.events.failed,
      eventsDrainS: (tDrained - tBound) / 1000,
      provisionCalls: final.provisionCalls,
      stagesMs: {
        apiCreate: stage(sentAt, storedAt),
        binderAnnotate: stage(storedAt, annotatedAt),
        controller: stage(annotatedAt, volumeAt),
        binderBind: stage(volumeAt, boundAt),
      },
      lastCreatedS: lastOf(storedAt),
      lastAnnotatedS: lastOf(annotatedAt),
      lastVolumeS: lastOf(volumeAt),
      objectBytes: {
        claim: JSON.stringify(sampleClaim ?? {}).length,
        volume: JSON.stringify(sampleVolume ?? {}).length,
      },
    };
  } finally {
    unwatch?.();
    await child?.stop();
    creator.close();
    await cluster.stop();
  }
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/**
 * The controller process as plain JavaScript on the compiled library: builds dist/ (`npm run build`, incremental)
 * and writes bench/.build/controller-process.mjs, the bench file with its types removed (TypeScript's
 * transpileModule; it imports the library by package name, which resolves to dist/ from there).
 */
export function prepareDistChild(): string {
  const build = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')],
    { stdio: 'inherit' },
  );
  if (build.status !== 0) throw new Error('npm run build failed: --child dist needs the compiled library');
  const source = readFileSync(join(ROOT, 'bench', 'controller-process.ts'), 'utf8');
  const out = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
  });
  const dir = join(ROOT, 'bench', '.build');
  mkdirSync(dir, { recursive: true });
  const script = join(dir, 'controller-process.mjs');
  writeFileSync(script, out.outputText);
  return script;
}
