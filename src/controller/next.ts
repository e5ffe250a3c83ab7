// What a sync asks of its work queue, as a value: the claim and volume flows return a Next and the worker alone
// applies it to the queue (kube-rs reconcile -> Action, client-go's handleErr). Also the one failure policy both
// flows share: given the failure record, the threshold and what kind of failure it was, what happens next.
import { thresholdReached, type FailureRecord } from './failures.ts';

/**
 * The next step for a key after a sync:
 * - `done`: finished (or nothing to do); the key's backoff history is forgotten;
 * - `after`: look again in `ms` (backoff history forgotten);
 * - `backoff`: retry with the queue's per-key exponential backoff;
 * - `giveUp`: stop retrying until the object changes (backoff history forgotten);
 * - `waitForEvent`: leave the queue as it is; an informer event brings the key back (e.g. our own write).
 */
export type Next =
  | { kind: 'done' }
  | { kind: 'after'; ms: number }
  | { kind: 'backoff' }
  | { kind: 'giveUp' }
  | { kind: 'waitForEvent' };

export const done: Next = { kind: 'done' };
export const backoff: Next = { kind: 'backoff' };
export const giveUp: Next = { kind: 'giveUp' };
export const waitForEvent: Next = { kind: 'waitForEvent' };
/** Look again in `ms`. */
export function after(ms: number): Next {
  return { kind: 'after', ms };
}

/** The queue operations applying a Next needs (a WorkQueue fits). */
export interface RetryQueue<K> {
  forget(key: K): void;
  addAfter(key: K, ms: number): void;
  addRateLimited(key: K): void;
}

/** Applies `next` to `queue` for `key`. The only place the flows' results reach a queue. */
export function applyNext<K>(queue: RetryQueue<K>, key: K, next: Next): void {
  switch (next.kind) {
    case 'done':
    case 'giveUp':
      queue.forget(key);
      return;
    case 'after':
      queue.forget(key);
      queue.addAfter(key, next.ms);
      return;
    case 'backoff':
      queue.addRateLimited(key);
      return;
    case 'waitForEvent':
      return;
  }
}

/**
 * What kind of failure it was: `infeasible` (an InfeasibleError: retry slowly, after `infeasibleRetryMs`),
 * `inBackground` (the backend may still be working: retry with backoff and never give up), or `final`.
 */
export type FailureClass = 'final' | 'infeasible' | 'inBackground';

/**
 * The failure policy of both flows: an infeasible failure waits `infeasibleRetryMs`; otherwise the threshold
 * (0 = never) gives up once reached, unless the backend may still be working; anything else backs off.
 */
export function failurePolicy(
  record: FailureRecord,
  threshold: number,
  failure: FailureClass,
  infeasibleRetryMs = 0,
): Next {
  if (failure === 'infeasible') return after(infeasibleRetryMs);
  if (failure === 'final' && thresholdReached(record, threshold)) return giveUp;
  return backoff;
}
