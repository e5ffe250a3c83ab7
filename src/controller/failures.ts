// What a failure leads to, for every control loop (claim, volume, resize): the bookkeeping as pure values (how many
// attempts failed since the object last changed, whether that crossed the threshold, the infeasible slow-retry
// deadline), the one failure policy, and the one failure tail the loops call: count the failure, apply the policy,
// announce a give-up (log, Warning event, metric). Beside it the two outcomes that are not failures (shutdown,
// IgnoredError) and the one lock-wait rule. "Changed" is judged by a fingerprint of what the user controls (spec,
// annotations, the class), never by resourceVersion: status updates, events and our own lock annotation must not
// reset a given-up claim.
import { createHash } from 'node:crypto';
import type { Logger } from '../types/logger.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../types/annotations.ts';
import { errorMessage } from '../types/error-message.ts';
import type { EventSink } from '../types/events.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import type { ClaimLockHandle, LockAttempt } from './claim-lock.ts';
import { after, backoff, done, giveUp, waitForEvent, type Next } from './next.ts';
import { IgnoredError } from './provisioner.ts';

/** Failures of one claim (by uid) or volume (by name) since its fingerprint last changed. */
export interface FailureRecord {
  /** Consecutive failed attempts. */
  failures: number;
  /** The fingerprint the failures were counted against. */
  fingerprint: string;
  /** After an InfeasibleError: no new attempt before this time (ms since epoch) unless the fingerprint changes. */
  infeasibleUntil?: number;
  /** The last error message, for explain and the give-up event. */
  lastError?: string;
}

/** JSON with sorted keys, so equal objects always serialise equally. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'undefined';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 22);
}

/**
 * What must change for a given-up or infeasible claim to be tried again: its spec, its annotations (minus the
 * per-claim lock, which we write ourselves), its labels, and its class (uid and resourceVersion, so a recreated
 * or edited class counts).
 */
export function claimFingerprint(claim: PersistentVolumeClaim, storageClass: StorageClass | undefined): string {
  const annotations = { ...(claim.metadata.annotations ?? {}) };
  delete annotations[ANN_CONTROL_PLANE_LEADER];
  return digest(
    stableStringify({
      spec: claim.spec,
      annotations,
      labels: claim.metadata.labels ?? {},
      class: storageClass ? [storageClass.metadata.uid, storageClass.metadata.resourceVersion] : null,
    }),
  );
}

/** What must change for a given-up volume deletion to be tried again: spec, annotations, deletion state. */
export function volumeFingerprint(volume: PersistentVolume): string {
  return digest(
    stableStringify({
      spec: volume.spec,
      annotations: volume.metadata.annotations ?? {},
      deleting: volume.metadata.deletionTimestamp !== undefined,
      phase: volume.status?.phase,
    }),
  );
}

/** The record after one more failure. A changed fingerprint restarts the count. */
export function recordFailure(
  previous: FailureRecord | undefined,
  fingerprint: string,
  error: string,
  infeasible?: { now: number; infeasibleDelayMs: number },
): FailureRecord {
  const failures = previous && previous.fingerprint === fingerprint ? previous.failures + 1 : 1;
  const record: FailureRecord = { failures, fingerprint, lastError: error };
  if (infeasible) record.infeasibleUntil = infeasible.now + infeasible.infeasibleDelayMs;
  return record;
}

/** The record as it applies now: undefined when the object changed since the failures were counted. */
export function currentRecord(record: FailureRecord | undefined, fingerprint: string): FailureRecord | undefined {
  return record && record.fingerprint === fingerprint ? record : undefined;
}

/** True when the failures reached the threshold (0 = never give up). */
export function thresholdReached(record: FailureRecord | undefined, threshold: number): boolean {
  return threshold > 0 && record !== undefined && record.failures >= threshold;
}

/**
 * What kind of failure it was: `infeasible` (an InfeasibleError: retry slowly, after `infeasibleRetryMs`),
 * `inBackground` (the backend may still be working: retry with backoff and never give up), or `final`.
 */
export type FailureClass = 'final' | 'infeasible' | 'inBackground';

/**
 * The failure policy of every loop: an infeasible failure waits `infeasibleRetryMs`; otherwise the threshold
 * (0 = never) gives up once reached, unless the backend may still be working; anything else backs off.
 */
export function failurePolicy(
  record: FailureRecord,
  threshold: number,
  failure: FailureClass,
  infeasibleRetryMs = 0,
): Next {
  if (failure === 'infeasible') return after(infeasibleRetryMs);
  if (failure === 'final' && thresholdReached(record, threshold)) return giveUp;
  return backoff;
}

/** Where a loop keeps its failure records (a Records of a record with a `failures` field fits). */
export interface FailureBook {
  get(key: string): { failures?: FailureRecord } | undefined;
  set(key: string, field: 'failures', value: FailureRecord | undefined): void;
}

/** How a loop names what failed, for the give-up log line and Warning event. */
export interface GiveUpWords {
  /** The Warning event's reason, e.g. `ProvisioningGivenUp`. */
  reason: string;
  /** What was being done, as the event says it: `provisioning`, `deleting the volume`, `resizing`. */
  doing: string;
  /** The option that holds the threshold, named in the event. */
  thresholdOption: string;
  /** What the user changes to have it retried. */
  retryHint: string;
}

/** What the failure tail needs of the controller (ControllerShared fits). */
export interface FailureTailDeps {
  clock: { now(): number };
  events: EventSink;
  options: { retry: { infeasibleDelayMs: number } };
}

/** One failed attempt of a loop, with everything its failure tail needs besides the controller's dependencies. */
export interface FailedAttempt {
  book: FailureBook;
  key: string;
  /** The object's fingerprint the failure is counted against (a changed object restarts the count). */
  fingerprint: string;
  message: string;
  failure: FailureClass;
  /** The failure was an InfeasibleError: the record carries the slow-retry deadline (explain shows it). */
  infeasibleError: boolean;
  /** The object the give-up event is about. */
  object: KubeObject;
  threshold: number;
  log: Logger;
  words: GiveUpWords;
  /** Counts a give-up (the loop's given-up counter, with its labels). */
  countGiveUp(): void;
}

/**
 * The one failure tail: records the failure, applies the failure policy and, on a give-up, logs it, emits the
 * loop's Warning event and counts it. Returns the Next and the new record.
 */
export function failureTail(deps: FailureTailDeps, f: FailedAttempt): { next: Next; record: FailureRecord } {
  const { infeasibleDelayMs } = deps.options.retry;
  const infeasible = f.infeasibleError ? { now: deps.clock.now(), infeasibleDelayMs } : undefined;
  const record = recordFailure(f.book.get(f.key)?.failures, f.fingerprint, f.message, infeasible);
  f.book.set(f.key, 'failures', record);
  const next = failurePolicy(record, f.threshold, f.failure, infeasibleDelayMs);
  const fields = { failures: record.failures, threshold: f.threshold, err: f.message };
  if (next.kind === 'giveUp') {
    f.log.error(fields, `giving up ${f.words.doing} because failures >= threshold`);
    deps.events.event(
      f.object,
      'Warning',
      f.words.reason,
      `Giving up ${f.words.doing} after ${record.failures} failed attempts (${f.words.thresholdOption} ${f.threshold}); ` +
        `last error: ${f.message}. ${f.words.retryHint}`,
    );
    f.countGiveUp();
  } else if (next.kind === 'after') {
    f.log.warn(fields, `${f.words.doing} infeasible; retrying after the infeasible delay`);
  } else {
    f.log.info(fields, `${f.words.doing} failed; retrying`);
  }
  return { next, record };
}

/**
 * The outcomes of a failed backend call that are not failures, the same in every loop: the term ended (shutdown or
 * lost leadership interrupted the call; whoever works next calls it again, so nothing is counted and the queue of the
 * ending term is left alone: waitForEvent), or an IgnoredError (another instance's object: done, no event, no
 * metric). Undefined when the error is a failure.
 */
export function notAFailure(err: unknown, signal: AbortSignal, log: Logger, doing: string): Next | undefined {
  if (signal.aborted) {
    log.info({ err: errorMessage(err) }, `${doing} interrupted by shutdown`);
    return waitForEvent;
  }
  if (err instanceof IgnoredError) {
    log.debug({ reason: err.reason }, `${doing} ignored`);
    return done;
  }
  return undefined;
}

/**
 * The one lock-wait rule (per-claim mode), for every loop: a lock held elsewhere is looked at again one retry period
 * after the holder's lease would expire (a take-over if it died; lock times are stored to the second, so exactly at
 * the expiry it may still look held), or one retry period after a lost write race (retryAfterMs 0), as the leader
 * elector retries: neither is a failure of the object, so neither feeds the per-key backoff. An error taking the lock
 * backs off. Returns the handle, or the Next when the lock was not taken.
 */
export async function takeLock(
  acquire: () => Promise<LockAttempt>,
  retryPeriodMs: number,
  log: Logger,
  onError?: (err: unknown) => void,
): Promise<{ handle: ClaimLockHandle } | { next: Next }> {
  let got: LockAttempt;
  try {
    got = await acquire();
  } catch (err) {
    if (onError) onError(err);
    else log.warn({ err: errorMessage(err) }, 'could not take the lock');
    return { next: backoff };
  }
  if (got.acquired) return { handle: got.handle };
  log.debug({ holder: got.holder, retryAfterMs: got.retryAfterMs }, 'lock held elsewhere');
  return { next: after(got.retryAfterMs > 0 ? got.retryAfterMs + retryPeriodMs : retryPeriodMs) };
}
