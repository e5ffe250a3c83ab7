// The resource registry of the embedded API server: RESOURCES, every served resource in discovery order,
// assembled from the group modules. Each group keeps its kinds' ResourceType entries (scope, kind, validation,
// defaulting, status subresource, field selectors, update/delete strategy, kubectl columns) together: core/v1
// one file per kind or small set of kinds under core/, the smaller groups one file each (storage.ts,
// coordination.ts, rbac.ts, events.ts), apps/v1 one file per kind under apps/. The store, the router, discovery,
// OpenAPI and tables are all driven by RESOURCES. A new kind is its group file's entry plus its line here.
import { CONFIG_MAPS, SECRETS } from './core/config-maps-secrets.ts';
import { NAMESPACES } from './core/namespaces.ts';
import { NODES } from './core/nodes.ts';
import { PERSISTENT_VOLUME_CLAIMS } from './core/persistent-volume-claims.ts';
import { PERSISTENT_VOLUMES } from './core/persistent-volumes.ts';
import { PODS } from './core/pods.ts';
import { SERVICE_ACCOUNTS } from './core/service-accounts.ts';
import { DAEMON_SETS } from './apps/daemon-sets.ts';
import { DEPLOYMENTS } from './apps/deployments.ts';
import { CLUSTER_ROLE_BINDINGS, CLUSTER_ROLES, ROLE_BINDINGS, ROLES } from './rbac.ts';
import { LEASES } from './coordination.ts';
import { CORE_EVENTS, EVENTS_V1 } from './events.ts';
import { STORAGE_CLASSES } from './storage.ts';

import type { ResourceType } from './resource-type.ts';

export { apiVersionOf, fieldGetters, type FieldGetter, type ResourceType, type StorageView } from './resource-type.ts';

/** Every resource the embedded API server serves, in discovery order. */
export const RESOURCES: readonly ResourceType[] = [
  NAMESPACES,
  NODES,
  PODS,
  PERSISTENT_VOLUMES,
  PERSISTENT_VOLUME_CLAIMS,
  CONFIG_MAPS,
  SECRETS,
  SERVICE_ACCOUNTS,
  CORE_EVENTS,
  EVENTS_V1,
  STORAGE_CLASSES,
  LEASES,
  CLUSTER_ROLES,
  CLUSTER_ROLE_BINDINGS,
  ROLES,
  ROLE_BINDINGS,
  DEPLOYMENTS,
  DAEMON_SETS,
];
