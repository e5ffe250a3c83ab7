// The claim loop's sync: read the claim (the cache, our own write, or the in-progress copy), run decideClaim on the
// cached objects, and act on the decision: the wait/reject events (once per decision), give-up, and provision()
// under the per-claim lock. Returns what should happen next; the worker applies it to the queue.
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import { decideCachedClaim, forgetClaim } from './decide-cached-claim.ts';
import type { ClaimLockHandle } from '../claim-lock.ts';
import { provisionClaim, type ClaimAttempt } from './claim-provision.ts';
import { claimObject, type ControllerShared, type ControllerTerm } from '../controller-state.ts';
import { claimKey, type ClaimDecision } from './decide-claim.ts';
import { takeLock } from '../failures.ts';
import { after, backoff, done, giveUp, waitForEvent, type Next } from '../next.ts';

/** Processes one claim key (uid) and says what should happen next. */
export async function syncClaim(s: ControllerShared, t: ControllerTerm, uid: string): Promise<Next> {
  const live = t.claims.getByUid(uid);
  const claim = live ?? s.claimRecords.inProgress(uid);
  if (!claim) {
    forgetClaim(s, uid);
    return done;
  }
  // We rewrote this claim (Reschedule); its update event re-enqueues it once the cache has our version.
  if (live && s.writtenClaims.isAhead(uid, live)) return waitForEvent;
  const decision = decideCachedClaim(s, t, claim);
  const log = s.logger.child({ pvc: claimKey(claim), storageClass: decision.className });
  log.debug({ action: decision.action, code: decision.code, reason: decision.reason }, 'claim decision');
  switch (decision.action) {
    case 'ignore':
      if (decision.code === 'AlreadyProvisioned' || decision.code === 'AlreadyBound') forgetClaim(s, uid);
      return done;
    case 'wait':
    case 'reject':
      emitOnce(s, claim, decision);
      return decision.retryAfterMs !== undefined ? after(decision.retryAfterMs) : done;
    case 'giveUp':
      return giveUp;
    case 'provision': {
      s.claimRecords.set(uid, 'lastDecisionEvent', undefined);
      const labels = { class: claim.spec.storageClassName ?? '', source: claim.spec.dataSource?.kind ?? '' };
      const next = await provisionWithLock({ s, t, claim, decision, claimDeleted: live === undefined, log, labels });
      s.metrics.claimsInProgress.set({ provisioner: s.provisionerName }, s.claimRecords.inProgressCount);
      return next;
    }
  }
}

function emitOnce(s: ControllerShared, claim: PersistentVolumeClaim, d: ClaimDecision): void {
  if (!d.event) return;
  const uid = claim.metadata.uid ?? '';
  const key = `${d.code}|${d.fingerprint ?? d.className ?? ''}`;
  if (s.claimRecords.get(uid)?.lastDecisionEvent === key) return;
  s.claimRecords.set(uid, 'lastDecisionEvent', key);
  s.events.event(claimObject(claim), d.event.type, d.event.reason, d.event.message);
}

async function provisionWithLock(a: ClaimAttempt): Promise<Next> {
  const { s, t, claim, log } = a;
  let lock: ClaimLockHandle | undefined;
  // A deleted claim cannot carry a lock; its in-progress copy is ours alone anyway.
  if (s.claimLock && !a.claimDeleted) {
    const claimLock = s.claimLock;
    const got = await takeLock(() => claimLock.acquire(claim, t.signal), s.options.leaderElection.retryPeriodMs, log);
    if ('next' in got) return got.next;
    lock = got.handle;
  }
  let result: { next: Next; succeeded: boolean } = { next: backoff, succeeded: false };
  try {
    result = await provisionClaim(a);
  } finally {
    // Keep the lock after a success (the PV exists; the lock expires by itself); release after a failure.
    await lock?.end(!result.succeeded);
  }
  return result.next;
}
