// The claim flow's effects once decideClaim said "provision": the Provisioning event, provision(), the PV
// completed by the controller and saved, events, metrics, the four provisioning states (InBackground claims
// carried on after the PVC is deleted, Reschedule removes selected-node) and the failure policy. Each step
// returns the Next the worker applies; nothing here touches a queue.
import type { Logger } from '../../types/logger.ts';
import { persistentVolumeClaims } from '../../runtime/resources.ts';
import {
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_SELECTED_NODE,
  FINALIZER_EXTERNAL_PROVISIONER,
} from '../../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { isDnsSubdomain } from '../../types/names.ts';
import { shortenText } from '../../types/text.ts';
import { errorMessage } from '../../types/error-message.ts';
import { claimObject, timeoutSignal, type ControllerShared, type ControllerTerm } from '../controller-state.ts';
import { ANN_ALPHA_SELECTED_NODE, claimKey, selectedNodeName, type ClaimDecision } from './decide-claim.ts';
import { failureTail, notAFailure, type FailureClass, type GiveUpWords } from '../failures.ts';
import { done, type Next } from '../next.ts';
import { InfeasibleError, ProvisioningError, type ProvisioningState, type ProvisionResult } from '../provisioner.ts';

/** How the ProvisioningFailed event of an infeasible error begins (the Go library's text); explain recognises it. */
export const INFEASIBLE_EVENT_PREFIX = 'Volume provisioning failed with infeasible error. Retries will be delayed.';

/** How the claim loop words a give-up. */
const CLAIM_GIVE_UP: GiveUpWords = {
  reason: 'ProvisioningGivenUp',
  doing: 'provisioning',
  thresholdOption: 'failedProvisionThreshold',
  retryHint: 'Change the claim (e.g. add an annotation) or its StorageClass to retry.',
};

/** One attempt to provision one claim: everything the effects need, in one value. */
export interface ClaimAttempt {
  s: ControllerShared;
  t: ControllerTerm;
  claim: PersistentVolumeClaim;
  decision: ClaimDecision;
  /** The claim is gone from the cache; we carry on with its in-progress copy. */
  claimDeleted: boolean;
  log: Logger;
  /** Metric labels. */
  labels: { class: string; source: string };
}

/** The outcome of provisionClaim: what next, and whether the PV exists (or is queued for saving). */
export interface ProvisionOutcome {
  next: Next;
  succeeded: boolean;
}

/** provision(), then save. */
export async function provisionClaim(a: ClaimAttempt): Promise<ProvisionOutcome> {
  const { s, t, claim, decision: d, log, labels } = a;
  const uid = claim.metadata.uid ?? '';
  const storageClass = d.storageClass;
  const pvName = d.pvName ?? '';
  if (!storageClass) throw new Error('provision decision without a StorageClass');
  const badNode = checkSelectedNode(t, d.selectedNodeName);
  // Before the Provisioning event and before provision(): the backend never sees a node name it cannot trust.
  if (badNode) return { next: await provisionFailed(a, badNode), succeeded: false };
  s.events.event(
    claimObject(claim),
    'Normal',
    'Provisioning',
    `External provisioner is provisioning volume for claim "${claimKey(claim)}"`,
  );
  log.debug({ pv: pvName }, 'provision started');
  const started = s.clock.now();
  const timeout = timeoutSignal(t.signal, s.options.provisionTimeoutMs, s.clock);
  let result: ProvisionResult;
  try {
    const node = d.selectedNodeName;
    const selectedNode = node ? t.nodes?.get(node) : undefined;
    result = await s.provisioner.provision(
      {
        storageClass,
        pvName,
        claim,
        ...(node ? { selectedNodeName: node } : {}),
        ...(selectedNode ? { selectedNode } : {}),
      },
      timeout.signal,
    );
  } catch (err) {
    return { next: await provisionFailed(a, err), succeeded: false };
  } finally {
    timeout.dispose();
  }
  log.debug({ pv: pvName }, 'volume provisioned');
  const outcome = await s.volumeStore.save(claimObject(claim), completeVolume(s, claim, d, result.volume), t.signal);
  if (outcome.kind === 'failed') {
    s.metrics.provisionFailedTotal.inc(labels);
    s.claimRecords.set(uid, 'inProgress', undefined);
    // A PV the API server refuses would be refused again: the infeasible slow retry, not the backoff.
    return {
      next: countFailure(a, outcome.error.message, outcome.invalid ? 'infeasible' : 'final', outcome.invalid === true),
      succeeded: false,
    };
  }
  if (outcome.kind === 'saved') s.savedVolumes.record(pvName, outcome.volume, t.volumes.get(pvName));
  s.metrics.provisionTotal.inc(labels);
  s.metrics.provisionDuration.observe(labels, (s.clock.now() - started) / 1000);
  s.claimRecords.set(uid, 'inProgress', undefined);
  s.claimRecords.set(uid, 'failures', undefined);
  log.info({ pv: pvName, saved: outcome.kind }, 'provision succeeded');
  return { next: done, succeeded: true };
}

/** The PV as the controller publishes it: what provision() returned plus the fields the controller owns. */
export function completeVolume(
  s: Pick<ControllerShared, 'options' | 'provisionerName'>,
  claim: PersistentVolumeClaim,
  d: ClaimDecision,
  returned: PersistentVolume,
): PersistentVolume {
  const v = structuredClone(returned) as PersistentVolume;
  v.apiVersion = 'v1';
  v.kind = 'PersistentVolume';
  const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, ...meta } = v.metadata ?? {};
  v.metadata = { ...meta, name: d.pvName };
  v.metadata.annotations = {
    ...(v.metadata.annotations ?? {}),
    [ANN_DYNAMICALLY_PROVISIONED]: d.storageClass?.provisioner ?? s.provisionerName,
  };
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
    if (!finalizers.includes(FINALIZER_EXTERNAL_PROVISIONER))
      v.metadata.finalizers = [...finalizers, FINALIZER_EXTERNAL_PROVISIONER];
  }
  return v;
}

/** A failed provision(): events, metrics, the provisioning state (Reschedule, InBackground, Finished), policy. */
async function provisionFailed(a: ClaimAttempt, err: unknown): Promise<Next> {
  const { s, t, claim, decision: d, log } = a;
  const uid = claim.metadata.uid ?? '';
  const settled = notAFailure(err, t.signal, log, 'provisioning');
  if (settled) {
    // An IgnoredError (sharding: another instance owns this claim) drops the in-progress copy; a shutdown keeps it.
    if (settled.kind === 'done') s.claimRecords.set(uid, 'inProgress', undefined);
    return settled;
  }
  const message = errorMessage(err);
  const infeasible = err instanceof InfeasibleError;
  let state: ProvisioningState = err instanceof ProvisioningError ? err.state : 'Finished';
  const event = infeasible ? `${INFEASIBLE_EVENT_PREFIX} ${message}` : message;
  s.events.event(claimObject(claim), 'Warning', 'ProvisioningFailed', event);
  s.metrics.provisionFailedTotal.inc(a.labels);
  const inProgress = s.claimRecords.inProgress(uid) !== undefined;
  if (state === 'Reschedule') {
    if (inProgress)
      state = 'InBackground'; // something may still run on that node: keep it
    else if (a.claimDeleted || selectedNodeName(claim) === undefined) state = 'Finished';
    else {
      try {
        s.writtenClaims.record(uid, await removeSelectedNode(s, claim, t.signal), t.claims.getByUid(uid));
        log.info({ err: message, node: d.selectedNodeName }, 'volume rescheduled');
        s.claimRecords.set(uid, 'failures', undefined);
        return done;
      } catch (patchErr) {
        log.warn({ err: errorMessage(patchErr) }, 'could not remove the selected-node annotation');
        state = 'Finished';
      }
    }
  }
  if (state === 'InBackground') {
    if (!inProgress) log.info({ err: message }, 'temporary error received, adding claim to claims in progress');
    s.claimRecords.set(uid, 'inProgress', claim);
  } else if (state === 'Finished' && inProgress) {
    s.claimRecords.set(uid, 'inProgress', undefined);
    log.info({ err: message }, 'final error received, removing claim from claims in progress');
  }
  const failure: FailureClass = state === 'InBackground' ? 'inBackground' : infeasible ? 'infeasible' : 'final';
  return countFailure(a, message, failure, infeasible);
}

/** The claim loop's failure tail: the shared one, with the claim's give-up words and metric. */
function countFailure(a: ClaimAttempt, message: string, failure: FailureClass, infeasibleError: boolean): Next {
  const { s, claim, decision: d, log } = a;
  return failureTail(s, {
    book: s.claimRecords,
    key: claim.metadata.uid ?? '',
    fingerprint: d.fingerprint ?? '',
    message,
    failure,
    infeasibleError,
    object: claimObject(claim),
    threshold: s.options.retry.failedProvisionThreshold,
    log,
    words: CLAIM_GIVE_UP,
    countGiveUp: () => s.metrics.provisionGivenUpTotal.inc(a.labels),
  }).next;
}

/**
 * The selected-node annotation is writable by anyone who can edit the claim, and backends put the name into node
 * affinities, paths and scopes. A name no Node can have is infeasible; a valid name the node cache does not hold
 * (only with the nodeCache option; its informer has synced before workers start) is a Reschedule, as in the Go
 * library: the scheduler picks again.
 */
function checkSelectedNode(t: ControllerTerm, node: string | undefined): Error | undefined {
  if (node === undefined) return undefined;
  if (!isDnsSubdomain(node)) {
    return new InfeasibleError(
      `the claim's selected node ${JSON.stringify(shortenText(node, 256))} is not a valid node name (a DNS-1123 subdomain); nothing was provisioned`,
    );
  }
  if (t.nodes && !t.nodes.get(node))
    return new ProvisioningError(
      `selected node ${node} does not exist; asking the scheduler for another node`,
      'Reschedule',
    );
  return undefined;
}

/** Reschedule: drop the scheduler's node choice (GA and alpha keys) so it picks again. Returns the written claim. */
async function removeSelectedNode(
  s: ControllerShared,
  claim: PersistentVolumeClaim,
  signal: AbortSignal,
): Promise<PersistentVolumeClaim> {
  const annotations: Record<string, null> = { [ANN_SELECTED_NODE]: null };
  if (claim.metadata.annotations?.[ANN_ALPHA_SELECTED_NODE] !== undefined) annotations[ANN_ALPHA_SELECTED_NODE] = null;
  return s.client.patch<PersistentVolumeClaim>(
    persistentVolumeClaims,
    claim.metadata.name ?? '',
    { metadata: { annotations } },
    {
      namespace: claim.metadata.namespace,
      type: 'merge',
      signal,
    },
  );
}
