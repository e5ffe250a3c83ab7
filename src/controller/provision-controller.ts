// ProvisionController: wires the control loops (claim, volume, and resize when the provisioner can expand) through
// their one shape: a work queue and `threadiness` workers each, their hooks on the term's informers (claims, volumes,
// classes); plus the volume store, events, metrics and leader election ('lease' / 'none' / 'per-claim'). Nothing here exits the process: losing the lease ends the term and the controller campaigns
// again; run(signal) returns after a graceful stop (workers drained, Lease released, events flushed).
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import { realClock, type Clock } from '../runtime/clock.ts';
import type { KubeClient } from '../runtime/client.ts';
import { EventRecorder } from '../runtime/event-recorder.ts';
import { LeaderElector } from '../runtime/leader-election.ts';
import { createLogger, type Logger } from '../runtime/logger.ts';
import { createMetricsRegistry, DuplicateQueueNameError } from '../runtime/metrics.ts';
import { BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter } from '../runtime/rate-limiters.ts';
import { WorkQueue } from '../runtime/workqueue.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../types/k8s.ts';
import { errorMessage } from '../types/errors.ts';
import { ClaimLock } from './claim-lock.ts';
import { claimLoop } from './claim/claim-loop.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';
import { boundedEventSink } from './event-bounds.ts';
import { explainCachedClaim, type ClaimExplanation } from './claim/explain-claim.ts';
import { Heartbeat } from './presence/heartbeat.ts';
import { wireLoops } from './loop-hooks.ts';
import { runLeakInventory, type LeakReport } from './leak-inventory.ts';
import { createControllerMetrics } from './controller-metrics.ts';
import type { AnyControlLoop, KeyQueue } from './loop.ts';
import { resizeLoop } from './resize/resize-loop.ts';
import { createResizeMetrics } from './resize/resize-metrics.ts';
import {
  leaseNameFor,
  resolveOptions,
  validateProvisionerName,
  type ProvisionControllerOptions,
  type ResolvedOptions,
} from './options/controller-options.ts';
import type { Provisioner } from './provisioner.ts';
import { volumeLoop } from './volume/volume-loop.ts';
import { VolumeStore } from './claim/volume-store.ts';
import type { EventSink } from '../types/events.ts';
import { applyNext, backoff, type Next } from './next.ts';
import { ClaimRecords, Records, type ResizeRecord, type VolumeRecord } from './object-records.ts';
import { OwnWrites } from './own-writes.ts';
import { termInformers } from './term-caches.ts';

/** Dependencies a ProvisionController takes besides its options (all optional). */
export interface ProvisionControllerDeps {
  /** Structured logger (default: pino on stderr). */
  logger?: Logger;
  /** Time source (default: the wall clock; tests pass a TestClock). */
  clock?: Clock;
  /** Prometheus registry the controller and its queues report on (default: a fresh one, see `registry`). */
  registry?: Registry;
  /** Leader-election and lock identity (default `<hostname>_<uuid>`). */
  identity?: string;
  /** Where events go (default: an EventRecorder on the client, component `<provisionerName>_<identity>`). */
  events?: EventSink;
  /**
   * What the backend publishes about itself in the heartbeat Lease (`detail.kube-provisioner.io/<key>` annotations),
   * e.g. where its configuration lives, for `explain`.
   */
  heartbeatDetails?: Record<string, string>;
}

/** Options and dependencies of a ProvisionController in one object. */
export type ProvisionControllerConfig = ProvisionControllerOptions & ProvisionControllerDeps;

/** The keys of ProvisionControllerDeps: resolveOptions refuses every other key that is not an option. */
const DEPENDENCY_KEYS: ReadonlySet<string> = new Set(
  Object.keys({ logger: 0, clock: 0, registry: 0, identity: 0, events: 0, heartbeatDetails: 0 } satisfies Record<
    keyof ProvisionControllerDeps,
    0
  >),
);

/** run() was called while the controller is already running. */
export class ControllerAlreadyRunningError extends Error {
  override name = 'ControllerAlreadyRunningError';
}

/**
 * The provisioning control loop for one provisioner name. Construct it with a client, the name, the backend and
 * options; call run(signal). Two controllers may live in one process (nothing global).
 */
export class ProvisionController {
  readonly identity: string;
  readonly options: ResolvedOptions;
  readonly registry: Registry;
  private readonly shared: ControllerShared;
  /** The full client: informers list and watch (the flows only get, create, update, patch and delete). */
  private readonly client: KubeClient;
  private readonly volumeStore: VolumeStore;
  private readonly ownRecorder: EventRecorder | undefined;
  private term: ControllerTerm | undefined;
  private elector: LeaderElector | undefined;
  private running: Promise<void> | undefined;
  private readonly stopController = new AbortController();
  /** When each undated backend volume without a PV was first listed (leak inventory). */
  private readonly leakFirstSeen = new Map<string, number>();
  /** The control loops, in the order their workers start (claims, volumes, resizes). */
  private readonly loops: readonly AnyControlLoop[];
  /** The resize loop, when the provisioner implements expand() (explain shows its decision). */
  private readonly resize: ReturnType<typeof resizeLoop> | undefined;
  /** The current term's queues, by loop name. */
  private queues = new Map<string, KeyQueue>();
  /** This instance's heartbeat Lease writer (undefined with heartbeatIntervalMs 0). */
  private readonly heartbeat: Heartbeat | undefined;

  constructor(
    client: KubeClient,
    provisionerName: string,
    provisioner: Provisioner,
    config: ProvisionControllerConfig = {},
  ) {
    validateProvisionerName(provisionerName);
    this.client = client;
    const options = resolveOptions(config, undefined, DEPENDENCY_KEYS);
    this.options = options;
    this.identity = config.identity ?? `${hostname()}_${randomUUID()}`;
    const clock = config.clock ?? realClock;
    const logger = (config.logger ?? createLogger({ name: 'kube-provisioner' })).child({
      provisioner: provisionerName,
    });
    this.registry = config.registry ?? createMetricsRegistry();
    this.ownRecorder = config.events
      ? undefined
      : // A burst of claims makes two events each: client-go's 1000-event queue would drop most of them.
        new EventRecorder({
          client,
          component: `${provisionerName}_${this.identity}`,
          host: hostname(),
          clock,
          logger,
        });
    // Every event of the claim and volume flows, the volume store and the leak inventory goes through this one sink.
    const events: EventSink = boundedEventSink(config.events ?? (this.ownRecorder as EventRecorder));
    const savedVolumes = new OwnWrites<PersistentVolume>();
    this.volumeStore = new VolumeStore({
      client,
      provisioner,
      events,
      clock,
      logger,
      save: options.volumeSave,
      savedVolumes,
      cachedVolume: (name) => this.term?.volumes.get(name),
    });
    this.shared = {
      client,
      provisionerName,
      provisioner,
      options,
      identity: this.identity,
      events,
      metrics: createControllerMetrics(this.registry),
      clock,
      logger,
      claimRecords: new ClaimRecords(),
      volumeRecords: new Records<VolumeRecord>(),
      resizeRecords: new Records<ResizeRecord>(),
      savedVolumes,
      writtenClaims: new OwnWrites<PersistentVolumeClaim>(),
      claimLock:
        options.leaderElection.mode === 'per-claim'
          ? new ClaimLock({
              client,
              identity: this.identity,
              leaseDurationMs: options.leaderElection.leaseDurationMs,
              clock,
              logger,
            })
          : undefined,
      volumeStore: this.volumeStore,
    };
    this.resize = provisioner.expand ? resizeLoop(this.shared, createResizeMetrics(this.registry)) : undefined;
    this.loops = [claimLoop(this.shared), volumeLoop(this.shared), ...(this.resize ? [this.resize] : [])];
    const { backoffBaseMs, backoffMaxMs, exponentialBackoff, infeasibleDelayMs } = options.retry;
    this.heartbeat =
      options.heartbeatIntervalMs > 0
        ? new Heartbeat({
            client,
            namespace: options.leaderElection.namespace,
            provisionerName,
            identity: this.identity,
            host: hostname(),
            intervalMs: options.heartbeatIntervalMs,
            mode: options.leaderElection.mode,
            retry: { backoffBaseMs, backoffMaxMs, exponentialBackoff, infeasibleDelayMs },
            details: config.heartbeatDetails,
            clock,
            logger,
          })
        : undefined;
  }

  /** The provisioner name this controller serves. */
  get provisionerName(): string {
    return this.shared.provisionerName;
  }

  /** True while this instance works on claims (always, in modes 'none' and 'per-claim', once started). */
  isLeader(): boolean {
    return this.term !== undefined;
  }

  /**
   * Calls `listener` each time isLeader() turns true (elected, or started in modes 'none' and 'per-claim'), so
   * work gated on leadership (the CSI capacity loop) resumes on the event instead of polling. Returns unsubscribe.
   */
  onStartedLeading(listener: () => void): () => void {
    this.leadingListeners.add(listener);
    return () => this.leadingListeners.delete(listener);
  }
  private readonly leadingListeners = new Set<() => void>();

  /** True once the current term's caches completed their first list. */
  hasSynced(): boolean {
    return this.term !== undefined && this.synced;
  }
  private synced = false;

  /** Uids of the claims whose provisioning may still run in the backend. */
  claimsInProgress(): string[] {
    return this.shared.claimRecords.inProgressKeys();
  }

  /**
   * How many claims and PVs the controller remembers something about besides its caches (records, own writes not yet
   * seen by the cache, lock observations, unsaved PVs). A claim that is done (Bound, or deleted) leaves nothing here.
   */
  bookkeeping(): {
    claimRecords: number;
    volumeRecords: number;
    savedVolumes: number;
    writtenClaims: number;
    lockObservations: number;
    unsavedVolumes: number;
  } {
    const s = this.shared;
    return {
      claimRecords: s.claimRecords.size,
      volumeRecords: s.volumeRecords.size,
      savedVolumes: s.savedVolumes.size,
      writtenClaims: s.writtenClaims.size,
      lockObservations: s.claimLock?.observedCount ?? 0,
      unsavedVolumes: this.volumeStore.pending().length,
    };
  }

  /** Health checks for the runtime's health server: liveness (lease renewals on time) and readiness (caches). */
  healthChecks(): { healthz: Record<string, () => boolean | string>; readyz: Record<string, () => boolean | string> } {
    return {
      healthz: { leaderElection: () => this.elector?.healthy(this.options.leaderElection.renewDeadlineMs) ?? true },
      readyz: {
        informers: () =>
          this.options.leaderElection.mode === 'lease' && !this.term ? true : this.synced || 'caches not synced',
      },
    };
  }

  /** Runs until `signal` aborts or stop() is called. Resolves after a graceful shutdown. */
  run(signal?: AbortSignal): Promise<void> {
    if (this.running) throw new ControllerAlreadyRunningError('ProvisionController.run() was already called');
    if (signal?.aborted) this.stopController.abort(signal.reason);
    else signal?.addEventListener('abort', () => this.stopController.abort(signal.reason), { once: true });
    setMaxListeners(0, this.stopController.signal);
    this.running = this.runAll(this.stopController.signal);
    return this.running;
  }

  /** Stops and waits for the shutdown to complete. */
  async stop(): Promise<void> {
    this.stopController.abort(new Error('ProvisionController stopped'));
    await this.running;
  }

  /** Why a claim is (not) being provisioned, from this controller's caches and failure records. */
  explain(namespace: string, name: string): ClaimExplanation | undefined {
    const term = this.term;
    if (!term) return undefined;
    const claim = term.claims.get(namespace, name);
    if (!claim) return undefined;
    const explanation = explainCachedClaim(this.shared, term, claim);
    if (this.resize) explanation.resize = this.resize.decide(term, claim);
    return explanation;
  }

  /**
   * Retries at once every claim backing off after an InfeasibleError, for when something the controller cannot see
   * changed (the backend's configuration was reloaded); otherwise such claims wait for their slow retry
   * (retry.infeasibleDelayMs) unless the claim or its class changes. Returns how many claims were re-enqueued.
   */
  recheckBlocked(): number {
    const claimQueue = this.queues.get('claims');
    if (!this.term || !claimQueue) return 0;
    const uids = this.shared.claimRecords.clearInfeasibleBackoffs();
    for (const uid of uids) {
      claimQueue.forget(uid);
      claimQueue.add(uid);
    }
    const count = uids.length;
    if (count > 0) this.shared.logger.info({ claims: count }, 're-checking claims blocked as infeasible');
    return count;
  }

  /** Takes a leak inventory now (needs provisioner.listVolumes and a running term). */
  async takeLeakInventory(): Promise<LeakReport | undefined> {
    const term = this.term;
    return term ? runLeakInventory(this.shared, term, this.leakFirstSeen, this.synced) : undefined;
  }

  private async runAll(signal: AbortSignal): Promise<void> {
    const s = this.shared;
    s.logger.info(
      { component: `${s.provisionerName}_${this.identity}`, mode: this.options.leaderElection.mode },
      'starting provisioner controller',
    );
    this.volumeStore.run(signal);
    // Standbys beat too: explain asks whether any controller serves the name, not which one leads.
    const heartbeat = this.heartbeat?.run(signal);
    try {
      if (this.options.leaderElection.mode === 'lease') await this.runElected(signal);
      else await this.runTerm(signal);
    } finally {
      await heartbeat;
      await this.volumeStore.stopped();
      await this.ownRecorder?.stop();
      s.metrics.isLeader.set({ provisioner: s.provisionerName }, 0);
      s.logger.info({}, 'provisioner controller stopped');
    }
  }

  private async runElected(signal: AbortSignal): Promise<void> {
    const s = this.shared;
    while (!signal.aborted) {
      let term: Promise<void> | undefined;
      const elector = new LeaderElector({
        client: this.client,
        namespace: this.options.leaderElection.namespace,
        name: leaseNameFor(s.provisionerName),
        identity: this.identity,
        leaseDurationMs: this.options.leaderElection.leaseDurationMs,
        renewDeadlineMs: this.options.leaderElection.renewDeadlineMs,
        retryPeriodMs: this.options.leaderElection.retryPeriodMs,
        releaseOnCancel: true,
        events: s.events,
        clock: s.clock,
        logger: s.logger,
        callbacks: {
          onStartedLeading: (leaderSignal) => {
            term = this.runTerm(leaderSignal);
          },
        },
      });
      this.elector = elector;
      await elector.run(signal);
      await term;
      if (!signal.aborted) {
        s.logger.warn({}, 'leader election lost; campaigning again');
        await s.clock.sleep(this.options.leaderElection.retryPeriodMs, signal).catch(() => {});
      }
    }
  }

  /** One term: caches, queues and workers, until `signal` aborts. */
  private async runTerm(signal: AbortSignal): Promise<void> {
    const s = this.shared;
    const o = this.options;
    // Every in-flight request and sleep of every worker listens on the term's signal: not a leak.
    setMaxListeners(0, signal);
    const {
      claims,
      volumes,
      classes,
      nodes: nodeInformer,
      all: informers,
    } = termInformers(this.client, o, s.clock, s.logger);
    const t: ControllerTerm = {
      claims: claims.store,
      volumes: volumes.store,
      classes: classes.store,
      nodes: nodeInformer?.store,
      signal,
    };
    const queues = this.loops.map((loop) => this.makeQueue(loop.name));
    this.queues = new Map(this.loops.map((loop, i) => [loop.name, queues[i]!]));
    wireLoops(
      s,
      { claims, volumes, classes },
      this.loops.map((loop, i) => loop.hooks(t, queues[i]!)),
    );
    for (const inf of informers) inf.start(signal);
    this.term = t;
    for (const listener of this.leadingListeners) listener();
    s.metrics.isLeader.set({ provisioner: s.provisionerName }, 1);
    const workers: Promise<void>[] = [];
    let leakTimer: { cancel(): void } | undefined;
    try {
      await Promise.all(informers.map((inf) => inf.synced));
      this.synced = true;
      for (let i = 0; i < o.threadiness; i++) {
        this.loops.forEach((loop, j) => workers.push(this.worker(queues[j]!, (key) => loop.sync(t, key))));
      }
      s.logger.info({ threadiness: o.threadiness }, 'started provisioner controller');
      leakTimer = this.scheduleLeakInventory(t);
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else signal.addEventListener('abort', () => resolve(), { once: true });
      });
    } catch (err) {
      if (!signal.aborted) s.logger.error({ err: errorMessage(err) }, 'controller term failed');
    } finally {
      leakTimer?.cancel();
      for (const queue of queues) queue.shutdown();
      await this.drain(workers);
      await Promise.all(informers.map((inf) => inf.stop()));
      this.term = undefined;
      this.queues = new Map();
      this.synced = false;
      s.metrics.isLeader.set({ provisioner: s.provisionerName }, 0);
    }
  }

  /** Waits for the workers, at most shutdownTimeoutMs: a provisioner ignoring its AbortSignal must not hang stop(). */
  private async drain(workers: Promise<void>[]): Promise<void> {
    const s = this.shared;
    const grace = new AbortController();
    const done = Promise.all(workers).then(() => true);
    const timedOut = s.clock.sleep(this.options.shutdownTimeoutMs, grace.signal).then(
      () => false,
      () => true,
    );
    const finished = await Promise.race([done, timedOut]);
    grace.abort();
    if (!finished)
      s.logger.warn(
        { timeoutMs: this.options.shutdownTimeoutMs },
        'workers still busy after the shutdown timeout; not waiting any longer',
      );
  }

  private makeQueue(name: string): WorkQueue<string> {
    const o = this.options;
    const s = this.shared;
    // Separate limiter instances per queue (the Go library shared one 10 qps bucket between both queues).
    const rateLimiter = new MaxOfRateLimiter<string>(
      new ItemExponentialFailureRateLimiter<string>(
        o.retry.backoffBaseMs,
        o.retry.exponentialBackoff ? o.retry.backoffMaxMs : o.retry.backoffBaseMs,
      ),
      new BucketRateLimiter<string>(o.retry.qps, o.retry.burst, s.clock),
    );
    try {
      return new WorkQueue<string>({ name, clock: s.clock, rateLimiter, registry: this.registry });
    } catch (err) {
      if (!(err instanceof DuplicateQueueNameError)) throw err;
      // Another controller on the same registry already reports a queue of that name.
      return new WorkQueue<string>({
        name: `${name}-${this.identity.slice(-8)}`,
        clock: s.clock,
        rateLimiter,
        registry: this.registry,
      });
    }
  }

  /** Takes keys, runs the sync and applies the Next it returns: the only code that retries or forgets a key. */
  private async worker(queue: WorkQueue<string>, sync: (key: string) => Promise<Next>): Promise<void> {
    for (;;) {
      const item = await queue.get();
      if (item.shutdown) return;
      try {
        applyNext(queue, item.key, await sync(item.key));
      } catch (err) {
        // The error policy of an unexpected throw: retry with backoff.
        this.shared.logger.error({ key: item.key, queue: queue.name, err: errorMessage(err) }, 'sync failed');
        applyNext(queue, item.key, backoff);
      } finally {
        queue.done(item.key);
      }
    }
  }

  private scheduleLeakInventory(t: ControllerTerm): { cancel(): void } | undefined {
    const s = this.shared;
    const inv = this.options.leakInventory;
    if (!inv.enabled || !s.provisioner.listVolumes) return undefined;
    const firstSeen = this.leakFirstSeen;
    let timer: { cancel(): void } | undefined;
    const tick = () => {
      runLeakInventory(s, t, firstSeen, this.synced)
        .catch((err: unknown) => s.logger.warn({ err: errorMessage(err) }, 'leak inventory failed'))
        .finally(() => {
          if (!t.signal.aborted) timer = s.clock.setTimeout(tick, inv.intervalMs, { unref: true });
        });
    };
    timer = s.clock.setTimeout(tick, inv.intervalMs, { unref: true });
    return { cancel: () => timer?.cancel() };
  }
}
