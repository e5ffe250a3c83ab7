// Work queue semantics (client-go's dirty/processing sets, delays, rate limits, shutdown), its metrics,
// and a randomized property test with concurrent async workers; all on a TestClock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { TestClock } from '../../src/runtime/clock.ts';
import { WorkQueue } from '../../src/runtime/workqueue.ts';
import { ItemExponentialFailureRateLimiter } from '../../src/runtime/rate-limiters.ts';
import { DuplicateQueueNameError, MetricConflictError, createMetricsRegistry } from '../../src/runtime/metrics.ts';
import { Gauge } from 'prom-client';
import { seededRandom } from '../../src/cluster/common/seeded-random.ts';

const tick = () => new Promise<void>((r) => setImmediate(r));

async function getKey<K>(q: WorkQueue<K>): Promise<K> {
  const item = await q.get();
  assert.equal(item.shutdown, false);
  return item.key as K;
}

test('FIFO order and dedup of keys not yet handed out', async () => {
  const q = new WorkQueue<string>({ clock: new TestClock() });
  for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
  assert.equal(q.len, 3);
  assert.deepEqual([await getKey(q), await getKey(q), await getKey(q)], ['a', 'b', 'c']);
  assert.equal(q.len, 0);
  assert.equal(q.inProgress, 3);
  q.shutdown();
});

test('a key being processed is never handed out again; adds meanwhile coalesce into one rerun after done', async () => {
  const q = new WorkQueue<string>({ clock: new TestClock() });
  q.add('a');
  assert.equal(await getKey(q), 'a');
  q.add('a');
  q.add('a');
  q.add('b');
  assert.equal(q.len, 1, 'only b is ready');
  assert.equal(await getKey(q), 'b');
  let next: string | undefined;
  const waiting = q.get().then((item) => {
    next = item.key;
  });
  await tick();
  assert.equal(next, undefined, 'a is still in flight, nothing to hand out');
  q.done('a');
  await waiting;
  assert.equal(next, 'a');
  q.done('a');
  q.done('b');
  assert.equal(q.len, 0, 'the three adds of a produced exactly one rerun');
  assert.equal(q.inProgress, 0);
  q.done('never-got'); // harmless
  q.shutdown();
});

test('waiting getters are served oldest first, and an aborted get is removed', async () => {
  const q = new WorkQueue<string>({ clock: new TestClock() });
  const ac = new AbortController();
  const aborted = q.get(ac.signal);
  const first = q.get();
  const second = q.get();
  ac.abort(new Error('worker stopped'));
  await assert.rejects(aborted, /worker stopped/);
  q.add('x');
  q.add('y');
  assert.equal((await first).key, 'x');
  assert.equal((await second).key, 'y');
  await assert.rejects(q.get(AbortSignal.abort(new Error('pre-aborted'))), /pre-aborted/);
  q.shutdown();
});

test('addAfter: delayed until due, earliest time wins, non-positive delay is immediate', async () => {
  const clock = new TestClock();
  const q = new WorkQueue<string>({ clock });
  q.addAfter('a', 1000);
  q.addAfter('a', 500); // earlier: replaces
  q.addAfter('b', 100);
  q.addAfter('b', 900); // later: ignored
  q.addAfter('now', 0);
  assert.equal(q.len, 1);
  assert.equal(await getKey(q), 'now');
  assert.equal(q.delayed, 2);
  await clock.advance(99);
  assert.equal(q.len, 0);
  await clock.advance(1);
  assert.equal(q.len, 1);
  assert.equal(await getKey(q), 'b');
  await clock.advance(399);
  assert.equal(q.len, 0);
  await clock.advance(1);
  assert.equal(await getKey(q), 'a');
  await clock.advance(10_000);
  assert.equal(q.len, 0, 'superseded times do not fire again');
  assert.equal(q.delayed, 0);
  assert.equal(clock.pending, 0, 'no timer left once nothing waits');
  q.shutdown();
});

test('addRateLimited follows the limiter; forget resets; numRequeues counts', async () => {
  const clock = new TestClock();
  const q = new WorkQueue<string>({ clock, rateLimiter: new ItemExponentialFailureRateLimiter(100, 10_000) });
  q.addRateLimited('a'); // 100 ms
  await clock.advance(99);
  assert.equal(q.len, 0);
  await clock.advance(1);
  assert.equal(await getKey(q), 'a');
  q.done('a');
  q.addRateLimited('a'); // 200 ms
  assert.equal(q.numRequeues('a'), 2);
  await clock.advance(199);
  assert.equal(q.len, 0);
  await clock.advance(1);
  assert.equal(q.len, 1);
  q.forget('a');
  assert.equal(q.numRequeues('a'), 0);
  q.shutdown();
});

test('shutdown abandons: getters released, adds ignored, queued and delayed keys dropped, no timers left', async () => {
  const clock = new TestClock();
  const q = new WorkQueue<string>({ clock });
  const waiting = q.get();
  q.add('held');
  assert.equal((await waiting).key, 'held');
  const idle = q.get();
  q.addAfter('later', 1000);
  q.shutdown();
  assert.deepEqual(await idle, { shutdown: true });
  q.add('x');
  q.addAfter('y', 1);
  q.addRateLimited('z');
  assert.equal(q.len, 0);
  assert.deepEqual(await q.get(), { shutdown: true });
  assert.equal(clock.pending, 0);
  await clock.advance(5000);
  assert.equal(q.len, 0);
  q.done('held');
  assert.equal(q.shuttingDown, true);
});

test('shutdownWithDrain hands out queued keys and resolves when every worker is done', async () => {
  const q = new WorkQueue<string>({ clock: new TestClock() });
  q.add('a');
  q.add('b');
  assert.equal(await getKey(q), 'a');
  let drained = false;
  const drain = q.shutdownWithDrain().then(() => {
    drained = true;
  });
  q.add('c');
  assert.equal(q.len, 1, 'adds are ignored while draining');
  assert.equal(await getKey(q), 'b', 'already queued keys are still handed out');
  assert.deepEqual(await q.get(), { shutdown: true });
  q.done('a');
  await tick();
  assert.equal(drained, false, 'b is still in flight');
  q.done('b');
  await drain;
  assert.equal(drained, true);
});

test('shutdownWithDrain releases idle getters at once and can be cut short by a signal', async () => {
  const q = new WorkQueue<string>({ clock: new TestClock() });
  const idle = q.get();
  await q.shutdownWithDrain();
  assert.deepEqual(await idle, { shutdown: true });

  const q2 = new WorkQueue<string>({ clock: new TestClock() });
  q2.add('stuck');
  await getKey(q2);
  const ac = new AbortController();
  const drain = q2.shutdownWithDrain(ac.signal);
  ac.abort(new Error('grace period over'));
  await assert.rejects(drain, /grace period over/);
});

function metricValue(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(line + ' '));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

test('metrics: controller-runtime names with a name label', async () => {
  const clock = new TestClock();
  const registry = createMetricsRegistry();
  const q = new WorkQueue<string>({
    name: 'claims',
    clock,
    registry,
    rateLimiter: new ItemExponentialFailureRateLimiter(10, 1000),
  });
  q.add('a');
  q.add('a');
  q.add('b');
  await clock.advance(2000);
  await getKey(q);
  await clock.advance(3000);
  let text = await registry.metrics();
  assert.equal(metricValue(text, 'workqueue_depth{name="claims"}'), 1);
  assert.equal(metricValue(text, 'workqueue_adds_total{name="claims"}'), 2);
  assert.equal(metricValue(text, 'workqueue_queue_duration_seconds_count{name="claims"}'), 1);
  assert.equal(metricValue(text, 'workqueue_queue_duration_seconds_sum{name="claims"}'), 2);
  assert.equal(metricValue(text, 'workqueue_unfinished_work_seconds{name="claims"}'), 3);
  assert.equal(metricValue(text, 'workqueue_longest_running_processor_seconds{name="claims"}'), 3);
  q.done('a');
  q.addRateLimited('a');
  text = await registry.metrics();
  assert.equal(metricValue(text, 'workqueue_work_duration_seconds_count{name="claims"}'), 1);
  assert.equal(metricValue(text, 'workqueue_work_duration_seconds_sum{name="claims"}'), 3);
  assert.equal(metricValue(text, 'workqueue_retries_total{name="claims"}'), 1);
  assert.equal(metricValue(text, 'workqueue_unfinished_work_seconds{name="claims"}'), 0);
  q.add('c'); // not scraped before shutdown: the final counts are still reported
  q.shutdown();
  text = await registry.metrics();
  assert.equal(metricValue(text, 'workqueue_adds_total{name="claims"}'), 3);
  assert.equal(metricValue(text, 'workqueue_depth{name="claims"}'), 0);
  assert.equal(clock.pending, 0);
});

test('metrics: two controllers in one process (own registries), two queues on one registry, conflicts are typed', async () => {
  const clock = new TestClock();
  const regA = new Registry();
  const regB = new Registry();
  const claims = new WorkQueue<string>({ name: 'claims', clock, registry: regA });
  const volumes = new WorkQueue<string>({ name: 'volumes', clock, registry: regA });
  const claimsB = new WorkQueue<string>({ name: 'claims', clock, registry: regB });
  claims.add('x');
  volumes.add('y');
  volumes.add('z');
  const textA = await regA.metrics();
  const textB = await regB.metrics();
  assert.equal(metricValue(textA, 'workqueue_depth{name="claims"}'), 1);
  assert.equal(metricValue(textA, 'workqueue_depth{name="volumes"}'), 2);
  assert.equal(metricValue(textB, 'workqueue_depth{name="claims"}'), 0, 'the second controller is unaffected');
  assert.throws(() => new WorkQueue<string>({ name: 'claims', clock, registry: regA }), DuplicateQueueNameError);
  claims.shutdown();
  const again = new WorkQueue<string>({ name: 'claims', clock, registry: regA }); // name free after shutdown
  const foreign = new Registry();
  new Gauge({ name: 'workqueue_unfinished_work_seconds', help: 'someone else', registers: [foreign] });
  assert.throws(() => new WorkQueue<string>({ name: 'q', clock, registry: foreign }), MetricConflictError);
  for (const q of [volumes, claimsB, again]) q.shutdown();
});

/** A seeded PRNG (mulberry32) so a failing seed can be replayed. */
const prng = seededRandom;

async function randomRun(seed: number): Promise<void> {
  const rand = prng(seed);
  const pick = (n: number) => Math.floor(rand() * n);
  const clock = new TestClock();
  const q = new WorkQueue<string>({
    clock,
    registry: new Registry(),
    name: `prop-${seed}`,
    rateLimiter: new ItemExponentialFailureRateLimiter(1, 20),
  });
  const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
  let step = 0;
  const lastAdd = new Map<string, number>();
  const lastStart = new Map<string, number>();
  const adds = new Map<string, number>();
  const runs = new Map<string, number>();
  const holders = new Set<string>();
  const failures: string[] = [];

  const worker = async () => {
    for (;;) {
      const item = await q.get();
      if (item.shutdown) return;
      const key = item.key;
      if (holders.has(key)) failures.push(`seed ${seed}: ${key} handed to two workers at step ${step}`);
      holders.add(key);
      lastStart.set(key, ++step);
      runs.set(key, (runs.get(key) ?? 0) + 1);
      for (let i = pick(4); i > 0; i--) await tick();
      holders.delete(key);
      q.done(key);
    }
  };
  const workers = Array.from({ length: 1 + pick(4) }, () => worker());

  for (let i = 0; i < 250; i++) {
    const key = keys[pick(keys.length)];
    const op = pick(10);
    if (op < 4) {
      q.add(key);
      lastAdd.set(key, ++step);
      adds.set(key, (adds.get(key) ?? 0) + 1);
    } else if (op < 6) {
      q.addAfter(key, pick(50));
      lastAdd.set(key, ++step);
      adds.set(key, (adds.get(key) ?? 0) + 1);
    } else if (op < 7) {
      q.addRateLimited(key);
      lastAdd.set(key, ++step);
      adds.set(key, (adds.get(key) ?? 0) + 1);
      if (pick(3) === 0) q.forget(key);
    } else if (op < 8) {
      await clock.advance(pick(30));
    } else {
      await tick();
    }
  }
  if (seed % 4 === 0) {
    // Drain while work is in flight: it must finish without two holders of a key, and every worker must exit.
    await q.shutdownWithDrain();
    assert.deepEqual([q.len, q.inProgress, holders.size], [0, 0, 0], `seed ${seed}: drained`);
    await Promise.all(workers);
    assert.deepEqual(failures, []);
    assert.equal(clock.pending, 0);
    return;
  }
  // Let every delay fire and every worker go idle.
  await clock.advance(1000);
  for (let i = 0; i < 1000 && (q.len > 0 || q.inProgress > 0 || q.delayed > 0); i++) await tick();
  assert.deepEqual(failures, []);
  assert.deepEqual([q.len, q.inProgress, q.delayed], [0, 0, 0], `seed ${seed}: queue quiescent`);
  for (const [key, added] of lastAdd) {
    assert.ok(
      (lastStart.get(key) ?? 0) > added,
      `seed ${seed}: ${key} last added at step ${added} but last started at ${lastStart.get(key)}`,
    );
    assert.ok((runs.get(key) ?? 0) <= (adds.get(key) ?? 0), `seed ${seed}: ${key} ran more often than it was added`);
  }
  q.shutdown();
  await Promise.all(workers);
  assert.equal(clock.pending, 0);
}

test('property: random add/addAfter/get/done interleavings with concurrent workers', async () => {
  for (let seed = 1; seed <= 40; seed++) await randomRun(seed);
});
