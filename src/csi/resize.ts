// Expansion, external-resizer's way: ControllerExpandVolume with the PV's handle, the requested bytes, the
// controller-expand secret and the PV's volume capability; its code table (INVALID_ARGUMENT, OUT_OF_RANGE,
// NOT_FOUND infeasible; FAILED_PRECONDITION "in use": no new call while a pod uses the claim; the rest retried);
// and the "trivial" resizer of a plugin that only expands on the node (no call: the node expands).
import { InfeasibleError, type ExpandResult } from '../controller/provisioner.ts';
import type { Logger } from '../runtime/logger.ts';
import type { PersistentVolume } from '../types/k8s.ts';
import { formatBytes, parseQuantity } from '../types/quantity.ts';
import { volumeCapability } from './access-modes.ts';
import type { CsiClient } from './csi-client.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import { resizeFailureOf } from './grpc-status.ts';
import { readSecret } from './provision-request.ts';

/** The plugin cannot expand the volume while it is published (FAILED_PRECONDITION), and a pod still uses it. */
export class VolumeInUseError extends Error {
  override name = 'VolumeInUseError';
}

/** How a plugin expands: on the controller (ControllerExpandVolume), only on the node (trivial), or not at all. */
export type ExpansionMode = 'controller' | 'node' | 'none';

/** What the expansion needs. */
export interface ResizeContext {
  client: CsiClient;
  cluster: CsiClusterAccess;
  mode: ExpansionMode;
  singleNodeMultiWriter: boolean;
  logger: Logger;
  /** PV names whose last ControllerExpandVolume failed with FAILED_PRECONDITION (external-resizer's usedPVCs). */
  inUseErrors: Set<string>;
}

/** expand() of a CSI volume. */
export async function expandCsiVolume(
  r: ResizeContext,
  volume: PersistentVolume,
  newSize: string,
  signal: AbortSignal,
): Promise<ExpandResult> {
  if (r.mode === 'node') return { capacity: newSize, nodeExpansionRequired: true };
  const pvName = volume.metadata.name ?? '';
  const csi = volume.spec.csi;
  if (!csi?.volumeHandle) throw new InfeasibleError(`volume ${pvName} has no CSI volume handle`);
  const claim = volume.spec.claimRef;
  if (
    r.inUseErrors.has(pvName) &&
    claim &&
    (await r.cluster.claimInUse(claim.namespace ?? '', claim.name ?? '', signal))
  ) {
    throw new VolumeInUseError(
      `Unable to expand ${claim.namespace ?? ''}/${claim.name ?? ''} because the CSI driver only supports offline expansion and volume is currently in-use`,
    );
  }
  r.inUseErrors.delete(pvName);
  const secretRef = csi.controllerExpandSecretRef as { name?: string; namespace?: string } | undefined;
  const secrets =
    secretRef?.name && secretRef.namespace
      ? await readSecret(r.cluster, { name: secretRef.name, namespace: secretRef.namespace }, signal)
      : undefined;
  const capability = volumeCapability(
    volume.spec.accessModes ?? [],
    volume.spec.volumeMode,
    typeof csi.fsType === 'string' ? csi.fsType : '',
    volume.spec.mountOptions,
    r.singleNodeMultiWriter,
  );
  const requiredBytes = parseQuantity(newSize);
  try {
    const reply = await r.client.call(
      'controllerExpandVolume',
      {
        volumeId: csi.volumeHandle,
        capacityRange: { requiredBytes },
        ...(secrets ? { secrets } : {}),
        volumeCapability: capability,
      },
      { signal },
    );
    const bytes = reply.capacityBytes && reply.capacityBytes > 0n ? reply.capacityBytes : requiredBytes;
    return { capacity: formatBytes(bytes), nodeExpansionRequired: reply.nodeExpansionRequired ?? false };
  } catch (err) {
    const kind = resizeFailureOf(err);
    const message = `resize volume "${pvName}" failed: ${err instanceof Error ? err.message : String(err)}`;
    if (kind === 'infeasible') throw new InfeasibleError(message, { cause: err });
    if (kind === 'inUse') {
      r.inUseErrors.add(pvName);
      throw new VolumeInUseError(message, { cause: err });
    }
    throw err;
  }
}
