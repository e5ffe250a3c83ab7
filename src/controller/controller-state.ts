// What the claim and volume flows share: the dependencies (client, provisioner, events, metrics, clock, logger),
// the state that outlives a leadership term (failure records, claims in progress, the "just saved" overlay,
// backends already deleted) and the per-term caches and queues. Plain data: the flows are functions over it.
import type { Clock } from '../runtime/clock.ts';
import type { KubeClient } from '../runtime/client.ts';
import type { Logger } from '../runtime/logger.ts';
import type { ReadonlyObjectStore } from '../runtime/object-store.ts';
import type { WorkQueue } from '../runtime/workqueue.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import type { ClaimLock } from './claim-lock.ts';
import type { FailureRecord } from './failures.ts';
import type { ControllerMetrics } from './metrics.ts';
import type { ResolvedOptions } from './options.ts';
import type { Provisioner } from './provisioner.ts';
import type { EventSink, VolumeStore } from './volume-store.ts';

/** Long-lived state and dependencies of one ProvisionController. */
export interface ControllerShared {
  client: KubeClient;
  provisionerName: string;
  provisioner: Provisioner;
  options: ResolvedOptions;
  identity: string;
  events: EventSink;
  metrics: ControllerMetrics;
  clock: Clock;
  logger: Logger;
  /** Failure records by claim uid. */
  claimFailures: Map<string, FailureRecord>;
  /** Failure records by PV name. */
  volumeFailures: Map<string, FailureRecord>;
  /** Claims whose provision() may still run in the backend (InBackground), by uid: the copy to carry on with. */
  inProgress: Map<string, PersistentVolumeClaim>;
  /** PVs we saved that the volume informer has not delivered yet, by name (prevents duplicate provision() calls). */
  savedVolumes: Map<string, PersistentVolume>;
  /** PV uids whose backend volume delete() already removed (so delete() is called once). */
  deletedBackends: Set<string>;
  /** The last event emitted per claim uid for a reject/wait decision, so resyncs do not repeat it. */
  lastDecisionEvent: Map<string, string>;
  /**
   * Claims we changed ourselves (Reschedule), by uid: the resourceVersion the cache still shows until our write
   * arrives. A sync seeing that version waits for the update instead of acting on the stale copy.
   */
  staleClaimVersions: Map<string, string>;
  /** Per-claim lock (leaderElection 'per-claim' only). */
  claimLock: ClaimLock | undefined;
  volumeStore: VolumeStore;
}

/** The caches and queues of one leadership term (or of the whole run without leader election). */
export interface ControllerTerm {
  claims: ReadonlyObjectStore<PersistentVolumeClaim>;
  volumes: ReadonlyObjectStore<PersistentVolume>;
  classes: ReadonlyObjectStore<StorageClass>;
  /** Only with the nodeCache option. */
  nodes: ReadonlyObjectStore<Node> | undefined;
  /** Keyed by claim uid. */
  claimQueue: WorkQueue<string>;
  /** Keyed by PV name. */
  volumeQueue: WorkQueue<string>;
  /** Aborts when the term ends (leadership lost or controller stopped). */
  signal: AbortSignal;
}

/** A claim with kind/apiVersion set (list items carry neither; events and claimRefs need both). */
export function claimObject(claim: PersistentVolumeClaim): PersistentVolumeClaim {
  return claim.kind ? claim : { ...claim, apiVersion: 'v1', kind: 'PersistentVolumeClaim' };
}

/** A PV with kind/apiVersion set. */
export function volumeObject(volume: PersistentVolume): PersistentVolume {
  return volume.kind ? volume : { ...volume, apiVersion: 'v1', kind: 'PersistentVolume' };
}

/** An AbortSignal that aborts with `parent` or after `timeoutMs` (0 = never), and a dispose function. */
export function timeoutSignal(parent: AbortSignal, timeoutMs: number, clock: Clock): { signal: AbortSignal; dispose(): void } {
  if (timeoutMs <= 0) return { signal: parent, dispose: () => {} };
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = clock.setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs, { unref: true });
  return {
    signal: controller.signal,
    dispose: () => {
      timer.cancel();
      parent.removeEventListener('abort', onAbort);
    },
  };
}

/** Error message of anything thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
