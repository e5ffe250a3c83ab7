// The API kinds CSI mode reads besides the core ones: storage.k8s.io CSINode, VolumeAttachment and
// VolumeAttributesClass, and snapshot.storage.k8s.io VolumeSnapshot and VolumeSnapshotContent. Plain JSON, only the
// fields we read (the rest passes through), with the runtime client's resource descriptors.
import { defineResource } from '../runtime/resources.ts';
import type { KubeObject } from '../types/k8s.ts';

/** storage.k8s.io/v1 CSINode: the CSI drivers installed on a node, with their topology keys. */
export interface CSINode extends KubeObject {
  spec: { drivers?: Array<{ name: string; nodeID?: string; topologyKeys?: string[] | null; allocatable?: { count?: number } }> };
}

/** storage.k8s.io/v1 VolumeAttachment: a volume attached (or being attached) to a node. */
export interface VolumeAttachment extends KubeObject {
  spec: { attacher: string; nodeName: string; source: { persistentVolumeName?: string; inlineVolumeSpec?: unknown } };
  status?: { attached?: boolean };
}

/** storage.k8s.io VolumeAttributesClass: mutable parameters for a driver. */
export interface VolumeAttributesClass extends KubeObject {
  driverName: string;
  parameters?: Record<string, string>;
}

/** snapshot.storage.k8s.io/v1 VolumeSnapshot. */
export interface VolumeSnapshot extends KubeObject {
  spec: { source: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string }; volumeSnapshotClassName?: string };
  status?: { boundVolumeSnapshotContentName?: string; readyToUse?: boolean; restoreSize?: string; creationTime?: string; error?: unknown };
}

/** snapshot.storage.k8s.io/v1 VolumeSnapshotContent. */
export interface VolumeSnapshotContent extends KubeObject {
  spec: {
    driver: string;
    volumeSnapshotRef: { name?: string; namespace?: string; uid?: string };
    source: { volumeHandle?: string; snapshotHandle?: string };
    sourceVolumeMode?: 'Filesystem' | 'Block';
    deletionPolicy?: 'Delete' | 'Retain';
  };
  status?: { snapshotHandle?: string; readyToUse?: boolean; restoreSize?: number };
}

/** CSINodes (cluster-scoped). */
export const csiNodes = defineResource<CSINode>('storage.k8s.io', 'v1', 'csinodes', 'CSINode', false);
/** VolumeAttachments (cluster-scoped). */
export const volumeAttachments = defineResource<VolumeAttachment>('storage.k8s.io', 'v1', 'volumeattachments', 'VolumeAttachment', false);
/**
 * VolumeAttributesClasses (cluster-scoped), at the version Kubernetes 1.32 serves by default (v1beta1; v1 from
 * 1.34). A caller on a newer cluster passes its own descriptor to KubeClusterAccess.
 */
export const volumeAttributesClasses = defineResource<VolumeAttributesClass>('storage.k8s.io', 'v1beta1', 'volumeattributesclasses', 'VolumeAttributesClass', false);
/** VolumeSnapshots (namespaced). */
export const volumeSnapshots = defineResource<VolumeSnapshot>('snapshot.storage.k8s.io', 'v1', 'volumesnapshots', 'VolumeSnapshot', true);
/** VolumeSnapshotContents (cluster-scoped). */
export const volumeSnapshotContents = defineResource<VolumeSnapshotContent>('snapshot.storage.k8s.io', 'v1', 'volumesnapshotcontents', 'VolumeSnapshotContent', false);
