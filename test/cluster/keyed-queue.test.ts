// The cluster controllers' keyed queue: dedup of waiting keys, a re-run for a key added while it runs, retries,
// FIFO order across batches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoff, done, KeyedQueue, type SyncNext } from '../../src/cluster/controllers/keyed-queue.ts';
import type { Next } from '../../src/controller/next.ts';

test('KeyedQueue: deduplicates waiting keys, re-runs a key added while it runs, retries failures', async () => {
  const seen: string[] = [];
  let failOnce = true;
  const q: KeyedQueue = new KeyedQueue({
    handle(key) {
      seen.push(key);
      if (key === 'a' && seen.filter((k) => k === 'a').length === 1) q.add('a'); // added while processing
      if (key === 'flaky' && failOnce) {
        failOnce = false;
        throw new Error('boom');
      }
      return done;
    },
    baseDelayMs: 1,
  });
  q.add('a');
  q.add('b');
  q.add('b');
  q.add('flaky');
  assert.equal(q.length, 3);
  await q.idle();
  await new Promise((r) => setTimeout(r, 20));
  await q.idle();
  assert.deepEqual(seen, ['a', 'b', 'flaky', 'a', 'flaky']);
  q.stop();
  q.add('after-stop');
  await q.idle();
  assert.equal(seen.includes('after-stop'), false);
});

test('KeyedQueue: handles many keys in FIFO order across batches', async () => {
  const seen: number[] = [];
  const q = new KeyedQueue({ handle: (k) => (seen.push(Number(k)), done), batchSize: 7 });
  for (let i = 0; i < 3000; i++) q.add(String(i));
  await q.idle();
  assert.deepEqual(
    seen,
    Array.from({ length: 3000 }, (_, i) => i),
  );
  q.stop();
});

test("SyncNext speaks the controller's Next: every value is a Next, and backoff retries like a throw", async () => {
  // Compile-time: a SyncNext is assignable to the controller's Next (the same words, a subset of the cases).
  const asNext = (n: SyncNext): Next => n;
  assert.deepEqual([asNext(done).kind, asNext(backoff).kind], ['done', 'backoff']);
  const seen: string[] = [];
  let retried = false;
  const q = new KeyedQueue({
    handle(key) {
      seen.push(key);
      if (retried) return done;
      retried = true;
      return backoff;
    },
    baseDelayMs: 0,
  });
  q.add('k');
  await q.idle();
  while (seen.length < 2) await new Promise((r) => setImmediate(r));
  await q.idle();
  assert.deepEqual(seen, ['k', 'k']);
  q.stop();
});
