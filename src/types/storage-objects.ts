// Plain-JSON types of the CSI kinds (storage.k8s.io CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment,
// VolumeAttributesClass) and the snapshot kinds (snapshot.storage.k8s.io/v1), as the embedded cluster serves them
// and the CSI road reads them. Only the fields the project reads are typed; the others pass through.
import type { KubeObject, LabelSelector, ObjectReference } from './k8s.ts';

/** One service account token a CSI driver asks kubelet for. */
export interface CSIDriverTokenRequest {
  audience: string;
  expirationSeconds?: number;
}

/** A storage.k8s.io/v1 CSIDriver: how Kubernetes talks to one CSI driver (named by metadata.name). */
export interface CSIDriver extends KubeObject {
  spec: {
    attachRequired?: boolean;
    podInfoOnMount?: boolean;
    volumeLifecycleModes?: Array<'Persistent' | 'Ephemeral'>;
    storageCapacity?: boolean;
    fsGroupPolicy?: 'ReadWriteOnceWithFSType' | 'File' | 'None';
    tokenRequests?: CSIDriverTokenRequest[];
    requiresRepublish?: boolean;
    seLinuxMount?: boolean;
  };
}

/** One driver registered on a node: its node id and the topology keys of its segments. */
export interface CSINodeDriver {
  name: string;
  nodeID: string;
  topologyKeys?: string[] | null;
  allocatable?: { count?: number };
}

/** A storage.k8s.io/v1 CSINode: the CSI drivers of the node of the same name. */
export interface CSINode extends KubeObject {
  spec: { drivers: CSINodeDriver[] };
}

/** A storage.k8s.io/v1 CSIStorageCapacity: what one class can still provision in one topology segment. */
export interface CSIStorageCapacity extends KubeObject {
  storageClassName: string;
  nodeTopology?: LabelSelector;
  capacity?: string;
  maximumVolumeSize?: string;
}

/** A storage.k8s.io/v1 VolumeAttachment: a request to attach one volume to one node. */
export interface VolumeAttachment extends KubeObject {
  spec: {
    attacher: string;
    nodeName: string;
    source: { persistentVolumeName?: string; inlineVolumeSpec?: Record<string, unknown> };
  };
  status?: {
    attached: boolean;
    attachmentMetadata?: Record<string, string>;
    attachError?: { time?: string; message?: string };
    detachError?: { time?: string; message?: string };
  };
}

/** A storage.k8s.io/v1beta1 VolumeAttributesClass: mutable parameters a CSI driver applies to a volume. */
export interface VolumeAttributesClass extends KubeObject {
  driverName: string;
  parameters?: Record<string, string>;
}

/** The error a snapshot object reports. */
export interface VolumeSnapshotError {
  time?: string;
  message?: string;
}

/** A snapshot.storage.k8s.io/v1 VolumeSnapshot: a user's request for a snapshot of a claim, or a pre-made one. */
export interface VolumeSnapshot extends KubeObject {
  spec: {
    source: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: {
    boundVolumeSnapshotContentName?: string;
    creationTime?: string;
    readyToUse?: boolean;
    restoreSize?: string;
    error?: VolumeSnapshotError;
    volumeGroupSnapshotName?: string;
  };
}

/** A snapshot.storage.k8s.io/v1 VolumeSnapshotContent: the snapshot as the storage system holds it. */
export interface VolumeSnapshotContent extends KubeObject {
  spec: {
    deletionPolicy: 'Delete' | 'Retain';
    driver: string;
    source: { volumeHandle?: string; snapshotHandle?: string };
    sourceVolumeMode?: 'Filesystem' | 'Block';
    volumeSnapshotClassName?: string;
    volumeSnapshotRef: ObjectReference;
  };
  status?: {
    creationTime?: number;
    readyToUse?: boolean;
    restoreSize?: number;
    snapshotHandle?: string;
    error?: VolumeSnapshotError;
    volumeGroupSnapshotHandle?: string;
  };
}

/** A snapshot.storage.k8s.io/v1 VolumeSnapshotClass: driver, deletion policy and parameters of snapshots. */
export interface VolumeSnapshotClass extends KubeObject {
  driver: string;
  deletionPolicy: 'Delete' | 'Retain';
  parameters?: Record<string, string>;
}
