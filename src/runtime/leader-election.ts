// Leader election on a coordination.k8s.io/v1 Lease with client-go's semantics (tools/leaderelection): the
// acquire/renew algorithm of resource-lock.ts over a LeaseLock (optimistic concurrency on the Lease, expiry judged
// by the locally observed time of the last record change, leaseTransitions counted on takeover), plus the elector's
// own loop: step-down when renewals fail for renewDeadline, and release on shutdown so a standby takes over at once.
import type { EventSink } from '../types/events.ts';
import type { Lease } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import type { KubeClient } from './client.ts';
import { AlreadyExistsError, ConflictError } from './status-errors.ts';
import { LeaseLock } from './lease-lock.ts';
import { silentLogger, type Logger } from '../types/logger.ts';
import { LockObservation, releasedRecord, tryAcquireOrRenew, type Candidate } from './resource-lock.ts';

/** Leader election timings that cannot work together (e.g. renew deadline not below the lease duration). */
export class LeaderElectionConfigError extends Error {
  override readonly name = 'LeaderElectionConfigError';
}

/** What happens when this instance starts or stops leading, and when the leader changes. */
export interface LeaderCallbacks {
  /** Called when this candidate becomes leader; `signal` aborts when leadership ends. Errors are logged. */
  onStartedLeading?(signal: AbortSignal): void | Promise<void>;
  /** Called once when leadership ends (lost, or stopped), only if this candidate led. */
  onStoppedLeading?(): void;
  /** Called when the observed holder changes (including to this candidate); '' when nobody holds it. */
  onNewLeader?(identity: string): void;
}

/** Options of a LeaderElector: the Lease, identity, timings (client-go's), callbacks, clock and logger. */
export interface LeaderElectorOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  identity: string;
  /** How long a lease is valid without renewal (default 15 s). */
  leaseDurationMs?: number;
  /** How long the leader keeps retrying a failing renewal before stepping down (default 10 s). */
  renewDeadlineMs?: number;
  /** Interval between attempts (default 2 s). */
  retryPeriodMs?: number;
  /** Clear the lease on stop so a standby takes over at once (default true). */
  releaseOnCancel?: boolean;
  /**
   * Client-side budget of the elector's own requests. The elector derives its own client with a dedicated
   * bucket (default 5 qps, burst 10) so workers sharing the parent client cannot starve renewals.
   */
  qps?: number;
  burst?: number;
  callbacks?: LeaderCallbacks;
  /** Where leader-election events go (an EventRecorder fits). */
  events?: EventSink<Lease>;
  clock?: Clock;
  logger?: Logger;
  random?: () => number;
}

const JITTER_FACTOR = 1.2;

/** client-go's leader-election timings, the defaults of the elector and of the controller's options. */
export const LEADER_ELECTION_DEFAULTS = Object.freeze({
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
});

/** The timing that breaks client-go's rule leaseDuration > renewDeadline > 1.2 * retryPeriod (all > 0), if any. */
export function leaderElectionTimingProblem(
  leaseDurationMs: number,
  renewDeadlineMs: number,
  retryPeriodMs: number,
): { timing: keyof typeof LEADER_ELECTION_DEFAULTS; message: string } | undefined {
  if (!(retryPeriodMs > 0)) return { timing: 'retryPeriodMs', message: 'retryPeriod must be greater than zero' };
  if (!(leaseDurationMs > renewDeadlineMs)) {
    return {
      timing: 'leaseDurationMs',
      message: `leaseDuration must be greater than renewDeadline (${leaseDurationMs} <= ${renewDeadlineMs})`,
    };
  }
  if (!(renewDeadlineMs > JITTER_FACTOR * retryPeriodMs)) {
    return {
      timing: 'renewDeadlineMs',
      message: `renewDeadline must be greater than retryPeriod*${JITTER_FACTOR} (${renewDeadlineMs} <= ${JITTER_FACTOR * retryPeriodMs})`,
    };
  }
  return undefined;
}

/** Validates client-go's constraint leaseDuration > renewDeadline > 1.2 * retryPeriod (all > 0). */
export function validateLeaderElectionTimings(
  leaseDurationMs: number,
  renewDeadlineMs: number,
  retryPeriodMs: number,
): void {
  const problem = leaderElectionTimingProblem(leaseDurationMs, renewDeadlineMs, retryPeriodMs);
  if (problem) throw new LeaderElectionConfigError(problem.message);
}

/** Lease-based leader election with client-go semantics (observed-time expiry, renew deadline, release on stop). */
export class LeaderElector {
  private readonly lock: LeaseLock;
  private readonly seen = new LockObservation();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly random: () => number;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private leading = false;
  private reportedLeader: string | undefined;

  constructor(private readonly opts: LeaderElectorOptions) {
    this.leaseDurationMs = opts.leaseDurationMs ?? LEADER_ELECTION_DEFAULTS.leaseDurationMs;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? LEADER_ELECTION_DEFAULTS.renewDeadlineMs;
    this.retryPeriodMs = opts.retryPeriodMs ?? LEADER_ELECTION_DEFAULTS.retryPeriodMs;
    validateLeaderElectionTimings(this.leaseDurationMs, this.renewDeadlineMs, this.retryPeriodMs);
    if (!opts.identity) throw new LeaderElectionConfigError('identity must not be empty');
    this.lock = new LeaseLock(
      opts.client.withOptions({ qps: opts.qps ?? 5, burst: opts.burst ?? 10 }),
      opts.namespace,
      opts.name,
    );
    this.clock = opts.clock ?? realClock;
    this.random = opts.random ?? Math.random;
    this.logger = (opts.logger ?? silentLogger).child({
      lease: `${opts.namespace}/${opts.name}`,
      identity: opts.identity,
    });
  }

  /** True while this candidate holds the lease. */
  isLeader(): boolean {
    return this.leading;
  }

  /** Holder identity last observed ('' when none). */
  getLeader(): string {
    return this.seen.record?.holderIdentity ?? '';
  }

  /**
   * Health check (client-go's HealthzAdaptor): fails only when this candidate believes it leads but its last
   * successful renewal is older than leaseDuration + maxLateMs.
   */
  healthy(maxLateMs = 0): boolean {
    if (!this.leading) return true;
    return this.clock.now() - this.seen.observedAt <= this.leaseDurationMs + maxLateMs;
  }

  /**
   * Campaigns until leader, leads until the lease is lost or `signal` aborts, then returns (like client-go's
   * Run). Callers decide whether to campaign again or exit. Never rejects for API errors.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (!(await this.acquire(signal))) return;
    const leadership = new AbortController();
    const onAbort = () => leadership.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    this.leading = true;
    this.logger.info({}, 'became leader');
    this.leaseEvent(`${this.opts.identity} became leader`);
    void Promise.resolve()
      .then(() => this.opts.callbacks?.onStartedLeading?.(leadership.signal))
      .catch((err: unknown) => this.logger.error({ err: (err as Error).message }, 'onStartedLeading failed'));
    try {
      await this.renewLoop(signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
      leadership.abort(new Error('leadership lost'));
      // Release only on cancel: after a missed renew deadline the lease is not ours to clear.
      if ((this.opts.releaseOnCancel ?? true) && signal.aborted) await this.release();
      this.leading = false;
      this.logger.info({}, 'stopped leading');
      this.leaseEvent(`${this.opts.identity} stopped leading`);
      try {
        this.opts.callbacks?.onStoppedLeading?.();
      } catch (err) {
        this.logger.error({ err: (err as Error).message }, 'onStoppedLeading failed');
      }
    }
  }

  private async acquire(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew(signal)) return true;
      try {
        await this.clock.sleep(this.retryPeriodMs * (1 + this.random() * JITTER_FACTOR), signal);
      } catch {
        return false;
      }
    }
    return false;
  }

  /** Renews every retryPeriod; returns when a renewal round misses renewDeadline or `signal` aborts. */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const deadline = this.clock.now() + this.renewDeadlineMs;
      let renewed = false;
      while (!signal.aborted && this.clock.now() < deadline) {
        const attempt = new AbortController();
        const timer = this.clock.setTimeout(
          () => attempt.abort(new Error('renew deadline')),
          deadline - this.clock.now(),
        );
        const onAbort = () => attempt.abort(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        try {
          renewed = await this.tryAcquireOrRenew(attempt.signal);
        } finally {
          timer.cancel();
          signal.removeEventListener('abort', onAbort);
        }
        if (renewed || signal.aborted) break;
        const wait = Math.min(this.retryPeriodMs, deadline - this.clock.now());
        if (wait > 0) await this.clock.sleep(wait, signal).catch(() => {});
      }
      if (signal.aborted) return;
      if (!renewed) {
        this.logger.warn({}, 'failed to renew lease within the renew deadline');
        return;
      }
      await this.clock.sleep(this.retryPeriodMs, signal).catch(() => {});
    }
  }

  private leaseEvent(message: string): void {
    if (this.lock.current) this.opts.events?.event(this.lock.current, 'Normal', 'LeaderElection', message);
  }

  private candidate(): Candidate {
    return { identity: this.opts.identity, leaseDurationMs: this.leaseDurationMs, clock: this.clock };
  }

  /** One attempt; false on any API error (logged), never throws. */
  private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    try {
      // Fast path: still leader and the lease we last wrote still valid: renew without a GET.
      const known = this.seen.record;
      if (this.leading && known && this.seen.expiresInMs(this.clock.now(), this.leaseDurationMs) > 0) {
        try {
          return (await tryAcquireOrRenew(this.lock, this.seen, this.candidate(), signal, { record: known })).acquired;
        } catch (err) {
          if (signal.aborted) return false;
          this.logger.debug({ err: (err as Error).message }, 'fast renew failed, re-reading the lease');
        }
      }
      return (await tryAcquireOrRenew(this.lock, this.seen, this.candidate(), signal)).acquired;
    } catch (err) {
      if (!(err instanceof AlreadyExistsError) && !signal.aborted) {
        this.logger.debug({ err: (err as Error).message }, 'lease acquire/renew attempt failed');
      }
      return false;
    } finally {
      this.noteLeader();
    }
  }

  /** Tells onNewLeader when the observed holder changed. */
  private noteLeader(): void {
    const holder = this.seen.record?.holderIdentity ?? '';
    if (holder === this.reportedLeader) return;
    this.reportedLeader = holder;
    try {
      this.opts.callbacks?.onNewLeader?.(holder);
    } catch (err) {
      this.logger.error({ err: (err as Error).message }, 'onNewLeader failed');
    }
  }

  /**
   * Clears the holder (client-go ReleaseOnCancel): holderIdentity '', leaseDurationSeconds 1, transitions kept.
   * A renewal aborted by the stop may still have been applied, leaving our cached resourceVersion stale, so
   * on a conflict the lease is re-read and released again if it is still ours.
   */
  private async release(): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = this.seen.record;
      if (!current || current.holderIdentity !== this.opts.identity) return;
      // The run signal has aborted by now: the release gets its own deadline.
      const signal = AbortSignal.timeout(this.renewDeadlineMs);
      try {
        const record = releasedRecord(this.lock, this.candidate(), current);
        await this.lock.update(record, signal);
        this.seen.observe(record, this.clock.now());
        this.noteLeader();
        return;
      } catch (err) {
        if (!(err instanceof ConflictError)) {
          this.logger.warn({ err: (err as Error).message }, 'failed to release the lease');
          return;
        }
        try {
          this.seen.observe(await this.lock.get(signal), this.clock.now());
          this.noteLeader();
        } catch (getErr) {
          this.logger.warn({ err: (getErr as Error).message }, 'failed to re-read the lease for release');
          return;
        }
      }
    }
  }
}
