// Core/v1 Events written by the cluster's own controllers through the store, with client-go's correlation:
// a repeat of the same (object, type, reason, message, source) bumps `count` and `lastTimestamp` of the
// existing Event instead of creating a new one, so a resync every 15 s shows `(x3 over 36s)` in kubectl.
import type { CoreEvent, KubeObject } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { formatTime } from '../common/meta.ts';

/**
 * How many distinct events the correlator remembers. client-go's LRU holds 4096 per recorder; this one serves the
 * whole embedded cluster, where a dev session keeps up to 10,000 claims pending at once and the binder records
 * ExternalProvisioning on each of their syncs. With 4096, a burst of 8,000 pending claims evicted every entry before
 * its next sync, so each re-sync created a new Event (34,000 extra objects and writes in 10,000 claims) instead of
 * raising one Event's count. An entry is a key and three fields, about 300 bytes: 16,384 of them are about 5 MB.
 */
const MAX_REMEMBERED = 16_384;

export class ClusterEventRecorder {
  private readonly store: ClusterStore;
  private readonly component: string;
  private readonly now: () => number;
  private readonly logger: Logger;
  private readonly seen = new Map<string, { namespace: string; name: string; count: number }>();
  private sequence = 0;

  constructor(store: ClusterStore, component: string, opts: { now?: () => number; logger: Logger }) {
    this.store = store;
    this.component = component;
    this.now = opts.now ?? Date.now;
    this.logger = opts.logger;
  }

  /** Records an event about `obj`; failures are logged, never thrown (events are best effort). */
  record(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const meta = obj.metadata;
    const namespace = meta.namespace || 'default';
    const key = [obj.kind, meta.namespace ?? '', meta.name, meta.uid ?? '', type, reason, message].join('\u0000');
    const now = formatTime(this.now());
    const previous = this.seen.get(key);
    if (previous) {
      try {
        previous.count++;
        this.store.patch('events', previous.namespace, previous.name, 'merge', {
          count: previous.count,
          lastTimestamp: now,
        });
        this.touch(key, previous);
        return;
      } catch (err) {
        // Deleted (or expired) meanwhile: start a new one.
        if (!(err instanceof ClusterApiError && err.code === 404)) return this.fail(err, reason);
        this.seen.delete(key);
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
      this.store.create('events', event);
      this.touch(key, { namespace, name, count: 1 });
    } catch (err) {
      this.fail(err, reason);
    }
  }

  /** client-go names events `<object>.<UnixNano in hex>`; a sequence keeps names unique within a millisecond. */
  private uniqueSuffix(): string {
    const nanos = BigInt(this.now()) * 1_000_000n + BigInt(this.sequence++ % 1_000_000);
    return nanos.toString(16);
  }

  private touch(key: string, entry: { namespace: string; name: string; count: number }): void {
    this.seen.delete(key);
    this.seen.set(key, entry);
    if (this.seen.size > MAX_REMEMBERED) this.seen.delete(this.seen.keys().next().value as string);
  }

  private fail(err: unknown, reason: string): void {
    this.logger.warn({ err, reason }, 'cannot record event');
  }
}
