// Runtime benchmarks: work queue throughput in add+get+done cycles per second (target > 200,000/s),
// sequential and with concurrent async workers, with and without workqueue_* metrics. Median of 5 runs.
// Run: npm run bench:runtime   (or: node --import tsx bench/runtime.ts)

import { Registry } from 'prom-client';
import { WorkQueue } from '../src/runtime/workqueue.ts';

const CYCLES = 200_000;
const RUNS = 5;
const KEYS = Array.from({ length: 10_000 }, (_, i) => `namespace-${i % 100}/claim-${i}`);

let queueSerial = 0;
function newQueue(withMetrics: boolean): WorkQueue<string> {
  return new WorkQueue<string>(withMetrics ? { name: `bench-${queueSerial++}`, registry: new Registry() } : {});
}

/** One key at a time: add, await get, done. Measures the per-cycle cost including the await. */
async function sequential(withMetrics: boolean): Promise<number> {
  const q = newQueue(withMetrics);
  const start = performance.now();
  for (let i = 0; i < CYCLES; i++) {
    q.add(KEYS[i % KEYS.length]);
    const item = await q.get();
    if (item.shutdown) throw new Error('unexpected shutdown');
    q.done(item.key);
  }
  const seconds = (performance.now() - start) / 1000;
  q.shutdown();
  return CYCLES / seconds;
}

/** A producer adding keys in bursts while 4 async workers get/done, as a controller would run. */
async function concurrent(withMetrics: boolean): Promise<number> {
  const q = newQueue(withMetrics);
  let processed = 0;
  const worker = async () => {
    for (;;) {
      const item = await q.get();
      if (item.shutdown) return;
      processed++;
      q.done(item.key);
    }
  };
  const start = performance.now();
  const workers = Array.from({ length: 4 }, worker);
  for (let i = 0; i < CYCLES; i += 1000) {
    for (let j = i; j < i + 1000; j++) q.add(KEYS[j % KEYS.length]);
    await new Promise<void>((r) => setImmediate(r));
  }
  await q.shutdownWithDrain();
  await Promise.all(workers);
  const seconds = (performance.now() - start) / 1000;
  if (processed !== CYCLES) throw new Error(`processed ${processed} of ${CYCLES}`);
  return CYCLES / seconds;
}

async function median(fn: () => Promise<number>): Promise<number> {
  await fn(); // warm-up
  const results: number[] = [];
  for (let i = 0; i < RUNS; i++) results.push(await fn());
  results.sort((a, b) => a - b);
  return results[Math.floor(RUNS / 2)];
}

const cases: [string, () => Promise<number>][] = [
  ['workqueue sequential add+get+done, no metrics', () => sequential(false)],
  ['workqueue sequential add+get+done, with metrics', () => sequential(true)],
  ['workqueue 4 async workers, bursts of 1000, no metrics', () => concurrent(false)],
  ['workqueue 4 async workers, bursts of 1000, with metrics', () => concurrent(true)],
];

console.log(`node ${process.version}, ${CYCLES} cycles per run, median of ${RUNS} runs`);
for (const [name, fn] of cases) {
  const rate = await median(fn);
  console.log(`${name}: ${Math.round(rate).toLocaleString('en-US')} cycles/s`);
}
