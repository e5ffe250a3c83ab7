// The resize decision: given a Bound claim, its PV and its class (from caches) and the resize failure record,
// whether to call expand() now, only record a capacity the PV already has, wait, or do nothing, and why. Pure, like
// decideClaim, so the table tests cover every row and `explain` prints the same reasons the controller acts on.
// The status vocabulary is Kubernetes 1.32's (RecoverVolumeExpansionFailure, beta and on by default).
import { ANN_DYNAMICALLY_PROVISIONED } from '../../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { isKnownProvisioner } from '../claim/decide-claim.ts';
import { currentRecord, stableStringify, thresholdReached, type FailureRecord } from '../failures.ts';

/** `status.allocatedResourceStatuses["storage"]` values (core/v1 ClaimResourceStatus). */
export const RESIZE_STATUS = Object.freeze({
  controllerInProgress: 'ControllerResizeInProgress',
  controllerInfeasible: 'ControllerResizeInfeasible',
  nodePending: 'NodeResizePending',
  nodeInProgress: 'NodeResizeInProgress',
  nodeInfeasible: 'NodeResizeInfeasible',
});

/** PVC condition types a resize sets. */
export const CONDITION_RESIZING = 'Resizing';
export const CONDITION_FS_RESIZE_PENDING = 'FileSystemResizePending';

/**
 * - `expand`: call expand() with `targetSize`;
 * - `finish`: the PV already has the capacity (expand() succeeded, the claim's status was not written): record it;
 * - `wait`: ours, but not now (slow retry after an infeasible error, node-side resize pending, not allowed);
 * - `giveUp`: the failure threshold was reached; nothing more until the request or the class changes;
 * - `ignore`: not ours or nothing to do (the claim and volume decisions' word for it).
 */
export type ResizeAction = 'expand' | 'finish' | 'wait' | 'giveUp' | 'ignore';

/** The rule that made a resize decision (for logs, explain and tests). */
export type ResizeDecisionCode =
  | 'NotBound'
  | 'VolumeMissing'
  | 'NotOurs'
  | 'NotQualified'
  | 'ExpandNotSupported'
  | 'UpToDate'
  | 'NodeResizePending'
  | 'RecordCapacity'
  | 'ExpansionNotAllowed'
  | 'BadSize'
  | 'InfeasibleBackoff'
  | 'GivenUp'
  | 'Expand';

/** What decideResize looks at: the claim, its PV and class, the provisioner names, the failure record. */
export interface ResizeDecisionInput {
  claim: PersistentVolumeClaim;
  /** The PV named by the claim's spec.volumeName, if cached. */
  volume: PersistentVolume | undefined;
  storageClass: StorageClass | undefined;
  provisionerName: string;
  additionalProvisionerNames: readonly string[];
  /** Whether the provisioner implements expand(). */
  canExpand: boolean;
  /** The provisioner's shouldExpand hook (absent: every volume of ours qualifies). */
  shouldExpand?: (volume: PersistentVolume) => boolean;
  failures?: FailureRecord;
  /** failedProvisionThreshold (0 = never give up). */
  threshold: number;
  now: number;
}

/** What to do about a claim's size, and why. */
export interface ResizeDecision {
  action: ResizeAction;
  code: ResizeDecisionCode;
  reason: string;
  /** The size expand() is asked for (`expand`), or the PV's capacity to record (`finish`). */
  targetSize?: string;
  /** What the failure record is counted against: the request, the target and the class. */
  fingerprint?: string;
  retryAfterMs?: number;
}

const storageOf = (r: Record<string, string> | undefined): string | undefined => r?.storage;
const bytes = (q: string | undefined): bigint | undefined =>
  q !== undefined && isQuantity(q) ? parseQuantity(q) : undefined;

/** The claim's resize status for storage (`''` when none). */
export function resizeStatusOf(claim: PersistentVolumeClaim): string {
  return claim.status?.allocatedResourceStatuses?.storage ?? '';
}

/** True when the claim carries a condition of that type. */
export function hasCondition(claim: PersistentVolumeClaim, type: string): boolean {
  return (claim.status?.conditions ?? []).some((c) => c.type === type);
}

/** A claim the resize flow may have work for (cheap filter for informer events). */
export function mayNeedResize(claim: PersistentVolumeClaim): boolean {
  if (claim.status?.phase !== 'Bound' || !claim.spec.volumeName) return false;
  if (resizeStatusOf(claim) !== '' || hasCondition(claim, CONDITION_RESIZING)) return true;
  const request = bytes(storageOf(claim.spec.resources?.requests));
  const status = bytes(storageOf(claim.status?.capacity));
  return request !== undefined && (status === undefined || request > status);
}

/** What must change for a given-up or infeasible resize to be tried again. */
export function resizeFingerprint(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass | undefined,
  target: string,
): string {
  return stableStringify({
    request: storageOf(claim.spec.resources?.requests),
    target,
    class: storageClass ? [storageClass.metadata.uid, storageClass.metadata.resourceVersion] : null,
  });
}

/** The resize decision for one claim. */
export function decideResize(input: ResizeDecisionInput): ResizeDecision {
  const { claim, volume, storageClass } = input;
  if (claim.status?.phase !== 'Bound' || !claim.spec.volumeName) return ignore('NotBound', 'the claim is not Bound');
  if (!volume) return ignore('VolumeMissing', `volume ${claim.spec.volumeName} is not in the cache`);
  if (volume.spec.claimRef?.uid !== claim.metadata.uid)
    return ignore('NotBound', `volume ${claim.spec.volumeName} is not bound to this claim`);
  const provisionedBy = volume.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  if (!isKnownProvisioner(provisionedBy, input.provisionerName, input.additionalProvisionerNames)) {
    return ignore(
      'NotOurs',
      `volume ${volume.metadata.name} was provisioned by ${provisionedBy ?? 'nobody (static)'}, not ${input.provisionerName}`,
    );
  }
  if (!input.canExpand) return ignore('ExpandNotSupported', 'the provisioner does not implement expand()');
  if (input.shouldExpand && !input.shouldExpand(volume))
    return ignore('NotQualified', `volume ${volume.metadata.name} is expanded by another instance (shouldExpand)`);
  const requestText = storageOf(claim.spec.resources?.requests);
  const request = bytes(requestText);
  const pvCapacityText = storageOf(volume.spec.capacity);
  const pvCapacity = bytes(pvCapacityText);
  if (request === undefined || pvCapacity === undefined)
    return ignore('BadSize', 'the claim request or the volume capacity is not a valid quantity');
  const status = resizeStatusOf(claim);
  if (pvCapacity >= request) {
    if (status === RESIZE_STATUS.nodePending || status === RESIZE_STATUS.nodeInProgress) {
      return wait(
        'NodeResizePending',
        `the volume has ${pvCapacityText}; the filesystem resize on the node is pending (kubelet finishes it)`,
      );
    }
    const claimCapacity = bytes(storageOf(claim.status?.capacity));
    if (
      status !== '' ||
      hasCondition(claim, CONDITION_RESIZING) ||
      claimCapacity === undefined ||
      claimCapacity < pvCapacity
    ) {
      return {
        action: 'finish',
        code: 'RecordCapacity',
        reason: `the volume already has ${pvCapacityText}; recording it on the claim`,
        targetSize: pvCapacityText,
      };
    }
    return ignore('UpToDate', `the volume's capacity ${pvCapacityText} covers the request ${requestText}`);
  }
  if (storageClass?.allowVolumeExpansion !== true) {
    return wait(
      'ExpansionNotAllowed',
      `the claim asks for ${requestText} but the volume has ${pvCapacityText}, and storage class ${storageClass?.metadata.name ?? '(not found)'} does not set allowVolumeExpansion: true`,
    );
  }
  const target = targetSize(claim, requestText ?? '', request, status);
  const fingerprint = resizeFingerprint(claim, storageClass, target);
  const record = currentRecord(input.failures, fingerprint);
  const base = { targetSize: target, fingerprint };
  if (record?.infeasibleUntil !== undefined && record.infeasibleUntil > input.now) {
    return {
      ...wait(
        'InfeasibleBackoff',
        `expanding to ${target} failed with an infeasible error (${record.lastError ?? 'unknown'}); next attempt in ${Math.ceil((record.infeasibleUntil - input.now) / 1000)} s unless the request or the class changes`,
      ),
      ...base,
      retryAfterMs: record.infeasibleUntil - input.now,
    };
  }
  if (thresholdReached(record, input.threshold)) {
    return {
      action: 'giveUp',
      code: 'GivenUp',
      reason: `gave up expanding to ${target} after ${record?.failures ?? 0} failed attempts (last: ${record?.lastError ?? 'unknown'}); change the request or the class to retry`,
      ...base,
    };
  }
  return {
    action: 'expand',
    code: 'Expand',
    reason: `the claim asks for ${requestText}, the volume has ${pvCapacityText}`,
    ...base,
  };
}

/**
 * What to expand to. The request, except while a controller resize is in progress to a larger allocated size: that
 * operation may be running in the backend, so it is finished first. After an infeasible error the user may lower
 * the request (RecoverVolumeExpansionFailure) and the new, smaller request is what is tried.
 */
function targetSize(claim: PersistentVolumeClaim, requestText: string, request: bigint, status: string): string {
  const allocatedText = storageOf(claim.status?.allocatedResources);
  const allocated = bytes(allocatedText);
  if (
    status === RESIZE_STATUS.controllerInProgress &&
    allocated !== undefined &&
    allocatedText !== undefined &&
    allocated > request
  )
    return allocatedText;
  return requestText;
}

function ignore(code: ResizeDecisionCode, reason: string): ResizeDecision {
  return { action: 'ignore', code, reason };
}

function wait(code: ResizeDecisionCode, reason: string): ResizeDecision {
  return { action: 'wait', code, reason };
}

/** Facts about a resize for `explain`: request against capacities, the allocated size and status, the conditions. */
export function resizeFacts(claim: PersistentVolumeClaim, volume: PersistentVolume | undefined): string[] {
  const request = storageOf(claim.spec.resources?.requests);
  const claimCapacity = storageOf(claim.status?.capacity);
  const volumeCapacity = storageOf(volume?.spec.capacity);
  const facts: string[] = [];
  const requestBytes = bytes(request);
  const capacityBytes = bytes(volumeCapacity ?? claimCapacity);
  if (requestBytes !== undefined && capacityBytes !== undefined && requestBytes > capacityBytes) {
    facts.push(
      `resize requested: ${request} (claim capacity ${claimCapacity ?? 'none'}, volume capacity ${volumeCapacity ?? 'unknown'})`,
    );
  }
  const allocated = storageOf(claim.status?.allocatedResources);
  const status = resizeStatusOf(claim);
  if (status || (allocated && allocated !== claimCapacity))
    facts.push(`resize status: ${status || '(none)'}${allocated ? `, allocated ${allocated}` : ''}`);
  for (const c of claim.status?.conditions ?? []) {
    if (c.type === CONDITION_RESIZING || c.type === CONDITION_FS_RESIZE_PENDING) {
      facts.push(`condition ${String(c.type)}=${String(c.status)}${c.message ? `: ${String(c.message)}` : ''}`);
    }
  }
  return facts;
}
