// The volume decision: whether one PV is ours, whether our finalizer must be added or removed, and whether to
// delete it (backend first, then the PV). Pure, like decideClaim; covers the Go library's isProvisionerForVolume,
// handleProtectionFinalizer and shouldDelete (sig-storage-lib-external-provisioner) plus the defects we fix:
// delete() is called once per PV uid, a PV whose claim still exists is never deleted, Retain PVs drop our finalizer.
import {
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_MIGRATED_TO,
  FINALIZER_EXTERNAL_PROVISIONER,
} from '../../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { currentRecord, thresholdReached, volumeFingerprint, type FailureRecord } from '../failures.ts';
import { isKnownProvisioner } from '../claim/decide-claim.ts';
import type { ResolvedOptions } from '../options/controller-options.ts';
import type { Provisioner } from '../provisioner.ts';

/**
 * - `delete`: call provisioner.delete(), then delete the PV (uid precondition), then drop our finalizer;
 * - `finishDelete`: the backend volume is already gone (delete() succeeded earlier): only the PV / finalizer part;
 * - `ignore`: nothing to delete (apply `finalizer` if set);
 * - `giveUp`: deletion failed `failedDeleteThreshold` times; nothing more until the PV changes.
 */
export type VolumeAction = 'delete' | 'finishDelete' | 'ignore' | 'giveUp';

export type VolumeDecisionCode =
  | 'NotOurVolume'
  | 'DeletionGuard'
  | 'BeingDeleted'
  | 'NotReleased'
  | 'NotDeletePolicy'
  | 'ClaimStillExists'
  | 'BackendDeleted'
  | 'GivenUp'
  | 'Delete';

export interface VolumeDecisionInput {
  volume: PersistentVolume;
  provisionerName: string;
  options: Pick<ResolvedOptions, 'additionalProvisionerNames' | 'addFinalizer'> & {
    retry: Pick<ResolvedOptions['retry'], 'failedDeleteThreshold'>;
  };
  /** The provisioner's optional DeletionGuard. */
  provisioner: Pick<Provisioner, 'shouldDelete'>;
  /** Claim lookup (informer cache) by namespace and name. */
  getClaim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  /** Failures recorded for this PV, if any. */
  failures?: FailureRecord;
  /** True when provisioner.delete() already succeeded for this PV uid (so it is never called twice). */
  backendDeleted?: boolean;
}

export interface VolumeDecision {
  action: VolumeAction;
  code: VolumeDecisionCode;
  reason: string;
  /** A finalizer change to apply first (PATCH of metadata.finalizers). */
  finalizer?: 'add' | 'remove';
  /** Fingerprint of the PV, for the failure record. */
  fingerprint?: string;
}

/**
 * Whether this controller is responsible for the PV: by `pv.kubernetes.io/provisioned-by` (or `migrated-to`) when
 * set; for static PVs by the CSI driver name or `migrated-to`. Static in-tree PVs are never ours.
 */
export function isProvisionerForVolume(
  volume: PersistentVolume,
  provisionerName: string,
  additional: readonly string[],
): boolean {
  const ann = volume.metadata.annotations ?? {};
  const migratedTo = ann[ANN_MIGRATED_TO];
  if (isKnownProvisioner(migratedTo, provisionerName, additional)) return true;
  const provisionedBy = ann[ANN_DYNAMICALLY_PROVISIONED];
  if (provisionedBy !== undefined) return isKnownProvisioner(provisionedBy, provisionerName, additional);
  return isKnownProvisioner(volume.spec.csi?.driver, provisionerName, additional);
}

/** Whether the PV carries our finalizer. */
export function hasOurFinalizer(volume: PersistentVolume): boolean {
  return (volume.metadata.finalizers ?? []).includes(FINALIZER_EXTERNAL_PROVISIONER);
}

/** The finalizer change handleProtectionFinalizer would make, if any. */
export function finalizerChange(volume: PersistentVolume, addFinalizer: boolean): 'add' | 'remove' | undefined {
  const has = hasOurFinalizer(volume);
  const policy = volume.spec.persistentVolumeReclaimPolicy ?? 'Retain';
  if (has && (!addFinalizer || policy === 'Retain' || policy === 'Recycle')) return 'remove';
  if (
    !has &&
    addFinalizer &&
    policy === 'Delete' &&
    volume.metadata.deletionTimestamp === undefined &&
    volume.status?.phase === 'Bound'
  ) {
    return 'add';
  }
  return undefined;
}

/** Decides what to do with one PV. */
export function decideVolume(input: VolumeDecisionInput): VolumeDecision {
  const { volume, provisionerName, options } = input;
  if (!isProvisionerForVolume(volume, provisionerName, options.additionalProvisionerNames)) {
    return { action: 'ignore', code: 'NotOurVolume', reason: `volume was not provisioned by ${provisionerName}` };
  }
  const finalizer = finalizerChange(volume, options.addFinalizer);
  const hasFinalizerAfter = finalizer === 'add' || (finalizer !== 'remove' && hasOurFinalizer(volume));
  const withFinalizer = finalizer ? { finalizer } : {};

  if (input.provisioner.shouldDelete && !input.provisioner.shouldDelete(volume)) {
    return {
      action: 'ignore',
      code: 'DeletionGuard',
      reason: "the provisioner's shouldDelete() protects this volume",
      ...withFinalizer,
    };
  }
  if (volume.metadata.deletionTimestamp !== undefined && !hasFinalizerAfter) {
    return {
      action: 'ignore',
      code: 'BeingDeleted',
      reason: 'volume is already being deleted and our finalizer is not on it',
      ...withFinalizer,
    };
  }
  const phase = volume.status?.phase ?? 'Pending';
  if (phase !== 'Released') {
    return { action: 'ignore', code: 'NotReleased', reason: `volume is ${phase}, not Released`, ...withFinalizer };
  }
  const policy = volume.spec.persistentVolumeReclaimPolicy ?? 'Retain';
  if (policy !== 'Delete') {
    return {
      action: 'ignore',
      code: 'NotDeletePolicy',
      reason: `reclaim policy is ${policy}, not Delete`,
      ...withFinalizer,
    };
  }
  const ref = volume.spec.claimRef;
  if (ref?.name && ref.uid) {
    const claim = input.getClaim(ref.namespace ?? '', ref.name);
    if (claim && claim.metadata.uid === ref.uid) {
      // Released with its claim still present means a stale phase: deleting would destroy a live claim's data.
      return {
        action: 'ignore',
        code: 'ClaimStillExists',
        reason: `claim ${ref.namespace}/${ref.name} (uid ${ref.uid}) still exists`,
        ...withFinalizer,
      };
    }
  }
  if (input.backendDeleted) {
    return {
      action: 'finishDelete',
      code: 'BackendDeleted',
      reason: 'backend volume already deleted; removing the PV',
      ...withFinalizer,
    };
  }
  const fingerprint = volumeFingerprint(volume);
  const record = currentRecord(input.failures, fingerprint);
  if (thresholdReached(record, options.retry.failedDeleteThreshold)) {
    return {
      action: 'giveUp',
      code: 'GivenUp',
      reason: `gave up after ${record?.failures} failed deletions (last error: ${record?.lastError ?? 'unknown'}); change the volume to retry`,
      fingerprint,
      ...withFinalizer,
    };
  }
  return {
    action: 'delete',
    code: 'Delete',
    reason: 'volume is Released with reclaim policy Delete',
    fingerprint,
    ...withFinalizer,
  };
}
