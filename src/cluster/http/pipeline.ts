// The API server's request pipeline: small steps, each either answering the request or calling next() (the
// shape of Hono's compose.ts). server.ts assembles them in order: health -> authenticate -> audit -> admin ->
// discovery -> route -> faults -> verb. Faults come after routing because fault rules match the routed verb,
// resource, namespace and name.
import { timingSafeEqual } from 'node:crypto';
import { ServerResponse, type IncomingMessage } from 'node:http';
import { badRequest, methodNotRouted, serverTimeout, unauthorized } from '../common/api-errors.ts';
import type { Audit } from './audit.ts';
import type { FaultDecision, Faults } from './faults.ts';
import { sendError, sendPlainNotFound, sendText } from './http-io.ts';
import { queryBool } from './query-params.ts';
import type { ConnectionGuard } from './connection-admission.ts';
import { routeResource, type ResourceIndex, type ResourceRequest } from './routing.ts';

/** What the steps of one request share. */
/** The parts of the request target the steps read (a URL has them). */
export interface RequestTarget {
  readonly pathname: string;
  readonly searchParams: URLSearchParams;
}

export interface RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly url: RequestTarget;
  /** The URL path without a trailing slash. */
  readonly path: string;
  /** The client name the audit counts under (set by the audit step). */
  client: string;
  /** The audit entry's verb and resource, refined by later steps. */
  auditLabel: { verb: string; resource: string };
  /** The routed resource request (set by the route step). */
  request?: ResourceRequest;
  /** Where the verb writes its answer: `res`, or a detached response when a fault loses the answer. */
  target: ServerResponse;
}

/** One step: answers the request itself, or calls next() to hand it on. */
export type Step = (ctx: RequestContext, next: () => Promise<void> | void) => Promise<void> | void;

/** A step called next() twice (a programming error, never a client's). */
export class NextCalledTwiceError extends Error {}

/**
 * Runs the steps in order; each one decides whether (and when) the rest runs. Synchronous steps run without a
 * promise per step: the result is a promise only when some step is asynchronous (the verbs that read a body).
 */
export function compose(steps: readonly Step[]): (ctx: RequestContext) => Promise<void> | void {
  return (ctx) => {
    let last = -1;
    const dispatch = (i: number): Promise<void> | void => {
      if (i <= last) throw new NextCalledTwiceError(`step ${i - 1} called next() twice`);
      last = i;
      const step = steps[i];
      return step ? step(ctx, () => dispatch(i + 1)) : undefined;
    };
    return dispatch(0);
  };
}

/** The context of a request that has just arrived. */
export function newContext(req: IncomingMessage, res: ServerResponse, url: RequestTarget): RequestContext {
  const path = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  return {
    req,
    res,
    url,
    path,
    client: 'unknown',
    auditLabel: { verb: (req.method ?? 'GET').toLowerCase(), resource: '' },
    target: res,
  };
}

const HEALTH_PATHS = new Set(['/healthz', '/livez', '/readyz']);

/** /healthz, /livez and /readyz answer without authentication. */
export const health: Step = (ctx, next) => (HEALTH_PATHS.has(ctx.path) ? sendText(ctx.res, 200, 'ok') : next());

/** Bearer-token check; nothing is kept for a request (not even an audit entry) before it passes. */
export function authenticate(token: string, guard: ConnectionGuard): Step {
  const expected = Buffer.from(token);
  return (ctx, next) => {
    if (!tokenMatches(ctx.req.headers.authorization, expected))
      return sendError(ctx.res, unauthorized(), { Connection: 'close' });
    guard.authenticated(ctx.req.socket);
    return next();
  };
}

function tokenMatches(header: string | undefined, expected: Buffer): boolean {
  if (!header || !header.startsWith('Bearer ')) return false;
  const given = Buffer.from(header.slice(7).trim());
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Counts the request once its answer is handed to the socket ('finish') or the stream is aborted ('close'). */
export function audit(log: Audit): Step {
  return (ctx, next) => {
    ctx.client = (ctx.req.headers['x-client-name'] as string | undefined) ?? ctx.req.headers['user-agent'] ?? 'unknown';
    let audited = false;
    const record = () => {
      if (audited) return;
      audited = true;
      log.record(ctx.client, ctx.auditLabel.verb, ctx.auditLabel.resource, ctx.res.statusCode);
    };
    ctx.res.once('finish', record);
    ctx.res.once('close', record);
    return next();
  };
}

/** Maps /api/{v}/... and /apis/{g}/{v}/... onto a resource request; anything else is Go's plain 404. */
export function route(index: ResourceIndex): Step {
  return (ctx, next) => {
    const { req, res } = ctx;
    const parts = ctx.path.split('/').filter((p) => p !== '');
    let gv: string | undefined;
    let segments: string[] = [];
    if (parts[0] === 'api' && parts.length >= 2) {
      gv = parts[1];
      segments = parts.slice(2);
    } else if (parts[0] === 'apis' && parts.length >= 3) {
      gv = `${parts[1]}/${parts[2]}`;
      segments = parts.slice(3);
    }
    if (gv === undefined) return sendPlainNotFound(res);
    const routed = routeResource(index, gv, segments, req.method ?? 'GET', queryBool(ctx.url.searchParams, 'watch'));
    if (routed.kind === 'noRoute') return sendPlainNotFound(res);
    if (routed.kind === 'unknownResource') {
      // kube-apiserver's mux has no route for it: Go's plain-text http.NotFound, like a path outside every group.
      req.resume();
      return sendPlainNotFound(res);
    }
    if (routed.kind === 'methodNotAllowed') {
      req.resume();
      return sendError(res, methodNotRouted());
    }
    const request = routed.request;
    ctx.request = request;
    ctx.auditLabel = {
      verb: request.verb,
      resource: request.subresource ? `${request.rt.resource}/${request.subresource}` : request.rt.resource,
    };
    if (request.subresource === 'log') {
      req.resume();
      return sendError(
        res,
        badRequest(
          `pod ${request.name ?? ''} has no logs: containers are not run by the embedded cluster (its kubelet stand-in only reports pods Running once their volumes can be mounted)`,
        ),
      );
    }
    return next();
  };
}

/** Injected latency, errors and lost responses for the routed request. */
export function faults(rules: Faults): Step {
  return (ctx, next) => {
    const request = ctx.request!;
    const decision = rules.decide({
      verb: request.verb,
      resource: request.rt.resource,
      subresource: request.subresource,
      namespace: request.namespace,
      name: request.name,
    });
    return decision ? applyFault(ctx, next, decision) : next();
  };
}

async function applyFault(
  ctx: RequestContext,
  next: () => Promise<void> | void,
  decision: FaultDecision,
): Promise<void> {
  const { req, res } = ctx;
  const request = ctx.request!;
  if (decision.latencyMs) await new Promise((r) => setTimeout(r, decision.latencyMs));
  if (decision.error) {
    req.resume();
    return sendError(res, decision.error);
  }
  const lost = decision.lostResponse && request.verb !== 'watch' ? decision.lostResponse : undefined;
  // A lost response: the verb runs against a response nobody reads, then the client gets a 504 or a reset.
  if (lost) ctx.target = new ServerResponse(req);
  await next();
  if (lost === 'reset') {
    // No status reaches the client: the audit records 0 for it.
    res.statusCode = 0;
    req.socket.destroy();
  } else if (lost === 'timeout') {
    sendError(
      res,
      serverTimeout('Timeout: request did not complete within the allowed duration (injected lost response)', {
        retryAfterSeconds: 1,
      }),
    );
  }
}
