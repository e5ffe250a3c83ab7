// The resize flow's effects (the external-resizer's job, Kubernetes 1.32 semantics): run decideResize on the
// cached claim, PV and class, then mark the claim (allocatedResources, ControllerResizeInProgress, Resizing),
// call expand(), write the PV's capacity, then the claim's (or FileSystemResizePending when the node must finish),
// with the Resizing / VolumeResizeSuccessful / VolumeResizeFailed events and the resize metrics. It returns what
// should happen next as a Next value (the worker applies it); it never touches a queue. A successful expand() whose
// PV write failed
// is remembered, so the retry writes the PV without expanding again.
import { persistentVolumeClaims, persistentVolumes } from '../runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import { isQuantity, parseQuantity } from '../types/quantity.ts';
import type { LockAttempt } from './claim-lock.ts';
import { claimObject, timeoutSignal, type ControllerShared, type ControllerTerm } from './controller-state.ts';
import { errorMessage } from '../types/errors.ts';
import { ConflictError } from '../runtime/errors.ts';
import { claimClassName, claimKey } from './decide-claim.ts';
import {
  CONDITION_FS_RESIZE_PENDING,
  CONDITION_RESIZING,
  decideResize,
  RESIZE_STATUS,
  resizeStatusOf,
  type ResizeDecision,
} from './decide-resize.ts';
import { recordFailure, type FailureRecord } from './failures.ts';
import { after, backoff, done, failurePolicy, giveUp, type Next } from './next.ts';
import { IgnoredError, InfeasibleError, type ExpandResult } from './provisioner.ts';
import type { ResizeMetrics } from './resize-metrics.ts';

/** Resize state that outlives a leadership term, by claim uid. */
export interface ResizeState {
  failures: Map<string, FailureRecord>;
  /** expand() succeeded but the PV's capacity is not written yet: the result to write on the next attempt. */
  expanded: Map<string, { pvName: string; target: string; result: ExpandResult }>;
  metrics: ResizeMetrics;
}

export function createResizeState(metrics: ResizeMetrics): ResizeState {
  return { failures: new Map(), expanded: new Map(), metrics };
}

/** Forgets a deleted claim. */
export function forgetResize(r: ResizeState, uid: string): void {
  r.failures.delete(uid);
  r.expanded.delete(uid);
}

/** The resize decision for a cached claim. */
export function decideCachedResize(
  s: ControllerShared,
  t: ControllerTerm,
  r: ResizeState,
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
    failures: r.failures.get(claim.metadata.uid ?? ''),
    threshold: s.options.retry.failedProvisionThreshold,
    now: s.clock.now(),
  });
}

/** Processes one claim uid on the resize path. */
export async function syncResize(s: ControllerShared, t: ControllerTerm, r: ResizeState, uid: string): Promise<Next> {
  const claim = t.claims.getByUid(uid);
  if (!claim) {
    forgetResize(r, uid);
    return done;
  }
  const d = decideCachedResize(s, t, r, claim);
  s.logger.debug({ pvc: claimKey(claim), action: d.action, code: d.code, reason: d.reason }, 'resize decision');
  const volume = t.volumes.get(claim.spec.volumeName ?? '');
  switch (d.action) {
    case 'none':
      return done;
    case 'wait':
      if (d.code === 'InfeasibleBackoff' && d.retryAfterMs !== undefined) return after(d.retryAfterMs);
      return d.code === 'GivenUp' ? giveUp : done;
    case 'finish': {
      const memo = r.expanded.get(uid);
      const result = memo && memo.pvName === volume?.metadata.name ? memo.result : { capacity: d.targetSize ?? '' };
      return finishClaim(s, t, r, claim, volume!, result, undefined);
    }
    case 'expand':
      return s.claimLock ? expandWithLock(s, t, r, claim, volume!, d) : expandClaim(s, t, r, claim, volume!, d);
  }
}

/**
 * Per-claim election: every replica syncs every claim, so expand() runs under the PV's lock (the one volume deletes
 * take). The lock write is optimistic on the cached PV, so a replica whose cache still shows
 * the old capacity cannot take it after another finished.
 */
async function expandWithLock(
  s: ControllerShared,
  t: ControllerTerm,
  r: ResizeState,
  claim: PersistentVolumeClaim,
  volume: PersistentVolume,
  d: ResizeDecision,
): Promise<Next> {
  let got: LockAttempt;
  try {
    got = await s.claimLock!.acquireVolume(volume, t.signal);
  } catch (err) {
    return apiFailure(s, r, claim, err, 'could not take the volume lock for the resize');
  }
  if (!got.acquired)
    return after(
      got.retryAfterMs > 0
        ? got.retryAfterMs + s.options.leaderElection.retryPeriodMs
        : s.options.leaderElection.retryPeriodMs,
    );
  let next: Next = backoff;
  try {
    next = await expandClaim(s, t, r, claim, volume, d);
    return next;
  } finally {
    // As after a provisioning: kept after a success (it expires by itself; the PV moved on, so a release write
    // would only conflict), released after a failure so any replica may retry.
    await got.handle.end(next.kind !== 'done');
  }
}

async function expandClaim(
  s: ControllerShared,
  t: ControllerTerm,
  r: ResizeState,
  claim: PersistentVolumeClaim,
  volume: PersistentVolume,
  d: ResizeDecision,
): Promise<Next> {
  const uid = claim.metadata.uid ?? '';
  const target = d.targetSize ?? '';
  const pvName = volume.metadata.name ?? '';
  const log = s.logger.child({ pvc: claimKey(claim), pv: pvName });
  const started = s.clock.now();
  let current = claim;
  try {
    current = await markInProgress(s, t, claim, target);
  } catch (err) {
    return apiFailure(s, r, claim, err, 'could not mark the claim as resizing');
  }
  let result: ExpandResult;
  const memo = r.expanded.get(uid);
  if (memo && memo.pvName === pvName && memo.target === target) {
    result = memo.result; // expand() already succeeded; only the PV write is left
  } else {
    s.events.event(claimObject(current), 'Normal', 'Resizing', `External resizer is resizing volume ${pvName}`);
    const timeout = timeoutSignal(t.signal, s.options.provisionTimeoutMs, s.clock);
    try {
      result = await s.provisioner.expand!(volume, target, timeout.signal);
      if (!isQuantity(result.capacity) || parseQuantity(result.capacity) < parseQuantity(target)) {
        throw new Error(
          `expand() returned capacity ${JSON.stringify(result.capacity)}, less than the ${target} asked for`,
        );
      }
    } catch (err) {
      return expandFailed(s, t, r, current, d, err, log);
    } finally {
      timeout.dispose();
    }
    r.expanded.set(uid, { pvName, target, result });
    log.info({ capacity: result.capacity }, 'volume expanded');
  }
  try {
    await writeVolumeCapacity(s, t, volume, result.capacity);
  } catch (err) {
    return apiFailure(s, r, current, err, 'could not write the volume capacity');
  }
  return finishClaim(s, t, r, current, volume, result, started);
}

/** Step 1: allocatedResources = target, ControllerResizeInProgress, Resizing condition (skipped when already so). */
async function markInProgress(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  target: string,
): Promise<PersistentVolumeClaim> {
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
  return patchClaimStatus(s, t, claim, {
    allocatedResources: { storage: target },
    allocatedResourceStatuses: { storage: RESIZE_STATUS.controllerInProgress },
    conditions,
  });
}

async function writeVolumeCapacity(
  s: ControllerShared,
  t: ControllerTerm,
  volume: PersistentVolume,
  capacity: string,
): Promise<void> {
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
async function finishClaim(
  s: ControllerShared,
  t: ControllerTerm,
  r: ResizeState,
  claim: PersistentVolumeClaim,
  volume: PersistentVolume,
  result: ExpandResult,
  started: number | undefined,
): Promise<Next> {
  const uid = claim.metadata.uid ?? '';
  const others = (claim.status?.conditions ?? []).filter(
    (c) => c.type !== CONDITION_RESIZING && c.type !== CONDITION_FS_RESIZE_PENDING,
  );
  const pvName = volume.metadata.name ?? '';
  try {
    if (result.nodeExpansionRequired) {
      await patchClaimStatus(s, t, claim, {
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
      await patchClaimStatus(s, t, claim, {
        capacity: { ...(claim.status?.capacity ?? {}), storage: result.capacity },
        allocatedResourceStatuses: { storage: null },
        conditions: others,
      });
      s.events.event(claimObject(claim), 'Normal', 'VolumeResizeSuccessful', 'Resize volume succeeded');
    }
  } catch (err) {
    return apiFailure(s, r, claim, err, 'could not record the new capacity on the claim');
  }
  const labels = { class: claimClassName(claim) };
  r.metrics.resizeTotal.inc(labels);
  if (started !== undefined) r.metrics.resizeDuration.observe(labels, (s.clock.now() - started) / 1000);
  r.expanded.delete(uid);
  r.failures.delete(uid);
  s.logger.info(
    {
      pvc: claimKey(claim),
      pv: pvName,
      capacity: result.capacity,
      nodeExpansionRequired: result.nodeExpansionRequired ?? false,
    },
    'resize finished',
  );
  return done;
}

async function expandFailed(
  s: ControllerShared,
  t: ControllerTerm,
  r: ResizeState,
  claim: PersistentVolumeClaim,
  d: ResizeDecision,
  err: unknown,
  log: ControllerShared['logger'],
): Promise<Next> {
  const uid = claim.metadata.uid ?? '';
  if (t.signal.aborted) {
    // Shutdown or lost leadership: not a failure. Whoever works next calls expand() again with the same size.
    log.info({ err: errorMessage(err) }, 'resize interrupted by shutdown');
    return done;
  }
  if (err instanceof IgnoredError) {
    log.debug({ reason: err.reason }, 'resize ignored');
    return done;
  }
  const message = errorMessage(err);
  const infeasible = err instanceof InfeasibleError;
  const labels = { class: claimClassName(claim) };
  r.metrics.resizeFailedTotal.inc({ ...labels, reason: infeasible ? 'infeasible' : 'error' });
  const now = s.clock.now();
  const record = recordFailure(
    r.failures.get(uid),
    d.fingerprint ?? '',
    message,
    infeasible ? { now, infeasibleDelayMs: s.options.retry.infeasibleDelayMs } : undefined,
  );
  r.failures.set(uid, record);
  const pvName = claim.spec.volumeName ?? '';
  s.events.event(
    claimObject(claim),
    'Warning',
    'VolumeResizeFailed',
    `resize volume "${pvName}" by resizer "${s.provisionerName}" failed: ${message}`,
  );
  const threshold = s.options.retry.failedProvisionThreshold;
  const next = failurePolicy(record, threshold, infeasible ? 'infeasible' : 'final', s.options.retry.infeasibleDelayMs);
  const givenUp = next.kind === 'giveUp';
  if (infeasible || givenUp) {
    // A final answer: ControllerResizeInfeasible lets the user lower the request again (RecoverVolumeExpansionFailure).
    await markInfeasible(s, t, claim).catch((e: unknown) =>
      log.warn({ err: errorMessage(e) }, 'could not mark the resize infeasible'),
    );
  }
  if (infeasible) {
    log.warn({ err: message }, 'resize infeasible; retrying slowly');
    return next;
  }
  if (givenUp) {
    log.error(
      { failures: record.failures, threshold, err: message },
      'giving up resizing because failures >= threshold',
    );
    s.events.event(
      claimObject(claim),
      'Warning',
      'VolumeResizeFailed',
      `Giving up resizing after ${record.failures} failed attempts (failedProvisionThreshold ${threshold}); last error: ${message}. Change the request or the StorageClass to retry.`,
    );
    r.metrics.resizeGivenUpTotal.inc(labels);
    return next;
  }
  log.info({ failures: record.failures, err: message }, 'resize failed; retrying');
  return next;
}

async function markInfeasible(s: ControllerShared, t: ControllerTerm, claim: PersistentVolumeClaim): Promise<void> {
  const conditions = (claim.status?.conditions ?? []).filter((c) => c.type !== CONDITION_RESIZING);
  await patchClaimStatus(s, t, claim, {
    allocatedResourceStatuses: { storage: RESIZE_STATUS.controllerInfeasible },
    conditions,
  });
}

function apiFailure(
  s: ControllerShared,
  r: ResizeState,
  claim: PersistentVolumeClaim,
  err: unknown,
  what: string,
): Next {
  r.metrics.resizeFailedTotal.inc({ class: claimClassName(claim), reason: 'api' });
  // A conflict is optimistic concurrency doing its job (the claim changed under us): retried, not worth a warning.
  const log = err instanceof ConflictError ? s.logger.debug.bind(s.logger) : s.logger.warn.bind(s.logger);
  log({ pvc: claimKey(claim), err: errorMessage(err) }, what);
  return backoff;
}

/** A merge patch of the claim's status, conditional on the version we decided on (a conflict retries with backoff). */
async function patchClaimStatus(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  status: Record<string, unknown>,
): Promise<PersistentVolumeClaim> {
  return s.client.patch<PersistentVolumeClaim>(
    persistentVolumeClaims,
    claim.metadata.name ?? '',
    { metadata: { resourceVersion: claim.metadata.resourceVersion }, status },
    { namespace: claim.metadata.namespace, type: 'merge', subresource: 'status', signal: t.signal },
  );
}
