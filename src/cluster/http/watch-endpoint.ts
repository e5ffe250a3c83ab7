// Watch over HTTP: newline-delimited JSON events (those committed in one turn of the event loop written as one
// chunk), initial ADDED events for resourceVersion ""/"0", replay after "N", 410 Expired as an ERROR event,
// BOOKMARKs with allowWatchBookmarks, sendInitialEvents, timeoutSeconds, and per-event Tables for kubectl get -w.
import type { StatusCause } from '../../types/k8s.ts';
import { ClusterApiError, badRequest, invalid } from '../common/api-errors.ts';
import { apiVersionOf } from '../registry/resource-type.ts';
import { includeObjectParam, storageResource, viewObject, type RequestScope } from './resource-handlers.ts';
import { setLongTimeout, watchTimeoutMs } from '../common/long-timeout.ts';
import { toTable } from '../registry/tables.ts';
import { parseListQuery, type ListQuery } from './query-params.ts';
import type { FilteredEvent } from '../storage/watch-cache.ts';
import { watchFrame, watchLine } from '../storage/stored-entry.ts';

export interface WatchStreamOptions {
  /** Interval between BOOKMARK events for watches that allow them (kube-apiserver: ~60 s). */
  bookmarkIntervalMs: number;
  /**
   * A watcher whose unsent output exceeds this has its connection destroyed (kube-apiserver drops slow
   * watchers too); the client re-watches from its last resourceVersion. Ending it gracefully would keep the
   * buffer until the client reads it, which a stalled client never does.
   */
  maxBufferedBytes: number;
}

/**
 * The open watch streams of one server, so they can all be closed (admin close-watches, shutdown), and the
 * server-wide account of their unsent bytes: the watch that pushes the total past the bound is destroyed.
 */
export class WatchRegistry {
  private readonly open = new Set<() => void>();
  private buffered = 0;
  constructor(readonly maxTotalBufferedBytes = Infinity) {}
  add(close: () => void): () => void {
    this.open.add(close);
    return () => this.open.delete(close);
  }
  get size(): number {
    return this.open.size;
  }
  /** Unsent bytes of every open watch, as last reported. */
  get bufferedBytes(): number {
    return this.buffered;
  }
  /** A watch's buffer went from `before` to `after` bytes; false when the server-wide bound is exceeded. */
  account(before: number, after: number): boolean {
    this.buffered += after - before;
    return this.buffered <= this.maxTotalBufferedBytes;
  }
  closeAll(): void {
    for (const close of [...this.open]) close();
  }
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** Gathered watch frames are written at once past this many bytes (a replay of many objects is not held whole). */
const WATCH_FLUSH_BYTES = 64 * 1024;

/** Frames as one buffer of `bytes` bytes. */
function joinFrames(frames: ReadonlyArray<string | Buffer>, bytes: number): Buffer {
  const out = Buffer.allocUnsafe(bytes);
  let at = 0;
  for (const f of frames) at += typeof f === 'string' ? out.write(f, at) : f.copy(out, at);
  return out;
}

/** The parameters of a watch request, validated; what serveWatch needs before it writes anything. */
export interface WatchRequest {
  lq: ListQuery;
  /** The request's field selector, with metadata.name added for a watch of one named object. */
  fieldSelector: string | undefined;
  rvParam: string | undefined;
  sendInitial: boolean | undefined;
  match: string;
  bookmarks: boolean;
}

/**
 * Parses and validates a watch's query (pure: no store, no response). @throws ClusterApiError 400/422 for a
 * name that contradicts the field selector, a malformed resourceVersion, or a forbidden resourceVersionMatch.
 */
export function parseWatchRequest(
  rt: { group: string; resource: string },
  name: string | undefined,
  query: URLSearchParams,
): WatchRequest {
  const lq = parseListQuery(query);
  let fieldSelector = lq.fieldSelector;
  if (name !== undefined) {
    const m = fieldSelector ? /(?:^|,)metadata\.name==?([^,]*)/.exec(fieldSelector) : null;
    if (m && m[1] !== name)
      throw badRequest(`fieldSelector metadata.name doesn't match requested name: ${m[1]} != ${name}`);
    fieldSelector = fieldSelector ? `${fieldSelector},metadata.name=${name}` : `metadata.name=${name}`;
  }
  const rvParam = lq.resourceVersion;
  if (rvParam !== undefined && rvParam !== '' && !/^\d+$/.test(rvParam)) {
    const cause: StatusCause = {
      reason: 'FieldValueInvalid',
      message: `Invalid value: "${rvParam}": strconv.ParseUint: parsing "${rvParam}": invalid syntax`,
      field: 'resourceVersion',
    };
    throw invalid({ group: rt.group, resource: rt.resource, kind: rt.resource }, '', [cause]);
  }
  const sendInitial = lq.sendInitialEvents;
  // validateWatchOptions (apimachinery internalversion/validation), with the WatchList gate on as in 1.32.
  const match = lq.resourceVersionMatch;
  const causes: StatusCause[] = [];
  const forbid = (message: string) =>
    causes.push({ reason: 'FieldValueForbidden', message: `Forbidden: ${message}`, field: 'resourceVersionMatch' });
  if (sendInitial !== undefined && match !== 'NotOlderThan')
    forbid('sendInitialEvents requires setting resourceVersionMatch to NotOlderThan');
  if (match !== '') {
    if (sendInitial === undefined)
      forbid('resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
    if (match !== 'NotOlderThan') {
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${JSON.stringify(match)}: supported values: "NotOlderThan"`,
        field: 'resourceVersionMatch',
      });
    }
    if (lq.continueToken) forbid('resourceVersionMatch is forbidden when continue is provided');
  }
  if (causes.length) throw invalid({ group: 'meta.k8s.io', resource: 'listoptions', kind: 'ListOptions' }, '', causes);
  const bookmarks = lq.allowWatchBookmarks;
  return { lq, fieldSelector, rvParam, sendInitial, match, bookmarks };
}

/** Serves a watch request. @throws ClusterApiError (before any byte is written) for invalid parameters. */
export function serveWatch(s: RequestScope, registry: WatchRegistry, opts: WatchStreamOptions): void {
  const { rt, namespace, name } = s.request;
  const q = s.query;
  const { lq, fieldSelector, rvParam, sendInitial, match, bookmarks } = parseWatchRequest(rt, name, q);
  const timeoutMs = watchTimeoutMs(lq.timeoutSeconds === undefined ? null : String(lq.timeoutSeconds), Math.random);
  const resource = storageResource(rt);
  const filter = s.store.filter(resource, { namespace, labelSelector: lq.labelSelector, fieldSelector });
  let startRv = rvParam;
  if (sendInitial === true) startRv = '0';
  else if (sendInitial === false && (!rvParam || rvParam === '0')) startRv = String(s.store.resourceVersion);

  const res = s.res;
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private' });
  res.flushHeaders();

  const apiVersion = apiVersionOf(rt);
  const table = s.negotiated.table;
  const includeObject = includeObjectParam(q);
  let tableHeaderSent = false;
  const lineOf = (f: FilteredEvent): string | Buffer => {
    if (table) {
      const t = toTable(
        rt,
        [viewObject(rt, f.entry)],
        { resourceVersion: String(f.entry.rv) },
        includeObject,
        s.now(),
      ) as Record<string, unknown>;
      if (tableHeaderSent) delete t.columnDefinitions;
      tableHeaderSent = true;
      return watchLine(f.type, JSON.stringify(t));
    }
    if (rt.view) return watchLine(f.type, JSON.stringify(rt.view.fromStorage(f.entry.obj)));
    return f.shared ? f.shared.frame() : watchFrame(f.type, f.entry);
  };
  const bookmarkLine = (initialEnd: boolean): string => {
    const annotations = initialEnd ? `,"annotations":{"${INITIAL_EVENTS_END}":"true"}` : '';
    const obj = `{"kind":"${rt.kind}","apiVersion":"${apiVersion}","metadata":{"resourceVersion":"${s.store.resourceVersion}","creationTimestamp":null${annotations}}}`;
    return watchLine('BOOKMARK', obj);
  };

  let closed = false;
  // Frames waiting for this turn of the event loop to end (see `write`), and their size in bytes.
  let pending: Array<string | Buffer> = [];
  let pendingBytes = 0;
  let flushScheduled = false;
  // This watch's share of the registry's buffered bytes.
  let accounted = 0;
  const account = (): boolean => {
    const now = closed ? 0 : res.writableLength + pendingBytes;
    const ok = registry.account(accounted, now);
    accounted = now;
    return ok;
  };
  // Filled in as the stream starts; close() may run at any point (client gone, admin, shutdown).
  const parts: {
    unsubscribe?: () => void;
    bookmarkTimer?: NodeJS.Timeout;
    cancelTimeout?: () => void;
    unregister?: () => void;
  } = {};
  /** Hands the waiting frames to the response as one chunk. */
  const flush = (): void => {
    if (pending.length === 0) return;
    const frames = pending;
    const bytes = pendingBytes;
    pending = [];
    pendingBytes = 0;
    res.write(frames.length === 1 ? frames[0] : joinFrames(frames, bytes));
  };
  const close = (): void => {
    if (closed) return;
    if (!res.writableEnded && !res.destroyed) flush();
    closed = true;
    pending = [];
    pendingBytes = 0;
    parts.unsubscribe?.();
    clearInterval(parts.bookmarkTimer);
    parts.cancelTimeout?.();
    parts.unregister?.();
    account();
    if (!res.writableEnded) res.end();
  };
  /** A stalled client: its buffered bytes are released only by destroying the connection. */
  const drop = (): void => {
    pending = [];
    pendingBytes = 0;
    close();
    res.destroy();
  };
  const flushNow = (): void => {
    flushScheduled = false;
    if (closed) return;
    flush();
    account();
  };
  // Frames are gathered while the event loop works through the I/O that is ready now, and leave as ONE chunk of
  // the chunked response once it has (setImmediate): kube-apiserver's watch handler likewise flushes only when no
  // further event is queued. A burst of pipelined writes on several connections then costs each watcher one
  // write instead of one per event: Node sends every write of a chunked response as four pieces (size, CRLF,
  // data, CRLF) that the TLS socket's writev handles one by one. Past WATCH_FLUSH_BYTES the frames are written at
  // once, so a large replay is never held whole.
  const write = (line: string | Buffer): void => {
    if (closed) return;
    pending.push(line);
    pendingBytes += typeof line === 'string' ? Buffer.byteLength(line) : line.length;
    if (pendingBytes >= WATCH_FLUSH_BYTES) flush();
    else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flushNow);
    }
    const withinTotal = account();
    if (!withinTotal || res.writableLength + pendingBytes > opts.maxBufferedBytes) drop();
  };
  res.on('drain', () => {
    if (!closed) account();
  });

  try {
    parts.unsubscribe = s.store.watchEntries(resource, filter, startRv, (f) => write(lineOf(f)));
  } catch (err) {
    if (err instanceof ClusterApiError) {
      write(watchLine('ERROR', JSON.stringify(err.status)));
      close();
      return;
    }
    close();
    throw err;
  }
  // SetListOptionsDefaults (WatchList, on by default in 1.32): a watch from ""/"0" without sendInitialEvents or
  // resourceVersionMatch is served as sendInitialEvents=true, so it too ends its initial events with the marker.
  const defaultedInitial = sendInitial === undefined && match === '' && (!rvParam || rvParam === '0');
  if ((sendInitial === true || defaultedInitial) && bookmarks) write(bookmarkLine(true));
  // The initial events leave with the answer's headers, as one chunk, not a turn later.
  if (!closed) flush();
  if (closed) {
    // Closed while replaying (client too slow): the subscription did not exist yet when close() ran.
    parts.unsubscribe?.();
    return;
  }
  parts.unregister = registry.add(close);
  if (bookmarks) {
    parts.bookmarkTimer = setInterval(() => write(bookmarkLine(false)), opts.bookmarkIntervalMs);
    parts.bookmarkTimer.unref();
  }
  parts.cancelTimeout = setLongTimeout(() => {
    if (bookmarks) write(bookmarkLine(false));
    close();
  }, timeoutMs);
  res.on('close', close);
  // A write racing a reset connection must not become an unhandled 'error' event.
  res.on('error', close);
  s.req.on('close', () => {
    if (s.req.destroyed) close();
  });
}
