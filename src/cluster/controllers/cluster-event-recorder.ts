// Core/v1 Events written by the cluster's own controllers through the store, with client-go's correlation:
// a repeat of the same (object, type, reason, message, source) bumps `count` and `lastTimestamp` of the
// existing Event instead of creating a new one, so a resync every 15 s shows `(x3 over 36s)` in kubectl.
import type { CoreEvent, KubeObject } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { formatTime } from '../common/meta.ts';
import { StringTable } from '../../types/shared-strings.ts';

/** The correlator's key of an object: kind, namespace, name and uid. */
function objectKey(obj: KubeObject): string {
  const meta = obj.metadata;
  return [obj.kind, meta.namespace ?? '', meta.name, meta.uid ?? ''].join('\u0000');
}

/**
 * How many objects the correlator remembers events of. client-go's LRU holds 4096 events per recorder; this one
 * serves the whole embedded cluster, where a dev session keeps up to 10,000 claims pending at once and the binder
 * records ExternalProvisioning on each of their syncs. With 4096, a burst of 8,000 pending claims evicted every entry
 * before its next sync, so each re-sync created a new Event (34,000 extra objects and writes in 10,000 claims)
 * instead of raising one Event's count. What an object is done with (a claim Bound, anything deleted) is forgotten
 * at once ({@link ClusterEventRecorder.forget}), so the bound matters only for a burst of pending objects.
 */
const MAX_REMEMBERED = 16_384;

/** One event remembered for an object: its type, reason and message (shared), and the Event it went into. */
interface Remembered {
  detail: string;
  namespace: string;
  name: string;
  count: number;
}

export class ClusterEventRecorder {
  private readonly store: ClusterStore;
  private readonly component: string;
  private readonly now: () => number;
  private readonly logger: Logger;
  /**
   * Object (kind, namespace, name, uid) -> the events recorded about it, least recently used object first. The
   * type/reason/message part of a key is the same text for every pending claim of a class: one shared string.
   */
  private readonly seen = new Map<string, Remembered[]>();
  private readonly details = new StringTable(256);
  private sequence = 0;

  constructor(store: ClusterStore, component: string, opts: { now?: () => number; logger: Logger }) {
    this.store = store;
    this.component = component;
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger;
  }

  /** Objects the correlator remembers events of. */
  get remembered(): number {
    return this.seen.size;
  }

  /**
   * Forgets the events recorded about `obj` (it is done: a claim Bound, an object deleted): a repeat afterwards
   * starts a new Event, as after client-go's LRU evicted it. Nothing is kept per object once it is done.
   */
  forget(obj: KubeObject): void {
    this.seen.delete(objectKey(obj));
  }

  /** Records an event about `obj`; failures are logged, never thrown (events are best effort). */
  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const meta = obj.metadata;
    const namespace = meta.namespace || 'default';
    const key = objectKey(obj);
    const detail = this.details.share(`${type}\u0000${reason}\u0000${message}`);
    const now = formatTime(this.now());
    const known = this.seen.get(key);
    const previous = known?.find((r) => r.detail === detail);
    if (known && previous) {
      try {
        previous.count++;
        // The *Entry writes: no copy of the Event in or out (the public ones clone the input and parse the answer).
        this.store.patchEntry('events', previous.namespace, previous.name, 'merge', {
          count: previous.count,
          lastTimestamp: now,
        });
        this.touch(key, known);
        return;
      } catch (err) {
        // Deleted (or expired) meanwhile: start a new one.
        if (!(err instanceof ClusterApiError && err.code === 404)) return this.fail(err, reason);
        known.splice(known.indexOf(previous), 1);
      }
    }
    const name = `${meta.name ?? 'unknown'}.${this.uniqueSuffix()}`;
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        kind: obj.kind,
        namespace: meta.namespace,
        name: meta.name,
        uid: meta.uid,
        apiVersion: obj.apiVersion,
        resourceVersion: meta.resourceVersion,
      },
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.component },
      reportingComponent: this.component,
      reportingInstance: '',
    };
    try {
      this.store.createEntry('events', event); // the Event is built here: the store may own it
      const list = known ?? [];
      list.push({ detail, namespace, name, count: 1 });
      this.touch(key, list);
    } catch (err) {
      this.fail(err, reason);
    }
  }

  /** client-go names events `<object>.<UnixNano in hex>`; a sequence keeps names unique within a millisecond. */
  private uniqueSuffix(): string {
    const nanos = BigInt(this.now()) * 1_000_000n + BigInt(this.sequence++ % 1_000_000);
    return nanos.toString(16);
  }

  private touch(key: string, list: Remembered[]): void {
    this.seen.delete(key);
    this.seen.set(key, list);
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
  }

  private fail(err: unknown, reason: string): void {
    this.logger.warn({ err, reason }, 'cannot record event');
  }
}
