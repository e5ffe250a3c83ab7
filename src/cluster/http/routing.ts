// URL routing of the API server: maps /api/v1/... and /apis/<group>/<version>/... paths (namespaced and
// cluster-scoped, legacy /watch/ prefix, subresources) plus the HTTP method and query to a resource request.
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

function decodeSegment(s: string): string {
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
