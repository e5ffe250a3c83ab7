// The contract between a storage backend and the ProvisionController: what an author implements
// (provision/delete and the optional hooks) and the typed errors and states the controller reacts to.
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';

/**
 * What provision() reports about the backend operation, with the Go library's meanings:
 * - `Finished`: the operation is definitely not running any more (success, or a final error: retried with backoff);
 * - `InBackground`: it may still be running in the backend (timeout...): the controller keeps the claim in
 *   progress even if the PVC is deleted, and calls provision() again until it gets a final answer;
 * - `NoChange`: the backend could not be reached; the previous state applies (Finished on a first call);
 * - `Reschedule`: give up on the selected node: the controller removes `volume.kubernetes.io/selected-node`
 *   so the scheduler picks again (only meaningful for WaitForFirstConsumer claims; otherwise Finished).
 */
export type ProvisioningState = 'Finished' | 'InBackground' | 'NoChange' | 'Reschedule';

/** Everything provision() needs to know. Treat every object as read-only. */
export interface ProvisionOptions {
  /** The claim's StorageClass (from the informer cache). */
  storageClass: StorageClass;
  /** The name the PV must have: deterministic (default `pvc-<claim uid>`), so provision() can be idempotent. */
  pvName: string;
  /** The claim (the informer's copy, or the in-progress copy if the claim was deleted meanwhile). */
  claim: PersistentVolumeClaim;
  /** The node the scheduler chose (`volume.kubernetes.io/selected-node`), for WaitForFirstConsumer classes. */
  selectedNodeName?: string;
  /** That node's object from the controller's cache, when the controller watches nodes and has it. */
  selectedNode?: Node;
}

/** What a claim check sees: the objects provision() would get, minus anything that needs I/O. */
export type ClaimCheckInput = Pick<ProvisionOptions, 'storageClass' | 'claim' | 'selectedNodeName' | 'selectedNode'> & {
  /** The PV name the claim would get, when known. */
  pvName?: string;
};

/**
 * The verdict of a claim check. `infeasible`: can never succeed as it stands (provision() throws InfeasibleError);
 * `reschedule`: not on the selected node (ProvisioningError with state Reschedule); `ignored`: another instance's
 * claim (IgnoredError).
 */
export type ClaimCheckResult =
  | { ok: true }
  | {
      ok: false;
      kind: 'infeasible' | 'reschedule' | 'ignored';
      message: string;
      /** The backend's typed error, when one caused it. */ cause?: unknown;
    };

/** The outcome of a successful provision(). */
export interface ProvisionResult {
  /**
   * The volume to publish. The controller fills in what it owns: metadata.name (pvName), spec.claimRef,
   * spec.storageClassName, the provisioned-by annotation, the reclaim policy from the class when unset, and the
   * finalizer when enabled.
   */
  volume: PersistentVolume;
  /** Defaults to Finished. */
  state?: ProvisioningState;
}

/**
 * A storage backend. provision() creates the asset and returns the PV describing it (it must not create the PV
 * in the API: the controller does). It must be idempotent: the same pvName can be asked for again after
 * timeouts, restarts or a stale cache. delete() removes the asset only; the controller deletes the PV object.
 */
export interface Provisioner {
  provision(options: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult>;
  delete(volume: PersistentVolume, signal: AbortSignal): Promise<void>;
  /** Qualifier: false means the claim is not ours (silently ignored: no event, no metric). */
  shouldProvision?(claim: PersistentVolumeClaim): boolean;
  /** DeletionGuard: false means this volume must never be deleted by us. */
  shouldDelete?(volume: PersistentVolume): boolean;
  /**
   * The backend's parameter and feasibility checks, as a pure function of the claim, its class, the node and the
   * backend's configuration: no I/O, no reservation, no state change. provision() should run the same checks (so
   * the two cannot disagree); `kube-provisioner explain` calls it to say why a claim would be refused. Checks that
   * depend on live state (free capacity) belong in provision() only.
   */
  checkClaim?(input: ClaimCheckInput): ClaimCheckResult;
  /** Whether `volumeMode: Block` claims can be provisioned (default false: such claims get a Warning event). */
  supportsBlock?(): boolean;
  /**
   * Leak inventory: the names of the volumes the backend holds, with their creation time when known. The
   * controller reports (and optionally deletes) those without a PV after a grace period.
   */
  listVolumes?(signal: AbortSignal): Promise<Array<{ name: string; createdAt?: Date }>>;
  /**
   * Expansion (the external-resizer's job). Grows the backend volume of `volume` to at least `newSize` (a
   * Kubernetes quantity, the claim's request) and returns the capacity it now has. Must be idempotent: after a
   * restart or a leader change it may be called again with the same size. Throw InfeasibleError when it will not
   * fit (slow retry until the claim or its class changes), IgnoredError when another instance owns the volume,
   * anything else to be retried with backoff. When implemented, the controller resizes Bound claims whose class
   * has `allowVolumeExpansion: true`.
   */
  expand?(volume: PersistentVolume, newSize: string, signal: AbortSignal): Promise<ExpandResult>;
  /**
   * Qualifier for expansion: false means another instance expands this volume (sharding, one instance per node):
   * no status write, no event, no expand() call here.
   */
  shouldExpand?(volume: PersistentVolume): boolean;
}

/** The outcome of a successful expand(). */
export interface ExpandResult {
  /** The capacity the volume has now (a quantity, at least the size asked for); written to the PV's spec.capacity. */
  capacity: string;
  /**
   * True when a filesystem resize on the node must follow (kubelet's part): the claim then gets the
   * FileSystemResizePending condition and keeps its old status.capacity until the node finishes.
   */
  nodeExpansionRequired?: boolean;
}

/**
 * Thrown when this instance must not handle the claim or volume (sharding: another instance owns it).
 * No event, no retry. The message reads like the Go library's: "ignored because <reason>".
 */
export class IgnoredError extends Error {
  override name = 'IgnoredError';
  constructor(readonly reason: string) {
    super(`ignored because ${reason}`);
  }
}

/**
 * Thrown when the request can never succeed as it stands (bad parameters, no capacity anywhere...). The claim
 * gets a Warning event and moves to a slow retry until the claim or its class changes.
 */
export class InfeasibleError extends Error {
  override name = 'InfeasibleError';
}

/**
 * Thrown from provision() with the state the backend operation is in; a plain Error means Finished.
 */
export class ProvisioningError extends Error {
  override name = 'ProvisioningError';
  constructor(
    message: string,
    readonly state: ProvisioningState,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
