// The run commands' (and dev's) heap policy: the growth percent from $KUBE_PROVISIONER_HEAP_GROWTH_PERCENT (GOGC's role).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
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
} from '../../src/runtime/heap-policy.ts';

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

  it('gives a worker thread a young generation of 2 x 4 MB once a policy is in force, nothing without one', async () => {
    const policy = new URL('../../src/runtime/heap-policy.ts', import.meta.url).href;
    const script = `
      const p = await import(${JSON.stringify(policy)});
      const before = p.workerResourceLimits();
      p.setHeapGrowth(30);
      console.log(JSON.stringify({ before: before ?? null, after: p.workerResourceLimits(), applied: p.appliedHeapGrowth() }));`;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--conditions=kube-provisioner:source',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ]);
    assert.deepEqual(JSON.parse(stdout), {
      before: null,
      after: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
      applied: 30,
    });
    assert.equal(WORKER_YOUNG_GENERATION_MB, 12, 'three semi-spaces of 4 MB');
  });
});
