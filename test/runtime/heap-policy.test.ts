// The run commands' (and dev's) heap policy: the growth percent from $KUBE_PROVISIONER_HEAP_GROWTH_PERCENT (GOGC's role).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import {
  DEFAULT_HEAP_GROWTH_PERCENT,
  HEAP_GROWTH_ENV,
  heapGrowthPercentFrom,
  setHeapGrowth,
  WORKER_YOUNG_GENERATION_MB,
  YOUNG_GENERATION_TARGET_BYTES,
} from '../../src/runtime/heap-policy.ts';

/** Runs an ES module script from source in a fresh node process (V8 flags are per process). */
function runModuleScript(script: string): Promise<{ stdout: string }> {
  return promisify(execFile)(process.execPath, [
    '--conditions=kube-provisioner:source',
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    script,
  ]);
}
describe('heap policy', () => {
  it('takes the growth from the environment, 30% by default and 0 for V8 own rule', () => {
    assert.equal(heapGrowthPercentFrom({}), DEFAULT_HEAP_GROWTH_PERCENT);
    assert.equal(DEFAULT_HEAP_GROWTH_PERCENT, 30);
    assert.equal(heapGrowthPercentFrom({ [HEAP_GROWTH_ENV]: '' }), 30);
    assert.equal(heapGrowthPercentFrom({ [HEAP_GROWTH_ENV]: '50' }), 50);
    assert.equal(heapGrowthPercentFrom({ [HEAP_GROWTH_ENV]: '0' }), 0);
  });

  it('refuses what is not a whole percent', () => {
    for (const bad of ['-1', '2.5', 'lots', '1001']) {
      assert.throws(() => heapGrowthPercentFrom({ [HEAP_GROWTH_ENV]: bad }), new RegExp(HEAP_GROWTH_ENV));
    }
    assert.throws(() => setHeapGrowth(-5), RangeError);
  });

  it('leaves V8 alone at 0', () => {
    assert.equal(setHeapGrowth(0), 0);
  });

  it('is applied by the run commands at start (a bad value stops `run hostpath` before anything else)', async () => {
    const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
    const err = await promisify(execFile)(
      process.execPath,
      ['--conditions=kube-provisioner:source', '--import', 'tsx', main, 'run', 'hostpath'],
      { env: { ...process.env, [HEAP_GROWTH_ENV]: 'lots' } },
    ).then(
      () => undefined,
      (e: { code?: number; stderr?: string }) => e,
    );
    assert.equal(err?.code, 1);
    assert.match(err?.stderr ?? '', new RegExp(`${HEAP_GROWTH_ENV}: expected a whole number`));
  });

  it('is applied by `dev` too (a bad value stops it before its cluster starts)', async () => {
    const main = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
    const dataDir = await mkdtemp(join(tmpdir(), 'kp-heap-policy-'));
    try {
      const err = await promisify(execFile)(
        process.execPath,
        ['--conditions=kube-provisioner:source', '--import', 'tsx', main, 'dev', '--port', '0', '--data-dir', dataDir],
        { env: { ...process.env, [HEAP_GROWTH_ENV]: 'lots' }, timeout: 60_000 },
      ).then(
        () => undefined,
        (e: { code?: number; stderr?: string }) => e,
      );
      assert.equal(err?.code, 1);
      assert.match(err?.stderr ?? '', new RegExp(`${HEAP_GROWTH_ENV}: expected a whole number`));
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("holds the process's young generation at 2 x 4 MB through a burst, also from the moment a worker thread is online", async () => {
    // V8 resets its growth flag to 2 whenever it configures a heap (Heap::ConfigureHeap: a worker starting), and the
    // main thread's next scavenge then doubled its young generation to 2 x 16 MB before the policy's next check (a gc
    // observer or its 250 ms timer). The policy holds it again when any worker is online (a plain Worker here, not
    // only the package's), before the burst starts. The worker stays alive until the burst is over. Sizes of V8's
    // spaces, not timings.
    const policy = new URL('../../src/runtime/heap-policy.ts', import.meta.url).href;
    const dir = await mkdtemp(join(tmpdir(), 'kp-heap-worker-'));
    try {
      const idle = join(dir, 'idle.mjs');
      await writeFile(
        idle,
        "import { parentPort } from 'node:worker_threads'; parentPort.once('message', () => process.exit(0));",
      );
      const script = `
        import v8 from 'node:v8';
        import { pathToFileURL } from 'node:url';
        import { Worker } from 'node:worker_threads';
        const p = await import(${JSON.stringify(policy)});
        p.setHeapGrowth(30);
        const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
        let keep = [];
        let max = 0;
        const burst = async (rounds) => {
          for (let r = 0; r < rounds; r++) {
            for (let i = 0; i < 2000; i++) {
              keep.push({ a: i, b: 'x' + i });
              if (keep.length > 400000) keep = [];
            }
            max = Math.max(max, young());
            await new Promise((resolve) => setImmediate(resolve));
          }
        };
        await burst(300);
        const atTarget = young();
        // Several workers, one after the other, each followed by a burst: a scavenge doubles the young generation
        // only once enough has survived since its last growth, so one worker start alone did not always show it.
        for (let w = 0; w < 10; w++) {
          const worker = new Worker(pathToFileURL(${JSON.stringify(idle)}), { execArgv: [] });
          await new Promise((resolve) => worker.once('online', resolve));
          await burst(150);
          worker.postMessage('exit');
          await new Promise((resolve) => worker.once('exit', resolve));
        }
        console.log(JSON.stringify({ atTarget, max }));`;
      const { stdout } = await runModuleScript(script);
      const { atTarget, max } = JSON.parse(stdout) as { atTarget: number; max: number };
      assert.equal(atTarget, YOUNG_GENERATION_TARGET_BYTES, 'the first burst grows it to the target');
      // At most one doubling past the target: V8 shrinks the young generation when allocation slows (waiting for a
      // worker on a busy machine), the check then lets it grow again, and V8 can collect twice in a row (a full
      // collection, then a scavenge) before any check runs. Without the check at `online` it reached V8's own
      // 2 x 16 MB.
      assert.ok(max <= 2 * YOUNG_GENERATION_TARGET_BYTES, `young generation reached ${max / 1048576} MB`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("starts a worker thread's young generation at 2 x 4 MB: the main thread's hold must not keep it at V8's 2 x 1 MB", async () => {
    // The main thread's hold writes --semi-space-growth-factor=1 once its own young generation is at the target, and
    // V8's flags are process-wide: a worker started then never grew past its initial 2 x 1 MB, whatever its
    // resourceLimits allowed (dev's cluster thread at 10,000 claims: new space 2 MB, GC 15% of its busy time).
    // Sizes of V8's spaces, not timings.
    const policy = new URL('../../src/runtime/heap-policy.ts', import.meta.url).href;
    const script = `
      import v8 from 'node:v8';
      import { Worker } from 'node:worker_threads';
      const p = await import(${JSON.stringify(policy)});
      p.setHeapGrowth(30);
      const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
      let keep = [];
      for (let r = 0; r < 300 && young() < p.YOUNG_GENERATION_TARGET_BYTES; r++) {
        for (let i = 0; i < 2000; i++) {
          keep.push({ a: i, b: 'x' + i });
          if (keep.length > 400000) keep = [];
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
      const main = young();
      const code = \`
        const v8 = require('node:v8');
        const { parentPort } = require('node:worker_threads');
        parentPort.once('message', () => {
          let keep = [];
          for (let i = 0; i < 3e6; i++) { keep.push({ a: i, b: 'x' + i }); if (keep.length > 1000) keep = []; }
          parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);
        });\`;
      const worker = new Worker(code, { eval: true, execArgv: [], resourceLimits: p.workerResourceLimits() });
      await new Promise((resolve) => worker.once('online', resolve));
      worker.postMessage('go');
      const inWorker = await new Promise((resolve) => worker.once('message', resolve));
      await worker.terminate();
      console.log(JSON.stringify({ main, inWorker }));`;
    const { stdout } = await runModuleScript(script);
    const { main, inWorker } = JSON.parse(stdout) as { main: number; inWorker: number };
    assert.equal(main, YOUNG_GENERATION_TARGET_BYTES, "the main thread's hold is in force");
    assert.equal(inWorker, YOUNG_GENERATION_TARGET_BYTES, `the worker's young generation is ${inWorker / 1048576} MB`);
  });

  it('takes the young generations from the environment, powers of two from 2 to 64 MB', async () => {
    const policy = new URL('../../src/runtime/heap-policy.ts', import.meta.url).href;
    const script = `
      const p = await import(${JSON.stringify(policy)});
      const bad = [];
      for (const v of ['3', '128', 'big', '1']) {
        try { p.applyHeapPolicy({ [p.WORKER_YOUNG_GENERATION_ENV]: v }); } catch (err) { bad.push(v); }
      }
      p.applyHeapPolicy({ [p.WORKER_YOUNG_GENERATION_ENV]: '16', [p.YOUNG_GENERATION_ENV]: '16' });
      console.log(JSON.stringify({ bad, limits: p.workerResourceLimits() }));`;
    const { stdout } = await runModuleScript(script);
    assert.deepEqual(JSON.parse(stdout), { bad: ['3', '128', 'big', '1'], limits: { maxYoungGenerationSizeMb: 24 } });
  });

  it('gives a worker thread a young generation of 2 x 4 MB once a policy is in force, nothing without one', async () => {
    const policy = new URL('../../src/runtime/heap-policy.ts', import.meta.url).href;
    const script = `
      const p = await import(${JSON.stringify(policy)});
      const before = p.workerResourceLimits();
      p.setHeapGrowth(30);
      console.log(JSON.stringify({ before: before ?? null, after: p.workerResourceLimits(), applied: p.appliedHeapGrowth() }));`;
    const { stdout } = await runModuleScript(script);
    assert.deepEqual(JSON.parse(stdout), {
      before: null,
      after: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      applied: 30,
    });
    assert.equal(WORKER_YOUNG_GENERATION_MB, 12, 'three semi-spaces of 4 MB');
  });
});
