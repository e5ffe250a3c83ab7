// The resource-type definition every registry entry fills in: scope, kind, validation, defaulting, status
// subresource, field selectors and update/delete strategy. Storage, the write rules and the HTTP layer are
// driven by it; the entries themselves live in the registry files.
import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import type { FieldGetter } from '../common/selectors.ts';
import type { TableColumn } from './table-columns.ts';

/** rest.GarbageCollectionPolicy of a kind's strategy. */
export type GarbageCollectionPolicy = 'DeleteDependents' | 'OrphanDependents' | 'Unsupported';

/** A resource served under another resource's storage (events.k8s.io/v1 Event over core/v1 Event). */
export interface StorageView {
  /** The plural of the storage resource (a registry entry without `view`). */
  resource: string;
  /** Converts a request body of this view into the storage representation. */
  toStorage(obj: KubeObject): KubeObject;
  /** Converts a stored object into this view's representation. */
  fromStorage(obj: KubeObject): KubeObject;
}

/**
 * The schema of a kind @kubernetes/client-node has no model of (the snapshot kinds, CRDs on a real cluster), in the
 * compact notation of schemas.generated.ts: models by name, the kind's root first, and the OpenAPI package their
 * component names carry. Only `npm run gen:schemas` reads it; at run time the generated table is the schema.
 */
export interface CustomSchema {
  pkg: string;
  models: Record<string, { d: string; f: Record<string, [string] | [string, string]> }>;
}

export interface ResourceType {
  group: string;
  version: string;
  /** Plural, lower case: the URL segment and the store's resource name. */
  resource: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames?: string[];
  singular: string;
  verbs: string[];
  categories?: string[];
  /** Whether the type has a /status subresource (status ignored on the main resource, spec ignored on /status). */
  hasStatus: boolean;
  /** Type-specific validation (metadata is validated by the store for every type). */
  validate(obj: KubeObject, old?: KubeObject): StatusCause[];
  /**
   * The request body's conversion to the stored form, before defaulting (kube's decoding and v1-to-internal
   * conversion): may rewrite the object (Secret `stringData` merged into `data`); returns the decoding error a
   * client gets as a 400 (`<Kind> in version "v1" cannot be handled as a <Kind>: <error>`), or undefined.
   */
  convertFromRequest?(obj: KubeObject): string | undefined;
  /** Defaulting, applied on every write so reads always show defaults. */
  defaults?(obj: KubeObject): void;
  /**
   * The kind's own field selectors, as its field label conversion function in kube-apiserver accepts them. With
   * none, the default conversion applies (metadata.name and metadata.namespace only, other labels refused with
   * `"x" is not a known field selector: ...`); with some, metadata.name is added, and metadata.namespace when
   * the kind is namespaced, and other labels are refused with `field label not supported: x` (fieldGetters).
   */
  fieldSelectors: Record<string, FieldGetter>;
  /** Name validation rule for metadata.name (default dns1123subdomain). */
  nameRule?: 'dns1123subdomain' | 'dns1123label' | 'path';
  /** Strategy PrepareForCreate: e.g. discard client-sent status. `now` is epoch ms. */
  prepareForCreate?(obj: KubeObject, now: number): void;
  /** Strategy PrepareForUpdate, after status/spec reset: e.g. stamp PV lastPhaseTransitionTime. */
  prepareForUpdate?(obj: KubeObject, old: KubeObject, subresource: 'status' | undefined, now: number): void;
  /** PUT on a missing object creates it (Lease, Event). */
  allowCreateOnUpdate?: boolean;
  /** PUT without metadata.resourceVersion is last-write-wins (default true; Lease: false). */
  allowUnconditionalUpdate?: boolean;
  /**
   * An immediate DELETE answers with the deleted object, as the kind's storage in kube-apiserver sets
   * ReturnDeletedObject (pods, PVs, PVCs, namespaces, service accounts, storage classes); otherwise with a Success
   * Status naming it. An object that finalizers keep is answered whatever this says.
   */
  returnDeletedObject?: boolean;
  /**
   * The DefaultGarbageCollectionPolicy of the kind's strategy: what a DELETE without propagationPolicy or
   * orphanDependents does to dependents. Unset behaves as DeleteDependents (Background); `OrphanDependents` adds
   * the `orphan` finalizer; `Unsupported` (events) takes no finalizer whatever the options say.
   */
  garbageCollectionPolicy?: GarbageCollectionPolicy;
  /** Dotted paths of metav1.MicroTime fields: inputs must carry exactly six fractional digits. */
  microTimeFields?: string[];
  /** kubectl columns of server-side Tables, next to the kind (else the generic Name / Created At table). */
  columns?: TableColumn[];
  /** The schema of a kind without a client-node model (see CustomSchema); such a kind is served as a custom resource. */
  customSchema?: CustomSchema;
  /** Set when this resource is a view over another resource's storage. */
  view?: StorageView;
}

/** The apiVersion string of a resource type (`v1`, `storage.k8s.io/v1`). */
export function apiVersionOf(rt: { group: string; version: string }): string {
  return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}
