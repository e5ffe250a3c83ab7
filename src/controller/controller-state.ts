// What the control loops share: the dependencies (client, provisioner, events, metrics, clock, logger), the state
// that outlives a leadership term (the record books, the overlay of our own writes) and the per-term caches. Plain
// data: the loops are functions over it.
import type { Clock } from '../runtime/clock.ts';
import type { ObjectClient } from '../runtime/client.ts';
import type { Logger } from '../runtime/logger.ts';
import type { ReadonlyObjectStore } from '../runtime/object-store.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import type { ClaimLock } from './claim-lock.ts';
import type { ClaimRecords, Records, ResizeRecord, VolumeRecord } from './object-records.ts';
import type { ControllerMetrics } from './controller-metrics.ts';
import type { ResolvedOptions } from './options/controller-options.ts';
import type { Provisioner } from './provisioner.ts';
import type { OwnWrites } from './own-writes.ts';
import type { EventSink } from '../types/events.ts';
import type { VolumeStore } from './claim/volume-store.ts';

/** Long-lived state and dependencies of one ProvisionController. */
export interface ControllerShared {
  /** The API calls the flows make (informers take the full client). */
  client: ObjectClient;
  provisionerName: string;
  provisioner: Provisioner;
  options: ResolvedOptions;
  identity: string;
  events: EventSink;
  metrics: ControllerMetrics;
  clock: Clock;
  logger: Logger;
  /** What the controller remembers per claim (by uid): failures, in-progress copy, last decision event. */
  claimRecords: ClaimRecords;
  /** What the controller remembers per PV (by name): failures, backend already deleted. */
  volumeRecords: Records<VolumeRecord>;
  /** What the resize loop remembers per claim (by uid): failures, an expand() result not yet written to the PV. */
  resizeRecords: Records<ResizeRecord>;
  /** PVs we saved that the volume informer has not delivered yet, by name (prevents duplicate provision() calls). */
  savedVolumes: OwnWrites<PersistentVolume>;
  /** Claims we rewrote ourselves (Reschedule), by uid: a sync waits for the cache to deliver our write. */
  writtenClaims: OwnWrites<PersistentVolumeClaim>;
  /** Per-claim lock (leaderElection 'per-claim' only). */
  claimLock: ClaimLock | undefined;
  /** Saves provisioned PVs (the VolumeStore). */
  volumeStore: Pick<VolumeStore, 'save' | 'pending'>;
}

/** The caches of one leadership term (or of the whole run without leader election). */
export interface ControllerTerm {
  claims: ReadonlyObjectStore<PersistentVolumeClaim>;
  volumes: ReadonlyObjectStore<PersistentVolume>;
  classes: ReadonlyObjectStore<StorageClass>;
  /** Only with the nodeCache option. */
  nodes: ReadonlyObjectStore<Node> | undefined;
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
export function timeoutSignal(
  parent: AbortSignal,
  timeoutMs: number,
  clock: Clock,
): { signal: AbortSignal; dispose(): void } {
  if (timeoutMs <= 0) return { signal: parent, dispose: () => {} };
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  const timer = clock.setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs} ms`)), timeoutMs, {
    unref: true,
  });
  return {
    signal: controller.signal,
    dispose: () => {
      timer.cancel();
      parent.removeEventListener('abort', onAbort);
    },
  };
}
