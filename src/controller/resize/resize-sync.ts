// The resize loop's effects (the external-resizer's job, Kubernetes 1.32 semantics): run decideResize on the cached
// claim, PV and class, then mark the claim (allocatedResources, ControllerResizeInProgress, Resizing), call expand(),
// write the PV's capacity, then the claim's (or FileSystemResizePending when the node must finish), with the
// Resizing / VolumeResizeSuccessful / VolumeResizeFailed events and the resize metrics. Each step takes the one
// ResizeAttempt value and returns the Next the worker applies. A successful expand() whose PV write failed is kept
// in the claim's resize record, so the retry writes the PV without expanding again.
import type { Logger } from '../../types/logger.ts';
import { persistentVolumeClaims, persistentVolumes } from '../../runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { claimObject, timeoutSignal, type ControllerShared, type ControllerTerm } from '../controller-state.ts';
import { errorMessage } from '../../types/error-message.ts';
import { ConflictError } from '../../runtime/status-errors.ts';
import { claimClassName, claimKey } from '../claim/decide-claim.ts';
import {
  CONDITION_FS_RESIZE_PENDING,
  CONDITION_RESIZING,
  decideResize,
  RESIZE_STATUS,
  resizeStatusOf,
  type ResizeDecision,
} from './decide-resize.ts';
import { failureTail, notAFailure, takeLock, type GiveUpWords } from '../failures.ts';
import { after, backoff, done, giveUp, type Next } from '../next.ts';
import { InfeasibleError, type ExpandResult } from '../provisioner.ts';
import type { ResizeMetrics } from './resize-metrics.ts';

/** One resize of one claim: everything its steps need, in one value. */
interface ResizeAttempt {
  s: ControllerShared;
  t: ControllerTerm;
  metrics: ResizeMetrics;
  /** The claim as last read or written by this attempt (each status write returns the newer copy). */
  claim: PersistentVolumeClaim;
  volume: PersistentVolume;
  decision: ResizeDecision;
  log: Logger;
  labels: { class: string };
}

/** How the resize loop words a give-up. */
const RESIZE_GIVE_UP: GiveUpWords = {
  reason: 'VolumeResizeFailed',
  doing: 'resizing',
  thresholdOption: 'failedProvisionThreshold',
  retryHint: 'Change the request or the StorageClass to retry.',
};

/** The resize decision for a cached claim. */
export function decideCachedResize(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
): ResizeDecision {
  return decideResize({
    claim,
    volume: claim.spec.volumeName ? t.volumes.get(claim.spec.volumeName) : undefined,
    storageClass: t.classes.get(claimClassName(claim)),
    provisionerName: s.provisionerName,
    additionalProvisionerNames: s.options.additionalProvisionerNames,
    canExpand: typeof s.provisioner.expand === 'function',
    ...(s.provisioner.shouldExpand ? { shouldExpand: (v: PersistentVolume) => s.provisioner.shouldExpand!(v) } : {}),
    failures: s.resizeRecords.get(claim.metadata.uid ?? '')?.failures,
    threshold: s.options.retry.failedProvisionThreshold,
    now: s.clock.now(),
  });
}

/** Processes one claim uid on the resize loop. */
export async function syncResize(
  s: ControllerShared,
  t: ControllerTerm,
  metrics: ResizeMetrics,
  uid: string,
): Promise<Next> {
  const claim = t.claims.getByUid(uid);
  if (!claim) {
    s.resizeRecords.forget(uid);
    return done;
  }
  const decision = decideCachedResize(s, t, claim);
  const volume = t.volumes.get(claim.spec.volumeName ?? '');
  const log = s.logger.child({ pvc: claimKey(claim), pv: claim.spec.volumeName });
  log.debug({ action: decision.action, code: decision.code, reason: decision.reason }, 'resize decision');
  switch (decision.action) {
    case 'ignore':
      return done;
    case 'wait':
      return decision.retryAfterMs !== undefined ? after(decision.retryAfterMs) : done;
    case 'giveUp':
      return giveUp;
    case 'finish': {
      const a: ResizeAttempt = { s, t, metrics, claim, volume: volume!, decision, log, labels: labelsOf(claim) };
      const memo = s.resizeRecords.get(uid)?.expanded;
      const result =
        memo && memo.pvName === volume?.metadata.name ? memo.result : { capacity: decision.targetSize ?? '' };
      return finishClaim(a, result, undefined);
    }
    case 'expand': {
      const a: ResizeAttempt = { s, t, metrics, claim, volume: volume!, decision, log, labels: labelsOf(claim) };
      return s.claimLock ? expandWithLock(a) : expandClaim(a);
    }
  }
}

function labelsOf(claim: PersistentVolumeClaim): { class: string } {
  return { class: claimClassName(claim) };
}

/**
 * Per-claim election: every replica syncs every claim, so expand() runs under the PV's lock (the one volume deletes
 * take). The lock write is optimistic on the cached PV, so a replica whose cache still shows
 * the old capacity cannot take it after another finished.
 */
async function expandWithLock(a: ResizeAttempt): Promise<Next> {
  const { s, t, volume } = a;
  const claimLock = s.claimLock!;
  const got = await takeLock(
    () => claimLock.acquireVolume(volume, t.signal),
    s.options.leaderElection.retryPeriodMs,
    a.log,
    (err) => apiFailure(a, err, 'could not take the volume lock for the resize'),
  );
  if ('next' in got) return got.next;
  let next: Next = backoff;
  try {
    next = await expandClaim(a);
    return next;
  } finally {
    // As after a provisioning: kept after a success (it expires by itself; the PV moved on, so a release write
    // would only conflict), released after a failure so any replica may retry.
    await got.handle.end(next.kind !== 'done');
  }
}

async function expandClaim(attempt: ResizeAttempt): Promise<Next> {
  const { s, t, volume, decision: d, log } = attempt;
  const uid = attempt.claim.metadata.uid ?? '';
  const target = d.targetSize ?? '';
  const pvName = volume.metadata.name ?? '';
  const started = s.clock.now();
  let a = attempt;
  try {
    a = { ...attempt, claim: await markInProgress(attempt, target) };
  } catch (err) {
    return apiFailure(attempt, err, 'could not mark the claim as resizing');
  }
  let result: ExpandResult;
  const memo = s.resizeRecords.get(uid)?.expanded;
  if (memo && memo.pvName === pvName && memo.target === target) {
    result = memo.result; // expand() already succeeded; only the PV write is left
  } else {
    s.events.event(claimObject(a.claim), 'Normal', 'Resizing', `External resizer is resizing volume ${pvName}`);
    const timeout = timeoutSignal(t.signal, s.options.provisionTimeoutMs, s.clock);
    try {
      result = await s.provisioner.expand!(volume, target, timeout.signal);
      if (!isQuantity(result.capacity) || parseQuantity(result.capacity) < parseQuantity(target)) {
        throw new Error(
          `expand() returned capacity ${JSON.stringify(result.capacity)}, less than the ${target} asked for`,
        );
      }
    } catch (err) {
      return notAFailure(err, t.signal, log, 'resizing') ?? expandFailed(a, err);
    } finally {
      timeout.dispose();
    }
    s.resizeRecords.set(uid, 'expanded', { pvName, target, result });
    log.info({ capacity: result.capacity }, 'volume expanded');
  }
  try {
    await writeVolumeCapacity(a, result.capacity);
  } catch (err) {
    return apiFailure(a, err, 'could not write the volume capacity');
  }
  return finishClaim(a, result, started);
}

/** Step 1: allocatedResources = target, ControllerResizeInProgress, Resizing condition (skipped when already so). */
async function markInProgress(a: ResizeAttempt, target: string): Promise<PersistentVolumeClaim> {
  const { s, claim } = a;
  const st = claim.status ?? {};
  const resizing = (st.conditions ?? []).some((c) => c.type === CONDITION_RESIZING);
  if (
    st.allocatedResources?.storage === target &&
    resizeStatusOf(claim) === RESIZE_STATUS.controllerInProgress &&
    resizing
  )
    return claim;
  const conditions = [
    ...(st.conditions ?? []).filter((c) => c.type !== CONDITION_RESIZING && c.type !== CONDITION_FS_RESIZE_PENDING),
    {
      type: CONDITION_RESIZING,
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: new Date(s.clock.now()).toISOString(),
    },
  ];
  return patchClaimStatus(a, {
    allocatedResources: { storage: target },
    allocatedResourceStatuses: { storage: RESIZE_STATUS.controllerInProgress },
    conditions,
  });
}

async function writeVolumeCapacity(a: ResizeAttempt, capacity: string): Promise<void> {
  const { s, t, volume } = a;
  const cached = t.volumes.get(volume.metadata.name ?? '') ?? volume;
  const now = cached.spec.capacity?.storage;
  if (now !== undefined && isQuantity(now) && parseQuantity(now) >= parseQuantity(capacity)) return;
  await s.client.patch(
    persistentVolumes,
    volume.metadata.name ?? '',
    { spec: { capacity: { storage: capacity } } },
    { type: 'merge', signal: t.signal },
  );
}

/** Last step: the claim's capacity and a cleared resize status, or FileSystemResizePending for the node. */
async function finishClaim(a: ResizeAttempt, result: ExpandResult, started: number | undefined): Promise<Next> {
  const { s, claim, log, labels } = a;
  const uid = claim.metadata.uid ?? '';
  const others = (claim.status?.conditions ?? []).filter(
    (c) => c.type !== CONDITION_RESIZING && c.type !== CONDITION_FS_RESIZE_PENDING,
  );
  try {
    if (result.nodeExpansionRequired) {
      await patchClaimStatus(a, {
        allocatedResourceStatuses: { storage: RESIZE_STATUS.nodePending },
        conditions: [
          ...others,
          {
            type: CONDITION_FS_RESIZE_PENDING,
            status: 'True',
            lastProbeTime: null,
            lastTransitionTime: new Date(s.clock.now()).toISOString(),
            message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.',
          },
        ],
      });
      s.events.event(
        claimObject(claim),
        'Normal',
        'FileSystemResizeRequired',
        'Require file system resize of volume on node',
      );
    } else {
      await patchClaimStatus(a, {
        capacity: { ...(claim.status?.capacity ?? {}), storage: result.capacity },
        allocatedResourceStatuses: { storage: null },
        conditions: others,
      });
      s.events.event(claimObject(claim), 'Normal', 'VolumeResizeSuccessful', 'Resize volume succeeded');
    }
  } catch (err) {
    return apiFailure(a, err, 'could not record the new capacity on the claim');
  }
  a.metrics.resizeTotal.inc(labels);
  if (started !== undefined) a.metrics.resizeDuration.observe(labels, (s.clock.now() - started) / 1000);
  s.resizeRecords.forget(uid);
  log.info(
    {
      capacity: result.capacity,
      nodeExpansionRequired: result.nodeExpansionRequired ?? false,
    },
    'resize finished',
  );
  return done;
}

/** A failed expand(): the failure metric and event, the shared failure tail, and ControllerResizeInfeasible. */
async function expandFailed(a: ResizeAttempt, err: unknown): Promise<Next> {
  const { s, claim, decision: d, log } = a;
  const message = errorMessage(err);
  const infeasible = err instanceof InfeasibleError;
  a.metrics.resizeFailedTotal.inc({ ...a.labels, reason: infeasible ? 'infeasible' : 'error' });
  s.events.event(
    claimObject(claim),
    'Warning',
    'VolumeResizeFailed',
    `resize volume "${claim.spec.volumeName ?? ''}" by resizer "${s.provisionerName}" failed: ${message}`,
  );
  const { next } = failureTail(s, {
    book: s.resizeRecords,
    key: claim.metadata.uid ?? '',
    fingerprint: d.fingerprint ?? '',
    message,
    failure: infeasible ? 'infeasible' : 'final',
    infeasibleError: infeasible,
    object: claimObject(claim),
    threshold: s.options.retry.failedProvisionThreshold,
    log,
    words: RESIZE_GIVE_UP,
    countGiveUp: () => a.metrics.resizeGivenUpTotal.inc(a.labels),
  });
  if (infeasible || next.kind === 'giveUp') {
    // A final answer: ControllerResizeInfeasible lets the user lower the request again (RecoverVolumeExpansionFailure).
    await markInfeasible(a).catch((e: unknown) =>
      log.warn({ err: errorMessage(e) }, 'could not mark the resize infeasible'),
    );
  }
  return next;
}

async function markInfeasible(a: ResizeAttempt): Promise<void> {
  const conditions = (a.claim.status?.conditions ?? []).filter((c) => c.type !== CONDITION_RESIZING);
  await patchClaimStatus(a, {
    allocatedResourceStatuses: { storage: RESIZE_STATUS.controllerInfeasible },
    conditions,
  });
}

/** A failed API write (or lock take): counted as an `api` failure and retried with backoff, never given up. */
function apiFailure(a: ResizeAttempt, err: unknown, what: string): Next {
  a.metrics.resizeFailedTotal.inc({ ...a.labels, reason: 'api' });
  // A conflict is optimistic concurrency doing its job (the claim changed under us): retried, not worth a warning.
  if (err instanceof ConflictError) a.log.debug({ err: errorMessage(err) }, what);
  else a.log.warn({ err: errorMessage(err) }, what);
  return backoff;
}

/** A merge patch of the claim's status, conditional on the version we decided on (a conflict retries with backoff). */
async function patchClaimStatus(a: ResizeAttempt, status: Record<string, unknown>): Promise<PersistentVolumeClaim> {
  const { s, t, claim } = a;
  return s.client.patch<PersistentVolumeClaim>(
    persistentVolumeClaims,
    claim.metadata.name ?? '',
    { metadata: { resourceVersion: claim.metadata.resourceVersion }, status },
    { namespace: claim.metadata.namespace, type: 'merge', subresource: 'status', signal: t.signal },
  );
}
