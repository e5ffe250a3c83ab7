// Failure bookkeeping shared by the claim and volume flows, as pure values: how many attempts failed since the
// object last changed, whether that crossed the threshold (given up), and the infeasible slow-retry deadline.
// "Changed" is judged by a fingerprint of what the user controls (spec, annotations, the class), never by
// resourceVersion: status updates, events and our own lock annotation must not reset a given-up claim.
import { createHash } from 'node:crypto';
import { ANN_CONTROL_PLANE_LEADER } from '../types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';

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
