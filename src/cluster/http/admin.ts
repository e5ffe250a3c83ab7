// The authenticated /admin/ endpoints of the embedded cluster (not part of the Kubernetes API): fault rules,
// closing every watch, compacting the watch cache, and reading the audit counters.
//   GET|POST|DELETE /admin/faults (POST: a rule, a list, or {rules, seed} to reseed the probability draws), DELETE /admin/faults/<id>, POST /admin/close-watches, POST /admin/compact,
//   GET|DELETE /admin/audit
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Audit } from './audit.ts';
import { badRequest, methodNotAllowed } from '../common/api-errors.ts';
import { parseFaultRule, type Faults } from './faults.ts';
import { decodeBody, readBody, sendJson, sendPlainNotFound } from './http-io.ts';
import type { Step } from './pipeline.ts';

export interface AdminScope {
  faults: Faults;
  audit: Audit;
  /** Closes every open watch; returns how many were open. */
  closeWatches(): number;
  /** Compacts the watch cache; returns the resourceVersion resumes now need to be at or after. */
  compact(): number;
}

const ADMIN_REF = { group: 'admin', resource: 'admin', kind: 'Admin' };

/** The admin route's step (after authentication and audit, which counts it under resource `admin`). */
export function serveAdmin(scope: AdminScope): Step {
  return (ctx) => handleAdmin(ctx.req, ctx.res, ctx.path, scope);
}

/** @throws ClusterApiError for bad input (400) or an unsupported method (405). */
export async function handleAdmin(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  scope: AdminScope,
): Promise<void> {
  const method = req.method ?? 'GET';
  const send = (body: unknown) => sendJson(res, 200, JSON.stringify(body));
  if (path === '/admin/faults') {
    if (method === 'GET') return send({ items: scope.faults.list() });
    if (method === 'DELETE') {
      scope.faults.clear();
      return send({ items: [] });
    }
    if (method === 'POST') {
      const body = decodeBody(await readBody(req), 'application/json');
      const wrapped =
        body && typeof body === 'object' && !Array.isArray(body) && ('rules' in body || 'seed' in body)
          ? (body as { rules?: unknown; seed?: unknown })
          : undefined;
      const raw = Array.isArray(body) ? body : wrapped ? (Array.isArray(wrapped.rules) ? wrapped.rules : []) : [body];
      if (wrapped?.seed !== undefined && (typeof wrapped.seed !== 'number' || !Number.isSafeInteger(wrapped.seed)))
        throw badRequest('seed must be an integer');
      let rules;
      try {
        rules = raw.map(parseFaultRule);
      } catch (err) {
        throw badRequest(`invalid fault rule: ${(err as Error).message}`);
      }
      if (typeof wrapped?.seed === 'number') scope.faults.reseed(wrapped.seed);
      return send({ ids: rules.map((r) => scope.faults.add(r)) });
    }
    throw methodNotAllowed(method, ADMIN_REF);
  }
  const one = /^\/admin\/faults\/(\d+)$/.exec(path);
  if (one) {
    if (method !== 'DELETE') throw methodNotAllowed(method, ADMIN_REF);
    scope.faults.remove(Number(one[1]));
    return send({ items: scope.faults.list() });
  }
  if (path === '/admin/close-watches') {
    if (method !== 'POST') throw methodNotAllowed(method, ADMIN_REF);
    return send({ closed: scope.closeWatches() });
  }
  if (path === '/admin/compact') {
    if (method !== 'POST') throw methodNotAllowed(method, ADMIN_REF);
    return send({ resourceVersion: String(scope.compact()) });
  }
  if (path === '/admin/audit') {
    if (method === 'GET') return send({ items: scope.audit.records() });
    if (method === 'DELETE') {
      scope.audit.reset();
      return send({ items: [] });
    }
    throw methodNotAllowed(method, ADMIN_REF);
  }
  sendPlainNotFound(res);
}
