// external-provisioner's immediate binding in a node deployment (`--node-deployment-immediate-binding`, its
// checkNode and becomeOwner): each node's instance may take an Immediate claim that no node was selected for. It
// waits a random delay (the first attempt at most `--node-deployment-base-delay`, later ones doubling up to
// `--node-deployment-max-delay`, with jitter: the thundering herd of N node instances spreads out), looks whether
// another instance took the claim meanwhile, checks that its node fits (topology and GetCapacity, the
// provisioner's `nodeFits`), and writes `volume.kubernetes.io/selected-node: <its node>` with the claim's
// resourceVersion: the first write wins, the others get a conflict, read the claim again and see the owner. The
// owner's controller then provisions the claim as any claim selected for its node (shouldProvision).
//
// Unlike external-provisioner, no worker sleeps through the delay (an attempt is a timer, one per claim), and an
// attempt is cancelled as soon as the claim's update shows another owner (the controller's informer event through
// shouldProvision), instead of polling the informer every base-delay/100.
import { ConflictError } from '../runtime/errors.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { ANN_SELECTED_NODE } from '../types/annotations.ts';
import { errorMessage } from '../types/errors.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';

/** external-provisioner's defaults of `--node-deployment-base-delay` and `--node-deployment-max-delay`. */
export const NODE_DEPLOYMENT_BASE_DELAY_MS = 20_000;
export const NODE_DEPLOYMENT_MAX_DELAY_MS = 60_000;

/** How the claims are read and written (a KubeClient in the sidecar). */
export interface ClaimAccess {
  get(namespace: string, name: string, signal: AbortSignal): Promise<PersistentVolumeClaim | undefined>;
  /** A PUT with the claim's resourceVersion: ConflictError when the claim changed meanwhile. */
  update(claim: PersistentVolumeClaim, signal: AbortSignal): Promise<PersistentVolumeClaim>;
}

/** Whether this node may take the claim: `no` stops the attempt, `yes` (or an error, as upstream) goes on. */
export type NodeFit = 'yes' | 'no' | 'not-immediate';

export interface NodeOwnershipOptions {
  nodeName: string;
  claims: ClaimAccess;
  /**
   * The provisioner's checks for this node: `not-immediate` when the claim's class is not an Immediate class of
   * this driver (then nothing is attempted), `no` when the class's allowed topologies exclude the node or (with
   * `capacity`) GetCapacity says it has no room. An error counts as `yes` (external-provisioner: "proceeding with
   * becoming owner although the capacity check failed", so that provisioning reports the problem in an event).
   */
  fits(claim: PersistentVolumeClaim, check: { capacity: boolean }, signal: AbortSignal): Promise<NodeFit>;
  baseDelayMs?: number;
  maxDelayMs?: number;
  clock?: Clock;
  /** [0, 1) (default Math.random). */
  random?: () => number;
  logger?: Logger;
}

/**
 * workqueue's ItemExponentialFailureRateLimiter with external-provisioner's jitter: attempt n (from 0) waits
 * min(base·2ⁿ, max) minus a uniform part of base, never below 0.
 */
export class JitteredBackoff {
  private readonly failures = new Map<string, number>();
  constructor(
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}
  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.baseMs * 2 ** Math.min(n, 52), this.maxMs);
    return Math.max(0, delay - this.baseMs * this.random());
  }
  forget(key: string): void {
    this.failures.delete(key);
  }
  tracked(): number {
    return this.failures.size;
  }
}

/** The race for unselected Immediate claims of one node's instance. */
export class NodeOwnership {
  readonly nodeName: string;
  private readonly o: NodeOwnershipOptions;
  private readonly backoff: JitteredBackoff;
  private readonly clock: Clock;
  private readonly logger: Logger;
  /** uid → the attempt's abort controller. */
  private readonly attempts = new Map<string, AbortController>();
  private readonly stopping = new AbortController();
  /** Attempts that ended with this node as the owner, and ones that found another owner (for tests and logs). */
  readonly outcomes = { won: 0, lost: 0, noRoom: 0 };

  constructor(o: NodeOwnershipOptions) {
    this.o = o;
    this.nodeName = o.nodeName;
    const base = o.baseDelayMs ?? NODE_DEPLOYMENT_BASE_DELAY_MS;
    this.backoff = new JitteredBackoff(base, Math.max(base, o.maxDelayMs ?? NODE_DEPLOYMENT_MAX_DELAY_MS), o.random);
    this.clock = o.clock ?? realClock;
    this.logger = (o.logger ?? silentLogger).child({ node: o.nodeName });
  }

  /**
   * The controller saw `claim` (shouldProvision): with no selected node, an attempt to take it starts unless one
   * runs; with another node selected, a running attempt stops (someone else won).
   */
  observe(claim: PersistentVolumeClaim): void {
    const uid = claim.metadata.uid;
    if (!uid || this.stopping.signal.aborted) return;
    const selected = claim.metadata.annotations?.[ANN_SELECTED_NODE];
    if (claim.spec.volumeName || claim.metadata.deletionTimestamp || (selected && selected !== this.nodeName)) {
      this.cancel(uid);
      return;
    }
    if (selected || this.attempts.has(uid)) return;
    const ac = new AbortController();
    this.attempts.set(uid, ac);
    const signal = AbortSignal.any([ac.signal, this.stopping.signal]);
    void this.attempt(claim, signal)
      .catch((err: unknown) => {
        if (!signal.aborted)
          this.logger.warn({ pvc: keyOf(claim), err: errorMessage(err) }, 'could not try to become the owner of PVC');
      })
      .finally(() => {
        if (this.attempts.get(uid) === ac) this.attempts.delete(uid);
      });
  }

  /** Stops every attempt. */
  stop(): void {
    this.stopping.abort(new Error('node ownership stopped'));
    this.attempts.clear();
  }

  /** Attempts waiting or running now. */
  pending(): number {
    return this.attempts.size;
  }

  private cancel(uid: string): void {
    const ac = this.attempts.get(uid);
    if (!ac) return;
    this.attempts.delete(uid);
    ac.abort(new Error('another node owns the claim'));
    this.backoff.forget(uid);
  }

  /** checkNode + becomeOwner for one claim; another delay after a conflict or a full node. */
  private async attempt(claim: PersistentVolumeClaim, signal: AbortSignal): Promise<void> {
    const uid = claim.metadata.uid ?? '';
    const ns = claim.metadata.namespace ?? '';
    const name = claim.metadata.name ?? '';
    let fit = await this.o.fits(claim, { capacity: false }, signal);
    if (fit === 'not-immediate') {
      this.backoff.forget(uid);
      return;
    }
    for (;;) {
      const delay = this.backoff.when(uid);
      this.logger.debug({ pvc: keyOf(claim), delayMs: Math.round(delay) }, 'will try to become owner of PVC');
      await this.clock.sleep(delay, signal);
      const current = await this.o.claims.get(ns, name, signal);
      if (!current || current.metadata.uid !== uid || current.spec.volumeName) {
        this.backoff.forget(uid);
        return;
      }
      const selected = current.metadata.annotations?.[ANN_SELECTED_NODE];
      if (selected) {
        // Someone was faster (or it is ours already): a later reschedule starts from the base delay again.
        this.backoff.forget(uid);
        if (selected !== this.nodeName) this.outcomes.lost++;
        return;
      }
      // Capacity as late as possible: it is the expensive check.
      fit = await this.o.fits(current, { capacity: true }, signal).catch((err: unknown): NodeFit => {
        this.logger.info({ pvc: keyOf(claim), err: errorMessage(err) }, 'capacity check failed; trying anyway');
        return 'yes';
      });
      if (fit === 'not-immediate') return;
      if (fit === 'no') {
        // external-provisioner leaves the claim to the next resync; here the next attempt waits a longer delay.
        this.outcomes.noRoom++;
        continue;
      }
      const written: PersistentVolumeClaim = {
        ...current,
        metadata: {
          ...current.metadata,
          annotations: { ...(current.metadata.annotations ?? {}), [ANN_SELECTED_NODE]: this.nodeName },
        },
      };
      try {
        await this.o.claims.update(written, signal);
      } catch (err) {
        if (err instanceof ConflictError) continue; // lost the race or another write: look again after a delay
        throw err;
      }
      this.backoff.forget(uid);
      this.outcomes.won++;
      this.logger.info({ pvc: keyOf(claim) }, 'became owner of PVC');
      return;
    }
  }
}

const keyOf = (c: PersistentVolumeClaim) => `${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`;
