// How the runtime client names a resource type (group/version/plural/scope) and builds its REST paths.
// Descriptors are plain data, so callers can address any resource, including custom ones, without codegen.
// Each carries the object type it addresses (a type-only marker), so `client.get(persistentVolumes, name)`
// returns a PersistentVolume without a cast.
import type {
  ConfigMap,
  CoreEvent,
  KubeObject,
  Lease,
  Namespace,
  Node,
  PersistentVolume,
  PersistentVolumeClaim,
  Pod,
  Secret,
  StorageClass,
} from '../types/k8s.ts';

/**
 * A resource type as the REST API addresses it, typed by the objects it holds: `T` flows into KubeClient's
 * get/list/create/patch/watch results. Build one for any resource with {@link defineResource}.
 */
export interface ApiResource<T extends KubeObject = KubeObject> {
  /** `''` for the core group. */
  group: string;
  version: string;
  /** Lower-case plural, e.g. `persistentvolumeclaims`. */
  resource: string;
  kind: string;
  namespaced: boolean;
  /** Type-only marker of the object type; never set at run time. */
  readonly __object?: T;
}

/** A descriptor for any resource, custom ones included: `defineResource<MyKind>('example.com', 'v1', 'mykinds', 'MyKind', true)`. */
export function defineResource<T extends KubeObject = KubeObject>(
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
): ApiResource<T> {
  return Object.freeze({ group, version, resource, kind, namespaced });
}
const res = defineResource;

/** PersistentVolumes (cluster-scoped). */
export const persistentVolumes = res<PersistentVolume>('', 'v1', 'persistentvolumes', 'PersistentVolume', false);
/** PersistentVolumeClaims (namespaced). */
export const persistentVolumeClaims = res<PersistentVolumeClaim>(
  '',
  'v1',
  'persistentvolumeclaims',
  'PersistentVolumeClaim',
  true,
);
/** StorageClasss (cluster-scoped). */
export const storageClasses = res<StorageClass>('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', false);
/** Nodes (cluster-scoped). */
export const nodes = res<Node>('', 'v1', 'nodes', 'Node', false);
/** Pods (namespaced). */
export const pods = res<Pod>('', 'v1', 'pods', 'Pod', true);
/** Namespaces (cluster-scoped). */
export const namespaces = res<Namespace>('', 'v1', 'namespaces', 'Namespace', false);
/** ConfigMaps (namespaced). */
export const configMaps = res<ConfigMap>('', 'v1', 'configmaps', 'ConfigMap', true);
/** Secrets (namespaced). */
export const secrets = res<Secret>('', 'v1', 'secrets', 'Secret', true);
/** CoreEvents (namespaced). */
export const coreEvents = res<CoreEvent>('', 'v1', 'events', 'Event', true);
/** Leases (namespaced). */
export const leases = res<Lease>('coordination.k8s.io', 'v1', 'leases', 'Lease', true);

/** `apiVersion` string of a resource (`v1`, `storage.k8s.io/v1`). */

/**
 * REST path of a collection (no name) or of one object. Namespaced resources without a namespace address
 * the all-namespaces collection (lists and watches only).
 */
export function resourcePath(
  r: ApiResource<KubeObject>,
  namespace?: string,
  name?: string,
  subresource?: string,
): string {
  let p = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  if (r.namespaced && namespace) p += `/namespaces/${encodeURIComponent(namespace)}`;
  p += `/${r.resource}`;
  if (name !== undefined) p += `/${encodeURIComponent(name)}`;
  if (subresource) p += `/${subresource}`;
  return p;
}
