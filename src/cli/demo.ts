// `dev --demo N`: creates N claims, watches them become Bound, draws a progress bar on stderr (redrawn in
// place on a terminal, a few plain lines otherwise), and measures claims/s and the time from create to Bound.
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { KubeClient } from '../runtime/client.ts';
import { Informer } from '../runtime/informer.ts';
import { persistentVolumeClaims } from '../runtime/resources.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';

/** Label put on the demo's claims: its value is the run id. */
export const DEMO_LABEL = 'kube-provisioner.io/demo';

export interface DemoOptions {
  client: KubeClient;
  count: number;
  storageClassName: string;
  namespace?: string;
  /** Request of each claim. Default 1Mi. */
  size?: string;
  /** Claims created concurrently. Default 32. */
  concurrency?: number;
  /** Give up waiting after this. */
  timeoutMs: number;
  /** Where the progress bar goes (stderr). */
  progress: { write(text: string): void; isTTY?: boolean; columns?: number };
  signal?: AbortSignal;
}

export interface DemoResult {
  runId: string;
  requested: number;
  created: number;
  bound: number;
  /** From the first create to the last Bound (or the timeout). */
  elapsedMs: number;
  claimsPerSecond: number;
  /** Time from a claim's create request to the watch event that shows it Bound. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  timedOut: boolean;
  /** Stopped by the caller's signal (Ctrl-C) before every claim was Bound. */
  interrupted: boolean;
}

/** Nearest-rank percentile of sorted values (0 for none). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

/** The summary line printed at the end of a demo (the e2e test parses it). */
export function formatDemoSummary(r: DemoResult): string {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  return (
    `demo: ${r.bound}/${r.requested} claims Bound in ${s(r.elapsedMs)} s (${r.claimsPerSecond.toFixed(1)} claims/s); ` +
    `time to Bound p50 ${Math.round(r.p50Ms)} ms, p99 ${Math.round(r.p99Ms)} ms, max ${Math.round(r.maxMs)} ms` +
    (r.interrupted ? ' (interrupted)' : r.timedOut ? ' (timed out)' : '')
  );
}

class ProgressBar {
  private lastDraw = 0;
  private lastQuarter = 0;
  constructor(
    private readonly out: DemoOptions['progress'],
    private readonly total: number,
  ) {}

  update(bound: number, created: number, force = false): void {
    if (this.out.isTTY) {
      const now = performance.now();
      if (!force && now - this.lastDraw < 80 && bound < this.total) return;
      this.lastDraw = now;
      const width = Math.max(10, Math.min(40, (this.out.columns ?? 80) - 40));
      const filled = Math.round((bound / this.total) * width);
      this.out.write(
        `\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${bound}/${this.total} Bound, ${created} created `,
      );
      return;
    }
    // Not a terminal (CI logs, pipes): a line at each quarter.
    const quarter = Math.floor((bound / this.total) * 4);
    if (quarter > this.lastQuarter) {
      this.lastQuarter = quarter;
      this.out.write(`demo: ${bound}/${this.total} Bound\n`);
    }
  }

  end(): void {
    if (this.out.isTTY) this.out.write('\n');
  }
}

function claimFor(name: string, runId: string, o: DemoOptions): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: o.namespace ?? 'default', labels: { [DEMO_LABEL]: runId } },
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: o.storageClassName,
      resources: { requests: { storage: o.size ?? '1Mi' } },
    },
  } as PersistentVolumeClaim;
}

/** Runs the demo; never throws for claims that do not bind (they count as not bound). */
export async function runDemo(o: DemoOptions): Promise<DemoResult> {
  const runId = Date.now().toString(36);
  const namespace = o.namespace ?? 'default';
  const createdAt = new Map<string, number>();
  const latencies: number[] = [];
  const boundNames = new Set<string>();
  const bar = new ProgressBar(o.progress, o.count);
  let lastBoundAt = 0;
  let allBound: () => void = () => {};
  const finished = new Promise<void>((resolve) => (allBound = resolve));

  const observe = (c: PersistentVolumeClaim) => {
    const name = c.metadata.name ?? '';
    if (c.status?.phase !== 'Bound' || boundNames.has(name)) return;
    const start = createdAt.get(name);
    if (start === undefined) return; // the create call has not returned yet: counted when it does
    boundNames.add(name);
    lastBoundAt = performance.now();
    latencies.push(lastBoundAt - start);
    bar.update(boundNames.size, createdAt.size);
    if (boundNames.size === o.count) allBound();
  };
  // One signal for the demo's own requests (many in flight at once, each listening to it).
  const requests = new AbortController();
  setMaxListeners(0, requests.signal);
  const forward = () => requests.abort(o.signal?.reason);
  o.signal?.addEventListener('abort', forward, { once: true });
  const stopInformer = new AbortController();
  const informer = new Informer<PersistentVolumeClaim>({
    client: o.client,
    resource: persistentVolumeClaims,
    namespace,
    labelSelector: `${DEMO_LABEL}=${runId}`,
    handlers: { onAdd: observe, onUpdate: (_old, c) => observe(c) },
  });
  informer.start(stopInformer.signal);
  await informer.synced;

  const first = performance.now();
  let next = 0;
  const creator = async () => {
    while (next < o.count && !requests.signal.aborted) {
      const name = `demo-${runId}-${next++}`;
      const start = performance.now();
      createdAt.set(name, start);
      try {
        await o.client.create(persistentVolumeClaims, claimFor(name, runId, o), { namespace, signal: requests.signal });
      } catch {
        createdAt.delete(name);
        continue;
      }
      // It may have been Bound before the create call returned (seen by the watch first).
      const cached = informer.store.get(namespace, name);
      if (cached) observe(cached);
      bar.update(boundNames.size, createdAt.size);
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.count, o.concurrency ?? 32) }, creator));

  let timer: NodeJS.Timeout | undefined;
  const ending = await Promise.race([
    finished.then(() => 'done' as const),
    new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), o.timeoutMs))),
    new Promise<'aborted'>((resolve) => {
      if (requests.signal.aborted) resolve('aborted');
      else requests.signal.addEventListener('abort', () => resolve('aborted'), { once: true });
    }),
  ]);
  const timedOut = ending !== 'done';
  clearTimeout(timer);
  o.signal?.removeEventListener('abort', forward);
  requests.abort();
  bar.update(boundNames.size, createdAt.size, true);
  bar.end();
  stopInformer.abort();
  await informer.stop();

  const sorted = latencies.sort((a, b) => a - b);
  const elapsedMs = (boundNames.size === o.count ? lastBoundAt : performance.now()) - first;
  return {
    runId,
    requested: o.count,
    created: createdAt.size,
    bound: boundNames.size,
    elapsedMs,
    claimsPerSecond: elapsedMs > 0 ? (boundNames.size * 1000) / elapsedMs : 0,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.at(-1) ?? 0,
    timedOut,
    interrupted: ending === 'aborted' && boundNames.size < o.count,
  };
}
