// kube-provisioner/csi: the CSI road. A gRPC client for a plugin's Identity, Controller (and NodeGetInfo) services,
// its start-up steps and error tables, and CsiProvisioner, a Provisioner with external-provisioner's and
// external-resizer's semantics that a ProvisionController drives like any other backend. Re-exports only.

// The client and what its calls carry.
export {
  CsiClient,
  CsiAddressError,
  socketPathOf,
  DEFAULT_CSI_TIMEOUT_MS,
  type CsiClientOptions,
  type CsiCallOptions,
} from './csi-client.ts';
export {
  serveCsiPlugin,
  CsiStatusError,
  type CsiServer,
  type CsiServerOptions,
  type CsiPluginHandlers,
  type CsiHandler,
  type CsiCallContext,
} from './csi-server.ts';
export {
  CSI_RPCS,
  serviceDefinition,
  methodDefinition,
  type CsiService,
  type CsiRpcName,
  type RpcSpec,
  type RequestOf,
  type ResponseOf,
} from './services.ts';
export {
  ACCESS_MODES,
  CONTROLLER_RPC_TYPES,
  NODE_RPC_TYPES,
  PLUGIN_SERVICE_TYPES,
  VOLUME_EXPANSION_TYPES,
  type ControllerRpcType,
  type NodeRpcType,
  type CsiAccessMode,
  type PluginServiceType,
  type FieldSpec,
  type MessageDescriptor,
  type MessageOf,
} from './descriptors.ts';
export { encodeMessage, decodeMessage, MessageEncodeError } from './codec.ts';
export { WireDecodeError } from './wire.ts';
export {
  CsiError,
  GRPC_CODES,
  grpcCodeName,
  hasCode,
  provisioningStateOf,
  resizeFailureOf,
  type GrpcCodeName,
  type ResizeFailure,
} from './grpc-status.ts';
export {
  CSI_OPERATIONS_METRIC,
  CSI_OPERATIONS_BUCKETS,
  UNKNOWN_DRIVER_NAME,
  createCsiOperationsMetric,
  type CsiOperationLabels,
} from './csi-metrics.ts';
export {
  waitForPlugin,
  waitForSocket,
  probeUntilReady,
  readDriverInfo,
  CsiStartupError,
  type CsiDriverInfo,
  type StartupTiming,
} from './startup.ts';

// The provisioner.
export {
  CsiProvisioner,
  type CsiProvisionerDeps,
  type CsiProvisionerSettings,
  type CsiProvisionerStartOptions,
} from './csi-provisioner.ts';
export type { CsiRequestOptions } from './provision-request.ts';
export {
  InformedClusterAccess,
  KubeClusterAccess,
  type CsiClusterAccess,
  type CsiResources,
  type FinalizedKind,
} from './cluster-access.ts';
export { CloneProtection, mayReleaseSource } from './clone-protection.ts';
export { VolumeInUseError, type ExpansionMode } from './resize.ts';
export {
  makeVolumeName,
  volumeNameHook,
  checkVolumeNaming,
  DEFAULT_VOLUME_NAMING,
  VolumeNameError,
  type VolumeNaming,
} from './volume-names.ts';
export {
  removePrefixedParameters,
  fsTypeOf,
  CSI_PARAMETER_PREFIX,
  PARAMETER_FSTYPE,
  PARAMETER_PVC_NAME,
  PARAMETER_PVC_NAMESPACE,
  PARAMETER_PV_NAME,
} from './parameters.ts';
export {
  secretReference,
  secretReferences,
  resolveTemplate,
  SECRET_PARAMETERS,
  ANN_DELETION_SECRET_NAME,
  ANN_DELETION_SECRET_NAMESPACE,
  ANN_MODIFY_SECRET_NAME,
  ANN_MODIFY_SECRET_NAMESPACE,
  type SecretOperation,
  type SecretReference,
} from './secrets.ts';
export { toCsiAccessMode, volumeCapability, volumeCapabilities, type VolumeCapability } from './access-modes.ts';
export {
  accessibilityRequirements,
  volumeNodeAffinity,
  flattenAllowedTopologies,
  claimNameHash,
  topologyKeysOf,
  TopologyError,
  TopologyNotFoundError,
  type TopologyInput,
  type TopologyRequirement,
  type CsiTopology,
} from './topology.ts';
export { FINALIZER_CLONE_PROTECTION, FINALIZER_SNAPSHOT_SOURCE_PROTECTION } from './content-source.ts';
export { ATTRIBUTE_PROVISIONER_IDENTITY } from './volume.ts';
export {
  csiNodes,
  volumeAttachments,
  volumeAttributesClasses,
  volumeSnapshots,
  volumeSnapshotContents,
  type CSINode,
  type VolumeAttachment,
  type VolumeAttributesClass,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from './kinds.ts';
// Capacity publishing (--enable-capacity).
export {
  CapacityController,
  decideCapacity,
  desiredItems,
  desiredObject,
  segmentsOf,
  publishesFor,
  capacityKey,
  keyOfObject,
  ownerReferenceFor,
  capacityParameters,
  csiStorageCapacities,
  LABEL_DRIVER_NAME,
  LABEL_MANAGED_BY,
  DEFAULT_MANAGED_BY,
  type CapacityControllerOptions,
  type CapacityDecision,
  type CapacityInput,
  type CapacityItem,
  type CapacityOwner,
  type CapacityReading,
  type Segment,
} from './capacity-publisher.ts';
