// The claim decision applied to a running controller's view: the term's caches overlaid with our own writes, and
// the claim's record; and forgetting a claim. Shared by the claim loop's sync and hooks and by explain, so none of
// them needs the effects modules.
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import type { ControllerShared, ControllerTerm } from '../controller-state.ts';
import { decideClaim, type ClaimDecision } from './decide-claim.ts';

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

/** Forgets everything about a claim that is gone or done (not in progress). */
export function forgetClaim(s: ControllerShared, uid: string): void {
  s.claimRecords.forget(uid);
  s.writtenClaims.forget(uid);
  s.claimLock?.forget(uid);
}
