// The PersistentVolume external-provisioner publishes for a created CSI volume: capacity (the request when the plugin
// answered 0), the CSI source with the handle, the volume context plus our identity, the fstype (not for block), the
// secret references, read-only for a single ROX mode under --controller-publish-readonly, node affinity from the
// accessible topology, and the deletion-secret annotations DeleteVolume reads later.
import type { ProvisionOptions } from '../controller/provisioner.ts';
import type { PersistentVolume } from '../types/k8s.ts';
import { formatBytes } from '../types/quantity.ts';
import type { PreparedProvision } from './provision-request.ts';
import {
  ANN_DELETION_SECRET_NAME,
  ANN_DELETION_SECRET_NAMESPACE,
  ANN_MODIFY_SECRET_NAME,
  ANN_MODIFY_SECRET_NAMESPACE,
  type SecretReference,
} from './secrets.ts';
import type { ResponseOf } from './services.ts';
import { volumeNodeAffinity } from './topology.ts';

/** The volume attribute naming the provisioner instance that created a volume. */
export const ATTRIBUTE_PROVISIONER_IDENTITY = 'storage.kubernetes.io/csiProvisionerIdentity';

/** A created CSI volume (CreateVolume's reply). */
export type CreatedVolume = NonNullable<ResponseOf<'createVolume'>['volume']>;

const ref = (r: SecretReference | undefined) => (r ? { name: r.name, namespace: r.namespace } : undefined);

/** The PV for `volume`, created for `options` from `prepared`. `capacityBytes` is what the PV advertises. */
export function persistentVolumeFor(
  options: ProvisionOptions,
  prepared: PreparedProvision,
  volume: CreatedVolume,
  capacityBytes: bigint,
  p: { driverName: string; identity: string; topology: boolean; controllerPublishReadOnly: boolean },
): PersistentVolume {
  const { claim, storageClass: sc } = options;
  const refs = prepared.checked.secretRefs;
  const caps = prepared.request.volumeCapabilities ?? [];
  const readOnly =
    p.controllerPublishReadOnly && caps.length === 1 && caps[0].accessMode?.mode === 'MULTI_NODE_READER_ONLY';
  const block = claim.spec.volumeMode === 'Block';
  const csi: Record<string, unknown> = {
    driver: p.driverName,
    volumeHandle: volume.volumeId ?? '',
    volumeAttributes: { [ATTRIBUTE_PROVISIONER_IDENTITY]: p.identity, ...(volume.volumeContext ?? {}) },
    ...(readOnly ? { readOnly: true } : {}),
    ...(!block && prepared.checked.fsType ? { fsType: prepared.checked.fsType } : {}),
  };
  for (const [field, r] of [
    ['controllerPublishSecretRef', refs.controllerPublish],
    ['nodeStageSecretRef', refs.nodeStage],
    ['nodePublishSecretRef', refs.nodePublish],
    ['controllerExpandSecretRef', refs.controllerExpand],
    ['nodeExpandSecretRef', refs.nodeExpand],
  ] as const) {
    if (r) csi[field] = ref(r);
  }
  const annotations: Record<string, string> = {
    [ANN_DELETION_SECRET_NAME]: refs.provisioner?.name ?? '',
    [ANN_DELETION_SECRET_NAMESPACE]: refs.provisioner?.namespace ?? '',
  };
  if (refs.controllerModify) {
    annotations[ANN_MODIFY_SECRET_NAME] = refs.controllerModify.name;
    annotations[ANN_MODIFY_SECRET_NAMESPACE] = refs.controllerModify.namespace;
  }
  const affinity = p.topology ? volumeNodeAffinity(volume.accessibleTopology) : undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: options.pvName, annotations },
    spec: {
      accessModes: claim.spec.accessModes,
      ...(sc.mountOptions ? { mountOptions: [...sc.mountOptions] } : {}),
      capacity: { storage: formatBytes(capacityBytes) },
      csi: csi as PersistentVolume['spec']['csi'],
      ...(sc.reclaimPolicy ? { persistentVolumeReclaimPolicy: sc.reclaimPolicy } : {}),
      ...(affinity ? { nodeAffinity: affinity } : {}),
      ...(claim.spec.volumeMode ? { volumeMode: claim.spec.volumeMode } : {}),
      ...(claim.spec.volumeAttributesClassName
        ? { volumeAttributesClassName: claim.spec.volumeAttributesClassName }
        : {}),
    },
  };
}
