// Prometheus plumbing without a global registry: each owner (controller, CLI, test) creates its own
// prom-client Registry, and the work queues of that owner share one `workqueue_*` metric set on it,
// labelled by queue name with controller-runtime's metric names (dashboards already expect them).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, exponentialBuckets } from 'prom-client';

/** Creates a fresh registry. `processMetrics` adds prom-client's process/nodejs default metrics to it. */
export function createMetricsRegistry(
  opts: { processMetrics?: boolean; defaultLabels?: Record<string, string> } = {},
): Registry {
  const registry = new Registry();
  if (opts.defaultLabels) registry.setDefaultLabels(opts.defaultLabels);
  if (opts.processMetrics) collectDefaultMetrics({ register: registry });
  return registry;
}

/** A metric with one of our names already exists on the registry but was not created by us. */
export class MetricConflictError extends Error {
  constructor(readonly metricName: string) {
    super(`metric ${metricName} is already registered by someone else on this registry`);
    this.name = 'MetricConflictError';
  }
}

/** Two live work queues with the same name on one registry would report into the same series. */
export class DuplicateQueueNameError extends Error {
  constructor(readonly queueName: string) {
    super(`a work queue named ${queueName} already reports metrics on this registry`);
    this.name = 'DuplicateQueueNameError';
  }
}

/**
 * What a queue reports at scrape time. Counts and gauges are read here rather than pushed on every
 * add/get/done: prom-client's per-call label hashing would otherwise dominate the queue's hot path.
 */
export interface QueueStatsSource {
  stats(): QueueStats;
}

/** Work queue figures reported as workqueue_* metrics. */
export interface QueueStats {
  /** Keys waiting to be processed (client-go counts dirty keys, including those waiting for a worker to finish). */
  depth: number;
  /** Adds that were not deduplicated, since the queue started. */
  adds: number;
  /** Rate-limited re-adds, since the queue started. */
  retries: number;
  /** Sum and max of how long (seconds) the items currently being processed have been running. */
  unfinishedSeconds: number;
  longestSeconds: number;
}

/** One queue's handles into the shared metric set; durations are observed as they happen. */
export interface QueueMetricsRecorder {
  readonly queueDuration: Histogram.Internal<'name'>;
  readonly workDuration: Histogram.Internal<'name'>;
  /** Reports the final counts, zeroes the gauges, and frees the queue's name. */
  detach(): void;
}

// controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12), i.e. 10 ns .. 1000 s.
const DURATION_BUCKETS = exponentialBuckets(10e-9, 10, 12);

const UNFINISHED_NAME = 'workqueue_unfinished_work_seconds';

/** The in-flight gauge carries a back-reference to its set, so the set can be found on a registry without global state. */
class UnfinishedWorkGauge extends Gauge<'name'> {
  owner: WorkQueueMetrics | undefined;
}

/** The `workqueue_*` metric set on one registry. Use {@link WorkQueueMetrics.forRegistry} to get it. */
export class WorkQueueMetrics {
  readonly depth: Gauge<'name'>;
  readonly adds: Counter<'name'>;
  readonly queueDuration: Histogram<'name'>;
  readonly workDuration: Histogram<'name'>;
  readonly unfinishedWork: Gauge<'name'>;
  readonly longestRunningProcessor: Gauge<'name'>;
  readonly retries: Counter<'name'>;
  private readonly sources = new Map<string, QueueStatsSource>();
  // Counter values already pushed to prom-client per queue, so collect() adds only the difference.
  private readonly reported = new Map<string, { adds: number; retries: number }>();

  /** Returns the set already on `registry`, or registers a new one. */
  static forRegistry(registry: Registry): WorkQueueMetrics {
    const existing = registry.getSingleMetric(UNFINISHED_NAME);
    if (existing instanceof UnfinishedWorkGauge && existing.owner) return existing.owner;
    if (existing) throw new MetricConflictError(UNFINISHED_NAME);
    return new WorkQueueMetrics(registry);
  }

  private constructor(registry: Registry) {
    const sources = this.sources;
    const reported = this.reported;
    const flushCounter = (counter: Counter<'name'>, field: 'adds' | 'retries') => {
      for (const [name, source] of sources) {
        const done = reported.get(name);
        const total = source.stats()[field];
        if (!done || total <= done[field]) continue;
        counter.inc({ name }, total - done[field]);
        done[field] = total;
      }
    };
    const registers = [registry];
    const labelNames = ['name'] as const;
    for (const name of [
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds',
      'workqueue_work_duration_seconds',
      'workqueue_longest_running_processor_seconds',
      'workqueue_retries_total',
    ]) {
      if (registry.getSingleMetric(name)) throw new MetricConflictError(name);
    }
    this.depth = new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames,
      registers,
      collect() {
        for (const [name, source] of sources) this.set({ name }, source.stats().depth);
      },
    });
    this.adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue',
      labelNames,
      registers,
      collect() {
        flushCounter(this, 'adds');
      },
    });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested',
      labelNames,
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes',
      labelNames,
      buckets: DURATION_BUCKETS,
      registers,
    });
    const unfinished = new UnfinishedWorkGauge({
      name: UNFINISHED_NAME,
      help: "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
      labelNames,
      registers,
      collect() {
        for (const [name, source] of sources) this.set({ name }, source.stats().unfinishedSeconds);
      },
    });
    unfinished.owner = this;
    this.unfinishedWork = unfinished;
    this.longestRunningProcessor = new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames,
      registers,
      collect() {
        for (const [name, source] of sources) this.set({ name }, source.stats().longestSeconds);
      },
    });
    this.retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue',
      labelNames,
      registers,
      collect() {
        flushCounter(this, 'retries');
      },
    });
  }

  /** Binds a queue to this set under `name`; throws {@link DuplicateQueueNameError} if that name is live. */
  attach(name: string, source: QueueStatsSource): QueueMetricsRecorder {
    if (this.sources.has(name)) throw new DuplicateQueueNameError(name);
    this.sources.set(name, source);
    const labels = { name };
    const done = this.reported.get(name);
    // A queue re-created under a name continues its counters instead of seeing them drop.
    this.reported.set(name, { adds: 0, retries: 0 });
    if (!done) {
      // Touch every series so a fresh queue shows zeros instead of nothing.
      this.adds.inc(labels, 0);
      this.retries.inc(labels, 0);
    }
    this.depth.set(labels, 0);
    return {
      queueDuration: this.queueDuration.labels(labels),
      workDuration: this.workDuration.labels(labels),
      detach: () => {
        if (this.sources.get(name) !== source) return;
        const final = source.stats();
        const sent = this.reported.get(name) ?? { adds: 0, retries: 0 };
        if (final.adds > sent.adds) this.adds.inc(labels, final.adds - sent.adds);
        if (final.retries > sent.retries) this.retries.inc(labels, final.retries - sent.retries);
        this.sources.delete(name);
        this.depth.set(labels, 0);
        this.unfinishedWork.set(labels, 0);
        this.longestRunningProcessor.set(labels, 0);
      },
    };
  }
}
