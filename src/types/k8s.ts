// Plain-JSON shapes of the Kubernetes objects this project reads and writes. Shared by every layer
// (cluster, runtime, controller, hostpath): objects are always plain JSON, never client-node model classes,
// so timestamps are strings and unknown fields survive a round trip.

/** metav1.OwnerReference. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** metav1.ObjectMeta: name, namespace, uid, resourceVersion, labels, annotations, finalizers, timestamps. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
}

/** Any Kubernetes object: apiVersion, kind, metadata, and whatever else it carries. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** metav1.ListMeta: resourceVersion and continue token of a list. */
export interface ListMeta {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** A list response: items and list metadata. */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: T[];
}

/** core/v1 ObjectReference (claimRef, involvedObject). */
export interface ObjectReference {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  name?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

/** PersistentVolume access mode. */
export type AccessMode = 'ReadWriteOnce' | 'ReadOnlyMany' | 'ReadWriteMany' | 'ReadWriteOncePod';
/** PersistentVolume volume mode. */
export type VolumeMode = 'Filesystem' | 'Block';
/** What happens to a PersistentVolume when its claim is deleted. */
export type ReclaimPolicy = 'Delete' | 'Retain' | 'Recycle';

/** One expression of a label selector. */
export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** metav1.LabelSelector. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** One expression of a node selector term. */
export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

/** A node selector term (expressions ANDed). */
export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

/** A node selector (terms ORed), as in PV node affinity. */
export interface NodeSelector {
  nodeSelectorTerms: NodeSelectorTerm[];
}

/** The spec of a PersistentVolumeClaim. */
export interface PersistentVolumeClaimSpec {
  accessModes?: AccessMode[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  storageClassName?: string | null;
  volumeName?: string;
  volumeMode?: VolumeMode;
  selector?: LabelSelector;
  dataSource?: { apiGroup?: string; kind: string; name: string };
  dataSourceRef?: { apiGroup?: string; kind: string; name: string; namespace?: string };
  volumeAttributesClassName?: string;
}

/** The status of a PersistentVolumeClaim. */
export interface PersistentVolumeClaimStatus {
  phase?: 'Pending' | 'Bound' | 'Lost';
  accessModes?: AccessMode[];
  capacity?: Record<string, string>;
  conditions?: Array<Record<string, unknown>>;
  /** What a resize controller has committed to (set when a resize starts). */
  allocatedResources?: Record<string, string>;
  /** Resize progress per resource: ControllerResizeInProgress, ControllerResizeInfeasible, NodeResizePending... */
  allocatedResourceStatuses?: Record<string, string>;
}

/** A PersistentVolumeClaim (plain JSON; unknown fields are kept). */
export interface PersistentVolumeClaim extends KubeObject {
  spec: PersistentVolumeClaimSpec;
  status?: PersistentVolumeClaimStatus;
}

/** The spec of a PersistentVolume. */
export interface PersistentVolumeSpec {
  capacity?: Record<string, string>;
  accessModes?: AccessMode[];
  claimRef?: ObjectReference;
  persistentVolumeReclaimPolicy?: ReclaimPolicy;
  storageClassName?: string;
  mountOptions?: string[];
  volumeMode?: VolumeMode;
  nodeAffinity?: { required?: NodeSelector };
  hostPath?: { path: string; type?: string };
  local?: { path: string; fsType?: string };
  nfs?: { server: string; path: string; readOnly?: boolean };
  csi?: { driver: string; volumeHandle: string; [k: string]: unknown };
  [source: string]: unknown;
}

/** The status of a PersistentVolume. */
export interface PersistentVolumeStatus {
  phase?: 'Pending' | 'Available' | 'Bound' | 'Released' | 'Failed';
  message?: string;
  reason?: string;
  lastPhaseTransitionTime?: string;
}

/** A PersistentVolume (plain JSON; unknown fields are kept). */
export interface PersistentVolume extends KubeObject {
  spec: PersistentVolumeSpec;
  status?: PersistentVolumeStatus;
}

/** A StorageClass allowedTopologies term. */
export interface TopologySelectorTerm {
  matchLabelExpressions?: Array<{ key: string; values: string[] }>;
}

/** A storage.k8s.io/v1 StorageClass. */
export interface StorageClass extends KubeObject {
  provisioner: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: ReclaimPolicy;
  mountOptions?: string[];
  allowVolumeExpansion?: boolean;
  volumeBindingMode?: 'Immediate' | 'WaitForFirstConsumer';
  allowedTopologies?: TopologySelectorTerm[];
}

/** A Node (only what the project reads; other fields pass through). */
export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string }> };
  status?: {
    conditions?: Array<{ type: string; status: string; [k: string]: unknown }>;
    capacity?: Record<string, string>;
    allocatable?: Record<string, string>;
    addresses?: Array<{ type: string; address: string }>;
  };
}

/** A volume of a pod spec (the claim it mounts). */
export interface PodVolume {
  name: string;
  persistentVolumeClaim?: { claimName: string; readOnly?: boolean };
  [source: string]: unknown;
}

/** A Pod (only what the project reads; other fields pass through). */
export interface Pod extends KubeObject {
  spec: {
    nodeName?: string;
    nodeSelector?: Record<string, string>;
    volumes?: PodVolume[];
    containers: Array<{ name: string; image?: string; [k: string]: unknown }>;
    affinity?: { nodeAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: NodeSelector } };
    [k: string]: unknown;
  };
  status?: { phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown'; [k: string]: unknown };
}

/** A coordination.k8s.io/v1 Lease. */
export interface Lease extends KubeObject {
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
    [k: string]: unknown;
  };
}

/** A core/v1 Event. */
export interface CoreEvent extends KubeObject {
  involvedObject: ObjectReference;
  reason?: string;
  message?: string;
  type?: 'Normal' | 'Warning';
  count?: number;
  firstTimestamp?: string | null;
  lastTimestamp?: string | null;
  eventTime?: string | null;
  source?: { component?: string; host?: string };
  reportingComponent?: string;
  reportingInstance?: string;
  action?: string;
}

/** A Namespace (only what the project reads; other fields pass through). */
export interface Namespace extends KubeObject {
  status?: { phase?: 'Active' | 'Terminating' };
}

/** A ConfigMap. */
export interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** A Secret (`data` values are base64). */
export interface Secret extends KubeObject {
  type?: string;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** One cause of a metav1.Status failure (field, reason, message). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** metav1.Status, the body of every API error. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never> | ListMeta;
  status: 'Success' | 'Failure';
  message?: string;
  reason?: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    uid?: string;
    causes?: StatusCause[];
    retryAfterSeconds?: number;
  };
  code: number;
}

/** The type of a watch event. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

/** One watch event: its type and the object. */
export interface WatchEvent<T = KubeObject> {
  type: WatchEventType;
  object: T;
}
