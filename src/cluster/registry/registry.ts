// The resource registry of the embedded API server: RESOURCES, every served resource in discovery order. The
// list is derived, not kept here: every ResourceType a module of this folder exports is served, and
// `npm run gen:schemas` writes their imports and order to resources.generated.ts (a test fails while it is
// stale). Each group keeps its kinds' ResourceType entries (scope, kind, validation, defaulting, status
// subresource, field selectors, update/delete strategy, kubectl columns) together: core/v1 one file per kind or
// small set of kinds under core/, the smaller groups one file each (storage.ts, coordination.ts, rbac.ts,
// event-resources.ts), apps/v1 one file per kind under apps/. The store, the router, discovery, OpenAPI and tables are
// all driven by RESOURCES. A new kind is its exported entry in a registry file plus the generator run.
import { GENERATED_RESOURCES } from './resources.generated.ts';

import type { ResourceType } from './resource-type.ts';

/** Every resource the embedded API server serves, in discovery order. */
export const RESOURCES: readonly ResourceType[] = GENERATED_RESOURCES;
