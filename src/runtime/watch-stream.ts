// One open watch: turns a newline-delimited JSON response body into WatchEvents, enforces an idle timeout
// (a silent half-dead connection is the classic informer stall, client-node #364/#958/#2432), and turns
// in-stream ERROR events into typed errors so a 410 arrives as GoneError whether it came as HTTP or in-stream.
import type { IncomingMessage } from 'node:http';
import type { KubeObject, Status, WatchEvent } from '../types/k8s.ts';
import { errorFromStatus, NetworkError, syntheticStatus, TimeoutError } from './status-errors.ts';

/** Event types a WatchStream yields (ERROR events are thrown as ApiError instead). */
export type WatchStreamEvent<T extends KubeObject> = WatchEvent<T> & {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
};

/**
 * An open watch. Iterate it with `for await`; iteration ends when the server closes the stream cleanly
 * (e.g. after `timeoutSeconds`), and throws GoneError (410), another ApiError for an in-stream ERROR,
 * TimeoutError when nothing arrived for `idleTimeoutMs`, or NetworkError when the connection broke.
 * `close()` ends iteration without an error.
 */
export class WatchStream<T extends KubeObject = KubeObject> implements AsyncIterable<WatchStreamEvent<T>> {
  private closed = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private iterated = false;

  constructor(
    private readonly res: IncomingMessage,
    private readonly request: { verb: string; path: string },
    private readonly idleTimeoutMs: number,
  ) {
    res.setEncoding('utf8');
    // Errors reach the iterator through the stream's own async-iterator machinery; this listener only keeps
    // an error on a never-iterated stream from becoming an uncaught exception.
    res.on('error', () => {});
    this.armIdle();
  }

  /** Stops the watch; a running `for await` finishes normally. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearIdle();
    this.res.destroy();
  }

  [Symbol.asyncIterator](): AsyncIterator<WatchStreamEvent<T>> {
    if (this.iterated) throw new Error('a WatchStream can be iterated only once');
    this.iterated = true;
    return this.events();
  }

  private async *events(): AsyncGenerator<WatchStreamEvent<T>> {
    let buffered = '';
    try {
      for await (const chunk of this.res as AsyncIterable<string>) {
        this.armIdle();
        buffered += chunk;
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline);
          buffered = buffered.slice(newline + 1);
          if (line.trim()) yield this.decode(line);
          newline = buffered.indexOf('\n');
        }
      }
      if (buffered.trim() && !this.closed) yield this.decode(buffered);
    } catch (err) {
      if (this.closed) return;
      if (err instanceof TimeoutError || (err instanceof Error && err.name === 'AbortError')) throw err;
      if (err instanceof Error && 'status' in err) throw err; // already an ApiError from decode()
      throw new NetworkError(
        `watch ${this.request.path}: ${(err as Error).message}`,
        true,
        (err as NodeJS.ErrnoException).code,
        this.request,
        { cause: err },
      );
    } finally {
      this.clearIdle();
      if (!this.res.destroyed) this.res.destroy();
    }
  }

  private decode(line: string): WatchStreamEvent<T> {
    let ev: WatchEvent<T | Status>;
    try {
      ev = JSON.parse(line) as WatchEvent<T | Status>;
    } catch (err) {
      // Skipping a line (client-node's choice) could silently lose a state change; reconnecting from the last RV cannot.
      throw new NetworkError(`watch ${this.request.path}: malformed event`, true, undefined, this.request, {
        cause: err,
      });
    }
    if (ev.type === 'ERROR') throw errorFromStatus(ev.object as Status, this.request);
    if (!ev.object || typeof ev.object !== 'object') {
      throw new NetworkError(`watch ${this.request.path}: event without object`, true, undefined, this.request);
    }
    return ev as WatchStreamEvent<T>;
  }

  private armIdle(): void {
    if (this.idleTimeoutMs <= 0 || this.closed) return;
    if (this.idleTimer) {
      this.idleTimer.refresh();
      return;
    }
    this.idleTimer = setTimeout(() => {
      const msg = `watch ${this.request.path}: no data for ${this.idleTimeoutMs} ms`;
      this.res.destroy(new TimeoutError(syntheticStatus(0, 'Timeout', msg), this.request));
    }, this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  private clearIdle(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }
}
