// OpenAPI v3 for kubectl 1.32: `kubectl explain` reads the schemas (generated from client-node's models, see
// openapi-schemas.ts), and `kubectl create -f` / `apply -f` (default --validate=strict) ask whether a kind's PATCH
// operation accepts the `fieldValidation` query parameter; when it does, kubectl leaves validation to the server.
// The PATCH request body deliberately does not advertise strategic-merge-patch: kubectl apply then uses its
// compiled-in types for built-in kinds, as it does against most servers. /openapi/v2 is protobuf-only in
// kubectl's client and is left to 404, which kubectl tolerates once v3 answers.
import { createHash } from 'node:crypto';
import { componentSchemas, kindComponentName } from './openapi-schemas.ts';

/** The parts of a registry entry the OpenAPI documents need. */
export interface OpenApiResource {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  hasStatus?: boolean;
  verbs?: string[];
}

/** The discovery path of a group/version in /openapi/v3: `api/v1` or `apis/<group>/<version>`. */
export function openApiGroupVersionPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

function groupVersions(resources: OpenApiResource[]): Map<string, OpenApiResource[]> {
  const byGv = new Map<string, OpenApiResource[]>();
  for (const r of resources) {
    const key = openApiGroupVersionPath(r.group, r.version);
    const list = byGv.get(key) ?? [];
    list.push(r);
    byGv.set(key, list);
  }
  return byGv;
}

const hashes = new WeakMap<object, string>();

/**
 * The body of `GET /openapi/v3`: one entry per group/version with the URL of its document. The hash changes
 * whenever the document does, so kubectl's cache of it stays correct.
 */
export function openApiV3Paths(resources: OpenApiResource[]): { paths: Record<string, { serverRelativeURL: string }> } {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const [gvPath, list] of groupVersions(resources)) {
    const doc = openApiV3Document(gvPath, list);
    let hash = hashes.get(doc);
    if (!hash) hashes.set(doc, (hash = createHash('sha512').update(JSON.stringify(doc)).digest('hex').toUpperCase()));
    paths[gvPath] = { serverRelativeURL: `/openapi/v3/${gvPath}?hash=${hash}` };
  }
  return { paths };
}

/** Accepts `api/v1`, `apis/storage.k8s.io/v1`, or `storage.k8s.io/v1` / `v1`. */
function parseGroupVersion(groupVersion: string): { group: string; version: string } {
  const parts = groupVersion
    .replace(/^\/+/, '')
    .replace(/^openapi\/v3\//, '')
    .split('/');
  if (parts[0] === 'api') return { group: '', version: parts[1] ?? 'v1' };
  if (parts[0] === 'apis') return { group: parts[1] ?? '', version: parts[2] ?? '' };
  if (parts.length === 1) return { group: '', version: parts[0] };
  return { group: parts[0], version: parts[1] };
}

/** The Go-style schema name kubectl explain shows (io.k8s.api.core.v1.PersistentVolumeClaim). */
function schemaName(r: OpenApiResource): string {
  return kindComponentName(r);
}

const jsonContent = (ref: string) => ({ 'application/json': { schema: { $ref: ref } } });

function queryParam(name: string, description: string): Record<string, unknown> {
  return { name, in: 'query', description, schema: { type: 'string', uniqueItems: true } };
}

const FIELD_VALIDATION = queryParam(
  'fieldValidation',
  'fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict.',
);
const FIELD_MANAGER = queryParam(
  'fieldManager',
  'fieldManager is a name associated with the actor or entity that is making these changes.',
);
const DRY_RUN = queryParam('dryRun', 'When present, indicates that modifications should not be persisted.');

function operation(r: OpenApiResource, action: string, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    tags: [r.group === '' ? `core_${r.version}` : `${r.group}_${r.version}`],
    operationId: `${action}${r.kind}`,
    responses: { '200': { description: 'OK', content: jsonContent(`#/components/schemas/${schemaName(r)}`) } },
    'x-kubernetes-action': action,
    'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
    ...extra,
  };
}

function resourcePaths(r: OpenApiResource, prefix: string): Record<string, unknown> {
  const collection = r.namespaced ? `${prefix}/namespaces/{namespace}/${r.resource}` : `${prefix}/${r.resource}`;
  const item = `${collection}/{name}`;
  const ref = `#/components/schemas/${schemaName(r)}`;
  const writeParams = [DRY_RUN, FIELD_MANAGER, FIELD_VALIDATION];
  const patch = operation(r, 'patch', {
    parameters: writeParams,
    requestBody: {
      content: {
        'application/json-patch+json': { schema: { type: 'object' } },
        'application/merge-patch+json': { schema: { type: 'object' } },
      },
      required: true,
    },
  });
  const itemOps: Record<string, unknown> = {
    get: operation(r, 'get', {}),
    put: operation(r, 'put', { parameters: writeParams, requestBody: { content: jsonContent(ref), required: true } }),
    patch,
    delete: operation(r, 'delete', {}),
  };
  const paths: Record<string, unknown> = {
    [collection]: {
      get: operation(r, 'list', {}),
      post: operation(r, 'post', {
        parameters: writeParams,
        requestBody: { content: jsonContent(ref), required: true },
      }),
    },
    [item]: itemOps,
  };
  if (r.hasStatus) {
    paths[`${item}/status`] = { get: operation(r, 'get', {}), put: itemOps.put, patch };
  }
  return paths;
}

const documents = new Map<string, object>();

/**
 * The OpenAPI v3 document of one group/version (`api/v1`, `apis/storage.k8s.io/v1`...), listing only
 * `resources` of that group/version.
 */
export function openApiV3Document(groupVersion: string, resources: OpenApiResource[]): object {
  // Documents depend only on the served kinds, which are fixed per process: build each once.
  const key = `${groupVersion}|${resources.map((r) => `${r.group}/${r.version}/${r.resource}/${r.kind}/${r.namespaced}/${r.hasStatus}`).join(',')}`;
  let doc = documents.get(key);
  if (!doc) documents.set(key, (doc = buildDocument(groupVersion, resources)));
  return doc;
}

function buildDocument(groupVersion: string, resources: OpenApiResource[]): object {
  const { group, version } = parseGroupVersion(groupVersion);
  const mine = resources.filter((r) => r.group === group && r.version === version);
  const prefix = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
  const paths: Record<string, unknown> = {};
  for (const r of mine) Object.assign(paths, resourcePaths(r, prefix));
  const schemas = componentSchemas(mine);
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.32.0' },
    paths,
    components: { schemas },
  };
}
