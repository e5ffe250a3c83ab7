// URL routing of the API server, done once per request: `matchRoute` maps the method and path to one route
// (health, admin, a discovery document, a resource request, or a refusal), and api-routes.ts runs that route's
// composed steps. Resource paths are /api/v1/... and /apis/<group>/<version>/... (namespaced and cluster-scoped,
// legacy /watch/ prefix, subresources), resolved with the HTTP method and the `watch` query parameter.
import { queryBool } from './query-params.ts';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.ts';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/** A request for a resource, fully resolved. */
export interface ResourceRequest {
  rt: ResourceType;
  verb: Verb;
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
}

export type RouteResult =
  | { kind: 'resource'; request: ResourceRequest }
  /** The group/version exists but the resource (or subresource, or method) does not. */
  | { kind: 'unknownResource' }
  | { kind: 'methodNotAllowed'; rt: ResourceType; verb: string }
  /** The path is outside every served group/version. */
  | { kind: 'noRoute' };

/** A discovery, version or OpenAPI document (discovery.ts builds it). */
export type DiscoveryDocument =
  | { kind: 'version' }
  | { kind: 'apiVersions' }
  | { kind: 'groupList' }
  | { kind: 'openApiPaths' }
  | { kind: 'openApiGroupVersion'; gvPath: string }
  | { kind: 'resourceList'; groupVersion: string }
  | { kind: 'group'; group: string };

/** Where one request goes. Matching is pure and never throws: every route still authenticates first. */
export type Route =
  /** /healthz, /livez, /readyz: answered without authentication. */
  | { kind: 'health' }
  /** /admin/*: the embedded cluster's own endpoints (admin.ts). */
  | { kind: 'admin' }
  /** GET of a discovery, version or OpenAPI document. */
  | { kind: 'discovery'; document: DiscoveryDocument }
  | { kind: 'resource'; request: ResourceRequest }
  /** pods/<name>/log: routed only to be refused clearly (the embedded cluster runs no containers). */
  | { kind: 'podLog'; request: ResourceRequest }
  /** Go's plain-text 404; `drain` reads the body away first (kube-apiserver's mux for an unknown resource). */
  | { kind: 'notFound'; drain: boolean }
  /** A served resource that does not take this method: 405. */
  | { kind: 'methodNotAllowed' };

/** Resource types indexed by group/version and plural. */
export class ResourceIndex {
  readonly byGroupVersion = new Map<string, Map<string, ResourceType>>();
  readonly resources: readonly ResourceType[];

  constructor(resources: readonly ResourceType[]) {
    this.resources = resources;
    for (const rt of resources) {
      const gv = apiVersionOf(rt);
      let m = this.byGroupVersion.get(gv);
      if (!m) this.byGroupVersion.set(gv, (m = new Map()));
      m.set(rt.resource, rt);
    }
  }

  /** Whether `group` (not core) is served. */
  hasGroup(group: string): boolean {
    return group !== '' && this.resources.some((rt) => rt.group === group);
  }

  /** Groups other than core, each with its versions, in registry order. */
  groups(): Array<{ name: string; versions: string[] }> {
    const out = new Map<string, string[]>();
    for (const rt of this.resources) {
      if (!rt.group) continue;
      const v = out.get(rt.group) ?? [];
      if (!v.includes(rt.version)) v.push(rt.version);
      out.set(rt.group, v);
    }
    return [...out].map(([name, versions]) => ({ name, versions }));
  }
}

const HEALTH_PATHS = new Set(['/healthz', '/livez', '/readyz']);
const HEALTH: Route = { kind: 'health' };
const ADMIN: Route = { kind: 'admin' };
const NO_ROUTE: Route = { kind: 'notFound', drain: false };
const UNKNOWN_RESOURCE: Route = { kind: 'notFound', drain: true };
const METHOD_NOT_ALLOWED: Route = { kind: 'methodNotAllowed' };

/**
 * The one routing of a request. `path` is the URL path without a trailing slash; `query` is read only for
 * `watch`. The path is split once; discovery documents are matched on it only for GET (any other method on
 * their paths is routed as a resource path, which is how kube-apiserver answers it).
 */
export function matchRoute(index: ResourceIndex, method: string, path: string, query: URLSearchParams): Route {
  if (HEALTH_PATHS.has(path)) return HEALTH;
  if (path.startsWith('/admin/')) return ADMIN;
  const parts = path.split('/').filter((p) => p !== '');
  if (method === 'GET') {
    const document = discoveryDocument(index, path, parts);
    if (document) return { kind: 'discovery', document };
  }
  let gv: string | undefined;
  let segments: string[];
  if (parts[0] === 'api' && parts.length >= 2) {
    gv = parts[1];
    segments = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 3) {
    gv = `${parts[1]}/${parts[2]}`;
    segments = parts.slice(3);
  } else return NO_ROUTE;
  const routed = routeResource(index, gv, segments, method, queryBool(query, 'watch'));
  switch (routed.kind) {
    case 'noRoute':
      return NO_ROUTE;
    case 'unknownResource':
      return UNKNOWN_RESOURCE;
    case 'methodNotAllowed':
      return METHOD_NOT_ALLOWED;
    case 'resource':
      return routed.request.subresource === 'log'
        ? { kind: 'podLog', request: routed.request }
        : { kind: 'resource', request: routed.request };
  }
}

/** The document a GET of `path` names, or undefined (then the path is routed as a resource path). */
function discoveryDocument(index: ResourceIndex, path: string, parts: string[]): DiscoveryDocument | undefined {
  switch (path) {
    case '/version':
      return { kind: 'version' };
    case '/api':
      return { kind: 'apiVersions' };
    case '/apis':
      return { kind: 'groupList' };
    case '/openapi/v3':
      return { kind: 'openApiPaths' };
  }
  if (path.startsWith('/openapi/v3/')) {
    const gvPath = path.slice('/openapi/v3/'.length);
    const gv = gvPath.startsWith('api/') ? gvPath.slice(4) : gvPath.startsWith('apis/') ? gvPath.slice(5) : undefined;
    return gv !== undefined && index.byGroupVersion.has(gv) ? { kind: 'openApiGroupVersion', gvPath } : undefined;
  }
  // /api/<v>, /apis/<g> and /apis/<g>/<v>, each segment non-empty (no `//` inside the path).
  if (parts.length < 2 || parts.length > 3 || path.length !== parts.join('/').length + 1) return undefined;
  if (parts[0] === 'api' && parts.length === 2)
    return index.byGroupVersion.has(parts[1]) ? { kind: 'resourceList', groupVersion: parts[1] } : undefined;
  if (parts[0] !== 'apis') return undefined;
  if (parts.length === 2) return index.hasGroup(parts[1]) ? { kind: 'group', group: parts[1] } : undefined;
  const groupVersion = `${parts[1]}/${parts[2]}`;
  return index.byGroupVersion.has(groupVersion) ? { kind: 'resourceList', groupVersion } : undefined;
}

function decodeSegment(s: string): string {
  // Only %XX escapes change under decoding: a segment without one (nearly every request) is kept as it is.
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * Resolves a request path. `segments` are the path parts after `/api/v1` or `/apis/<g>/<v>`; `watchParam`
 * is the `watch` query parameter.
 */
export function routeResource(
  index: ResourceIndex,
  groupVersion: string,
  segmentsIn: string[],
  method: string,
  watchParam: boolean,
): RouteResult {
  const types = index.byGroupVersion.get(groupVersion);
  if (!types) return { kind: 'noRoute' };
  let segments = segmentsIn.map(decodeSegment);
  let watchPrefix = false;
  if (segments[0] === 'watch') {
    watchPrefix = true;
    segments = segments.slice(1);
  }
  if (segments.length === 0) return { kind: 'unknownResource' };
  let namespace: string | undefined;
  let rest = segments;
  if (segments[0] === 'namespaces' && segments.length >= 3 && types.get(segments[2])?.namespaced) {
    namespace = segments[1];
    rest = segments.slice(2);
  }
  const rt = types.get(rest[0]);
  if (!rt || rest.length > 3) return { kind: 'unknownResource' };
  const name = rest[1];
  const subresource = rest[2];
  // pods/log is routed only to be refused clearly (the embedded cluster runs no containers).
  const podLog = subresource === 'log' && rt.resource === 'pods';
  if (subresource !== undefined && !(subresource === 'status' && rt.hasStatus) && !podLog)
    return { kind: 'unknownResource' };
  // A namespaced resource's item path needs a namespace; a cluster-scoped one must not have one.
  if (name !== undefined && rt.namespaced && namespace === undefined) return { kind: 'unknownResource' };
  if (name === '' || namespace === '') return { kind: 'unknownResource' };
  const verb = verbFor(method, name !== undefined, watchPrefix || watchParam);
  if (!verb) return { kind: 'methodNotAllowed', rt, verb: method };
  if (subresource && !['get', 'update', 'patch'].includes(verb)) return { kind: 'methodNotAllowed', rt, verb: method };
  if (!rt.verbs.includes(verb)) return { kind: 'methodNotAllowed', rt, verb };
  return { kind: 'resource', request: { rt, verb, namespace, name, subresource } };
}

function verbFor(method: string, item: boolean, watch: boolean): Verb | undefined {
  switch (method) {
    case 'GET':
      if (watch) return 'watch';
      return item ? 'get' : 'list';
    case 'POST':
      return item ? undefined : 'create';
    case 'PUT':
      return item ? 'update' : undefined;
    case 'PATCH':
      return item ? 'patch' : undefined;
    case 'DELETE':
      return item ? 'delete' : 'deletecollection';
    default:
      return undefined;
  }
}
