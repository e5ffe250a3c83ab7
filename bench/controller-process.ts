// The controller side of the controller benchmark, run as a child process of bench/controller.ts so that its RSS
// and CPU are measured apart from the embedded cluster's. It runs one ProvisionController with an instant
// in-memory provisioner (a hostPath PV returned at once, no I/O) and answers the parent over IPC:
// `ready` once the caches are synced, then `stats` (RSS, CPU, event recorder counters) on request.
// Configuration comes as JSON in $BENCH_CONTROLLER (see ControllerProcessConfig).
// It imports the library by its package name: the sources under tsx with the kube-provisioner:source condition,
// or, with bench:controller --child dist, the compiled dist/ from a plain-node copy of this file (what a
// deployment runs; tsx alone adds about 50 MB of RSS).
import { hostname } from 'node:os';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { writeHeapSnapshot } from 'node:v8';
import { KubeClient, loadKubeConfig, ProvisionController, silentLogger } from 'kube-provisioner';
import type {
  PersistentVolume,
  ProvisionControllerOptions,
  Provisioner,
  ProvisionOptions,
  ProvisionResult,
} from 'kube-provisioner';
import { applyHeapPolicy, EventRecorder, type EventRecorderStats } from 'kube-provisioner/runtime';

/** What the parent passes in $BENCH_CONTROLLER. */
export interface ControllerProcessConfig {
  kubeconfigPath: string;
  provisionerName: string;
  /** User-Agent of every request this controller makes: the audit counter's client name. */
  clientName: string;
  /** Client-side QPS (0 = unlimited) and burst. */
  qps: number;
  burst: number;
  options: ProvisionControllerOptions;
}

/** Messages from the parent. */
export type ParentMessage =
  { type: 'stats'; gc?: boolean } | { type: 'flush' } | { type: 'snapshot'; path: string } | { type: 'stop' };

/** Messages to the parent. */
export type ChildMessage =
  | { type: 'ready'; startupMs: number }
  | { type: 'flushed' }
  | { type: 'snapshot'; path: string }
  /** `maxRssBytes`: the process's peak RSS so far (getrusage ru_maxrss), not a sample. */
  /** `maxHeapUsedBytes`: the largest heapUsed sampled every 50 ms since start. */
  | {
      type: 'stats';
      rssBytes: number;
      maxRssBytes: number;
      heapUsedBytes: number;
      maxHeapUsedBytes: number;
      retainedHeapBytes?: number;
      cpuUserMs: number;
      cpuSystemMs: number;
      events: EventRecorderStats;
      provisionCalls: number;
    }
  | { type: 'stopped' }
  | { type: 'error'; message: string };

/** The benchmark's backend: every claim gets a hostPath PV at once, and delete() forgets it. */
export class InstantProvisioner implements Provisioner {
  provisionCalls = 0;

  async provision(o: ProvisionOptions): Promise<ProvisionResult> {
    this.provisionCalls++;
    const volume: PersistentVolume = {
      metadata: { name: o.pvName },
      spec: {
        capacity: { storage: o.claim.spec.resources?.requests?.storage ?? '1Mi' },
        accessModes: o.claim.spec.accessModes ?? ['ReadWriteOnce'],
        volumeMode: 'Filesystem',
        hostPath: { path: `/var/lib/bench/${o.pvName}`, type: 'DirectoryOrCreate' },
      },
    };
    return { volume };
  }

  async delete(): Promise<void> {}
}

/** Starts V8's sampling heap profiler with collected objects included; the returned function stops it. */
async function startAllocationProfile(): Promise<() => Promise<unknown>> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', {
    samplingInterval: 16384,
    includeObjectsCollectedByMajorGC: true,
    // BENCH_ALLOC_PROFILE_MAJOR=1: leave out what the scavenger collects, so the profile shows what lived long
    // enough to be promoted to old space (the garbage that grows the heap between full collections) and what stays.
    includeObjectsCollectedByMinorGC: !process.env.BENCH_ALLOC_PROFILE_MAJOR,
  });
  return async () => {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    session.disconnect();
    return profile;
  };
}

function send(msg: ChildMessage): void {
  process.send?.(msg);
}

async function main(): Promise<void> {
  const raw = process.env.BENCH_CONTROLLER;
  if (!raw || !process.send) throw new Error('bench/controller-process.ts is started by bench/controller.ts');
  const cfg = JSON.parse(raw) as ControllerProcessConfig;
  // The heap policy `kube-provisioner run …` applies at start ($KUBE_PROVISIONER_HEAP_GROWTH_PERCENT, default 30;
  // 0 for V8's own rule), so this process measures what the command runs.
  applyHeapPolicy(process.env);
  const started = performance.now();
  const { kubeConfig } = loadKubeConfig({ path: cfg.kubeconfigPath, inCluster: false });
  const client = new KubeClient({ kubeConfig, userAgent: cfg.clientName, qps: cfg.qps, burst: cfg.burst });
  const provisioner = new InstantProvisioner();
  const identity = `${hostname()}_${cfg.clientName}`;
  // The same recorder the controller would build for itself (same component and defaults), held here so the
  // benchmark can flush it before counting and report what it dropped.
  const events = new EventRecorder({
    client,
    component: `${cfg.provisionerName}_${identity}`,
    host: hostname(),
    logger: silentLogger,
  });
  const controller = new ProvisionController(client, cfg.provisionerName, provisioner, {
    ...cfg.options,
    identity,
    events,
    logger: silentLogger,
  });
  let maxHeapUsed = 0;
  // BENCH_MEM_TRACE=FILE: one line per 250 ms (seconds since start, then RSS, heap total, heap used, external and
  // array buffers in MB) to see where the peak is and whether it is V8 heap or memory outside it.
  const traceFile = process.env.BENCH_MEM_TRACE;
  const trace: string[] = traceFile ? ['s rss heapTotal heapUsed external arrayBuffers'] : [];
  let ticks = 0;
  const mb = (n: number) => (n / 2 ** 20).toFixed(1);
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    maxHeapUsed = Math.max(maxHeapUsed, m.heapUsed);
    if (traceFile && ticks++ % 5 === 0) {
      trace.push(
        `${((performance.now() - started) / 1000).toFixed(2)} ${mb(m.rss)} ${mb(m.heapTotal)} ${mb(m.heapUsed)} ${mb(m.external)} ${mb(m.arrayBuffers)}`,
      );
    }
  }, 50);
  sampler.unref();
  const running = controller.run();
  running.catch((err: unknown) => send({ type: 'error', message: String(err) }));
  while (!controller.hasSynced()) await new Promise((r) => setTimeout(r, 10));
  // BENCH_ALLOC_PROFILE=FILE: a sampling heap profile of every allocation from ready to the flush after the burst,
  // collected objects included (what the burst allocates, not what it keeps), for speedscope or DevTools.
  const allocProfile = process.env.BENCH_ALLOC_PROFILE ? await startAllocationProfile() : undefined;
  send({ type: 'ready', startupMs: performance.now() - started });

  process.on('message', (msg: ParentMessage) => {
    void (async () => {
      if (msg.type === 'flush') {
        await events.flush();
        if (allocProfile) writeFileSync(process.env.BENCH_ALLOC_PROFILE!, JSON.stringify(await allocProfile()));
        send({ type: 'flushed' });
      } else if (msg.type === 'snapshot') {
        send({ type: 'snapshot', path: writeHeapSnapshot(msg.path) });
      } else if (msg.type === 'stats') {
        const cpu = process.cpuUsage();
        const mem = process.memoryUsage();
        // Retained heap: what the caches and bookkeeping hold, garbage excluded (needs --expose-gc).
        const gc = (globalThis as { gc?: () => void }).gc;
        if (msg.gc && gc) gc();
        const retainedHeapBytes = msg.gc && gc ? process.memoryUsage().heapUsed : undefined;
        send({
          type: 'stats',
          rssBytes: mem.rss,
          maxRssBytes: process.resourceUsage().maxRSS * 1024,
          heapUsedBytes: mem.heapUsed,
          maxHeapUsedBytes: Math.max(maxHeapUsed, mem.heapUsed),
          ...(retainedHeapBytes !== undefined ? { retainedHeapBytes } : {}),
          cpuUserMs: cpu.user / 1000,
          cpuSystemMs: cpu.system / 1000,
          events: { ...events.stats },
          provisionCalls: provisioner.provisionCalls,
        });
      } else if (msg.type === 'stop') {
        clearInterval(sampler);
        if (traceFile) writeFileSync(traceFile, trace.join('\n') + '\n');
        await controller.stop();
        await events.stop();
        client.close();
        send({ type: 'stopped' });
        process.disconnect();
      }
    })().catch((err: unknown) => send({ type: 'error', message: String(err) }));
  });
}

main().catch((err: unknown) => {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exitCode = 1;
  process.disconnect?.();
});
