// The claim flow's effects: run decideClaim on the cached objects, then act on the decision: the Provisioning
// event, provision(), the PV completed by the controller and saved, events, metrics, the four provisioning
// states (InBackground claims carried on after the PVC is deleted, Reschedule removes selected-node), failure
// thresholds that mean what they say, the infeasible slow retry, and the per-claim lock around provision().
import { persistentVolumeClaims } from '../runtime/resources.ts';
import { ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE, FINALIZER_EXTERNAL_PROVISIONER } from '../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import type { Logger } from '../runtime/logger.ts';
import type { ClaimLockHandle } from './claim-lock.ts';
import {
  claimObject,
  errorMessage,
  timeoutSignal,
  type ControllerShared,
  type ControllerTerm,
} from './controller-state.ts';
import { ANN_ALPHA_SELECTED_NODE, claimKey, decideClaim, selectedNodeName, type ClaimDecision } from './decide-claim.ts';
import { shortenText } from './event-bounds.ts';
import { recordFailure, thresholdReached } from './failures.ts';
import { IgnoredError, InfeasibleError, ProvisioningError, type ProvisioningState, type ProvisionResult } from './provisioner.ts';

type Labels = { class: string; source: string };

/** The decision for one claim uid from the term's caches and the shared failure records. */
export function decideCachedClaim(s: ControllerShared, t: ControllerTerm, claim: PersistentVolumeClaim): ClaimDecision {
  const uid = claim.metadata.uid ?? '';
  return decideClaim({
    claim,
    provisionerName: s.provisionerName,
    options: s.options,
    getStorageClass: (name) => t.classes.get(name),
    getVolume: (name) => t.volumes.get(name) ?? s.savedVolumes.get(name),
    provisioner: s.provisioner,
    failures: s.claimFailures.get(uid),
    inProgress: s.inProgress.has(uid),
    now: s.clock.now(),
  });
}

/** Forgets everything about a claim that is gone and not in progress. */
export function forgetClaim(s: ControllerShared, uid: string): void {
  s.claimFailures.delete(uid);
  s.lastDecisionEvent.delete(uid);
  s.staleClaimVersions.delete(uid);
  s.claimLock?.forget(uid);
}

/** Processes one claim key (uid). Handles requeueing itself; the worker only calls done(). */
export async function syncClaim(s: ControllerShared, t: ControllerTerm, uid: string): Promise<void> {
  const live = t.claims.getByUid(uid);
  const claim = live ?? s.inProgress.get(uid);
  if (!claim) {
    t.claimQueue.forget(uid);
    forgetClaim(s, uid);
    return;
  }
  const stale = s.staleClaimVersions.get(uid);
  if (stale !== undefined) {
    // We rewrote this claim (Reschedule); its update event re-enqueues it once the cache has our version.
    if (live && live.metadata.resourceVersion === stale) return;
    s.staleClaimVersions.delete(uid);
  }
  const decision = decideCachedClaim(s, t, claim);
  const log = s.logger.child({ pvc: claimKey(claim), storageClass: decision.className });
  log.debug({ action: decision.action, code: decision.code, reason: decision.reason }, 'claim decision');
  switch (decision.action) {
    case 'ignore':
      t.claimQueue.forget(uid);
      if (decision.code === 'AlreadyProvisioned' || decision.code === 'AlreadyBound') {
        s.inProgress.delete(uid);
        forgetClaim(s, uid);
      }
      return;
    case 'wait':
    case 'reject':
      emitOnce(s, claim, decision);
      t.claimQueue.forget(uid);
      if (decision.retryAfterMs !== undefined) t.claimQueue.addAfter(uid, decision.retryAfterMs);
      return;
    case 'give-up':
      t.claimQueue.forget(uid);
      return;
    case 'provision':
      s.lastDecisionEvent.delete(uid);
      await provisionWithLock(s, t, claim, decision, live === undefined, log);
      s.metrics.claimsInProgress.set({ provisioner: s.provisionerName }, s.inProgress.size);
      return;
  }
}

function emitOnce(s: ControllerShared, claim: PersistentVolumeClaim, d: ClaimDecision): void {
  if (!d.event) return;
  const uid = claim.metadata.uid ?? '';
  const key = `${d.code}|${d.fingerprint ?? d.className ?? ''}`;
  if (s.lastDecisionEvent.get(uid) === key) return;
  s.lastDecisionEvent.set(uid, key);
  s.events.event(claimObject(claim), d.event.type, d.event.reason, d.event.message);
}

async function provisionWithLock(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  d: ClaimDecision,
  claimDeleted: boolean,
  log: Logger,
): Promise<void> {
  const uid = claim.metadata.uid ?? '';
  let lock: ClaimLockHandle | undefined;
  // A deleted claim cannot carry a lock; its in-progress copy is ours alone anyway.
  if (s.claimLock && !claimDeleted) {
    let got: Awaited<ReturnType<typeof s.claimLock.acquire>>;
    try {
      got = await s.claimLock.acquire(claim, t.signal);
    } catch (err) {
      log.warn({ err: errorMessage(err) }, 'could not take the claim lock');
      t.claimQueue.addRateLimited(uid);
      return;
    }
    if (!got.acquired) {
      log.debug({ holder: got.holder, retryAfterMs: got.retryAfterMs }, 'claim is locked by another replica');
      t.claimQueue.forget(uid);
      // Look again when the holder's lease would expire (takeover if it died), or soon after a write race.
      t.claimQueue.addAfter(uid, got.retryAfterMs > 0 ? got.retryAfterMs + s.options.retryPeriodMs : s.options.retryPeriodMs);
      return;
    }
    lock = got.handle;
  }
  let succeeded = false;
  try {
    succeeded = await provisionClaim(s, t, claim, d, claimDeleted, log);
  } finally {
    // Keep the lock after a success (the PV exists; the lock expires by itself); release after a failure.
    await lock?.end(!succeeded);
  }
}

/** provision(), then save. Returns true when the PV exists (or is queued for saving). */
async function provisionClaim(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  d: ClaimDecision,
  claimDeleted: boolean,
  log: Logger,
): Promise<boolean> {
  const uid = claim.metadata.uid ?? '';
  const labels: Labels = { class: claim.spec.storageClassName ?? '', source: claim.spec.dataSource?.kind ?? '' };
  const storageClass = d.storageClass;
  const pvName = d.pvName ?? '';
  if (!storageClass) throw new Error('provision decision without a StorageClass');
  const badNode = checkSelectedNode(t, d.selectedNodeName);
  if (badNode) {
    // Before the Provisioning event and before provision(): the backend never sees a node name it cannot trust.
    await handleProvisionError(s, t, claim, d, badNode, labels, claimDeleted, log);
    return false;
  }
  s.events.event(claimObject(claim), 'Normal', 'Provisioning', `External provisioner is provisioning volume for claim "${claimKey(claim)}"`);
  log.debug({ pv: pvName }, 'provision started');
  const started = s.clock.now();
  const timeout = timeoutSignal(t.signal, s.options.provisionTimeoutMs, s.clock);
  let result: ProvisionResult;
  try {
    result = await s.provisioner.provision(
      {
        storageClass,
        pvName,
        claim,
        ...(d.selectedNodeName ? { selectedNodeName: d.selectedNodeName } : {}),
        ...(d.selectedNodeName && t.nodes?.get(d.selectedNodeName) ? { selectedNode: t.nodes.get(d.selectedNodeName) } : {}),
      },
      timeout.signal,
    );
  } catch (err) {
    await handleProvisionError(s, t, claim, d, err, labels, claimDeleted, log);
    return false;
  } finally {
    timeout.dispose();
  }
  log.debug({ pv: pvName }, 'volume provisioned');
  const volume = completeVolume(s, claim, d, result.volume);
  const outcome = await s.volumeStore.save(claimObject(claim), volume, t.signal);
  if (outcome.kind === 'failed') {
    s.metrics.provisionFailedTotal.inc(labels);
    s.inProgress.delete(uid);
    countFailure(s, t, claim, d, outcome.error.message, false, labels, log);
    return false;
  }
  s.metrics.provisionTotal.inc(labels);
  s.metrics.provisionDuration.observe(labels, (s.clock.now() - started) / 1000);
  s.inProgress.delete(uid);
  s.claimFailures.delete(uid);
  t.claimQueue.forget(uid);
  log.info({ pv: pvName, saved: outcome.kind }, 'provision succeeded');
  return true;
}

/** The PV as the controller publishes it: what provision() returned plus the fields the controller owns. */
export function completeVolume(s: ControllerShared, claim: PersistentVolumeClaim, d: ClaimDecision, returned: PersistentVolume): PersistentVolume {
  const v = structuredClone(returned) as PersistentVolume;
  v.apiVersion = 'v1';
  v.kind = 'PersistentVolume';
  const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, ...meta } = v.metadata ?? {};
  v.metadata = { ...meta, name: d.pvName };
  v.metadata.annotations = { ...(v.metadata.annotations ?? {}), [ANN_DYNAMICALLY_PROVISIONED]: d.storageClass?.provisioner ?? s.provisionerName };
  v.spec = v.spec ?? {};
  v.spec.claimRef = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: claim.metadata.namespace,
    name: claim.metadata.name,
    uid: claim.metadata.uid,
    resourceVersion: claim.metadata.resourceVersion,
  };
  v.spec.storageClassName = d.className;
  v.spec.persistentVolumeReclaimPolicy ??= d.storageClass?.reclaimPolicy ?? 'Delete';
  if (s.options.addFinalizer && v.spec.persistentVolumeReclaimPolicy === 'Delete') {
    const finalizers = v.metadata.finalizers ?? [];
    if (!finalizers.includes(FINALIZER_EXTERNAL_PROVISIONER)) v.metadata.finalizers = [...finalizers, FINALIZER_EXTERNAL_PROVISIONER];
  }
  return v;
}

async function handleProvisionError(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  d: ClaimDecision,
  err: unknown,
  labels: Labels,
  claimDeleted: boolean,
  log: Logger,
): Promise<void> {
  const uid = claim.metadata.uid ?? '';
  if (t.signal.aborted) {
    // Shutdown or lost leadership interrupted provision(): not a failure of the claim. Whoever works next calls
    // provision() again for the same PV name, and an idempotent backend picks up where it stopped.
    log.info({ err: errorMessage(err) }, 'provisioning interrupted by shutdown');
    return;
  }
  if (err instanceof IgnoredError) {
    // Sharding: another instance owns this claim. No event, no metric (the Go library counted it as a failure).
    log.debug({ reason: err.reason }, 'volume provision ignored');
    s.inProgress.delete(uid);
    t.claimQueue.forget(uid);
    return;
  }
  const message = errorMessage(err);
  const infeasible = err instanceof InfeasibleError;
  let state: ProvisioningState = err instanceof ProvisioningError ? err.state : 'Finished';
  s.events.event(
    claimObject(claim),
    'Warning',
    'ProvisioningFailed',
    infeasible ? `Volume provisioning failed with infeasible error. Retries will be delayed. ${message}` : message,
  );
  s.metrics.provisionFailedTotal.inc(labels);

  if (state === 'Reschedule') {
    if (s.inProgress.has(uid)) state = 'InBackground'; // something may still run on that node: keep it
    else if (claimDeleted || selectedNodeName(claim) === undefined) state = 'Finished';
    else {
      try {
        await removeSelectedNode(s, claim, t.signal);
        s.staleClaimVersions.set(uid, claim.metadata.resourceVersion ?? '');
        log.info({ err: message, node: d.selectedNodeName }, 'volume rescheduled');
        s.claimFailures.delete(uid);
        t.claimQueue.forget(uid);
        return;
      } catch (patchErr) {
        log.warn({ err: errorMessage(patchErr) }, 'could not remove the selected-node annotation');
        state = 'Finished';
      }
    }
  }
  if (state === 'InBackground') {
    if (!s.inProgress.has(uid)) log.info({ err: message }, 'temporary error received, adding claim to claims in progress');
    s.inProgress.set(uid, claim);
  } else if (state === 'Finished') {
    if (s.inProgress.delete(uid)) log.info({ err: message }, 'final error received, removing claim from claims in progress');
  }
  countFailure(s, t, claim, d, message, infeasible, labels, log);
}

function countFailure(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
  d: ClaimDecision,
  message: string,
  infeasible: boolean,
  labels: Labels,
  log: Logger,
): void {
  const uid = claim.metadata.uid ?? '';
  const now = s.clock.now();
  const record = recordFailure(
    s.claimFailures.get(uid),
    d.fingerprint ?? '',
    message,
    infeasible ? { now, retryIntervalMaxMs: s.options.retryIntervalMaxMs } : undefined,
  );
  s.claimFailures.set(uid, record);
  const inProgress = s.inProgress.has(uid);
  if (infeasible && !inProgress) {
    t.claimQueue.forget(uid);
    t.claimQueue.addAfter(uid, s.options.retryIntervalMaxMs);
    return;
  }
  const threshold = s.options.failedProvisionThreshold;
  if (!inProgress && thresholdReached(record, threshold)) {
    log.error({ failures: record.failures, threshold, err: message }, 'giving up provisioning because failures >= threshold');
    s.events.event(
      claimObject(claim),
      'Warning',
      'ProvisioningGivenUp',
      `Giving up provisioning after ${record.failures} failed attempts (failedProvisionThreshold ${threshold}); last error: ${message}. ` +
        'Change the claim (e.g. add an annotation) or its StorageClass to retry.',
    );
    s.metrics.provisionGivenUpTotal.inc(labels);
    t.claimQueue.forget(uid);
    return;
  }
  log.info({ failures: record.failures, threshold, err: message }, 'retrying syncing claim');
  t.claimQueue.addRateLimited(uid);
}

// DNS-1123 subdomain, what the API server requires of a Node name.
const NODE_NAME_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The selected-node annotation is writable by anyone who can edit the claim, and backends put the name into node
 * affinities, paths and scopes. A name no Node can have is infeasible; a valid name the node cache does not hold
 * (only with the nodeCache option; its informer has synced before workers start) is a Reschedule, as in the Go
 * library: the scheduler picks again.
 */
function checkSelectedNode(t: ControllerTerm, node: string | undefined): Error | undefined {
  if (node === undefined) return undefined;
  if (node.length > 253 || !NODE_NAME_RE.test(node)) {
    return new InfeasibleError(`the claim's selected node ${JSON.stringify(shortenText(node, 256))} is not a valid node name (a DNS-1123 subdomain); nothing was provisioned`);
  }
  if (t.nodes && !t.nodes.get(node)) return new ProvisioningError(`selected node ${node} does not exist; asking the scheduler for another node`, 'Reschedule');
  return undefined;
}

/** Reschedule: drop the scheduler's node choice (GA and alpha keys) so it picks again. */
async function removeSelectedNode(s: ControllerShared, claim: PersistentVolumeClaim, signal: AbortSignal): Promise<void> {
  const annotations: Record<string, null> = { [ANN_SELECTED_NODE]: null };
  if (claim.metadata.annotations?.[ANN_ALPHA_SELECTED_NODE] !== undefined) annotations[ANN_ALPHA_SELECTED_NODE] = null;
  await s.client.patch(persistentVolumeClaims, claim.metadata.name ?? '', { metadata: { annotations } }, {
    namespace: claim.metadata.namespace,
    type: 'merge',
    signal,
  });
}
