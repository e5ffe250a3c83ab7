// The event recorder: client-go's tools/record broadcaster + sink in one object. `event()` builds a core/v1
// Event and queues it without ever blocking or throwing; background drains run it through the EventCorrelator
// (aggregate, dedup as a count/lastTimestamp patch, spam filter) and write it. Events go to a few lanes by the
// object they are about: one object's events stay in order and its correlation sees each write before the next,
// while a burst of claims is written several at a time (one writer left a 10,000-claim burst's events queued,
// and held in memory, for many seconds after the claims were Bound).
import type { CoreEvent, KubeObject } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import type { KubeClient } from './client.ts';
import { ApiError, NotFoundError } from './status-errors.ts';
import { EventCorrelator, formatKubeTime, type EventCorrelatorOptions } from './event-correlator.ts';
import { silentLogger, type Logger } from '../types/logger.ts';
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
  /** Events written at once, each lane for its own set of objects (default 4). */
  writers?: number;
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
  private readonly lanes: EventLane[];
  /** Events queued over all lanes. */
  private queued = 0;
  private readonly correlator: EventCorrelator;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly stopController = new AbortController();
  private stopped = false;
  private lastNanos = 0n;

  constructor(private readonly opts: EventRecorderOptions) {
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'event-recorder' });
    this.correlator =
      opts.correlator instanceof EventCorrelator
        ? opts.correlator
        : new EventCorrelator({ clock: this.clock, ...opts.correlator });
    this.lanes = Array.from({ length: Math.max(1, opts.writers ?? 4) }, () => ({
      queue: [],
      head: 0,
      draining: undefined,
    }));
  }

  /** Records an event about `obj`. Never blocks, never throws. */
  event(obj: KubeObject, type: EventType, reason: string, message: string): void {
    try {
      if (this.stopped) return;
      if (this.queued >= (this.opts.queueSize ?? DEFAULT_QUEUE_SIZE)) {
        this.stats.droppedQueueFull++;
        return;
      }
      const event = this.makeEvent(obj, type, reason, message);
      const lane = this.lanes[laneOf(event, this.lanes.length)];
      lane.queue.push(event);
      this.queued++;
      lane.draining ??= this.drain(lane).finally(() => {
        lane.draining = undefined;
      });
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'could not record event');
    }
  }

  /** Resolves when every event queued so far has been written, dropped or given up on. */
  async flush(): Promise<void> {
    for (;;) {
      const draining = this.lanes.flatMap((l) => (l.draining ? [l.draining] : []));
      if (draining.length === 0) return;
      await Promise.all(draining);
    }
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

  private async drain(lane: EventLane): Promise<void> {
    while (lane.head < lane.queue.length) {
      const ev = lane.queue[lane.head];
      lane.queue[lane.head++] = undefined;
      this.queued--;
      // Taken from the front by an index: shift() copies the whole array once it is large.
      if (lane.head > 1024 && lane.head * 2 > lane.queue.length) {
        lane.queue = lane.queue.slice(lane.head);
        lane.head = 0;
      }
      if (!ev) continue;
      if (this.stopController.signal.aborted) {
        this.queued -= lane.queue.length - lane.head;
        lane.queue = [];
        lane.head = 0;
        return;
      }
      const decision = this.correlator.correlate(ev);
      if (decision.action === 'drop') {
        this.stats.droppedSpam++;
        continue;
      }
      await this.write(decision.event, decision.action === 'patch' ? decision.patch : undefined);
    }
    lane.queue = [];
    lane.head = 0;
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
            saved = await this.opts.client.patch<CoreEvent>(coreEvents, event.metadata.name ?? '', patch, {
              namespace,
              type: 'strategic',
              signal,
            });
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
          this.logger.warn(
            { err: (err as Error).message, reason: event.reason, event: event.metadata.name },
            'event not written',
          );
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

/** One writer's queue: events taken from `head` on. */
interface EventLane {
  queue: Array<CoreEvent | undefined>;
  head: number;
  draining: Promise<void> | undefined;
}

/** The lane of an event: by the object it is about (FNV-1a of its namespace/name/uid), so one object stays in order. */
function laneOf(event: CoreEvent, lanes: number): number {
  if (lanes === 1) return 0;
  const o = event.involvedObject;
  const key = `${o.namespace ?? ''}/${o.name ?? ''}/${o.uid ?? ''}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  // FNV's low bits depend only on the inputs' low bits: mix the high ones in before taking the remainder.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return (h >>> 0) % lanes;
}
