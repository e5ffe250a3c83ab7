// CreateSnapshot, as external-snapshotter would call it, for scripts/check-third-party-csi.ts only: taking snapshots
// is not the library's job (yet), so its messages are described here, from the CSI spec's field numbers:
// CreateSnapshotRequest{source_volume_id=1, name=2, secrets=3, parameters=4} -> CreateSnapshotResponse{snapshot=1},
// Snapshot{size_bytes=1, snapshot_id=2, source_volume_id=3, creation_time=4 (Timestamp), ready_to_use=5}.
import { decodeMessage, encodeMessage } from '../src/csi/codec.ts';
import type { MessageDescriptor } from '../src/csi/descriptors.ts';
import { socketPathOf } from '../src/csi/csi-client.ts';

const CreateSnapshotRequest = {
  name: 'csi.v1.CreateSnapshotRequest',
  fields: {
    sourceVolumeId: { kind: 'string', no: 1 },
    name: { kind: 'string', no: 2 },
    secrets: { kind: 'map', no: 3 },
    parameters: { kind: 'map', no: 4 },
  },
} as const satisfies MessageDescriptor;
const Timestamp = {
  name: 'google.protobuf.Timestamp',
  fields: { seconds: { kind: 'int64', no: 1 }, nanos: { kind: 'int32', no: 2 } },
} as const satisfies MessageDescriptor;
const Snapshot = {
  name: 'csi.v1.Snapshot',
  fields: {
    sizeBytes: { kind: 'int64', no: 1 },
    snapshotId: { kind: 'string', no: 2 },
    sourceVolumeId: { kind: 'string', no: 3 },
    creationTime: { kind: 'message', no: 4, message: Timestamp },
    readyToUse: { kind: 'bool', no: 5 },
  },
} as const satisfies MessageDescriptor;
const CreateSnapshotResponse = {
  name: 'csi.v1.CreateSnapshotResponse',
  fields: { snapshot: { kind: 'message', no: 1, message: Snapshot } },
} as const satisfies MessageDescriptor;

/** Takes a snapshot of `volumeId` named `name`; resolves with its id and size once the plugin answered. */
export async function createSnapshot(
  address: string,
  name: string,
  volumeId: string,
): Promise<{ snapshotId: string; sizeBytes: bigint; readyToUse: boolean }> {
  const grpc = await import('@grpc/grpc-js');
  const client = new grpc.Client(`unix://${socketPathOf(address)}`, grpc.credentials.createInsecure());
  try {
    const reply = await new Promise<ReturnType<typeof decodeMessage<typeof CreateSnapshotResponse>>>(
      (resolve, reject) =>
        client.makeUnaryRequest(
          '/csi.v1.Controller/CreateSnapshot',
          (v: Record<string, unknown>) => encodeMessage(CreateSnapshotRequest, v),
          (b: Buffer) => decodeMessage(CreateSnapshotResponse, b),
          { sourceVolumeId: volumeId, name },
          { deadline: Date.now() + 30_000 },
          (err, res) => (err ? reject(new Error(`CreateSnapshot: ${err.details || err.message}`)) : resolve(res!)),
        ),
    );
    const s = reply.snapshot ?? {};
    return { snapshotId: s.snapshotId ?? '', sizeBytes: s.sizeBytes ?? 0n, readyToUse: s.readyToUse ?? false };
  } finally {
    client.close();
  }
}
