// SIGINT/SIGTERM for long-running commands: the first signal aborts (graceful shutdown: workers drained,
// Lease released, endpoints closed); a second one exits at once, for when a shutdown hangs.
import type { Logger } from '../types/logger.ts';

/** Where the signals come from and how the process is ended (the real process by default; tests inject both). */
export interface SignalSource {
  on(signal: NodeJS.Signals, handler: (signal: NodeJS.Signals) => void): unknown;
  off(signal: NodeJS.Signals, handler: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

/** Aborts `controller` on the first SIGINT/SIGTERM. Returns a function that removes the handlers. */
export function abortOnSignals(
  controller: AbortController,
  logger: Pick<Logger, 'warn'>,
  write: (line: string) => void = () => {},
  source: SignalSource = process,
): () => void {
  let received = 0;
  const handler = (sig: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      write(`received ${sig}, shutting down (send it again to exit at once)`);
      controller.abort(new Error(`received ${sig}`));
      return;
    }
    logger.warn({ signal: sig }, 'second signal: exiting without a graceful shutdown');
    source.exit(130);
  };
  source.on('SIGINT', handler);
  source.on('SIGTERM', handler);
  return () => {
    source.off('SIGINT', handler);
    source.off('SIGTERM', handler);
  };
}
