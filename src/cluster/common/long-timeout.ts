// Timers longer than Node's setTimeout can hold (2^31-1 ms, about 24.8 days; anything longer fires after 1 ms),
// and the length of a watch: a client asking for a long watch (timeoutSeconds of years) gets a long watch.

/** Node's largest timer delay. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Timer functions, injectable for tests. */
export interface TimerApi {
  setTimeout(fn: () => void, ms: number): { unref?(): unknown };
  clearTimeout(t: unknown): void;
}

/**
 * Runs `fn` after `ms` milliseconds, any length (Infinity: never), chaining timers of at most MAX_TIMER_MS.
 * The timers do not keep the process alive. Returns the cancel function.
 */
export function setLongTimeout(fn: () => void, ms: number, timers: TimerApi = globalThis): () => void {
  let cancelled = false;
  let current: unknown;
  const deadlineLeft = { ms };
  const arm = (): void => {
    if (cancelled || deadlineLeft.ms === Infinity) return;
    const step = Math.min(deadlineLeft.ms, MAX_TIMER_MS);
    deadlineLeft.ms -= step;
    const t = timers.setTimeout(() => (deadlineLeft.ms > 0 ? arm() : fn()), Math.max(0, step));
    t.unref?.();
    current = t;
  };
  arm();
  return () => {
    cancelled = true;
    timers.clearTimeout(current);
  };
}

/**
 * The duration of a watch from its timeoutSeconds parameter: the client's value when it is a positive number
 * (however large), else kube-apiserver's default of 30 to 60 minutes.
 */
export function watchTimeoutMs(timeoutSeconds: string | null, random: () => number): number {
  const seconds = Number(timeoutSeconds ?? '');
  if (timeoutSeconds !== null && timeoutSeconds !== '' && seconds > 0 && !Number.isNaN(seconds)) return seconds * 1000;
  return 1_800_000 * (1 + random());
}
