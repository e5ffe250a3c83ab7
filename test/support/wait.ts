// Polling for tests: wait for an asynchronous condition (an informer event, a Bound claim) with a bounded
// deadline instead of fixed sleeps. One implementation for every test area.

export type Probe<T> = () => T | undefined | false | null | Promise<T | undefined | false | null>;

/**
 * How much longer than written every deadline here is. A deadline is a hang guard, never a speed check: a passing
 * wait returns as soon as its condition holds, so only a failing test waits longer. Suites running side by side at
 * a load average of 30 on 2 cores took over 10 s for a first event; `TEST_HANG_GUARD_SCALE` overrides the 4.
 */
export const HANG_GUARD_SCALE = Math.max(1, Number(process.env.TEST_HANG_GUARD_SCALE ?? '') || 4);

/** Polls `fn` until it returns a truthy value; throws with `what` (and the last error) after `timeoutMs` (scaled). */
export async function waitFor<T>(what: string, fn: Probe<T>, timeoutMs = 15_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs * HANG_GUARD_SCALE;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
