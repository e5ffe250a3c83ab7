// The per-claim lock of `leaderElection: 'per-claim'` (active/active replicas): the 2017 seed's
// ProvisionPVCLock format, a client-go LeaderElectionRecord as JSON in the claim's
// `control-plane.alpha.kubernetes.io/leader` annotation, so existing tooling recognises it. Made cheap: no watches
// and no lists (the claim informer's copy is the read), one optimistic write to take the lock before provision(),
// renewals only while a provision() outlasts half a lease, and a release only after a failure (after a success
// the PV exists and the lock simply expires). A holder that died mid-provision is taken over once its record has
// not changed for a full lease, judged by local observation time as client-go does (immune to clock skew).
import type { Clock } from '../runtime/clock.ts';
import type { KubeClient } from '../runtime/client.ts';
import { ConflictError, NotFoundError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/logger.ts';
import { persistentVolumeClaims } from '../runtime/resources.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../types/annotations.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';

/** client-go's LeaderElectionRecord as the seed stored it (times are RFC 3339, second precision). */
export interface LeaderElectionRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: string;
  renewTime: string;
  leaderTransitions: number;
}

/** Parses the lock annotation; undefined when absent or not a record. */
export function parseLockRecord(claim: PersistentVolumeClaim): LeaderElectionRecord | undefined {
  const raw = claim.metadata.annotations?.[ANN_CONTROL_PLANE_LEADER];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<LeaderElectionRecord> | null;
    if (!v || typeof v !== 'object') return undefined;
    return {
      holderIdentity: typeof v.holderIdentity === 'string' ? v.holderIdentity : '',
      leaseDurationSeconds: typeof v.leaseDurationSeconds === 'number' ? v.leaseDurationSeconds : 0,
      acquireTime: typeof v.acquireTime === 'string' ? v.acquireTime : '',
      renewTime: typeof v.renewTime === 'string' ? v.renewTime : '',
      leaderTransitions: typeof v.leaderTransitions === 'number' ? v.leaderTransitions : 0,
    };
  } catch {
    return undefined;
  }
}

/** metav1.Time: RFC 3339 with second precision. */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The lock as this instance sees it. */
export type LockState =
  | { state: 'free' }
  | { state: 'ours'; record: LeaderElectionRecord }
  | { state: 'held'; holder: string; expiresInMs: number }
  | { state: 'expired'; holder: string; record: LeaderElectionRecord };

/** A held lock, to renew while provision() runs and to release after a failure. */
export interface ClaimLockHandle {
  /** Stops renewing; clears the holder when `release` is true (after a failure, so any replica may retry). */
  end(release: boolean): Promise<void>;
}

export interface ClaimLockOptions {
  client: KubeClient;
  identity: string;
  leaseDurationMs: number;
  clock: Clock;
  logger: Logger;
}

interface Observation {
  raw: string;
  at: number;
}

export class ClaimLock {
  /** uid -> the lock annotation last seen and when it was first seen (local time). */
  private readonly observed = new Map<string, Observation>();

  constructor(private readonly opts: ClaimLockOptions) {}

  /** Where the lock of `claim` (the informer's copy) stands now. */
  inspect(claim: PersistentVolumeClaim): LockState {
    const record = parseLockRecord(claim);
    const uid = claim.metadata.uid ?? '';
    if (!record || record.holderIdentity === '') {
      this.observed.delete(uid);
      return { state: 'free' };
    }
    if (record.holderIdentity === this.opts.identity) return { state: 'ours', record };
    const raw = claim.metadata.annotations?.[ANN_CONTROL_PLANE_LEADER] ?? '';
    const now = this.opts.clock.now();
    let seen = this.observed.get(uid);
    if (!seen || seen.raw !== raw) {
      seen = { raw, at: now };
      this.observed.set(uid, seen);
    }
    const leaseMs = (record.leaseDurationSeconds > 0 ? record.leaseDurationSeconds * 1000 : this.opts.leaseDurationMs);
    const expiresInMs = seen.at + leaseMs - now;
    return expiresInMs > 0 ? { state: 'held', holder: record.holderIdentity, expiresInMs } : { state: 'expired', holder: record.holderIdentity, record };
  }

  /** Drops local bookkeeping for a claim (bound or deleted). */
  forget(uid: string): void {
    this.observed.delete(uid);
  }

  /**
   * Takes the lock with one optimistic write (update with the cached resourceVersion). Resolves to a handle, or
   * to the reason it is not ours (held by a live holder, or a write conflict: the caller retries later).
   */
  async acquire(
    claim: PersistentVolumeClaim,
    signal: AbortSignal,
  ): Promise<{ acquired: true; handle: ClaimLockHandle } | { acquired: false; holder: string; retryAfterMs: number }> {
    const state = this.inspect(claim);
    if (state.state === 'held') return { acquired: false, holder: state.holder, retryAfterMs: state.expiresInMs };
    const now = this.opts.clock.now();
    const previous = parseLockRecord(claim);
    const record: LeaderElectionRecord = {
      holderIdentity: this.opts.identity,
      leaseDurationSeconds: Math.max(1, Math.ceil(this.opts.leaseDurationMs / 1000)),
      acquireTime: state.state === 'ours' ? state.record.acquireTime : formatTime(now),
      renewTime: formatTime(now),
      leaderTransitions: (previous?.leaderTransitions ?? 0) + (state.state === 'expired' ? 1 : 0),
    };
    let written: PersistentVolumeClaim;
    try {
      written = await this.write(claim, record, signal);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) {
        return { acquired: false, holder: '', retryAfterMs: 0 };
      }
      throw err;
    }
    if (state.state === 'expired') {
      this.opts.logger.info({ pvc: `${claim.metadata.namespace}/${claim.metadata.name}`, previousHolder: state.holder }, 'took over an expired claim lock');
    }
    return { acquired: true, handle: this.startRenewing(written, record, signal) };
  }

  private async write(claim: PersistentVolumeClaim, record: LeaderElectionRecord, signal: AbortSignal): Promise<PersistentVolumeClaim> {
    const copy = structuredClone(claim) as PersistentVolumeClaim;
    copy.metadata.annotations = { ...(copy.metadata.annotations ?? {}), [ANN_CONTROL_PLANE_LEADER]: JSON.stringify(record) };
    return this.opts.client.update<PersistentVolumeClaim>(persistentVolumeClaims, copy, { namespace: claim.metadata.namespace, signal });
  }

  private startRenewing(claim: PersistentVolumeClaim, record: LeaderElectionRecord, signal: AbortSignal): ClaimLockHandle {
    let current = claim;
    let ended = false;
    let renewing: Promise<void> = Promise.resolve();
    const every = Math.max(1, Math.floor(this.opts.leaseDurationMs / 2));
    const schedule = (): { cancel(): void } =>
      this.opts.clock.setTimeout(() => {
        if (ended || signal.aborted) return;
        renewing = this.renew(current, record, signal).then((c) => {
          if (c) current = c;
          if (!ended) timer = schedule();
        });
      }, every, { unref: true });
    let timer = schedule();
    return {
      end: async (release: boolean) => {
        ended = true;
        timer.cancel();
        await renewing;
        if (!release) return;
        try {
          await this.write(current, { ...record, holderIdentity: '', renewTime: formatTime(this.opts.clock.now()) }, signal);
        } catch (err) {
          // A failed release only delays other replicas by one lease.
          this.opts.logger.debug({ err: (err as Error).message }, 'claim lock release failed');
        }
      },
    };
  }

  /** Renews with the claim we last wrote; on a conflict re-reads it and renews only if the lock is still ours. */
  private async renew(claim: PersistentVolumeClaim, record: LeaderElectionRecord, signal: AbortSignal): Promise<PersistentVolumeClaim | undefined> {
    record.renewTime = formatTime(this.opts.clock.now());
    try {
      return await this.write(claim, record, signal);
    } catch (err) {
      if (!(err instanceof ConflictError)) {
        this.opts.logger.warn({ err: (err as Error).message }, 'claim lock renewal failed');
        return undefined;
      }
    }
    try {
      const fresh = await this.opts.client.get<PersistentVolumeClaim>(persistentVolumeClaims, claim.metadata.name ?? '', {
        namespace: claim.metadata.namespace,
        signal,
      });
      if (parseLockRecord(fresh)?.holderIdentity !== this.opts.identity) return undefined;
      return await this.write(fresh, record, signal);
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'claim lock renewal failed');
      return undefined;
    }
  }
}

/**
 * Whether an update between two claim versions only touched the lock annotation (and resourceVersion): the
 * seed's isOnlyRecordUpdate filter, so our own lock writes do not trigger syncs.
 */
export function isOnlyLockUpdate(oldClaim: PersistentVolumeClaim, newClaim: PersistentVolumeClaim): boolean {
  const strip = (c: PersistentVolumeClaim) => {
    const annotations = { ...(c.metadata.annotations ?? {}) };
    delete annotations[ANN_CONTROL_PLANE_LEADER];
    return JSON.stringify({ ...c, metadata: { ...c.metadata, annotations, resourceVersion: '', managedFields: undefined } });
  };
  if (oldClaim === newClaim) return false; // a resync
  return strip(oldClaim) === strip(newClaim);
}
