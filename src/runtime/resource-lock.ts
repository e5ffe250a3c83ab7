// One leader-election algorithm over a lock (client-go's tools/leaderelection/resourcelock): a lock reads, creates
// and updates a LeaderElectionRecord stored in some object (a Lease, an annotation on a claim or a PV); the
// algorithm decides. Expiry is judged by the local time at which the record was last seen to change, never by the
// record's timestamps, so clock skew between candidates does not matter.
import { NotFoundError } from './status-errors.ts';

/** client-go's LeaderElectionRecord (times as the lock's object stores them). */
export interface LockRecord {
  holderIdentity: string;
  leaseDurationSeconds: number;
  acquireTime: string;
  renewTime: string;
  leaderTransitions: number;
}

/** Where a lock record lives (resourcelock.Interface). */
export interface ResourceLock {
  /** Reads the record from the API; undefined when the object has none. Throws NotFoundError without the object. */
  get(signal: AbortSignal): Promise<LockRecord | undefined>;
  /** Creates the object holding `record` (AlreadyExistsError when another candidate was first). */
  create(record: LockRecord, signal: AbortSignal): Promise<void>;
  /** Writes `record` over the version last read or written (ConflictError when it changed meanwhile). */
  update(record: LockRecord, signal: AbortSignal): Promise<void>;
  /** How this lock's object writes a time (`metav1.MicroTime` for Leases, `metav1.Time` in annotations). */
  formatTime(ms: number): string;
}

/** What this candidate last saw of a lock, and when (local time) the record last changed. */
export class LockObservation {
  record: LockRecord | undefined;
  private key = '';
  private changedAt = 0;

  /** Notes the record seen at `now`; the expiry clock restarts only when the record changed. */
  observe(record: LockRecord | undefined, now: number): void {
    const key = record ? JSON.stringify(record) : '';
    if (key !== this.key) {
      this.key = key;
      this.changedAt = now;
    }
    this.record = record;
  }

  /** Milliseconds until the observed holder's lease expires (<= 0: expired). */
  expiresInMs(now: number, defaultLeaseMs: number): number {
    const seconds = this.record?.leaseDurationSeconds;
    return this.changedAt + (seconds && seconds > 0 ? seconds * 1000 : defaultLeaseMs) - now;
  }

  /** When the record was last seen to change (local time). */
  get observedAt(): number {
    return this.changedAt;
  }
}

/** Who is trying, for how long, and the time source. */
export interface Candidate {
  identity: string;
  leaseDurationMs: number;
  clock: { now(): number };
}

/** The outcome of one attempt. */
export type AttemptResult =
  | { acquired: true; record: LockRecord; tookOverFrom?: string }
  | { acquired: false; holder: string; expiresInMs: number };

/** The record `c` writes to take or renew a lock whose current record is `current`. */
export function recordFor(lock: ResourceLock, c: Candidate, current: LockRecord | undefined): LockRecord {
  const now = c.clock.now();
  const mine = current?.holderIdentity === c.identity;
  const changedHands = current !== undefined && current.holderIdentity !== c.identity;
  return {
    holderIdentity: c.identity,
    leaseDurationSeconds: Math.max(1, Math.ceil(c.leaseDurationMs / 1000)),
    acquireTime: mine && current.acquireTime ? current.acquireTime : lock.formatTime(now),
    renewTime: lock.formatTime(now),
    leaderTransitions: (current?.leaderTransitions ?? 0) + (changedHands ? 1 : 0),
  };
}

/**
 * One acquire-or-renew attempt (client-go's tryAcquireOrRenew): read the record (or use `known`, a copy already
 * read, such as an informer's), create the object when it is missing, refuse while another holder's lease is
 * live, else write our record with optimistic concurrency. Write errors (conflicts included) are thrown.
 */
export async function tryAcquireOrRenew(
  lock: ResourceLock,
  seen: LockObservation,
  c: Candidate,
  signal: AbortSignal,
  known?: { record: LockRecord | undefined },
): Promise<AttemptResult> {
  let current: LockRecord | undefined;
  if (known) current = known.record;
  else {
    try {
      current = await lock.get(signal);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      const record = recordFor(lock, c, undefined);
      await lock.create(record, signal);
      seen.observe(record, c.clock.now());
      return { acquired: true, record };
    }
  }
  seen.observe(current, c.clock.now());
  const holder = current?.holderIdentity ?? '';
  if (holder !== '' && holder !== c.identity) {
    const expiresInMs = seen.expiresInMs(c.clock.now(), c.leaseDurationMs);
    if (expiresInMs > 0) return { acquired: false, holder, expiresInMs };
  }
  const record = recordFor(lock, c, current);
  await lock.update(record, signal);
  seen.observe(record, c.clock.now());
  return holder !== '' && holder !== c.identity
    ? { acquired: true, record, tookOverFrom: holder }
    : { acquired: true, record };
}

/** The record that releases a lock `c` holds: no holder, so any candidate may take it at once. */
export function releasedRecord(lock: ResourceLock, c: Candidate, current: LockRecord): LockRecord {
  const now = lock.formatTime(c.clock.now());
  return { ...current, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
}
