// SIGINT/SIGTERM for long-running commands: the first signal aborts (graceful shutdown: workers drained,
// Lease released, endpoints closed); a second one exits at once, for when a shutdown hangs.
import type { Logger } from '../runtime/logger.ts';

/** Aborts `controller` on the first SIGINT/SIGTERM. Returns a function that removes the handlers. */
export function abortOnSignals(controller: AbortController, logger: Pick<Logger, 'warn'>, write: (line: string) => void = () => {}): () => void {
  let received = 0;
  const handler = (sig: NodeJS.Signals) => {
    received++;
    if (received === 1) {
      write(`received ${sig}, shutting down (send it again to exit at once)`);
      controller.abort(new Error(`received ${sig}`));
      return;
    }
    logger.warn({ signal: sig }, 'second signal: exiting without a graceful shutdown');
    process.exit(130);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
