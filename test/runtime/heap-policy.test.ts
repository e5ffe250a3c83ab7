// The run commands' heap policy: the growth percent from $KUBE_PROVISIONER_HEAP_GROWTH_PERCENT (GOGC's role).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import {
  DEFAULT_HEAP_GROWTH_PERCENT,
  HEAP_GROWTH_ENV,
  heapGrowthPercentFrom,
  setHeapGrowth,
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
});
