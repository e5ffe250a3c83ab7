// The claim decision: given the current objects (from caches) and the failure record, what to do with one
// PVC and why. Pure: no I/O, no clock reads (time is an input), so the table tests can cover every row of the
// Go library's shouldProvision / provisionClaimOperation (sig-storage-lib-external-provisioner's controller.go).
import {
  ANN_BETA_STORAGE_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
} from '../../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import { claimFingerprint, currentRecord, thresholdReached, type FailureRecord } from '../failures.ts';
import type { ResolvedOptions } from '../options/controller-options.ts';
import type { Provisioner } from '../provisioner.ts';

/** The alpha selected-node key (Kubernetes 1.11); read as a fallback (the Go library's shouldProvision forgot it). */
export const ANN_ALPHA_SELECTED_NODE = 'volume.alpha.kubernetes.io/selected-node';

/**
 * - `provision`: call provision() now;
 * - `wait`: ours, but a precondition is not met yet (class missing, no selected node, slow retry): re-evaluated on
 *   the next claim or class event, or after `retryAfterMs`;
 * - `ignore`: not ours, or nothing to do; no event, no metric;
 * - `giveUp`: the failure threshold was reached; nothing more until the claim or its class changes;
 * - `reject`: ours, but it cannot be provisioned as it stands; a Warning event, then nothing until it changes.
 */
export type ClaimAction = 'provision' | 'wait' | 'ignore' | 'giveUp' | 'reject';

/** A stable identifier of the rule that decided (for logs, explain and tests). */
export type ClaimDecisionCode =
  | 'AlreadyBound'
  | 'ClaimDeleting'
  | 'NotQualified'
  | 'NoProvisionerAnnotation'
  | 'OtherProvisioner'
  | 'AlreadyProvisioned'
  | 'VolumeNameConflict'
  | 'NoStorageClass'
  | 'StorageClassNotFound'
  | 'ClassProvisionerMismatch'
  | 'WaitForFirstConsumer'
  | 'GivenUp'
  | 'InfeasibleBackoff'
  | 'BlockNotSupported'
  | 'SelectorNotSupported'
  | 'Provision';

/** A Kubernetes event the effects layer should record on the claim. */
export interface DecisionEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export interface ClaimDecisionInput {
  claim: PersistentVolumeClaim;
  /** The controller's own provisioner name. */
  provisionerName: string;
  options: Pick<ResolvedOptions, 'additionalProvisionerNames' | 'selectorPolicy' | 'volumeNameHook'> & {
    retry: Pick<ResolvedOptions['retry'], 'failedProvisionThreshold'>;
  };
  /** Class lookup (informer cache). */
  getStorageClass(name: string): StorageClass | undefined;
  /** PV lookup by name (informer cache). */
  getVolume(name: string): PersistentVolume | undefined;
  /** The provisioner's optional hooks (Qualifier, BlockProvisioner). */
  provisioner: Pick<Provisioner, 'shouldProvision' | 'supportsBlock'>;
  /** Failures recorded for this claim uid, if any. */
  failures?: FailureRecord;
  /** True when a provision() for this claim may still run in the backend (InBackground): never give up or skip it. */
  inProgress?: boolean;
  /** Current time in ms (for the infeasible slow retry). */
  now: number;
}

export interface ClaimDecision {
  action: ClaimAction;
  code: ClaimDecisionCode;
  /** Human-readable why, one sentence. */
  reason: string;
  /** An event to record on the claim (reject, missing class). */
  event?: DecisionEvent;
  /** The class name the claim asks for (beta annotation, then spec.storageClassName). */
  className?: string;
  storageClass?: StorageClass;
  /** The PV name this claim gets (volumeNameHook). */
  pvName?: string;
  /** From volume.kubernetes.io/selected-node, then the alpha key. */
  selectedNodeName?: string;
  /** Fingerprint of claim + class: what must change to leave giveUp, infeasible or reject. */
  fingerprint?: string;
  /** For `wait` on a timer (slow retry): when to look again. */
  retryAfterMs?: number;
}

/** The provisioner the claim was handed to: GA annotation first, then beta. */
export function claimProvisionerName(claim: PersistentVolumeClaim): string | undefined {
  const ann = claim.metadata.annotations ?? {};
  return ann[ANN_STORAGE_PROVISIONER] ?? ann[ANN_BETA_STORAGE_PROVISIONER];
}

/** The claim's class: the legacy beta annotation first (as the PV controller reads it), then spec.storageClassName. */
export function claimClassName(claim: PersistentVolumeClaim): string {
  const beta = claim.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (beta !== undefined) return beta;
  return claim.spec.storageClassName ?? '';
}

/** The node the scheduler selected: GA key, then alpha; empty values count as none. */
export function selectedNodeName(claim: PersistentVolumeClaim): string | undefined {
  const ann = claim.metadata.annotations ?? {};
  return ann[ANN_SELECTED_NODE] || ann[ANN_ALPHA_SELECTED_NODE] || undefined;
}

/** `<namespace>/<name>` of a claim, the `pvc` log key and the form used in event messages. */
export function claimKey(claim: PersistentVolumeClaim): string {
  return `${claim.metadata.namespace ?? ''}/${claim.metadata.name ?? ''}`;
}

/** Whether `name` is this controller's provisioner name or one of its additional names. */
export function isKnownProvisioner(
  name: string | undefined,
  provisionerName: string,
  additional: readonly string[],
): boolean {
  return name !== undefined && (name === provisionerName || additional.includes(name));
}

function warning(reason: string, message: string): DecisionEvent {
  return { type: 'Warning', reason, message };
}

/** Decides what to do with one claim. See ClaimAction for the meaning of each action. */
export function decideClaim(input: ClaimDecisionInput): ClaimDecision {
  const { claim, provisionerName, options, provisioner } = input;
  const key = claimKey(claim);

  if (claim.spec.volumeName) {
    return {
      action: 'ignore',
      code: 'AlreadyBound',
      reason: `claim is bound (or pre-bound) to volume ${claim.spec.volumeName}`,
    };
  }
  if (claim.metadata.deletionTimestamp && !input.inProgress) {
    // Provisioning a claim that is going away only creates a volume to delete again; an in-progress one must go
    // on (the backend may be creating it right now) so its volume is saved and then reclaimed, not leaked.
    return { action: 'ignore', code: 'ClaimDeleting', reason: 'claim is being deleted' };
  }
  if (provisioner.shouldProvision && !provisioner.shouldProvision(claim)) {
    return { action: 'ignore', code: 'NotQualified', reason: "the provisioner's shouldProvision() declined the claim" };
  }
  const requested = claimProvisionerName(claim);
  if (requested === undefined) {
    return {
      action: 'ignore',
      code: 'NoProvisionerAnnotation',
      reason: `claim has no ${ANN_STORAGE_PROVISIONER} annotation (the PV controller sets it when it needs a provisioner)`,
    };
  }
  if (!isKnownProvisioner(requested, provisionerName, options.additionalProvisionerNames)) {
    return {
      action: 'ignore',
      code: 'OtherProvisioner',
      reason: `claim is for provisioner "${requested}", not "${provisionerName}"`,
    };
  }

  const pvName = options.volumeNameHook(claim);
  const existing = input.getVolume(pvName);
  if (existing) {
    const ref = existing.spec.claimRef;
    if (ref?.uid === claim.metadata.uid) {
      return {
        action: 'ignore',
        code: 'AlreadyProvisioned',
        reason: `volume ${pvName} already exists for this claim`,
        pvName,
      };
    }
    const owner = ref ? `claim ${ref.namespace ?? ''}/${ref.name ?? ''} (uid ${ref.uid ?? 'none'})` : 'no claim';
    const message = `PersistentVolume ${pvName} already exists and belongs to ${owner}; refusing to provision another volume under that name`;
    return {
      action: 'reject',
      code: 'VolumeNameConflict',
      reason: message,
      pvName,
      event: warning('ProvisioningFailed', message),
    };
  }

  const className = claimClassName(claim);
  if (className === '') {
    const message = 'claim names no StorageClass, so there are no parameters to provision it with';
    return {
      action: 'reject',
      code: 'NoStorageClass',
      reason: message,
      pvName,
      event: warning('ProvisioningFailed', message),
    };
  }
  const storageClass = input.getStorageClass(className);
  if (!storageClass) {
    return {
      action: 'wait',
      code: 'StorageClassNotFound',
      reason: `StorageClass "${className}" not found; provisioning starts when it is created`,
      className,
      pvName,
      event: warning('ProvisioningFailed', `storageclass.storage.k8s.io "${className}" not found`),
    };
  }
  const base = { className, storageClass, pvName };
  if (!isKnownProvisioner(storageClass.provisioner, provisionerName, options.additionalProvisionerNames)) {
    const message = `StorageClass "${className}" names provisioner "${storageClass.provisioner}", but the claim was handed to "${requested}"`;
    return {
      action: 'reject',
      code: 'ClassProvisionerMismatch',
      reason: message,
      ...base,
      event: warning('ProvisioningFailed', message),
    };
  }

  const node = selectedNodeName(claim);
  if (storageClass.volumeBindingMode === 'WaitForFirstConsumer' && node === undefined) {
    return {
      action: 'wait',
      code: 'WaitForFirstConsumer',
      reason: `StorageClass "${className}" is WaitForFirstConsumer and no node is selected yet (${ANN_SELECTED_NODE})`,
      ...base,
    };
  }

  const fingerprint = claimFingerprint(claim, storageClass);
  const withNode = { ...base, selectedNodeName: node, fingerprint };
  const record = currentRecord(input.failures, fingerprint);
  if (!input.inProgress && thresholdReached(record, options.retry.failedProvisionThreshold)) {
    return {
      action: 'giveUp',
      code: 'GivenUp',
      reason:
        `gave up after ${record?.failures} failed attempts (last error: ${record?.lastError ?? 'unknown'}); ` +
        'change the claim (e.g. add an annotation) or its StorageClass to retry',
      ...withNode,
    };
  }
  if (record?.infeasibleUntil !== undefined && record.infeasibleUntil > input.now) {
    return {
      action: 'wait',
      code: 'InfeasibleBackoff',
      reason: `provisioning failed with an infeasible error (${record.lastError ?? 'unknown'}); next attempt in ${Math.ceil((record.infeasibleUntil - input.now) / 1000)} s unless the claim or its class changes`,
      retryAfterMs: record.infeasibleUntil - input.now,
      ...withNode,
    };
  }
  if (claim.spec.volumeMode === 'Block' && !(provisioner.supportsBlock?.() ?? false)) {
    const message = `${provisionerName} does not support block volume provisioning`;
    return {
      action: 'reject',
      code: 'BlockNotSupported',
      reason: message,
      ...withNode,
      event: warning('ProvisioningFailed', message),
    };
  }
  if (claim.spec.selector && options.selectorPolicy === 'reject') {
    const message = `claim Selector is not supported: ${provisionerName} creates volumes on demand and cannot match spec.selector; remove the selector`;
    return {
      action: 'reject',
      code: 'SelectorNotSupported',
      reason: message,
      ...withNode,
      event: warning('ProvisioningFailed', message),
    };
  }
  return {
    action: 'provision',
    code: 'Provision',
    reason: `claim ${key} asks ${requested} for a volume of class "${className}"${node ? ` on node ${node}` : ''}`,
    ...withNode,
  };
}
