// The seed of a randomized test: FUZZ_SEED from the environment (to replay a failure), else a fresh one. Either
// way it is printed as a test diagnostic (`FUZZ_SEED=N` in the runner's output) and every assertion message of
// the test carries it, so a failure seen once, in CI or on a busy machine, can be run again with the same inputs:
//   FUZZ_SEED=N node --conditions=kube-provisioner:source --import tsx --test test/hostpath/hostile-fuzz.test.ts
import type { TestContext } from 'node:test';

/** The seed for this run of `t` (FUZZ_SEED, or PATH_FUZZ_SEED, its older name), printed as a diagnostic. */
export function fuzzSeed(t: TestContext, env: NodeJS.ProcessEnv = process.env): number {
  const given = env.FUZZ_SEED ?? env.PATH_FUZZ_SEED;
  const seed = given === undefined || given === '' ? Date.now() % 100_000 : Number(given);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new Error(`FUZZ_SEED must be a non-negative integer, got ${JSON.stringify(given)}`);
  t.diagnostic(`FUZZ_SEED=${seed}${given === undefined || given === '' ? '' : ' (from the environment)'}`);
  return seed;
}

/** A small seeded generator (mulberry32): the same seed gives the same sequence in [0, 1). */
export function seededRandom(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
