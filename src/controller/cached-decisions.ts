// The pure decisions applied to a running controller's view: the term's caches overlaid with our own writes,
// and the per-object records. Shared by the flows, the informer handlers and explain, so none of them needs the
// effects modules.
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';
import { decideClaim, type ClaimDecision } from './decide-claim.ts';
import { decideVolume, type VolumeDecision } from './decide-volume.ts';

/** The decision for one claim from the term's caches and the claim's record. */
export function decideCachedClaim(s: ControllerShared, t: ControllerTerm, claim: PersistentVolumeClaim): ClaimDecision {
  const record = s.claimRecords.get(claim.metadata.uid ?? '');
  return decideClaim({
    claim,
    provisionerName: s.provisionerName,
    options: s.options,
    getStorageClass: (name) => t.classes.get(name),
    getVolume: (name) => s.savedVolumes.read(name, t.volumes.get(name)),
    provisioner: s.provisioner,
    failures: record?.failures,
    inProgress: record?.inProgress !== undefined,
    now: s.clock.now(),
  });
}

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

/** Forgets everything about a claim that is gone or done (not in progress). */
export function forgetClaim(s: ControllerShared, uid: string): void {
  s.claimRecords.forget(uid);
  s.writtenClaims.forget(uid);
  s.claimLock?.forget(uid);
}

/** Forgets everything about a PV that is gone. */
export function forgetVolume(s: ControllerShared, volume: PersistentVolume): void {
  const name = volume.metadata.name ?? '';
  s.volumeRecords.forget(name);
  s.savedVolumes.forget(name);
  s.claimLock?.forget(volume.metadata.uid ?? ''); // the PV's delete lock (per-claim mode)
}
