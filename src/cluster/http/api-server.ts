// The embedded API server's HTTP(S) front: assembles the request pipeline (pipeline.ts: authenticate, audit,
// admin, discovery, route, faults, verb), serves discovery/OpenAPI documents, dispatches verbs to the resource
// handlers, and shuts down cleanly, ending every watch.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { handleAdmin } from './admin.ts';
import { Audit } from './audit.ts';
import { apiGroupDocument, apiGroupList, apiResourceList, apiVersions, SERVER_VERSION } from './discovery.ts';
import { ClusterApiError, badRequest, internalError } from '../common/api-errors.ts';
import { Faults } from './faults.ts';
import { BodyTooLargeError, ClientAbortedError, negotiate, sendError, sendJson, tooLargeError } from './http-io.ts';
import { openApiV3Document, openApiV3Paths } from './openapi.ts';
import {
  audit,
  authenticate,
  compose,
  faults,
  health,
  newContext,
  route,
  type RequestContext,
  type RequestTarget,
} from './pipeline.ts';
import { RESOURCES } from '../registry/registry.ts';
import type { ResourceType } from '../registry/resource-type.ts';
import {
  handleCreate,
  handleDelete,
  handleDeleteCollection,
  handleGet,
  handleList,
  handlePatch,
  handleUpdate,
  type RequestScope,
} from './resource-handlers.ts';
import { admitConnections, ConnectionGuard, LISTEN_BACKLOG } from './connection-admission.ts';
import { resolveLimits, type ServerLimits } from './request-limits.ts';
import { ResourceIndex } from './routing.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { serveWatch, WatchRegistry } from './watch-endpoint.ts';

export interface ApiServerOptions {
  store: ClusterStore;
  /** The bearer token every request (except /healthz, /livez, /readyz) must carry. */
  token: string;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /** Serving certificate; without it the server speaks plain HTTP (debugging only). */
  tls?: { certPem: string; keyPem: string };
  faults?: Faults;
  audit?: Audit;
  /** Default RESOURCES. */
  resources?: readonly ResourceType[];
  /** BOOKMARK interval for watches with allowWatchBookmarks (default 60 s). */
  bookmarkIntervalMs?: number;
  /** Called with unexpected (500) errors. */
  onError?: (err: unknown) => void;
  now?: () => number;
  /** Bounds on what clients can make the server hold (defaults in request-limits.ts). */
  limits?: Partial<ServerLimits>;
}

/** What the server holds right now, for tests and diagnostics. */
export interface ApiServerStats {
  /** Open TCP connections. */
  connections: number;
  /** Open connections that have not sent an authenticated request. */
  unauthenticatedConnections: number;
  /** Unauthenticated connections closed (oldest first) to stay under `maxUnauthenticatedConnections`. */
  evictedConnections: number;
  /** Unsent watch bytes buffered in the server. */
  watchBufferedBytes: number;
}

export interface ApiServer {
  /** https://host:port (or http:// without TLS). */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly faults: Faults;
  readonly audit: Audit;
  readonly watches: WatchRegistry;
  stats(): ApiServerStats;
  /** Ends every watch, stops accepting connections and closes idle keep-alive connections. */
  close(): Promise<void>;
}

/** Starts the API server and resolves once it listens. */
export async function startApiServer(opts: ApiServerOptions): Promise<ApiServer> {
  const store = opts.store;
  const limits = resolveLimits(opts.limits);
  const faultRules = opts.faults ?? new Faults();
  const auditLog =
    opts.audit ?? new Audit({ maxClients: limits.maxAuditClients, maxClientNameLength: limits.maxClientNameLength });
  const index = new ResourceIndex(opts.resources ?? RESOURCES);
  const watches = new WatchRegistry(limits.maxTotalWatchBufferBytes);
  const guard = new ConnectionGuard(limits.maxUnauthenticatedConnections);
  const now = opts.now ?? Date.now;
  const onError = opts.onError ?? (() => {});
  const watchOpts = {
    bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
    maxBufferedBytes: limits.maxWatchBufferBytes,
  };
  const host = opts.host ?? '127.0.0.1';
  let serverAddress = host;
  const unhookClose = faultRules.onCloseWatches(() => watches.closeAll());
  const unhookCompact = faultRules.onCompact(() => store.compact());

  // The request path, one step after another (see pipeline.ts).
  const pipeline = compose([
    health,
    authenticate(opts.token, guard),
    audit(auditLog),
    (ctx, next) => (ctx.path.startsWith('/admin/') ? serveAdmin(ctx) : next()),
    (ctx, next) => (ctx.req.method === 'GET' && handleNonResource(ctx.path, ctx.res) ? undefined : next()),
    route(index),
    faults(faultRules),
    (ctx) =>
      serveVerb({
        store,
        req: ctx.req,
        res: ctx.target,
        query: ctx.url.searchParams,
        request: ctx.request!,
        negotiated: negotiate(ctx.req.headers.accept),
        client: ctx.client,
        now,
        limits,
        faults: faultRules,
      }),
  ]);
  const handle = (req: IncomingMessage, res: ServerResponse): Promise<void> | void =>
    pipeline(newContext(req, res, requestTarget(req.url)));

  const serveAdmin = (ctx: RequestContext): Promise<void> | void => {
    ctx.auditLabel = { verb: ctx.auditLabel.verb, resource: 'admin' };
    return handleAdmin(ctx.req, ctx.res, ctx.path, {
      faults: faultRules,
      audit: auditLog,
      closeWatches: () => {
        const n = watches.size;
        watches.closeAll();
        return n;
      },
      compact: () => {
        store.compact();
        return store.resourceVersion;
      },
    });
  };

  const serveVerb = (scope: RequestScope): Promise<void> | void => {
    const { request } = scope;
    switch (request.verb) {
      case 'get':
        return handleGet(scope);
      case 'list':
        return handleList(scope);
      case 'watch':
        return serveWatch(scope, watches, watchOpts);
      case 'create':
        return handleCreate(scope);
      case 'update':
        return handleUpdate(scope);
      case 'patch':
        return handlePatch(scope);
      case 'delete':
        return handleDelete(scope);
      case 'deletecollection':
        return handleDeleteCollection(scope);
    }
  };

  /** Discovery, version and OpenAPI documents; false when the path is not one of them. */
  const handleNonResource = (path: string, res: ServerResponse): boolean => {
    let doc: object | undefined;
    if (path === '/version') doc = SERVER_VERSION;
    else if (path === '/api') doc = apiVersions(serverAddress);
    else if (path === '/apis') doc = apiGroupList(index);
    else if (path === '/openapi/v3') doc = openApiV3Paths([...index.resources]);
    else if (path.startsWith('/openapi/v3/')) {
      const gvPath = path.slice('/openapi/v3/'.length);
      const gv = gvPath.startsWith('api/') ? gvPath.slice(4) : gvPath.startsWith('apis/') ? gvPath.slice(5) : undefined;
      if (gv === undefined || !index.byGroupVersion.has(gv)) return false;
      doc = openApiV3Document(gvPath, [...index.resources]);
    } else {
      const m = /^\/(?:api\/([^/]+)|apis\/([^/]+)(?:\/([^/]+))?)$/.exec(path);
      if (!m) return false;
      if (m[1]) doc = apiResourceList(index, m[1]);
      else if (m[3]) doc = apiResourceList(index, `${m[2]}/${m[3]}`);
      else doc = apiGroupDocument(index, m[2]);
      if (!doc) return false;
    }
    sendJson(res, 200, JSON.stringify(doc));
    return true;
  };

  const answerFailure = (res: ServerResponse, err: unknown): void => {
    if (err instanceof ClientAbortedError) return;
    if (err instanceof BodyTooLargeError) return sendError(res, tooLargeError(), { Connection: 'close' });
    if (err instanceof ClusterApiError) return sendError(res, err);
    onError(err);
    sendError(res, internalError(err instanceof Error ? err.message : String(err)));
  };
  const fail = (res: ServerResponse, err: unknown): void => answerSafely(res, () => answerFailure(res, err), onError);
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    // Most steps are synchronous (pipeline.ts): errors arrive thrown or as a rejected promise.
    try {
      handle(req, res)?.catch((err: unknown) => fail(res, err));
    } catch (err) {
      fail(res, err);
    }
  };
  const timeouts = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
  };
  const server: Server = opts.tls
    ? createHttpsServer(
        {
          cert: opts.tls.certPem,
          key: opts.tls.keyPem,
          keepAlive: true,
          noDelay: true,
          handshakeTimeout: limits.headersTimeoutMs,
          ...timeouts,
        },
        listener,
      )
    : createHttpServer({ keepAlive: true, noDelay: true, ...timeouts }, listener);
  server.keepAliveTimeout = 65_000;
  admitConnections(server, guard, { tls: opts.tls !== undefined, helloTimeoutMs: limits.headersTimeoutMs });
  // Failed handshakes (including handshake timeouts) are the client's problem, not an internal error.
  server.on('tlsClientError', (_err: Error, socket: Socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, LISTEN_BACKLOG, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  serverAddress = `${urlHost}:${port}`;
  let closing: Promise<void> | undefined;
  return {
    url: `${opts.tls ? 'https' : 'http'}://${urlHost}:${port}`,
    host,
    port,
    faults: faultRules,
    audit: auditLog,
    watches,
    stats: () => ({
      connections: guard.open,
      unauthenticatedConnections: guard.unauthenticated,
      evictedConnections: guard.evicted,
      watchBufferedBytes: watches.bufferedBytes,
    }),
    close() {
      closing ??= new Promise<void>((resolve) => {
        unhookClose();
        unhookCompact();
        watches.closeAll();
        server.close(() => resolve());
        server.closeIdleConnections();
        guard.closeAll();
        // Connections still busy after the watches ended are cut so close() cannot hang on a stuck client.
        setTimeout(() => server.closeAllConnections(), 1000).unref();
      });
      return closing;
    },
  };
}

/** An origin-form target whose path WHATWG URL parsing would leave as it is: no dot segments, escapes or `//` start. */
const PLAIN_TARGET = /^(\/(?!\/)[A-Za-z0-9_~:@!$&'()*+,;=./-]*)(?:\?([\x21-\x22\x24-\x7e]*))?$/;
const DOT_SEGMENT = /\/\.\.?(?:\/|$)/;

/**
 * The path and query of the request target. A plain target is split as it is (what URL would give, without the
 * cost of building one per request); anything else goes through URL. An unparsable target (`//[`, `http://[`)
 * is the client's error, not ours.
 */
export function requestTarget(target: string | undefined): RequestTarget {
  const plain = target === undefined ? undefined : PLAIN_TARGET.exec(target);
  if (plain && !DOT_SEGMENT.test(plain[1]))
    return { pathname: plain[1], searchParams: new URLSearchParams(plain[2] ?? '') };
  try {
    return new URL(target ?? '/', 'http://localhost');
  } catch {
    throw badRequest(`the request target ${JSON.stringify((target ?? '').slice(0, 100))} is not a valid URL`);
  }
}

/**
 * Runs the writing of a response so that nothing thrown while writing it (a body too large for one string, a
 * socket torn down mid-write) can escape and end the process: the connection is destroyed instead.
 */
export function answerSafely(res: ServerResponse, write: () => void, onError: (err: unknown) => void): void {
  try {
    write();
  } catch (err) {
    onError(err);
    res.destroy();
  }
}
