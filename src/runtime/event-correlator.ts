// client-go's EventCorrelator (tools/record/events_cache.go) as a pure, clock-driven object: given the
// core/v1 Event a recorder wants to emit, it decides whether to create it, patch an earlier one (series
// dedup: count + 1, lastTimestamp), or drop it (spam filter), aggregating floods of similar messages.
// No I/O: the event recorder performs the returned action.

import type { CoreEvent } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import { TokenBucket } from './token-bucket.ts';

/** Limits of the event correlator (client-go's defaults unless set). */
export interface EventCorrelatorOptions {
  clock?: Clock;
  /** Distinct messages for one source/object/type/reason before they are aggregated. Default 10. */
  maxSimilarEvents?: number;
  /** Similar events further apart than this start a fresh group. Default 600 s. */
  aggregateIntervalMs?: number;
  /** Spam filter bucket per source+object+type: burst. Default 25. */
  spamBurst?: number;
  /** Spam filter refill rate in events per second. Default 1/300 (one per 5 minutes). */
  spamQps?: number;
  /** Entries per cache (aggregation, dedup, spam). Default 4096. */
  cacheSize?: number;
}

/** The strategic-merge patch client-go sends for a repeated event. */
export interface EventSeriesPatch {
  count: number;
  lastTimestamp: string;
  message: string;
}

/**
 * What to do with an event. `event` is the object to create, or the full state the patch moves to;
 * `key` identifies its series (pass it back to {@link EventCorrelator.updateState}).
 */
export type EventCorrelation =
  | { action: 'create'; event: CoreEvent; key: string }
  | { action: 'patch'; event: CoreEvent; key: string; patch: EventSeriesPatch }
  | { action: 'drop'; event: CoreEvent; key: string };

/** Prefix of an aggregated event's message, as client-go writes it. */
export const AGGREGATE_MESSAGE_PREFIX = '(combined from similar events): ';

/** A Map-backed LRU: reads refresh an entry, inserts evict the least recently used. */
class LruCache<V> {
  private readonly entries = new Map<string, V>();
  constructor(private readonly capacity: number) {}

  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as string);
  }
}

interface AggregateRecord {
  localKeys: Set<string>;
  lastSeen: number;
}

interface EventLog {
  count: number;
  firstTimestamp: string | null | undefined;
  name: string | undefined;
  resourceVersion: string | undefined;
}

// client-go joins key parts with "", which lets different field splits collide; a NUL separator cannot.
const join = (parts: (string | undefined | null)[]): string => parts.map((p) => p ?? '').join('\u0000');

/** Dedup key: everything that identifies "the same event" (client-go getEventKey). */
export function eventKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([
    e.source?.component,
    e.source?.host,
    o.kind,
    o.namespace,
    o.name,
    o.fieldPath,
    o.uid,
    o.apiVersion,
    e.type,
    e.reason,
    e.message,
  ]);
}

/** Spam key: source and object and type, but not reason or message (client-go getSpamKey). */
export function spamKey(e: CoreEvent): string {
  const o = e.involvedObject;
  return join([e.source?.component, e.source?.host, o.kind, o.namespace, o.name, o.uid, o.apiVersion, e.type]);
}

/** Aggregation key (all but the message) and local key (the message) (client-go EventAggregatorByReasonFunc). */
export function aggregateKeys(e: CoreEvent): { aggregateKey: string; localKey: string } {
  const o = e.involvedObject;
  return {
    aggregateKey: join([
      e.source?.component,
      e.source?.host,
      o.kind,
      o.namespace,
      o.name,
      o.uid,
      o.apiVersion,
      e.type,
      e.reason,
      e.reportingComponent,
      e.reportingInstance,
    ]),
    localKey: e.message ?? '',
  };
}

/** metav1.Time: RFC 3339 with second precision. */
export function formatKubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Correlates events: aggregate, then dedup (observe), then spam-filter, in client-go's order. Note that
 * a dropped event is still observed, so the next patch's count includes the dropped occurrences (as in client-go).
 */
export class EventCorrelator {
  private readonly clock: Clock;
  private readonly maxSimilar: number;
  private readonly intervalMs: number;
  private readonly spamBurst: number;
  private readonly spamQps: number;
  private readonly aggregates: LruCache<AggregateRecord>;
  private readonly logs: LruCache<EventLog>;
  private readonly spam: LruCache<TokenBucket>;
  private lastNanos = 0n;

  constructor(opts: EventCorrelatorOptions = {}) {
    this.clock = opts.clock ?? realClock;
    this.maxSimilar = opts.maxSimilarEvents ?? 10;
    this.intervalMs = opts.aggregateIntervalMs ?? 600_000;
    this.spamBurst = opts.spamBurst ?? 25;
    this.spamQps = opts.spamQps ?? 1 / 300;
    const size = opts.cacheSize ?? 4096;
    this.aggregates = new LruCache(size);
    this.logs = new LruCache(size);
    this.spam = new LruCache(size);
  }

  /** Decides what to do with `event` (a fresh event as a recorder makes it: count 1, timestamps now). */
  correlate(event: CoreEvent): EventCorrelation {
    const { event: aggregated, key } = this.aggregate(event);
    const { event: observed, patch } = this.observe(aggregated, key);
    if (!this.allow(observed)) return { action: 'drop', event: observed, key };
    return patch ? { action: 'patch', event: observed, key, patch } : { action: 'create', event: observed, key };
  }

  /**
   * Records the server's copy of an event after a create or patch (its name and resourceVersion), so the
   * next repeat patches the right object. After a 404 on patch, call this with the re-created event.
   * `key` is the correlation's key; without it the event's own dedup key is used, as client-go does
   * (which misses aggregate events, whose series key is the aggregation key).
   */
  updateState(event: CoreEvent, key: string = eventKey(event)): void {
    this.logs.set(key, {
      count: event.count ?? 1,
      firstTimestamp: event.firstTimestamp,
      name: event.metadata.name,
      resourceVersion: event.metadata.resourceVersion,
    });
  }

  private aggregate(event: CoreEvent): { event: CoreEvent; key: string } {
    const now = this.clock.now();
    const { aggregateKey, localKey } = aggregateKeys(event);
    let record = this.aggregates.get(aggregateKey);
    if (!record || now - record.lastSeen > this.intervalMs) record = { localKeys: new Set(), lastSeen: now };
    record.localKeys.add(localKey);
    record.lastSeen = now;
    this.aggregates.set(aggregateKey, record);
    if (record.localKeys.size < this.maxSimilar) return { event, key: eventKey(event) };

    // Keep the set from growing past the threshold; client-go drops an arbitrary member, we drop the oldest.
    record.localKeys.delete(record.localKeys.values().next().value as string);
    const timestamp = formatKubeTime(now);
    const objectName = event.involvedObject.name ?? '';
    const aggregate: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${objectName}.${this.uniqueNanos(now).toString(16)}`, namespace: event.metadata.namespace },
      involvedObject: event.involvedObject,
      reason: event.reason,
      message: AGGREGATE_MESSAGE_PREFIX + (event.message ?? ''),
      type: event.type,
      count: 1,
      firstTimestamp: timestamp,
      lastTimestamp: timestamp,
      source: event.source,
      // client-go leaves these empty on aggregates; keeping them attributes the event to its reporter.
      reportingComponent: event.reportingComponent,
      reportingInstance: event.reportingInstance,
    };
    return { event: aggregate, key: aggregateKey };
  }

  private observe(event: CoreEvent, key: string): { event: CoreEvent; patch?: EventSeriesPatch } {
    const last = this.logs.get(key);
    let observed = event;
    let patch: EventSeriesPatch | undefined;
    if (last && last.count > 0) {
      observed = {
        ...event,
        metadata: { ...event.metadata, name: last.name, resourceVersion: last.resourceVersion },
        firstTimestamp: last.firstTimestamp,
        count: last.count + 1,
      };
      patch = {
        count: last.count + 1,
        lastTimestamp: observed.lastTimestamp ?? formatKubeTime(this.clock.now()),
        message: observed.message ?? '',
      };
    }
    this.logs.set(key, {
      count: observed.count ?? 1,
      firstTimestamp: observed.firstTimestamp,
      name: observed.metadata.name,
      resourceVersion: observed.metadata.resourceVersion,
    });
    return { event: observed, patch };
  }

  private allow(event: CoreEvent): boolean {
    const key = spamKey(event);
    let bucket = this.spam.get(key);
    if (!bucket) {
      bucket = new TokenBucket(this.spamQps, this.spamBurst, this.clock);
      this.spam.set(key, bucket);
    }
    return bucket.tryTake();
  }

  /** Nanosecond timestamps for names, strictly increasing so two aggregates in one millisecond differ. */
  private uniqueNanos(nowMs: number): bigint {
    const nanos = BigInt(Math.floor(nowMs)) * 1_000_000n;
    this.lastNanos = nanos > this.lastNanos ? nanos : this.lastNanos + 1n;
    return this.lastNanos;
  }
}
