// The embedded API server's HTTP(S) front: listens, admits connections, hands each request to its route
// (api-routes.ts: routed once, then that route's composed steps), answers failures as Status errors, and shuts
// down cleanly, ending every watch.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { apiRoutes } from './api-routes.ts';
import { Audit } from './audit.ts';
import { ClusterApiError, internalError } from '../common/api-errors.ts';
import { Faults } from './faults.ts';
import { BodyTooLargeError, ClientAbortedError, sendError, tooLargeError } from './http-io.ts';
import { RESOURCES } from '../registry/registry.ts';
import type { ResourceType } from '../registry/resource-type.ts';
import { admitConnections, ConnectionGuard, LISTEN_BACKLOG } from './connection-admission.ts';
import { resolveLimits, type ServerLimits } from './request-limits.ts';
import { ResourceIndex } from './routing.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { WatchRegistry } from './watch-endpoint.ts';

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
  /** TLS connections handed to the TLS layer (their ClientHello complete): each costs a key exchange. */
  tlsHandshakes: number;
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

  // The request path: one route per request, each route its own composed steps (api-routes.ts).
  const handle = apiRoutes({
    index,
    token: opts.token,
    guard,
    audit: auditLog,
    admin: {
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
    },
    serverAddress: () => serverAddress,
    verbs: { store, now, limits, faults: faultRules, watches, watchOptions: watchOpts },
  });

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
      tlsHandshakes: guard.handshakes,
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
