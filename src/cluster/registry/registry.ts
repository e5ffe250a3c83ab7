// The resource registry of the embedded API server: one ResourceType entry per served resource (scope, kind,
// validation, defaulting, status subresource, field selectors, update/delete strategy). The store, the router,
// discovery, OpenAPI and tables are all driven by RESOURCES. Groups already in one file of their own (entry,
// validation, columns): rbac.ts, coordination.ts, storage.ts, events.ts; apps and ServiceAccount live in
// registry-apps-rbac.ts. A new kind is one such file (or an entry in its group's file) plus its RESOURCES line.
import { formatTime } from '../common/meta.ts';
import { ALL_VERBS, boolPath, defaultPodSpec, path, section, setDefault } from './registry-helpers.ts';
import { APPS_RBAC_RESOURCES, SERVICE_ACCOUNTS } from './registry-apps-rbac.ts';
import { canonicalizeQuantityMaps } from './quantity-canonical.ts';
import { LEASES } from './coordination.ts';
import { CORE_EVENTS, EVENTS_V1 } from './events.ts';
import { STORAGE_CLASSES } from './storage.ts';
import {
  validateConfigMap,
  validateNamespace,
  validateNode,
  validatePersistentVolume,
  validatePersistentVolumeClaim,
  validatePod,
  validateSecret,
} from './validation.ts';

import type { ResourceType } from './resource-type.ts';

export { apiVersionOf, fieldGetters, type FieldGetter, type ResourceType, type StorageView } from './resource-type.ts';

const persistentVolumes: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'persistentvolumes',
  kind: 'PersistentVolume',
  listKind: 'PersistentVolumeList',
  namespaced: false,
  shortNames: ['pv'],
  singular: 'persistentvolume',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validatePersistentVolume(o, old),
  defaults(o) {
    canonicalizeQuantityMaps(o, ['spec.capacity']);
    const spec = section(o, 'spec');
    setDefault(spec, 'persistentVolumeReclaimPolicy', 'Retain');
    setDefault(spec, 'volumeMode', 'Filesystem');
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o, now) {
    o.status = { phase: 'Pending', lastPhaseTransitionTime: formatTime(now) };
  },
  prepareForUpdate(o, old, subresource, now) {
    if (subresource !== 'status') return;
    const status = section(o, 'status');
    const oldStatus = (old.status ?? {}) as Record<string, unknown>;
    if (status.phase !== oldStatus.phase && status.lastPhaseTransitionTime === oldStatus.lastPhaseTransitionTime) {
      status.lastPhaseTransitionTime = formatTime(now);
    }
  },
  fieldSelectors: {},
  returnDeletedObject: true,
};

const persistentVolumeClaims: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'persistentvolumeclaims',
  kind: 'PersistentVolumeClaim',
  listKind: 'PersistentVolumeClaimList',
  namespaced: true,
  shortNames: ['pvc'],
  singular: 'persistentvolumeclaim',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validatePersistentVolumeClaim(o, old),
  defaults(o) {
    canonicalizeQuantityMaps(o, ['spec.resources.requests', 'spec.resources.limits', 'status.capacity', 'status.allocatedResources']);
    setDefault(section(o, 'spec'), 'volumeMode', 'Filesystem');
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o) {
    o.status = { phase: 'Pending' };
  },
  fieldSelectors: {},
  returnDeletedObject: true,
};

const namespaces: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'namespaces',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  namespaced: false,
  shortNames: ['ns'],
  singular: 'namespace',
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  hasStatus: true,
  nameRule: 'dns1123label',
  validate: (o, old) => validateNamespace(o, old),
  defaults(o) {
    const spec = section(o, 'spec');
    if (!Array.isArray(spec.finalizers)) spec.finalizers = ['kubernetes'];
    setDefault(section(o, 'status'), 'phase', 'Active');
  },
  prepareForCreate(o) {
    o.status = { phase: 'Active' };
  },
  fieldSelectors: { 'status.phase': path('status.phase') },
  returnDeletedObject: true,
};

const nodes: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'nodes',
  kind: 'Node',
  listKind: 'NodeList',
  namespaced: false,
  shortNames: ['no'],
  singular: 'node',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validateNode(o, old),
  defaults: (o) => canonicalizeQuantityMaps(o, ['status.capacity', 'status.allocatable']),
  fieldSelectors: { 'spec.unschedulable': boolPath('spec.unschedulable') },
};

const pods: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'pods',
  kind: 'Pod',
  listKind: 'PodList',
  namespaced: true,
  shortNames: ['po'],
  singular: 'pod',
  verbs: ALL_VERBS,
  categories: ['all'],
  hasStatus: true,
  validate: (o, old) => validatePod(o, old),
  defaults(o) {
    defaultPodSpec(section(o, 'spec'));
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o) {
    o.status = { phase: 'Pending', qosClass: 'BestEffort' };
  },
  fieldSelectors: {
    'spec.nodeName': path('spec.nodeName'),
    'spec.restartPolicy': path('spec.restartPolicy'),
    'spec.schedulerName': path('spec.schedulerName'),
    'spec.serviceAccountName': path('spec.serviceAccountName'),
    'spec.hostNetwork': boolPath('spec.hostNetwork'),
    'status.phase': path('status.phase'),
    'status.podIP': path('status.podIP'),
    'status.nominatedNodeName': path('status.nominatedNodeName'),
  },
  returnDeletedObject: true,
};

const configMaps: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'configmaps',
  kind: 'ConfigMap',
  listKind: 'ConfigMapList',
  namespaced: true,
  shortNames: ['cm'],
  singular: 'configmap',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateConfigMap(o, old),
  fieldSelectors: {},
};

const secrets: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'secrets',
  kind: 'Secret',
  listKind: 'SecretList',
  namespaced: true,
  singular: 'secret',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateSecret(o, old),
  defaults(o) {
    setDefault(o as Record<string, unknown>, 'type', 'Opaque');
  },
  fieldSelectors: { type: path('type') },
};

/** Every resource the embedded API server serves, in discovery order. */
export const RESOURCES: readonly ResourceType[] = [
  namespaces,
  nodes,
  pods,
  persistentVolumes,
  persistentVolumeClaims,
  configMaps,
  secrets,
  SERVICE_ACCOUNTS,
  CORE_EVENTS,
  EVENTS_V1,
  STORAGE_CLASSES,
  LEASES,
  ...APPS_RBAC_RESOURCES,
];
