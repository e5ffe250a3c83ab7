// The logger the library accepts: a structural subset of pino, so callers can inject their own.
import { pino } from 'pino';

/** The structured logger the library writes to (pino-compatible: debug/info/warn/error/child). */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** The default logger: pino JSON on stderr at `level` (default from LOG_LEVEL, else info). */
export function createLogger(opts: { level?: string; name?: string } = {}): Logger {
  return pino({ level: opts.level ?? process.env.LOG_LEVEL ?? 'info', name: opts.name }, pino.destination(2));
}

/** A logger that drops everything: the default inside tests and embedded uses that pass none. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
