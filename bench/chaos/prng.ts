// A small seeded PRNG (mulberry32) so a chaos run's schedule (claims, lifetimes, fault times) is the same for a
// given seed. Timing still varies from run to run; the decisions do not.

import { seededRandom } from '../../src/cluster/common/seeded-random.ts';

/** Returns a function yielding floats in [0, 1), deterministic for `seed` (the cluster's fault draws use the same). */
export const mulberry32 = seededRandom;

/** A seeded random source with the helpers the harness needs. */
export class Prng {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = mulberry32(seed);
  }

  /** [0, 1). */
  float(): number {
    return this.#next();
  }

  /** Uniform in [min, max). */
  between(min: number, max: number): number {
    return min + (max - min) * this.#next();
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.#next() * n);
  }

  chance(p: number): boolean {
    return this.#next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }
}
