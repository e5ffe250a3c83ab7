// How the runtime client names a resource type (group/version/plural/scope) and builds its REST paths.
// Descriptors are plain data, so callers can address any resource, including custom ones, without codegen.

import { apiVersionOf } from '../types/api-version.ts';

/** A resource type as the REST API addresses it. */
export interface ApiResource {
  /** `''` for the core group. */
  group: string;
  version: string;
  /** Lower-case plural, e.g. `persistentvolumeclaims`. */
  resource: string;
  kind: string;
  namespaced: boolean;
}

function res(group: string, version: string, resource: string, kind: string, namespaced: boolean): ApiResource {
  return Object.freeze({ group, version, resource, kind, namespaced });
}

export const persistentVolumes = res('', 'v1', 'persistentvolumes', 'PersistentVolume', false);
export const persistentVolumeClaims = res('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', true);
export const storageClasses = res('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false);
export const nodes = res('', 'v1', 'nodes', 'Node', false);
export const pods = res('', 'v1', 'pods', 'Pod', true);
export const namespaces = res('', 'v1', 'namespaces', 'Namespace', false);
export const configMaps = res('', 'v1', 'configmaps', 'ConfigMap', true);
export const secrets = res('', 'v1', 'secrets', 'Secret', true);
export const coreEvents = res('', 'v1', 'events', 'Event', true);
export const leases = res('coordination.k8s.io', 'v1', 'leases', 'Lease', true);

export { apiVersionOf };

/**
 * REST path of a collection (no name) or of one object. Namespaced resources without a namespace address
 * the all-namespaces collection (lists and watches only).
 */
export function resourcePath(r: ApiResource, namespace?: string, name?: string, subresource?: string): string {
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${r.resource}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}
