// The logger the library accepts: a structural subset of pino, so callers can inject their own.
import { pino } from 'pino';
import type { Logger } from '../types/logger.ts';

/** The default logger: pino JSON on stderr at `level` (default from LOG_LEVEL, else info). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({ level: opts.level ?? process.env.LOG_LEVEL ?? 'info', name: opts.name }, pino.destination(2));
}
