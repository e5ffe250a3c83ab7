// The per-claim lock of `leaderElection: 'per-claim'` (active/active replicas): the runtime's leader-election
// algorithm (resource-lock.ts) over an annotation lock. The 2017 seed's ProvisionPVCLock format, a client-go
// LeaderElectionRecord as JSON in the claim's
// `control-plane.alpha.kubernetes.io/leader` annotation, so existing tooling recognises it. Made cheap: no watches
// and no lists (the claim informer's copy is the read), one optimistic write to take the lock before provision(),
// renewals only while a provision() outlasts half a lease, and a release only after a failure (after a success
// the PV exists and the lock simply expires). A holder that died mid-provision is taken over once its record has
// not changed for a full lease, judged by local observation time as client-go does (immune to clock skew).
// The same record on a PV (acquireVolume, written with a merge patch guarded by the resourceVersion, so only the
// `patch` verb is needed) makes one replica at a time call delete() for a Released PV.
import type { Clock } from '../runtime/clock.ts';
import type { ObjectClient } from '../runtime/client.ts';
import { ConflictError, NotFoundError, syntheticStatus } from '../runtime/status-errors.ts';
import type { Logger } from '../types/logger.ts';
import {
  LockObservation,
  releasedRecord,
  tryAcquireOrRenew,
  type Candidate,
  type LockRecord,
  type ResourceLock,
} from '../runtime/resource-lock.ts';
import { persistentVolumeClaims, persistentVolumes } from '../runtime/resources.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../types/annotations.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import { formatTime } from '../types/time.ts';

/** client-go's LeaderElectionRecord as the seed stored it (times are RFC 3339, second precision). */
export type LeaderElectionRecord = LockRecord;

/** Parses the lock annotation (of a claim, or of a PV being deleted); undefined when absent or not a record. */
export function parseLockRecord(claim: KubeObject): LeaderElectionRecord | undefined {
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

/** The lock as this instance sees it. */
export type LockState =
  | { state: 'free' }
  | { state: 'ours'; record: LeaderElectionRecord }
  | { state: 'held'; holder: string; expiresInMs: number }
  | { state: 'expired'; holder: string; record: LeaderElectionRecord };

/** The outcome of a lock attempt: a handle, or who holds it (retry after `retryAfterMs`; 0 after a write conflict). */
export type LockAttempt =
  { acquired: true; handle: ClaimLockHandle } | { acquired: false; holder: string; retryAfterMs: number };

/** A held lock, to renew while provision() runs and to release after a failure. */
export interface ClaimLockHandle {
  /** Stops renewing; clears the holder when `release` is true (after a failure, so any replica may retry). */
  end(release: boolean): Promise<void>;
}

export interface ClaimLockOptions {
  client: ObjectClient;
  identity: string;
  leaseDurationMs: number;
  clock: Clock;
  logger: Logger;
}

/** How the lock record is written to and re-read from one kind of object. */
interface LockTarget<T extends KubeObject> {
  write(obj: T, record: LeaderElectionRecord, signal: AbortSignal): Promise<T>;
  read(obj: T, signal: AbortSignal): Promise<T>;
}

/** The lock record in the annotation of one object (a ResourceLock over that object). */
class AnnotationLock<T extends KubeObject> implements ResourceLock {
  constructor(
    public current: T,
    private readonly target: LockTarget<T>,
  ) {}

  async get(signal: AbortSignal): Promise<LockRecord | undefined> {
    this.current = await this.target.read(this.current, signal);
    return parseLockRecord(this.current);
  }

  /** The object carrying the annotation is the user's: it is never created for a lock. */
  async create(): Promise<void> {
    throw new NotFoundError(syntheticStatus(404, 'NotFound', `${this.current.metadata.name ?? ''} no longer exists`));
  }

  async update(record: LockRecord, signal: AbortSignal): Promise<void> {
    this.current = await this.target.write(this.current, record, signal);
  }

  formatTime(ms: number): string {
    return formatTime(ms);
  }
}

export class ClaimLock {
  /** uid -> what this instance last saw of the object's lock, and when it last changed (local time). */
  private readonly observed = new Map<string, LockObservation>();

  private readonly claimTarget: LockTarget<PersistentVolumeClaim>;
  private readonly volumeTarget: LockTarget<PersistentVolume>;
  private readonly candidate: Candidate;

  constructor(private readonly opts: ClaimLockOptions) {
    this.candidate = { identity: opts.identity, leaseDurationMs: opts.leaseDurationMs, clock: opts.clock };
    this.claimTarget = {
      write: (claim, record, signal) => {
        const copy = structuredClone(claim) as PersistentVolumeClaim;
        copy.metadata.annotations = {
          ...(copy.metadata.annotations ?? {}),
          [ANN_CONTROL_PLANE_LEADER]: JSON.stringify(record),
        };
        return opts.client.update<PersistentVolumeClaim>(persistentVolumeClaims, copy, {
          namespace: claim.metadata.namespace,
          signal,
        });
      },
      read: (claim, signal) =>
        opts.client.get<PersistentVolumeClaim>(persistentVolumeClaims, claim.metadata.name ?? '', {
          namespace: claim.metadata.namespace,
          signal,
        }),
    };
    this.volumeTarget = {
      // A merge patch carrying resourceVersion and uid is as optimistic as an update (409 when stale).
      write: (volume, record, signal) =>
        opts.client.patch<PersistentVolume>(
          persistentVolumes,
          volume.metadata.name ?? '',
          {
            metadata: {
              uid: volume.metadata.uid,
              resourceVersion: volume.metadata.resourceVersion,
              annotations: { [ANN_CONTROL_PLANE_LEADER]: JSON.stringify(record) },
            },
          },
          { type: 'merge', signal },
        ),
      read: (volume, signal) =>
        opts.client.get<PersistentVolume>(persistentVolumes, volume.metadata.name ?? '', { signal }),
    };
  }

  private observation(uid: string): LockObservation {
    let seen = this.observed.get(uid);
    if (!seen) {
      seen = new LockObservation();
      this.observed.set(uid, seen);
    }
    return seen;
  }

  /** Where the lock of `claim` (the informer's copy; or of a PV) stands now. */
  inspect(claim: KubeObject): LockState {
    const record = parseLockRecord(claim);
    const uid = claim.metadata.uid ?? '';
    if (!record || record.holderIdentity === '') {
      this.observed.delete(uid);
      return { state: 'free' };
    }
    if (record.holderIdentity === this.opts.identity) return { state: 'ours', record };
    const now = this.opts.clock.now();
    const seen = this.observation(uid);
    seen.observe(record, now);
    const expiresInMs = seen.expiresInMs(now, this.opts.leaseDurationMs);
    return expiresInMs > 0
      ? { state: 'held', holder: record.holderIdentity, expiresInMs }
      : { state: 'expired', holder: record.holderIdentity, record };
  }

  /** Drops local bookkeeping for a claim (bound or deleted). */
  forget(uid: string): void {
    this.observed.delete(uid);
  }

  /** How many objects' locks this instance keeps an observation of. */
  get observedCount(): number {
    return this.observed.size;
  }

  /**
   * Takes the lock with one optimistic write (update with the cached resourceVersion). Resolves to a handle, or
   * to the reason it is not ours (held by a live holder, or a write conflict: the caller retries later).
   */
  acquire(claim: PersistentVolumeClaim, signal: AbortSignal): Promise<LockAttempt> {
    return this.acquireOn(claim, this.claimTarget, signal);
  }

  /**
   * Takes the lock of a Released PV around provisioner.delete() (per-claim mode: every replica syncs every PV).
   * End the handle with release=false after a successful delete() (the PV goes), true after a failure.
   */
  acquireVolume(volume: PersistentVolume, signal: AbortSignal): Promise<LockAttempt> {
    return this.acquireOn(volume, this.volumeTarget, signal);
  }

  private async acquireOn<T extends KubeObject>(
    obj: T,
    target: LockTarget<T>,
    signal: AbortSignal,
  ): Promise<LockAttempt> {
    const state = this.inspect(obj);
    if (state.state === 'held') return { acquired: false, holder: state.holder, retryAfterMs: state.expiresInMs };
    const uid = obj.metadata.uid ?? '';
    const lock = new AnnotationLock(obj, target);
    // The informer's copy is the read: no GET before the one optimistic write.
    const known = { record: parseLockRecord(obj) };
    let result: Awaited<ReturnType<typeof tryAcquireOrRenew>>;
    try {
      result = await tryAcquireOrRenew(lock, this.observation(uid), this.candidate, signal, known);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError)
        return { acquired: false, holder: '', retryAfterMs: 0 };
      throw err;
    }
    if (!result.acquired) return { acquired: false, holder: result.holder, retryAfterMs: result.expiresInMs };
    if (result.tookOverFrom) {
      const object = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
      this.opts.logger.info({ object, previousHolder: result.tookOverFrom }, 'took over an expired lock');
    }
    return { acquired: true, handle: this.startRenewing(lock, this.observation(uid), signal) };
  }

  private startRenewing(lock: ResourceLock, seen: LockObservation, signal: AbortSignal): ClaimLockHandle {
    let ended = false;
    let renewing: Promise<void> = Promise.resolve();
    const every = Math.max(1, Math.floor(this.opts.leaseDurationMs / 2));
    const schedule = (): { cancel(): void } =>
      this.opts.clock.setTimeout(
        () => {
          if (ended || signal.aborted) return;
          renewing = this.renew(lock, seen, signal).then(() => {
            if (!ended) timer = schedule();
          });
        },
        every,
        { unref: true },
      );
    let timer = schedule();
    return {
      end: async (release: boolean) => {
        ended = true;
        timer.cancel();
        await renewing;
        const current = seen.record;
        if (!release || current?.holderIdentity !== this.opts.identity) return;
        try {
          await lock.update(releasedRecord(lock, this.candidate, current), signal);
        } catch (err) {
          // A failed release only delays other replicas by one lease.
          this.opts.logger.debug({ err: (err as Error).message }, 'claim lock release failed');
        }
      },
    };
  }

  /** Renews over the object we last wrote; on a conflict re-reads it and renews only if the lock is still ours. */
  private async renew(lock: ResourceLock, seen: LockObservation, signal: AbortSignal): Promise<void> {
    try {
      await tryAcquireOrRenew(lock, seen, this.candidate, signal, { record: seen.record });
      return;
    } catch (err) {
      if (!(err instanceof ConflictError)) {
        this.opts.logger.warn({ err: (err as Error).message }, 'claim lock renewal failed');
        return;
      }
    }
    try {
      const fresh = await lock.get(signal);
      if (fresh?.holderIdentity !== this.opts.identity) return;
      await tryAcquireOrRenew(lock, seen, this.candidate, signal, { record: fresh });
    } catch (err) {
      this.opts.logger.warn({ err: (err as Error).message }, 'claim lock renewal failed');
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
    return JSON.stringify({
      ...c,
      metadata: { ...c.metadata, annotations, resourceVersion: '', managedFields: undefined },
    });
  };
  if (oldClaim === newClaim) return false; // a resync
  return strip(oldClaim) === strip(newClaim);
}
