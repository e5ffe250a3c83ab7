// Legacy (non-aggregated) discovery documents built from the registry: /version, /api, /apis, /apis/<g>,
// /api/v1 and /apis/<g>/<v>, in the shapes kubectl 1.32 and client-node read (plain application/json), and the
// discovery route's step, which answers the document routing.ts matched (OpenAPI v3 documents included).
import { createHash } from 'node:crypto';
import { apiVersionOf } from '../registry/resource-type.ts';
import { sendJson } from './http-io.ts';
import { openApiV3Document, openApiV3Paths } from './openapi.ts';
import type { Step } from './pipeline.ts';
import type { DiscoveryDocument, ResourceIndex } from './routing.ts';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-kube-provisioner',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2024-12-11T00:00:00Z',
  goVersion: 'go1.23.4',
  compiler: 'gc',
  platform: 'linux/amd64',
};

export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function apiGroup(name: string, versions: string[]): object {
  const gvs = versions.map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
  return { name, versions: gvs, preferredVersion: gvs[0] };
}

export function apiGroupList(index: ResourceIndex): object {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: index.groups().map((g) => apiGroup(g.name, g.versions)) };
}

/** /apis/<group>, or undefined when the group is not served. */
export function apiGroupDocument(index: ResourceIndex, group: string): object | undefined {
  const g = index.groups().find((x) => x.name === group);
  return g ? { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(g.name, g.versions) } : undefined;
}

/** /api/v1 or /apis/<g>/<v>, or undefined when the group/version is not served. */
export function apiResourceList(index: ResourceIndex, groupVersion: string): object | undefined {
  const types = index.byGroupVersion.get(groupVersion);
  if (!types) return undefined;
  const resources: object[] = [];
  for (const rt of types.values()) {
    resources.push({
      name: rt.resource,
      singularName: rt.singular,
      namespaced: rt.namespaced,
      kind: rt.kind,
      verbs: rt.verbs,
      ...(rt.shortNames?.length ? { shortNames: rt.shortNames } : {}),
      ...(rt.categories?.length ? { categories: rt.categories } : {}),
      storageVersionHash: createHash('sha256')
        .update(`${apiVersionOf(rt)}/${rt.kind}`)
        .digest('base64')
        .slice(0, 11),
    });
    if (rt.hasStatus) {
      resources.push({
        name: `${rt.resource}/status`,
        singularName: '',
        namespaced: rt.namespaced,
        kind: rt.kind,
        verbs: ['get', 'patch', 'update'],
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion, resources };
}

/** The document a discovery route names (its existence was checked when the route was matched). */
export function discoveryDocument(index: ResourceIndex, doc: DiscoveryDocument, serverAddress: string): object {
  switch (doc.kind) {
    case 'version':
      return SERVER_VERSION;
    case 'apiVersions':
      return apiVersions(serverAddress);
    case 'groupList':
      return apiGroupList(index);
    case 'openApiPaths':
      return openApiV3Paths([...index.resources]);
    case 'openApiGroupVersion':
      return openApiV3Document(doc.gvPath, [...index.resources]);
    case 'resourceList':
      return apiResourceList(index, doc.groupVersion)!;
    case 'group':
      return apiGroupDocument(index, doc.group)!;
  }
}

/** The discovery route's step: answers the matched document. `serverAddress` is known once the server listens. */
export function serveDiscovery(index: ResourceIndex, serverAddress: () => string): Step {
  return (ctx) => {
    const route = ctx.route;
    if (route.kind !== 'discovery') throw new Error(`the discovery step ran for a ${route.kind} route`);
    sendJson(ctx.res, 200, JSON.stringify(discoveryDocument(index, route.document, serverAddress())));
  };
}
