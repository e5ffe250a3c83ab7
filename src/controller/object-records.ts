// The record books: what each control loop remembers between syncs, one record per key (the claim loop's per claim
// uid, the volume loop's per PV name, the resize loop's per claim uid): forgetting an object is one delete. Records that hold nothing are dropped, so the maps only hold
// objects with something to remember.
import type { PersistentVolumeClaim } from '../types/k8s.ts';
import type { FailureRecord } from './failures.ts';
import type { ExpandResult } from './provisioner.ts';

/** What the controller remembers about one claim. */
export interface ClaimRecord {
  /** Failed attempts since the claim last changed. */
  failures?: FailureRecord;
  /** provision() may still run in the backend (InBackground): the copy to carry on with, even after deletion. */
  inProgress?: PersistentVolumeClaim;
  /** The last reject/wait event emitted, so resyncs do not repeat it. */
  lastDecisionEvent?: string;
}

/** What the controller remembers about one PV. */
export interface VolumeRecord {
  /** Failed delete attempts since the PV last changed. */
  failures?: FailureRecord;
  /** The uid of the PV whose backend volume delete() already removed (so delete() is called once per uid). */
  backendDeletedUid?: string;
}

/** What the resize loop remembers about one claim. */
export interface ResizeRecord {
  /** Failed resize attempts since the request or the class last changed. */
  failures?: FailureRecord;
  /** expand() succeeded but the PV's capacity is not written yet: the result to write on the next attempt. */
  expanded?: { pvName: string; target: string; result: ExpandResult };
}

/** Records by key; a record whose fields are all unset is removed. */
export class Records<R extends object> {
  protected readonly records = new Map<string, R>();

  get(key: string): Readonly<R> | undefined {
    return this.records.get(key);
  }

  /** Sets (or, with undefined, clears) one field of `key`'s record. */
  set<F extends keyof R>(key: string, field: F, value: R[F] | undefined): void {
    const record = this.records.get(key) ?? ({} as R);
    if (value === undefined) delete record[field];
    else record[field] = value;
    if (Object.values(record).some((v) => v !== undefined)) this.records.set(key, record);
    else this.records.delete(key);
  }

  /** Forgets everything about `key`. */
  forget(key: string): void {
    this.records.delete(key);
  }

  /** How many objects have a record. */
  get size(): number {
    return this.records.size;
  }
}

/** Claim records, with a running count of claims in progress (a gauge reads it after every provision). */
export class ClaimRecords extends Records<ClaimRecord> {
  private inProgressUids = new Set<string>();

  override set<F extends keyof ClaimRecord>(key: string, field: F, value: ClaimRecord[F] | undefined): void {
    super.set(key, field, value);
    if (field === 'inProgress') {
      if (value === undefined) this.inProgressUids.delete(key);
      else this.inProgressUids.add(key);
    }
  }

  override forget(key: string): void {
    super.forget(key);
    this.inProgressUids.delete(key);
  }

  /** The in-progress copy of claim `uid`, if any. */
  inProgress(uid: string): PersistentVolumeClaim | undefined {
    return this.records.get(uid)?.inProgress;
  }

  /** Uids of the claims in progress. */
  inProgressKeys(): string[] {
    return [...this.inProgressUids];
  }

  /** How many claims are in progress. */
  get inProgressCount(): number {
    return this.inProgressUids.size;
  }

  /** The in-progress claims. */
  inProgressClaims(): PersistentVolumeClaim[] {
    return this.inProgressKeys().flatMap((uid) => this.records.get(uid)?.inProgress ?? []);
  }

  /**
   * Clears the infeasible slow retry of every claim backing off after an InfeasibleError (the failure count stays)
   * and returns their uids, for the caller to re-enqueue.
   */
  clearInfeasibleBackoffs(): string[] {
    const out: string[] = [];
    for (const [uid, record] of this.records) {
      const failures = record.failures;
      if (failures?.infeasibleUntil === undefined) continue;
      const { infeasibleUntil: _until, ...rest } = failures;
      this.set(uid, 'failures', rest);
      out.push(uid);
    }
    return out;
  }
}
