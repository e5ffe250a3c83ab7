// The logger interface the library and the embedded cluster write to: a structural subset of pino, so callers
// can inject their own. It lives in types/ so the cluster needs nothing from the controller runtime.

/** A structured logger: debug/info/warn/error/child, pino-compatible. */
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/** A logger that drops everything: the default when none is passed. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
