// The CSI RPCs we use, one row each: service, method, request and response descriptors. The client calls them by
// row; a server (the test kit's stub plugin, a reference plugin) builds its grpc-js service definition from the same
// rows, so both ends share one description of the wire.
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { decodeMessage, encodeMessage } from './codec.ts';
import * as d from './descriptors.ts';
import type { MessageDescriptor, MessageOf } from './descriptors.ts';

/** A CSI service. */
export type CsiService = 'Identity' | 'Controller' | 'Node';

/** One unary RPC: where it lives and what it carries. */
export interface RpcSpec<
  Req extends MessageDescriptor = MessageDescriptor,
  Res extends MessageDescriptor = MessageDescriptor,
> {
  readonly service: CsiService;
  /** The method name, as in the spec (`CreateVolume`). */
  readonly method: string;
  /** The gRPC path: `/csi.v1.<Service>/<Method>` (also the `method_name` metric label). */
  readonly path: string;
  readonly request: Req;
  readonly response: Res;
}

const rpc = <Req extends MessageDescriptor, Res extends MessageDescriptor>(
  service: CsiService,
  method: string,
  request: Req,
  response: Res,
): RpcSpec<Req, Res> => Object.freeze({ service, method, path: `/csi.v1.${service}/${method}`, request, response });

/** Every RPC of the client, by a camelCase name. */
export const CSI_RPCS = Object.freeze({
  getPluginInfo: rpc('Identity', 'GetPluginInfo', d.GetPluginInfoRequest, d.GetPluginInfoResponse),
  getPluginCapabilities: rpc(
    'Identity',
    'GetPluginCapabilities',
    d.GetPluginCapabilitiesRequest,
    d.GetPluginCapabilitiesResponse,
  ),
  probe: rpc('Identity', 'Probe', d.ProbeRequest, d.ProbeResponse),
  createVolume: rpc('Controller', 'CreateVolume', d.CreateVolumeRequest, d.CreateVolumeResponse),
  deleteVolume: rpc('Controller', 'DeleteVolume', d.DeleteVolumeRequest, d.DeleteVolumeResponse),
  controllerGetCapabilities: rpc(
    'Controller',
    'ControllerGetCapabilities',
    d.ControllerGetCapabilitiesRequest,
    d.ControllerGetCapabilitiesResponse,
  ),
  getCapacity: rpc('Controller', 'GetCapacity', d.GetCapacityRequest, d.GetCapacityResponse),
  controllerExpandVolume: rpc(
    'Controller',
    'ControllerExpandVolume',
    d.ControllerExpandVolumeRequest,
    d.ControllerExpandVolumeResponse,
  ),
  listVolumes: rpc('Controller', 'ListVolumes', d.ListVolumesRequest, d.ListVolumesResponse),
  nodeGetInfo: rpc('Node', 'NodeGetInfo', d.NodeGetInfoRequest, d.NodeGetInfoResponse),
  nodeGetCapabilities: rpc('Node', 'NodeGetCapabilities', d.NodeGetCapabilitiesRequest, d.NodeGetCapabilitiesResponse),
  nodePublishVolume: rpc('Node', 'NodePublishVolume', d.NodePublishVolumeRequest, d.NodePublishVolumeResponse),
  nodeUnpublishVolume: rpc('Node', 'NodeUnpublishVolume', d.NodeUnpublishVolumeRequest, d.NodeUnpublishVolumeResponse),
});

/** The name of an RPC of the client (a key of CSI_RPCS). */
export type CsiRpcName = keyof typeof CSI_RPCS;
/** The request message of an RPC. */
export type RequestOf<N extends CsiRpcName> = MessageOf<(typeof CSI_RPCS)[N]['request']>;
/** The response message of an RPC. */
export type ResponseOf<N extends CsiRpcName> = MessageOf<(typeof CSI_RPCS)[N]['response']>;

/** grpc-js's method definition of one RPC, with our codec as its (de)serializers. */
export function methodDefinition(spec: RpcSpec): MethodDefinition<Record<string, unknown>, Record<string, unknown>> {
  return {
    path: spec.path,
    requestStream: false,
    responseStream: false,
    originalName: spec.method,
    requestSerialize: (value) => encodeMessage(spec.request, value),
    requestDeserialize: (bytes) => decodeMessage(spec.request, bytes) as Record<string, unknown>,
    responseSerialize: (value) => encodeMessage(spec.response, value),
    responseDeserialize: (bytes) => decodeMessage(spec.response, bytes) as Record<string, unknown>,
  };
}

/** A service definition for a grpc-js server: the RPCs of `service` we describe, keyed by method name. */
export function serviceDefinition(service: CsiService): ServiceDefinition {
  const out: Record<string, MethodDefinition<Record<string, unknown>, Record<string, unknown>>> = {};
  for (const spec of Object.values(CSI_RPCS)) if (spec.service === service) out[spec.method] = methodDefinition(spec);
  return out;
}
