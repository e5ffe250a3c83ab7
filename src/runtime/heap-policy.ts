// The controller process's heap policy, the way a Go controller sets GOGC: how far V8 lets the old generation grow
// past what the last full collection left live before it collects again. V8's own rule lets a heap of a few tens of
// megabytes grow up to 4x between full collections on a machine with gigabytes of memory, because it sizes the heap
// for the machine, not for the process. A controller's burst (10,000 claims) promotes objects that die seconds later
// (cache entries replaced by the next watch event, requests waiting on a slow server, queued events), so its RSS was
// set by that slack, not by what it holds: 260 MB peak for 42 MB live (docs/benchmarks.md). With a fixed growth of
// 30% the heap stays near 1.3x the live data at the cost of more frequent full collections, which on a heap this
// small take milliseconds. This is a growth rule, not a cap: the heap may still grow to whatever the live data needs.
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/** Environment variable with the heap growth in percent (like GOGC); `0` keeps V8's own rule. */
export const HEAP_GROWTH_ENV = 'KUBE_PROVISIONER_HEAP_GROWTH_PERCENT';

/** The growth the `run` commands use unless {@link HEAP_GROWTH_ENV} says otherwise. */
export const DEFAULT_HEAP_GROWTH_PERCENT = 30;

/** The growth percent from the environment (default {@link DEFAULT_HEAP_GROWTH_PERCENT}); throws on a bad value. */
export function heapGrowthPercentFrom(env: NodeJS.ProcessEnv): number {
  const raw = env[HEAP_GROWTH_ENV];
  if (raw === undefined || raw.trim() === '') return DEFAULT_HEAP_GROWTH_PERCENT;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 1000) {
    throw new Error(`${HEAP_GROWTH_ENV}: expected a whole number of percent from 0 to 1000, got "${raw}"`);
  }
  return n;
}

/** The young generation the policy keeps (both semi-spaces): V8's size once a `run` command has loaded (2 x 4 MB). */
export const YOUNG_GENERATION_TARGET_BYTES = 8 * 1024 * 1024;

/** Environment variable: the main thread's young generation under the policy, both semi-spaces, in MB (default 8). */
export const YOUNG_GENERATION_ENV = 'KUBE_PROVISIONER_YOUNG_GENERATION_MB';

/** Environment variable: a worker thread's young generation under the policy, both semi-spaces, in MB (default 8). */
export const WORKER_YOUNG_GENERATION_ENV = 'KUBE_PROVISIONER_WORKER_YOUNG_GENERATION_MB';

/** A young generation size in MB from the environment: a power of two from 2 to 64 (V8 sizes semi-spaces so). */
function youngMbFrom(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 2 || n > 64 || (n & (n - 1)) !== 0) {
    throw new Error(`${name}: expected a power of two from 2 to 64 (MB, both semi-spaces), got "${raw}"`);
  }
  return n;
}

/**
 * `resourceLimits.maxYoungGenerationSizeMb` for a worker thread under the policy: V8 sizes a young generation as
 * three semi-spaces (two, plus the new large-object space), so 12 MB holds the worker's at 2 x 4 MB, the same
 * {@link YOUNG_GENERATION_TARGET_BYTES} the process's own heap is held near. V8 enforces it for the worker's heap
 * (a limit set when the thread starts), where the main thread needs the check below.
 */
export const WORKER_YOUNG_GENERATION_MB = 12;

/** The young generation held in force: the main thread's (bytes) and a worker's limit (MB, three semi-spaces). */
let youngTargetBytes = YOUNG_GENERATION_TARGET_BYTES;
let workerYoungMb = WORKER_YOUNG_GENERATION_MB;

let youngTimer: NodeJS.Timeout | undefined;
let youngObserver: PerformanceObserver | undefined;
let applied = 0;

/** The growth percent in force in this process (0: none applied, V8's own rule). */
export function appliedHeapGrowth(): number {
  return applied;
}

/**
 * The `resourceLimits` a worker thread should start with under the policy in force (undefined when none is): its
 * young generation held at 2 x 4 MB ({@link WORKER_YOUNG_GENERATION_ENV}) by V8 itself. Call it right before constructing the worker: it also makes the
 * next heap V8 configures start its young generation at that size (`--min-semi-space-size`, reset once the worker
 * is online). Without that the worker never reached it: its young generation starts at V8's 2 x 1 MB and grows
 * only while `--semi-space-growth-factor` allows, a process-wide flag the main thread's hold keeps at 1 once its
 * own young generation is at the target ({@link holdYoungGeneration}); dev's cluster thread ran 10,000 claims with
 * 2 x 1 MB, and collections were 15% of its busy time (docs/benchmarks.md, "`dev` CPU per claim (session 32, H2)").
 * The growth percent needs nothing per thread: V8's flags are process-wide, so a worker's full collections follow
 * it as the main thread's do.
 */
export function workerResourceLimits(): { maxYoungGenerationSizeMb: number } | undefined {
  if (applied === 0) return undefined;
  v8.setFlagsFromString(`--min-semi-space-size=${workerYoungMb / 3}`);
  return { maxYoungGenerationSizeMb: workerYoungMb };
}

/** After a worker's heap was configured: later heaps start at V8's own size again. */
function workerOnline(): void {
  v8.setFlagsFromString('--min-semi-space-size=0');
  holdYoungGeneration();
}

/**
 * Sets V8's heap growth for the whole process (all its threads' heaps, from their next collection on): `percent` > 0
 * makes each full collection allow `percent`% growth over the live data, and holds the young generation near
 * {@link YOUNG_GENERATION_TARGET_BYTES}: V8 doubles it up to 2 x 16 MB under a steady allocation rate and shrinks it to
 * 2 x 0.5 MB when idle, so a check after every collection (a `gc` performance observer: a burst of claims doubles it
 * several times between two ticks of a timer) and every 250 ms (an unref'd timer: when idle nothing collects) lets
 * it grow only while it is below the target. 0 does nothing (V8's rules). Returns the percent applied. These are V8
 * flags set at run time (`v8.setFlagsFromString`; `--heap-growing-percent`, `--semi-space-growth-factor`), read at
 * each collection, by every thread's heap (a worker's young generation is limited at its start instead:
 * {@link workerResourceLimits}; a worker's start resets the main thread's flag: {@link holdYoungGeneration}).
 */
export function setHeapGrowth(percent: number): number {
  if (!Number.isInteger(percent) || percent < 0) throw new RangeError(`heap growth: expected a whole percent >= 0`);
  if (percent === 0) return 0;
  v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
  applied = percent;
  if (!youngTimer) {
    holdYoungGeneration();
    youngTimer = setInterval(holdYoungGeneration, 250);
    youngTimer.unref();
    youngObserver = new PerformanceObserver(holdYoungGeneration);
    youngObserver.observe({ entryTypes: ['gc'] });
    // Every worker thread of the process (the package's or a user's): configuring its heap resets the flag.
    process.on('worker', (worker) => worker.once('online', workerOnline));
  }
  return percent;
}

/**
 * The young-generation check of the policy in force (nothing without one): lets V8 double the main thread's young
 * generation only while it is below {@link YOUNG_GENERATION_TARGET_BYTES}. Set on every check, not only when the
 * answer changes: V8 raises the flag back to 2 whenever it configures a new heap (Heap::ConfigureHeap: a worker
 * thread starting, e.g. dev's cluster thread or a YAML decoder). The policy checks after every collection and every
 * 250 ms, and again when any worker thread is online (process 'worker' event), right after its heap was
 * configured: without that, the main thread's next scavenge after a worker started doubled its young generation to 2 x 16 MB before the
 * next check (test/runtime/heap-policy.test.ts). A window remains, between the worker's heap being configured and
 * its `online` event reaching the main thread, in which a busy main thread can still grow it once.
 */
export function holdYoungGeneration(): void {
  if (applied === 0) return;
  const young = v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space');
  const grow = (young?.space_size ?? 0) < youngTargetBytes;
  v8.setFlagsFromString(grow ? '--semi-space-growth-factor=2' : '--semi-space-growth-factor=1');
}

/**
 * {@link setHeapGrowth} with the percent from the environment: what the `run` commands and `dev` call at start. The
 * young generations held, the main thread's ({@link YOUNG_GENERATION_ENV}) and a worker's
 * ({@link WORKER_YOUNG_GENERATION_ENV}), default to 2 x 4 MB; other sizes are for measuring (bench:dev
 * --variant-env). Throws on a bad value.
 */
export function applyHeapPolicy(env: NodeJS.ProcessEnv = process.env): number {
  const percent = heapGrowthPercentFrom(env);
  const mainMb = youngMbFrom(env, YOUNG_GENERATION_ENV, YOUNG_GENERATION_TARGET_BYTES / 1048576);
  const workerMb = youngMbFrom(env, WORKER_YOUNG_GENERATION_ENV, (WORKER_YOUNG_GENERATION_MB / 3) * 2);
  youngTargetBytes = mainMb * 1048576;
  workerYoungMb = (workerMb / 2) * 3;
  return setHeapGrowth(percent);
}
