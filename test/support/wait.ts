// Polling for tests: wait for an asynchronous condition (an informer event, a Bound claim) with a bounded
// deadline instead of fixed sleeps. One implementation for every test area.

export type Probe<T> = () => T | undefined | false | null | Promise<T | undefined | false | null>;

/** Polls `fn` until it returns a truthy value; throws with `what` (and the last error) after `timeoutMs`. */
export async function waitFor<T>(what: string, fn: Probe<T>, timeoutMs = 15_000, intervalMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
