// Legacy (non-aggregated) discovery documents built from the registry: /version, /api, /apis, /apis/<g>,
// /api/v1 and /apis/<g>/<v>, in the shapes kubectl 1.32 and client-node read (plain application/json).
import { createHash } from 'node:crypto';
import { apiVersionOf } from '../registry/resource-type.ts';
import type { ResourceIndex } from './routing.ts';

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
