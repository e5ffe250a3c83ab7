// The API server's routes, Hono's way: the request is matched once (routing.ts `matchRoute`), and the matched
// route runs its own chain of named steps (pipeline.ts `compose`), built once when the server starts:
//   health             health
//   admin              authenticate -> audit -> admin
//   discovery          authenticate -> audit -> discovery
//   resource           authenticate -> audit -> faults -> verb
//   notFound           authenticate -> audit -> refuseNotFound
//   methodNotAllowed   authenticate -> audit -> refuseMethod
//   podLog             authenticate -> audit -> refusePodLog
// Every route but health authenticates first, so a client without the token learns nothing about paths.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { serveAdmin, type AdminScope } from './admin.ts';
import type { Audit } from './audit.ts';
import type { ConnectionGuard } from './connection-admission.ts';
import { serveDiscovery } from './discovery.ts';
import type { Faults } from './faults.ts';
import { negotiate } from './http-io.ts';
import {
  audit,
  authenticate,
  compose,
  faults,
  health,
  newContext,
  refuseMethod,
  refuseNotFound,
  refusePodLog,
  requestPath,
  requestTarget,
  type Step,
} from './pipeline.ts';
import type { ServerLimits } from './request-limits.ts';
import {
  handleCreate,
  handleDelete,
  handleDeleteCollection,
  handleGet,
  handleList,
  handlePatch,
  handleUpdate,
} from './resource-handlers.ts';
import { matchRoute, type ResourceIndex, type Route } from './routing.ts';
import { serveWatch, type WatchRegistry, type WatchStreamOptions } from './watch-endpoint.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';

/** What the verb step hands every resource handler besides the request itself. */
export interface VerbScope {
  store: ClusterStore;
  now(): number;
  limits: Pick<ServerLimits, 'maxJsonDepth' | 'maxPatchCopyBytes'>;
  faults: Faults;
  watches: WatchRegistry;
  watchOptions: WatchStreamOptions;
}

/** The resource route's last step: the routed verb, answered into `ctx.target` (a fault may have detached it). */
export function serveVerb(scope: VerbScope): Step {
  return (ctx) => {
    const request = ctx.request;
    if (!request) throw new Error(`the verb step ran for a ${ctx.route.kind} route`);
    const s = {
      store: scope.store,
      req: ctx.req,
      res: ctx.target,
      query: ctx.url.searchParams,
      request,
      negotiated: negotiate(ctx.req.headers.accept),
      client: ctx.client,
      now: scope.now,
      limits: scope.limits,
      faults: scope.faults,
    };
    switch (request.verb) {
      case 'get':
        return handleGet(s);
      case 'list':
        return handleList(s);
      case 'watch':
        return serveWatch(s, scope.watches, scope.watchOptions);
      case 'create':
        return handleCreate(s);
      case 'update':
        return handleUpdate(s);
      case 'patch':
        return handlePatch(s);
      case 'delete':
        return handleDelete(s);
      case 'deletecollection':
        return handleDeleteCollection(s);
    }
  };
}

export interface ApiRoutesOptions {
  index: ResourceIndex;
  token: string;
  guard: ConnectionGuard;
  audit: Audit;
  admin: AdminScope;
  /** host:port for /api's serverAddressByClientCIDRs, known once the server listens. */
  serverAddress: () => string;
  verbs: VerbScope;
}

/** Handles one request: routes it once, then runs its route's chain. Errors are thrown or a rejected promise. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

/** The server's routes, each with its composed chain. */
export function apiRoutes(opts: ApiRoutesOptions): RequestHandler {
  const authenticated = (...steps: Step[]) =>
    compose([authenticate(opts.token, opts.guard), audit(opts.audit), ...steps]);
  const chains: { readonly [K in Route['kind']]: ReturnType<typeof compose> } = {
    health: compose([health]),
    admin: authenticated(serveAdmin(opts.admin)),
    discovery: authenticated(serveDiscovery(opts.index, opts.serverAddress)),
    resource: authenticated(faults(opts.verbs.faults), serveVerb(opts.verbs)),
    notFound: authenticated(refuseNotFound),
    methodNotAllowed: authenticated(refuseMethod),
    podLog: authenticated(refusePodLog),
  };
  return (req, res) => {
    const url = requestTarget(req.url);
    const path = requestPath(url);
    const route = matchRoute(opts.index, req.method ?? 'GET', path, url.searchParams);
    return chains[route.kind](newContext(req, res, url, path, route));
  };
}
