// The runtime client's resource descriptors of the API kinds CSI mode reads besides the core ones: storage.k8s.io
// CSINode, VolumeAttachment and VolumeAttributesClass, and snapshot.storage.k8s.io VolumeSnapshot and
// VolumeSnapshotContent. Their plain-JSON types are shared with the embedded cluster (src/types/storage-objects.ts).
import { defineResource } from '../runtime/resources.ts';
import type {
  CSINode,
  VolumeAttachment,
  VolumeAttributesClass,
  VolumeSnapshot,
  VolumeSnapshotContent,
} from '../types/storage-objects.ts';

/** CSINodes (cluster-scoped). */
export const csiNodes = defineResource<CSINode>('storage.k8s.io', 'v1', 'csinodes', 'CSINode', false);
/** VolumeAttachments (cluster-scoped). */
export const volumeAttachments = defineResource<VolumeAttachment>(
  'storage.k8s.io',
  'v1',
  'volumeattachments',
  'VolumeAttachment',
  false,
);
/**
 * VolumeAttributesClasses (cluster-scoped), at the version Kubernetes 1.32 serves by default (v1beta1; v1 from
 * 1.34). A caller on a newer cluster passes its own descriptor to KubeClusterAccess.
 */
export const volumeAttributesClasses = defineResource<VolumeAttributesClass>(
  'storage.k8s.io',
  'v1beta1',
  'volumeattributesclasses',
  'VolumeAttributesClass',
  false,
);
/** VolumeSnapshots (namespaced). */
export const volumeSnapshots = defineResource<VolumeSnapshot>(
  'snapshot.storage.k8s.io',
  'v1',
  'volumesnapshots',
  'VolumeSnapshot',
  true,
);
/** VolumeSnapshotContents (cluster-scoped). */
export const volumeSnapshotContents = defineResource<VolumeSnapshotContent>(
  'snapshot.storage.k8s.io',
  'v1',
  'volumesnapshotcontents',
  'VolumeSnapshotContent',
  false,
);
