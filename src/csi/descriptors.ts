// The CSI messages we send and receive, described as data: each field's name (camelCase), number and kind, written
// by hand from the field numbers of the CSI spec (package csi.v1; see docs/csi.md). The codec (codec.ts) reads these
// tables, and the TypeScript type of each message is derived from its table (MessageOf), so a message's type and
// its wire layout cannot disagree. Only the surface a CO's controller side needs is here (Identity, Controller,
// NodeGetInfo); adding an RPC is adding its two tables and a row in services.ts.

/** A field of a message: its number and how its value is encoded. */
export type FieldSpec =
  | { readonly kind: 'string'; readonly no: number; readonly repeated?: true }
  | { readonly kind: 'bool' | 'int32' | 'int64'; readonly no: number }
  | { readonly kind: 'enum'; readonly no: number; readonly values: Readonly<Record<string, number>> }
  | { readonly kind: 'message'; readonly no: number; readonly message: MessageDescriptor; readonly repeated?: true }
  /** `map<string, string>` (a repeated entry message with key = 1 and value = 2). */
  | { readonly kind: 'map'; readonly no: number };

/** A message: its full protobuf name and its fields by (camelCase) name. */
export interface MessageDescriptor<
  F extends Readonly<Record<string, FieldSpec>> = Readonly<Record<string, FieldSpec>>,
> {
  readonly name: string;
  readonly fields: F;
}

type ValueOf<S> = S extends { kind: 'string'; repeated: true }
  ? string[]
  : S extends { kind: 'string' }
    ? string
    : S extends { kind: 'bool' }
      ? boolean
      : S extends { kind: 'int32' }
        ? number
        : S extends { kind: 'int64' }
          ? bigint
          : S extends { kind: 'enum'; values: infer V }
            ? keyof V & string
            : S extends { kind: 'message'; message: MessageDescriptor<infer F>; repeated: true }
              ? Array<FieldsOf<F>>
              : S extends { kind: 'message'; message: MessageDescriptor<infer F> }
                ? FieldsOf<F>
                : S extends { kind: 'map' }
                  ? Record<string, string>
                  : never;

type FieldsOf<F> = { [K in keyof F]?: ValueOf<F[K]> };

/** The TypeScript shape of a message described by `D`: every field optional, as in proto3. int64 is a bigint. */
export type MessageOf<D> = D extends MessageDescriptor<infer F> ? FieldsOf<F> : never;

const string = (no: number) => ({ kind: 'string', no }) as const;
const strings = (no: number) => ({ kind: 'string', no, repeated: true }) as const;
const bool = (no: number) => ({ kind: 'bool', no }) as const;
const int32 = (no: number) => ({ kind: 'int32', no }) as const;
const int64 = (no: number) => ({ kind: 'int64', no }) as const;
const map = (no: number) => ({ kind: 'map', no }) as const;
const enumOf = <V extends Readonly<Record<string, number>>>(no: number, values: V) =>
  ({ kind: 'enum', no, values }) as const;
const one = <M extends MessageDescriptor>(no: number, message: M) => ({ kind: 'message', no, message }) as const;
const many = <M extends MessageDescriptor>(no: number, message: M) =>
  ({ kind: 'message', no, message, repeated: true }) as const;
const define = <F extends Readonly<Record<string, FieldSpec>>>(name: string, fields: F): MessageDescriptor<F> =>
  Object.freeze({ name, fields });

// Enumerations (every CSI enum reserves 0 for UNKNOWN; a value we do not know decodes as UNKNOWN).

/** PluginCapability.Service.Type. */
export const PLUGIN_SERVICE_TYPES = Object.freeze({
  UNKNOWN: 0,
  CONTROLLER_SERVICE: 1,
  VOLUME_ACCESSIBILITY_CONSTRAINTS: 2,
  GROUP_CONTROLLER_SERVICE: 3,
  SNAPSHOT_METADATA_SERVICE: 4,
});
/** PluginCapability.VolumeExpansion.Type. */
export const VOLUME_EXPANSION_TYPES = Object.freeze({ UNKNOWN: 0, ONLINE: 1, OFFLINE: 2 });
/** ControllerServiceCapability.RPC.Type. */
export const CONTROLLER_RPC_TYPES = Object.freeze({
  UNKNOWN: 0,
  CREATE_DELETE_VOLUME: 1,
  PUBLISH_UNPUBLISH_VOLUME: 2,
  LIST_VOLUMES: 3,
  GET_CAPACITY: 4,
  CREATE_DELETE_SNAPSHOT: 5,
  LIST_SNAPSHOTS: 6,
  CLONE_VOLUME: 7,
  PUBLISH_READONLY: 8,
  EXPAND_VOLUME: 9,
  LIST_VOLUMES_PUBLISHED_NODES: 10,
  VOLUME_CONDITION: 11,
  GET_VOLUME: 12,
  SINGLE_NODE_MULTI_WRITER: 13,
  MODIFY_VOLUME: 14,
  GET_SNAPSHOT: 15,
});
/** VolumeCapability.AccessMode.Mode. */
export const ACCESS_MODES = Object.freeze({
  UNKNOWN: 0,
  SINGLE_NODE_WRITER: 1,
  SINGLE_NODE_READER_ONLY: 2,
  MULTI_NODE_READER_ONLY: 3,
  MULTI_NODE_SINGLE_WRITER: 4,
  MULTI_NODE_MULTI_WRITER: 5,
  SINGLE_NODE_SINGLE_WRITER: 6,
  SINGLE_NODE_MULTI_WRITER: 7,
});

/** A plugin capability name (PluginCapability.Service.Type). */
export type PluginServiceType = keyof typeof PLUGIN_SERVICE_TYPES;
/** NodeServiceCapability.RPC.Type. */
export const NODE_RPC_TYPES = Object.freeze({
  UNKNOWN: 0,
  STAGE_UNSTAGE_VOLUME: 1,
  GET_VOLUME_STATS: 2,
  EXPAND_VOLUME: 3,
  VOLUME_CONDITION: 4,
  SINGLE_NODE_MULTI_WRITER: 5,
  VOLUME_MOUNT_GROUP: 6,
});

/** A controller capability name (ControllerServiceCapability.RPC.Type). */
export type ControllerRpcType = keyof typeof CONTROLLER_RPC_TYPES;
/** A node capability name (NodeServiceCapability.RPC.Type). */
export type NodeRpcType = keyof typeof NODE_RPC_TYPES;
/** A CSI access mode name (VolumeCapability.AccessMode.Mode). */
export type CsiAccessMode = keyof typeof ACCESS_MODES;

// google.protobuf wrappers (explicit presence for a scalar).
const BoolValue = define('google.protobuf.BoolValue', { value: bool(1) });
const Int64Value = define('google.protobuf.Int64Value', { value: int64(1) });
const Empty = (name: string) => define(`csi.v1.${name}`, {});

// Identity service.
export const GetPluginInfoRequest = Empty('GetPluginInfoRequest');
export const GetPluginInfoResponse = define('csi.v1.GetPluginInfoResponse', {
  name: string(1),
  vendorVersion: string(2),
  manifest: map(3),
});
export const GetPluginCapabilitiesRequest = Empty('GetPluginCapabilitiesRequest');
const PluginService = define('csi.v1.PluginCapability.Service', { type: enumOf(1, PLUGIN_SERVICE_TYPES) });
const PluginVolumeExpansion = define('csi.v1.PluginCapability.VolumeExpansion', {
  type: enumOf(1, VOLUME_EXPANSION_TYPES),
});
/** oneof type: service | volumeExpansion. */
const PluginCapability = define('csi.v1.PluginCapability', {
  service: one(1, PluginService),
  volumeExpansion: one(2, PluginVolumeExpansion),
});
export const GetPluginCapabilitiesResponse = define('csi.v1.GetPluginCapabilitiesResponse', {
  capabilities: many(1, PluginCapability),
});
export const ProbeRequest = Empty('ProbeRequest');
export const ProbeResponse = define('csi.v1.ProbeResponse', { ready: one(1, BoolValue) });

// Shared by the Controller RPCs.
export const Topology = define('csi.v1.Topology', { segments: map(1) });
export const CapacityRange = define('csi.v1.CapacityRange', { requiredBytes: int64(1), limitBytes: int64(2) });
const BlockVolume = define('csi.v1.VolumeCapability.BlockVolume', {});
const MountVolume = define('csi.v1.VolumeCapability.MountVolume', {
  fsType: string(1),
  mountFlags: strings(2),
  volumeMountGroup: string(3),
});
const AccessMode = define('csi.v1.VolumeCapability.AccessMode', { mode: enumOf(1, ACCESS_MODES) });
/** oneof access_type: block | mount. */
export const VolumeCapability = define('csi.v1.VolumeCapability', {
  block: one(1, BlockVolume),
  mount: one(2, MountVolume),
  accessMode: one(3, AccessMode),
});
const SnapshotSource = define('csi.v1.VolumeContentSource.SnapshotSource', { snapshotId: string(1) });
const VolumeSource = define('csi.v1.VolumeContentSource.VolumeSource', { volumeId: string(1) });
/** oneof type: snapshot | volume. */
export const VolumeContentSource = define('csi.v1.VolumeContentSource', {
  snapshot: one(1, SnapshotSource),
  volume: one(2, VolumeSource),
});
export const TopologyRequirement = define('csi.v1.TopologyRequirement', {
  requisite: many(1, Topology),
  preferred: many(2, Topology),
});
export const Volume = define('csi.v1.Volume', {
  capacityBytes: int64(1),
  volumeId: string(2),
  volumeContext: map(3),
  contentSource: one(4, VolumeContentSource),
  accessibleTopology: many(5, Topology),
});

// Controller service.
export const CreateVolumeRequest = define('csi.v1.CreateVolumeRequest', {
  name: string(1),
  capacityRange: one(2, CapacityRange),
  volumeCapabilities: many(3, VolumeCapability),
  parameters: map(4),
  secrets: map(5),
  volumeContentSource: one(6, VolumeContentSource),
  accessibilityRequirements: one(7, TopologyRequirement),
  mutableParameters: map(8),
});
export const CreateVolumeResponse = define('csi.v1.CreateVolumeResponse', { volume: one(1, Volume) });
export const DeleteVolumeRequest = define('csi.v1.DeleteVolumeRequest', { volumeId: string(1), secrets: map(2) });
export const DeleteVolumeResponse = define('csi.v1.DeleteVolumeResponse', {});
export const ControllerGetCapabilitiesRequest = Empty('ControllerGetCapabilitiesRequest');
const ControllerRpc = define('csi.v1.ControllerServiceCapability.RPC', { type: enumOf(1, CONTROLLER_RPC_TYPES) });
/** oneof type: rpc. */
const ControllerServiceCapability = define('csi.v1.ControllerServiceCapability', { rpc: one(1, ControllerRpc) });
export const ControllerGetCapabilitiesResponse = define('csi.v1.ControllerGetCapabilitiesResponse', {
  capabilities: many(1, ControllerServiceCapability),
});
export const GetCapacityRequest = define('csi.v1.GetCapacityRequest', {
  volumeCapabilities: many(1, VolumeCapability),
  parameters: map(2),
  accessibleTopology: one(3, Topology),
});
export const GetCapacityResponse = define('csi.v1.GetCapacityResponse', {
  availableCapacity: int64(1),
  maximumVolumeSize: one(2, Int64Value),
  minimumVolumeSize: one(3, Int64Value),
});
export const ControllerExpandVolumeRequest = define('csi.v1.ControllerExpandVolumeRequest', {
  volumeId: string(1),
  capacityRange: one(2, CapacityRange),
  secrets: map(3),
  volumeCapability: one(4, VolumeCapability),
});
export const ControllerExpandVolumeResponse = define('csi.v1.ControllerExpandVolumeResponse', {
  capacityBytes: int64(1),
  nodeExpansionRequired: bool(2),
});
export const ListVolumesRequest = define('csi.v1.ListVolumesRequest', {
  maxEntries: int32(1),
  startingToken: string(2),
});
const VolumeCondition = define('csi.v1.VolumeCondition', { abnormal: bool(1), message: string(2) });
const ListedVolumeStatus = define('csi.v1.ListVolumesResponse.VolumeStatus', {
  publishedNodeIds: strings(1),
  volumeCondition: one(2, VolumeCondition),
});
const ListedVolume = define('csi.v1.ListVolumesResponse.Entry', {
  volume: one(1, Volume),
  status: one(2, ListedVolumeStatus),
});
export const ListVolumesResponse = define('csi.v1.ListVolumesResponse', {
  entries: many(1, ListedVolume),
  nextToken: string(2),
});

// Node service: NodeGetInfo (what a controller-side sidecar asks a node plugin: --node-deployment), and what a
// kubelet asks the reference plugin (publish and unpublish without staging, and the node's capabilities).
export const NodeGetInfoRequest = Empty('NodeGetInfoRequest');
export const NodeGetInfoResponse = define('csi.v1.NodeGetInfoResponse', {
  nodeId: string(1),
  maxVolumesPerNode: int64(2),
  accessibleTopology: one(3, Topology),
});
export const NodeGetCapabilitiesRequest = Empty('NodeGetCapabilitiesRequest');
const NodeRpc = define('csi.v1.NodeServiceCapability.RPC', { type: enumOf(1, NODE_RPC_TYPES) });
/** oneof type: rpc. */
const NodeServiceCapability = define('csi.v1.NodeServiceCapability', { rpc: one(1, NodeRpc) });
export const NodeGetCapabilitiesResponse = define('csi.v1.NodeGetCapabilitiesResponse', {
  capabilities: many(1, NodeServiceCapability),
});
export const NodePublishVolumeRequest = define('csi.v1.NodePublishVolumeRequest', {
  volumeId: string(1),
  publishContext: map(2),
  stagingTargetPath: string(3),
  targetPath: string(4),
  volumeCapability: one(5, VolumeCapability),
  readonly: bool(6),
  secrets: map(7),
  volumeContext: map(8),
});
export const NodePublishVolumeResponse = define('csi.v1.NodePublishVolumeResponse', {});
export const NodeUnpublishVolumeRequest = define('csi.v1.NodeUnpublishVolumeRequest', {
  volumeId: string(1),
  targetPath: string(2),
});
export const NodeUnpublishVolumeResponse = define('csi.v1.NodeUnpublishVolumeResponse', {});
