// The event recorder: client-go's tools/record broadcaster + sink in one object. `event()` builds a core/v1
// Event and queues it without ever blocking or throwing; a background drain runs it through the
// EventCorrelator (aggregate, dedup as a count/lastTimestamp patch, spam filter) and writes it.
import type { CoreEvent, KubeObject } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import type { KubeClient } from './client.ts';
import { ApiError, NotFoundError } from './errors.ts';
import { EventCorrelator, formatKubeTime, type EventCorrelatorOptions } from './event-correlator.ts';
import { silentLogger, type Logger } from './logger.ts';
import { coreEvents } from './resources.ts';

const DEFAULT_QUEUE_SIZE = 20_000;

/** Kubernetes event type. */
export type EventType = 'Normal' | 'Warning';

/** Options of an EventRecorder: component, host, queue size, correlator limits, clock and logger. */
export interface EventRecorderOptions {
  client: KubeClient;
  /** source.component and reportingComponent, e.g. `hostpath.kube-provisioner.io_<id>`. */
  component: string;
  /** source.host and reportingInstance (usually the node or pod name). */
  host?: string;
  /**
   * Queued events beyond this are dropped (counted in `stats.droppedQueueFull`). Default 20,000: client-go's 1,000
   * lost most events of a 1,000-claim burst (bench:controller), and a queued event costs well under a kilobyte.
   */
  queueSize?: number;
  /** Tries per event on transport errors (default 12, like client-go). */
  maxTries?: number;
  /** Delay between tries (default 10 s; the first is randomised, like client-go). */
  retryDelayMs?: number;
  correlator?: EventCorrelator | EventCorrelatorOptions;
  clock?: Clock;
  logger?: Logger;
}

/** Counters of what happened to recorded events. */
export interface EventRecorderStats {
  created: number;
  patched: number;
  /** Dropped because the queue was full. */
  droppedQueueFull: number;
  /** Dropped by the correlator's spam filter. */
  droppedSpam: number;
  /** Given up after errors (4xx answers, or transport errors maxTries times). */
  failed: number;
}

/**
 * Records core/v1 Events about objects. Events about cluster-scoped objects (PVs, StorageClasses, Nodes) go
 * to namespace `default`, as kube-controller-manager's do. Call {@link flush} in tests, {@link stop} on shutdown.
 */
export class EventRecorder {
  readonly stats: EventRecorderStats = { created: 0, patched: 0, droppedQueueFull: 0, droppedSpam: 0, failed: 0 };
  private readonly queue: CoreEvent[] = [];
  private readonly correlator: EventCorrelator;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly stopController = new AbortController();
  private draining: Promise<void> | undefined;
  private stopped = false;
  private lastNanos = 0n;

  constructor(private readonly opts: EventRecorderOptions) {
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'event-recorder' });
    this.correlator = opts.correlator instanceof EventCorrelator
      ? opts.correlator
      : new EventCorrelator({ clock: this.clock, ...opts.correlator });
  }

  /** Records an event about `obj`. Never blocks, never throws. */
  event(obj: KubeObject, type: EventType, reason: string, message: string): void {
    try {
      if (this.stopped) return;
      if (this.queue.length >= (this.opts.queueSize ?? DEFAULT_QUEUE_SIZE)) {
        this.stats.droppedQueueFull++;
        return;
      }
      this.queue.push(this.makeEvent(obj, type, reason, message));
      this.draining ??= this.drain().finally(() => { this.draining = undefined; });
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'could not record event');
    }
  }

  /** Resolves when every event queued so far has been written, dropped or given up on. */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Stops accepting events, lets queued ones drain for up to `timeoutMs` (default 5 s), then abandons the rest. */
  async stop(timeoutMs = 5_000): Promise<void> {
    this.stopped = true;
    const timer = this.clock.setTimeout(() => this.stopController.abort(), timeoutMs, { unref: true });
    try {
      await this.flush();
    } finally {
      timer.cancel();
    }
  }

  private makeEvent(obj: KubeObject, type: EventType, reason: string, message: string): CoreEvent {
    const now = this.clock.now();
    const timestamp = formatKubeTime(now);
    const { name = '', namespace, uid, resourceVersion } = obj.metadata;
    const host = this.opts.host ?? '';
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${name}.${this.uniqueNanos(now).toString(16)}`, namespace: namespace || 'default' },
      involvedObject: { kind: obj.kind, namespace, name, uid, apiVersion: obj.apiVersion, resourceVersion },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: timestamp,
      lastTimestamp: timestamp,
      source: { component: this.opts.component, host: host || undefined },
      reportingComponent: this.opts.component,
      reportingInstance: host,
    };
  }

  private async drain(): Promise<void> {
    for (let ev = this.queue.shift(); ev; ev = this.queue.shift()) {
      if (this.stopController.signal.aborted) {
        this.queue.length = 0;
        return;
      }
      const decision = this.correlator.correlate(ev);
      if (decision.action === 'drop') {
        this.stats.droppedSpam++;
        continue;
      }
      await this.write(decision.event, decision.action === 'patch' ? decision.patch : undefined);
    }
  }

  private async write(event: CoreEvent, patch: object | undefined): Promise<void> {
    const maxTries = this.opts.maxTries ?? 12;
    const delay = this.opts.retryDelayMs ?? 10_000;
    const signal = this.stopController.signal;
    const namespace = event.metadata.namespace;
    for (let attempt = 1; ; attempt++) {
      try {
        let saved: CoreEvent;
        if (patch) {
          try {
            saved = await this.opts.client.patch<CoreEvent>(coreEvents, event.metadata.name ?? '', patch, { namespace, type: 'strategic', signal });
            this.stats.patched++;
          } catch (err) {
            if (!(err instanceof NotFoundError)) throw err;
            // The first occurrence expired (event TTL) or was deleted: re-create it with the current count.
            saved = await this.create(event, signal);
          }
        } else {
          saved = await this.create(event, signal);
        }
        this.correlator.updateState(saved);
        return;
      } catch (err) {
        const transport = err instanceof ApiError && err.code === 0;
        if (signal.aborted || !transport || attempt >= maxTries) {
          this.stats.failed++;
          this.logger.warn({ err: (err as Error).message, reason: event.reason, event: event.metadata.name }, 'event not written');
          return;
        }
        const wait = attempt === 1 ? Math.random() * delay : delay;
        try {
          await this.clock.sleep(wait, signal);
        } catch {
          this.stats.failed++;
          return;
        }
      }
    }
  }

  private async create(event: CoreEvent, signal: AbortSignal): Promise<CoreEvent> {
    const body: CoreEvent = { ...event, metadata: { ...event.metadata, resourceVersion: undefined } };
    const saved = await this.opts.client.create<CoreEvent>(coreEvents, body, { signal });
    this.stats.created++;
    return saved;
  }

  /** Nanosecond timestamps for names, strictly increasing so two events in one millisecond never collide. */
  private uniqueNanos(nowMs: number): bigint {
    const nanos = BigInt(Math.floor(nowMs)) * 1_000_000n;
    this.lastNanos = nanos > this.lastNanos ? nanos : this.lastNanos + 1n;
    return this.lastNanos;
  }
}
