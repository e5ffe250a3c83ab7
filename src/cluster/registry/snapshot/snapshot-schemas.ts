// The schemas of the snapshot kinds, which @kubernetes/client-node has no models of: our own description of the
// fields external-snapshotter's v1 CRDs define (names, JSON types, nesting), in the compact notation of the
// generated schema table. `npm run gen:schemas` copies them into schemas.generated.ts, which drives pruning of
// unknown fields and the OpenAPI v3 documents (component names `io.k8s.storage.snapshot.v1.<Kind>`, as
// kube-apiserver names a CRD's schema). Timestamps are plain strings: a custom resource keeps them as sent.
import type { CustomSchema } from '../resource-type.ts';

const API_VERSION: [string, string] = [
  'string',
  'APIVersion defines the versioned schema of this representation of an object.',
];
const KIND: [string, string] = [
  'string',
  'Kind is a string value representing the REST resource this object represents.',
];
const METADATA: [string] = ['V1ObjectMeta'];
const PKG = 'io.k8s.storage.snapshot.v1';

const SNAPSHOT_ERROR = {
  d: 'The last error seen while creating the snapshot, if any.',
  f: {
    message: ['string', 'What went wrong (may be logged: never secrets).'],
    time: ['string', 'When the error was seen (RFC 3339).'],
  },
} satisfies CustomSchema['models'][string];

/** VolumeSnapshot and the models below it. */
export const VOLUME_SNAPSHOT_SCHEMA: CustomSchema = {
  pkg: PKG,
  models: {
    SnapshotV1VolumeSnapshot: {
      d: 'A request for a point-in-time snapshot of a claim, or a handle on a snapshot that already exists.',
      f: {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: METADATA,
        spec: ['SnapshotV1VolumeSnapshotSpec', 'What is asked for: the source, and the class. Required.'],
        status: ['SnapshotV1VolumeSnapshotStatus', 'What the snapshot controller observed.'],
      },
    },
    SnapshotV1VolumeSnapshotSpec: {
      d: 'The desired snapshot.',
      f: {
        source: [
          'SnapshotV1VolumeSnapshotSource',
          'Where the snapshot comes from: exactly one of a claim or an existing content. Immutable.',
        ],
        volumeSnapshotClassName: [
          'string',
          'The VolumeSnapshotClass to use; unset picks the default class of the driver. Never the empty string.',
        ],
      },
    },
    SnapshotV1VolumeSnapshotSource: {
      d: 'Exactly one of persistentVolumeClaimName and volumeSnapshotContentName.',
      f: {
        persistentVolumeClaimName: [
          'string',
          "The claim, in the snapshot's namespace, to take a new snapshot of. Immutable.",
        ],
        volumeSnapshotContentName: [
          'string',
          'A pre-existing VolumeSnapshotContent this object represents. Immutable.',
        ],
      },
    },
    SnapshotV1VolumeSnapshotStatus: {
      d: 'The observed state of a snapshot.',
      f: {
        boundVolumeSnapshotContentName: [
          'string',
          'The VolumeSnapshotContent this snapshot is bound to; check that it points back.',
        ],
        creationTime: ['string', 'When the storage system took the snapshot (RFC 3339).'],
        error: ['SnapshotV1VolumeSnapshotError', 'The last error, if any.'],
        readyToUse: ['boolean', 'Whether a volume can be restored from the snapshot.'],
        restoreSize: ['int-or-string', 'The smallest volume that can be restored from the snapshot (a quantity).'],
        volumeGroupSnapshotName: ['string', 'The VolumeGroupSnapshot this snapshot belongs to, if any.'],
      },
    },
    SnapshotV1VolumeSnapshotError: SNAPSHOT_ERROR,
  },
};

/** VolumeSnapshotContent and the models below it. */
export const VOLUME_SNAPSHOT_CONTENT_SCHEMA: CustomSchema = {
  pkg: PKG,
  models: {
    SnapshotV1VolumeSnapshotContent: {
      d: 'A snapshot as the storage system holds it, bound to one VolumeSnapshot.',
      f: {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: METADATA,
        spec: ['SnapshotV1VolumeSnapshotContentSpec', "The snapshot's source, driver and binding. Required."],
        status: ['SnapshotV1VolumeSnapshotContentStatus', 'What the snapshot sidecar observed.'],
      },
    },
    SnapshotV1VolumeSnapshotContentSpec: {
      d: 'The snapshot content.',
      f: {
        deletionPolicy: [
          'string',
          "Delete or Retain: what happens to the storage system's snapshot when the VolumeSnapshot goes. Required.",
        ],
        driver: ['string', 'The CSI driver that took (or holds) the snapshot. Required.'],
        source: [
          'SnapshotV1VolumeSnapshotContentSource',
          "Exactly one of the volume to snapshot or an existing snapshot's handle. Required.",
        ],
        sourceVolumeMode: ['string', 'The volume mode of the snapshotted volume (Filesystem or Block). Immutable.'],
        volumeSnapshotClassName: ['string', 'The VolumeSnapshotClass of the snapshot.'],
        volumeSnapshotRef: [
          'V1ObjectReference',
          'The VolumeSnapshot this content is bound to; name and namespace required.',
        ],
      },
    },
    SnapshotV1VolumeSnapshotContentSource: {
      d: 'Exactly one of volumeHandle and snapshotHandle.',
      f: {
        snapshotHandle: ['string', 'The CSI snapshot id of a snapshot that already exists. Immutable.'],
        volumeHandle: ['string', 'The CSI volume id to take a snapshot of. Immutable.'],
      },
    },
    SnapshotV1VolumeSnapshotContentStatus: {
      d: 'The observed state of the snapshot content.',
      f: {
        creationTime: ['int64', 'When the storage system took the snapshot, in nanoseconds since the epoch.'],
        error: ['SnapshotV1VolumeSnapshotError', 'The last error, if any.'],
        readyToUse: ['boolean', 'Whether a volume can be restored from the snapshot.'],
        restoreSize: ['int64', 'The full size of the snapshot in bytes (not negative).'],
        snapshotHandle: ['string', 'The CSI snapshot id.'],
        volumeGroupSnapshotHandle: ['string', 'The CSI group snapshot id, if the snapshot belongs to one.'],
      },
    },
    SnapshotV1VolumeSnapshotError: SNAPSHOT_ERROR,
  },
};

/** VolumeSnapshotClass. */
export const VOLUME_SNAPSHOT_CLASS_SCHEMA: CustomSchema = {
  pkg: PKG,
  models: {
    SnapshotV1VolumeSnapshotClass: {
      d: 'The driver, deletion policy and parameters of the snapshots taken through it.',
      f: {
        apiVersion: API_VERSION,
        deletionPolicy: ['string', 'Delete or Retain, for the contents created through this class. Required.'],
        driver: ['string', 'The CSI driver that takes the snapshots. Required.'],
        kind: KIND,
        metadata: METADATA,
        parameters: ['map[]string', 'Driver-specific parameters.'],
      },
    },
  },
};
