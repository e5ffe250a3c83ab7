// What a sync asks of its work queue, as a value: every control loop returns a Next and the worker alone applies it
// to the queue (kube-rs reconcile -> Action, client-go's handleErr). What a failure leads to is failures.ts's.

/**
 * The next step for a key after a sync:
 * - `done`: finished (or nothing to do); the key's backoff history is forgotten;
 * - `after`: look again in `ms` (backoff history forgotten);
 * - `backoff`: retry with the queue's per-key exponential backoff;
 * - `giveUp`: stop retrying until the object changes (backoff history forgotten);
 * - `waitForEvent`: leave the queue as it is; an informer event brings the key back (e.g. our own write), or the
 *   term is ending (a backend call interrupted by shutdown or lost leadership: not a failure).
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
