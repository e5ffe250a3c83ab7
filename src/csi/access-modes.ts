// PVC access modes as CSI volume capabilities (csi-lib-utils' accessmodes): one capability per mode, with the
// SINGLE_NODE_MULTI_WRITER variants when the plugin has that capability (RWO -> SINGLE_NODE_MULTI_WRITER,
// RWOP -> SINGLE_NODE_SINGLE_WRITER), the access type from the volume mode (block, or mount with fstype and the
// class's mount options as mount flags).
import { InfeasibleError } from '../controller/provisioner.ts';
import type { AccessMode, VolumeMode } from '../types/k8s.ts';
import type { CsiAccessMode } from './descriptors.ts';
import type { RequestOf } from './services.ts';

/** A CSI VolumeCapability. */
export type VolumeCapability = NonNullable<RequestOf<'controllerExpandVolume'>['volumeCapability']>;

/** csi-lib-utils' ToCSIAccessMode for a set of PV/PVC access modes. */
export function toCsiAccessMode(modes: readonly AccessMode[], singleNodeMultiWriter: boolean): CsiAccessMode {
  const m = new Set(modes);
  if (m.has('ReadWriteOncePod')) {
    if (m.size > 1)
      throw new InfeasibleError(
        'Kubernetes does not support use of ReadWriteOncePod with other access modes on the same PersistentVolume',
      );
    return singleNodeMultiWriter ? 'SINGLE_NODE_SINGLE_WRITER' : 'SINGLE_NODE_WRITER';
  }
  if (m.has('ReadWriteMany')) return 'MULTI_NODE_MULTI_WRITER';
  if (m.has('ReadOnlyMany') && m.has('ReadWriteOnce'))
    throw new InfeasibleError('CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume');
  if (m.has('ReadOnlyMany')) return 'MULTI_NODE_READER_ONLY';
  if (m.has('ReadWriteOnce')) return singleNodeMultiWriter ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
  throw new InfeasibleError(`unsupported AccessMode combination: ${JSON.stringify(modes)}`);
}

/** One capability for `modes` (external-resizer sends this for a PV). */
export function volumeCapability(
  modes: readonly AccessMode[],
  volumeMode: VolumeMode | undefined,
  fsType: string,
  mountFlags: readonly string[] | undefined,
  singleNodeMultiWriter: boolean,
): VolumeCapability {
  const accessMode = { mode: toCsiAccessMode(modes, singleNodeMultiWriter) };
  if (volumeMode === 'Block') return { block: {}, accessMode };
  return {
    mount: { ...(fsType ? { fsType } : {}), ...(mountFlags?.length ? { mountFlags: [...mountFlags] } : {}) },
    accessMode,
  };
}

/** external-provisioner's getVolumeCapabilities: one capability per access mode of the claim. */
export function volumeCapabilities(
  modes: readonly AccessMode[],
  volumeMode: VolumeMode | undefined,
  fsType: string,
  mountFlags: readonly string[] | undefined,
  singleNodeMultiWriter: boolean,
): VolumeCapability[] {
  return modes.map((mode) => volumeCapability([mode], volumeMode, fsType, mountFlags, singleNodeMultiWriter));
}
