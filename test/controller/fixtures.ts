// Object builders shared by the controller tests, named after the Go library's controller_test.go helpers
// (newClaim, newStorageClass, newVolume...) so scenarios can be compared side by side.
import { ANN_BETA_STORAGE_PROVISIONER, ANN_DYNAMICALLY_PROVISIONED } from '../../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, ReclaimPolicy, StorageClass } from '../../src/types/k8s.ts';

export function newStorageClass(name: string, provisioner: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, uid: `class-uid-${name}`, resourceVersion: '1' },
    provisioner,
    reclaimPolicy: 'Delete',
    ...extra,
  };
}

export function newClaim(
  name: string,
  uid: string,
  className: string,
  provisioner: string,
  volumeName: string,
  annotations: Record<string, string> = {},
): PersistentVolumeClaim {
  const ann: Record<string, string> = {};
  if (provisioner !== '') ann[ANN_BETA_STORAGE_PROVISIONER] = provisioner;
  Object.assign(ann, annotations);
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default', uid, resourceVersion: '0', annotations: ann },
    spec: {
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      resources: { requests: { storage: '1Mi' } },
      storageClassName: className,
      ...(volumeName ? { volumeName } : {}),
    },
    status: { phase: 'Pending' },
  };
}

export function newVolume(
  name: string,
  phase: 'Available' | 'Bound' | 'Released' | 'Failed',
  policy: ReclaimPolicy,
  annotations: Record<string, string> | undefined,
  finalizers?: string[],
  deletionTimestamp?: string,
): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      uid: `pv-uid-${name}`,
      ...(annotations ? { annotations } : {}),
      ...(finalizers ? { finalizers } : {}),
      ...(deletionTimestamp ? { deletionTimestamp } : {}),
    },
    spec: {
      persistentVolumeReclaimPolicy: policy,
      accessModes: ['ReadWriteOnce', 'ReadOnlyMany'],
      capacity: { storage: '1Mi' },
      nfs: { server: 'foo', path: 'bar', readOnly: false },
    },
    status: { phase },
  };
}

export function newCSIVolume(
  name: string,
  phase: 'Available' | 'Bound' | 'Released',
  policy: ReclaimPolicy,
  annotations: Record<string, string> | undefined,
  finalizers: string[] | undefined,
  driver: string,
): PersistentVolume {
  const pv = newVolume(name, phase, policy, annotations, finalizers);
  delete pv.spec.nfs;
  pv.spec.csi = { driver, volumeHandle: 'test-volume-id-1', fsType: 'ext4' };
  return pv;
}

/** The PV a provisioner would return for `claim`, completed as the controller completes it. */
export function newProvisionedVolume(storageClass: StorageClass, claim: PersistentVolumeClaim): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${claim.metadata.uid}`,
      annotations: { [ANN_DYNAMICALLY_PROVISIONED]: storageClass.provisioner },
    },
    spec: {
      persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
      accessModes: claim.spec.accessModes,
      capacity: { storage: claim.spec.resources?.requests?.storage ?? '1Mi' },
      nfs: { server: 'foo', path: 'bar', readOnly: false },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: claim.metadata.namespace,
        name: claim.metadata.name,
        uid: claim.metadata.uid,
        resourceVersion: claim.metadata.resourceVersion,
      },
      storageClassName: storageClass.metadata.name,
    },
  };
}
