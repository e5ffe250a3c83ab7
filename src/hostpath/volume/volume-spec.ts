// The PV objects the hostpath provisioner publishes, and what it reads back from them at delete time.
// Everything delete() needs is recorded on the PV itself (node, base path, onDelete policy), because the
// StorageClass may be changed or gone by then.
import type { AccessMode, PersistentVolume, ReclaimPolicy } from '../../types/k8s.ts';
import { LABEL_HOSTNAME } from '../../types/annotations.ts';
import { parseQuantity, isQuantity } from '../../types/quantity.ts';
import type { OnDeletePolicy } from '../config/class-parameters.ts';
import { canonicalAbsolutePath } from '../paths/canonical-path.ts';
import { localDirectoryOf, volumeSourceSpec, type MountedExport, type PublishedType } from './volume-source.ts';

/** The node whose disk holds the volume, or that provisioned it (shared path). */
export const ANN_HOSTPATH_NODE = 'hostpath.kube-provisioner.io/node';
/** The configured base path the volume lives under. */
export const ANN_HOSTPATH_BASE_PATH = 'hostpath.kube-provisioner.io/base-path';
/** `node` (node-local path) or `shared` (sharedFileSystemPath). */
export const ANN_HOSTPATH_KIND = 'hostpath.kube-provisioner.io/path-kind';
/** delete | retain | archive, from the class at provision time. */
export const ANN_HOSTPATH_ON_DELETE = 'hostpath.kube-provisioner.io/on-delete';

/** Whether a volume lives on a node-local path or on the shared filesystem. */
export type PathKind = 'node' | 'shared';

/** Everything buildVolume needs to describe a provisioned directory as a PersistentVolume. */
export interface VolumeSpecInput {
  pvName: string;
  path: string;
  basePath: string;
  kind: PathKind;
  /** The node (node paths) or the provisioning instance's node (shared path), when known. */
  node?: string;
  /** Node affinity for node paths: label key and value. */
  affinity?: { key: string; value: string };
  volumeType: PublishedType;
  /** The export the shared path is mounted from (volumeType nfs). */
  nfsMount?: MountedExport;
  /** The class's mountOptions, copied as nfs-subdir copies them. */
  mountOptions?: string[];
  capacity: string;
  accessModes: AccessMode[];
  reclaimPolicy: ReclaimPolicy;
  storageClassName?: string;
  onDelete: OnDeletePolicy;
}

/** Builds the PV for a created directory. The controller adds claimRef, provisioned-by and finalizers. */
export function buildVolume(v: VolumeSpecInput): PersistentVolume {
  const annotations: Record<string, string> = {
    [ANN_HOSTPATH_BASE_PATH]: v.basePath,
    [ANN_HOSTPATH_KIND]: v.kind,
    [ANN_HOSTPATH_ON_DELETE]: v.onDelete,
  };
  if (v.node) annotations[ANN_HOSTPATH_NODE] = v.node;
  const pv: PersistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: v.pvName, annotations },
    spec: {
      capacity: { storage: v.capacity },
      accessModes: [...v.accessModes],
      persistentVolumeReclaimPolicy: v.reclaimPolicy,
      volumeMode: 'Filesystem',
      ...volumeSourceSpec(v.volumeType, v.path, v.nfsMount),
    },
  };
  if (v.mountOptions && v.mountOptions.length > 0) pv.spec.mountOptions = [...v.mountOptions];
  if (v.storageClassName) pv.spec.storageClassName = v.storageClassName;
  if (v.affinity) {
    pv.spec.nodeAffinity = {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: v.affinity.key, operator: 'In', values: [v.affinity.value] }] },
        ],
      },
    };
  }
  return pv;
}

/** What delete() reads from a PV. `node` falls back to a single-valued hostname affinity. */
export interface VolumeLocation {
  path?: string;
  basePath?: string;
  kind?: PathKind;
  node?: string;
  /** Missing annotation: `archive` for an nfs source (nfs-subdir's default), else `delete`; an unrecognised value: undefined. */
  onDelete: OnDeletePolicy | undefined;
}

/**
 * Where a hostpath PersistentVolume lives (node, base path, directory), from its spec and annotations.
 * `exports`: the mounted NFS exports, so an `nfs:` source maps back to its local directory.
 */
export function readVolumeLocation(pv: PersistentVolume, exports: readonly MountedExport[] = []): VolumeLocation {
  const ann = pv.metadata.annotations ?? {};
  const path = localDirectoryOf(pv, exports);
  const od = ann[ANN_HOSTPATH_ON_DELETE];
  const kind = ann[ANN_HOSTPATH_KIND];
  return {
    path: typeof path === 'string' ? path : undefined,
    basePath: canonicalAbsolutePath(ann[ANN_HOSTPATH_BASE_PATH]) ?? ann[ANN_HOSTPATH_BASE_PATH],
    kind: kind === 'node' || kind === 'shared' ? kind : undefined,
    node: ann[ANN_HOSTPATH_NODE] ?? affinityHostname(pv),
    // Without our annotation (a PV another provisioner wrote): what that provisioner did by default, so nothing it
    // would have kept is lost: nfs-subdir (an nfs source) archives, local-path (local, hostPath) deletes.
    onDelete:
      od === undefined
        ? pv.spec.nfs
          ? 'archive'
          : 'delete'
        : od === 'delete' || od === 'retain' || od === 'archive'
          ? od
          : undefined,
  };
}

function affinityHostname(pv: PersistentVolume): string | undefined {
  const terms = pv.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [];
  for (const t of terms) {
    for (const e of t.matchExpressions ?? []) {
      if (e.key === LABEL_HOSTNAME && e.operator === 'In' && e.values?.length === 1) return e.values[0];
    }
  }
  return undefined;
}

/** The PV's capacity in bytes (0 when it has none). */
export function volumeBytes(pv: PersistentVolume): bigint {
  const s = pv.spec.capacity?.storage;
  return isQuantity(s) ? parseQuantity(s) : 0n;
}
