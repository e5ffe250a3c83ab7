// The volume decision applied to a running controller's view: the term's caches and the PV's record.
import type { PersistentVolume } from '../../types/k8s.ts';
import type { ControllerShared, ControllerTerm } from '../controller-state.ts';
import { decideVolume, type VolumeDecision } from './decide-volume.ts';

/** The decision for one PV from the term's caches and the PV's record. */
export function decideCachedVolume(s: ControllerShared, t: ControllerTerm, volume: PersistentVolume): VolumeDecision {
  const record = s.volumeRecords.get(volume.metadata.name ?? '');
  return decideVolume({
    volume,
    provisionerName: s.provisionerName,
    options: s.options,
    provisioner: s.provisioner,
    getClaim: (namespace, name) => t.claims.get(namespace, name),
    failures: record?.failures,
    backendDeleted: record?.backendDeletedUid !== undefined && record.backendDeletedUid === volume.metadata.uid,
  });
}
