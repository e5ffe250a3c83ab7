// ProvisionController options: the Go library's defaults table (provisioner-contract.md §2), validated once at
// construction. Invalid combinations throw a typed ConfigurationError; nothing here ever exits the process.
import { readFileSync } from 'node:fs';
import type { PersistentVolumeClaim } from '../types/k8s.ts';

/** Thrown by resolveOptions() (and the controller's constructor) when options are invalid or contradictory. */
export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
  constructor(readonly option: string, message: string) {
    super(`invalid option ${option}: ${message}`);
  }
}

/** How leadership is shared between replicas of one provisioner. */
export type LeaderElectionMode =
  /** One coordination.k8s.io Lease per provisioner name: active/passive (the Go library's default). */
  | 'lease'
  /** No election: this instance always works (a single replica, or an outer component elects). */
  | 'none'
  /** Active/active: every replica works; a lock annotation on each claim decides who provisions it (the 2017 seed). */
  | 'per-claim';

/** What to do with a claim that has `spec.selector`. */
export type SelectorPolicy =
  /** Refuse it with a Warning event (the design proposal's "typical case … simple refusal"). */
  | 'reject'
  /** Hand it to provision(), which must honour the selector (label the PV) or throw. */
  | 'allow';

/** How the controller saves the PV object provision() returned. */
export type VolumeSaveOptions =
  /**
   * Blocking: `retryCount` create attempts `intervalMs` apart; when all fail the backend volume is deleted
   * (same attempts), with ProvisioningCleanupFailed if that fails too, and the claim is retried.
   */
  | { mode: 'retry'; retryCount?: number; intervalMs?: number }
  /**
   * Background: one inline attempt, then retried forever from a queue with exponential backoff; the backend
   * volume is never deleted, so nothing leaks (the claim counts as provisioned once queued).
   */
  | { mode: 'background'; baseDelayMs?: number; maxDelayMs?: number };

/** Leak inventory: compares provisioner.listVolumes() with the PVs and reports backend volumes without a PV. */
export interface LeakInventoryOptions {
  /** Off by default; needs provisioner.listVolumes(). */
  enabled?: boolean;
  /** How often to take the inventory. Default 10 minutes. */
  intervalMs?: number;
  /** A backend volume younger than this is never reported (its PV may be on its way). Default 1 hour. */
  gracePeriodMs?: number;
  /** Opt-in: call provisioner.delete() on leaked volumes (with a minimal PV describing them). Default false. */
  deleteLeaked?: boolean;
}

/** Options of a ProvisionController. Durations are milliseconds. Every field is optional. */
export interface ProvisionControllerOptions {
  /** Informer resync: every object is re-evaluated this often. Default 15 min. */
  resyncPeriodMs?: number;
  /** Claim workers, and as many volume workers. Default 4. */
  threadiness?: number;
  /** Exponential per-item backoff on errors (true, default) or a fixed delay of `backoffBaseMs` (false). */
  exponentialBackoffOnError?: boolean;
  /** First retry delay after an error. Default 15 s. */
  backoffBaseMs?: number;
  /** Retry delay cap. Default 1000 s. */
  backoffMaxMs?: number;
  /** Overall queue rate limit (token bucket) shared by retries of one queue: qps. Default 10. */
  queueQps?: number;
  /** Token bucket burst. Default 100. */
  queueBurst?: number;
  /**
   * Failed provisioning attempts of one claim before it is given up (Warning event + metric). A given-up claim is
   * not retried, not even by resync, until its spec, its annotations or its StorageClass change. 0 = retry forever.
   * Default 15.
   */
  failedProvisionThreshold?: number;
  /** Same for deleting volumes. Default 15. */
  failedDeleteThreshold?: number;
  /** PV save mode. Default `{ mode: 'retry', retryCount: 5, intervalMs: 10_000 }`. */
  volumeSave?: VolumeSaveOptions;
  /** Default 'lease'. */
  leaderElection?: LeaderElectionMode;
  /** Namespace of the Lease. Default: $POD_NAMESPACE, then the service account's namespace file, then 'default'. */
  leaderElectionNamespace?: string;
  /** Default 15 s (also the per-claim lock's lease). */
  leaseDurationMs?: number;
  /** Default 10 s. */
  renewDeadlineMs?: number;
  /** Default 2 s. */
  retryPeriodMs?: number;
  /** Abort signal timeout around one claim sync (provision() included). 0 = none (default). */
  provisionTimeoutMs?: number;
  /** Same around one volume sync (delete() included). 0 = none (default). */
  deletionTimeoutMs?: number;
  /** Extra names treated as ours (CSI migration: the in-tree name, e.g. `kubernetes.io/aws-ebs`). */
  additionalProvisionerNames?: string[];
  /** Put `external-provisioner.volume.kubernetes.io/finalizer` on Bound PVs with reclaim policy Delete. Default false. */
  addFinalizer?: boolean;
  /** PV name for a claim; must be deterministic and unique. Default `pvc-<claim uid>`. */
  volumeNameHook?: (claim: PersistentVolumeClaim) => string;
  /**
   * Slow retry after an InfeasibleError: the claim is not provisioned again before this delay, unless the claim or
   * its class changes. Default 5 min. (In the Go library the option had no effect; here it does.)
   */
  retryIntervalMaxMs?: number;
  /** Default 'reject'. */
  selectorPolicy?: SelectorPolicy;
  /** Default: disabled. */
  leakInventory?: LeakInventoryOptions;
  /**
   * Keep a cache of Nodes (one more informer) and pass the selected node's object to provision() as
   * `selectedNode`. Default false (v13 of the Go library dropped its node lister: provisioners look nodes up).
   */
  nodeCache?: boolean;
  /**
   * On stop, how long to wait for in-flight provision()/delete() calls to return after their signal aborted, before
   * run() resolves anyway (a provisioner that ignores its AbortSignal must not hang shutdown). Default 30 s.
   */
  shutdownTimeoutMs?: number;
}

/** Options with every default applied, as the controller uses them. */
export interface ResolvedOptions {
  resyncPeriodMs: number;
  threadiness: number;
  exponentialBackoffOnError: boolean;
  backoffBaseMs: number;
  backoffMaxMs: number;
  queueQps: number;
  queueBurst: number;
  failedProvisionThreshold: number;
  failedDeleteThreshold: number;
  volumeSave:
    | { mode: 'retry'; retryCount: number; intervalMs: number }
    | { mode: 'background'; baseDelayMs: number; maxDelayMs: number };
  leaderElection: LeaderElectionMode;
  leaderElectionNamespace: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  provisionTimeoutMs: number;
  deletionTimeoutMs: number;
  additionalProvisionerNames: string[];
  addFinalizer: boolean;
  volumeNameHook: (claim: PersistentVolumeClaim) => string;
  retryIntervalMaxMs: number;
  selectorPolicy: SelectorPolicy;
  leakInventory: Required<LeakInventoryOptions>;
  shutdownTimeoutMs: number;
  nodeCache: boolean;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** The defaults of the reference's table (sig-storage-lib-external-provisioner v13). */
export const DEFAULTS = Object.freeze({
  resyncPeriodMs: 15 * MINUTE,
  threadiness: 4,
  exponentialBackoffOnError: true,
  backoffBaseMs: 15 * SECOND,
  backoffMaxMs: 1000 * SECOND,
  queueQps: 10,
  queueBurst: 100,
  failedProvisionThreshold: 15,
  failedDeleteThreshold: 15,
  saveRetryCount: 5,
  saveIntervalMs: 10 * SECOND,
  backgroundSaveBaseDelayMs: 5,
  backgroundSaveMaxDelayMs: 1000 * SECOND,
  leaderElection: 'lease' as LeaderElectionMode,
  leaseDurationMs: 15 * SECOND,
  renewDeadlineMs: 10 * SECOND,
  retryPeriodMs: 2 * SECOND,
  retryIntervalMaxMs: 5 * MINUTE,
  selectorPolicy: 'reject' as SelectorPolicy,
  leakInventoryIntervalMs: 10 * MINUTE,
  leakInventoryGracePeriodMs: 60 * MINUTE,
  shutdownTimeoutMs: 30 * SECOND,
});

/** The default PV name: `pvc-<claim uid>`. */
export function defaultVolumeName(claim: PersistentVolumeClaim): string {
  return `pvc-${claim.metadata.uid ?? ''}`;
}

/** Where the default leader-election namespace comes from; injectable so resolveOptions stays testable. */
export interface OptionsEnvironment {
  podNamespace?: string;
  serviceAccountNamespace?: string;
}

const SERVICE_ACCOUNT_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** Reads $POD_NAMESPACE and the in-cluster service account namespace file (absent outside a pod). */
export function processEnvironment(): OptionsEnvironment {
  let serviceAccountNamespace: string | undefined;
  try {
    serviceAccountNamespace = readFileSync(SERVICE_ACCOUNT_NAMESPACE_FILE, 'utf8').trim() || undefined;
  } catch {
    serviceAccountNamespace = undefined;
  }
  return { podNamespace: process.env.POD_NAMESPACE || undefined, serviceAccountNamespace };
}

function duration(name: string, value: number | undefined, fallback: number, opts: { min?: number } = {}): number {
  const v = value ?? fallback;
  const min = opts.min ?? 0;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min) {
    throw new ConfigurationError(name, `expected a finite number of milliseconds >= ${min}, got ${String(v)}`);
  }
  return v;
}

function integer(name: string, value: number | undefined, fallback: number, min: number): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    throw new ConfigurationError(name, `expected an integer >= ${min}, got ${String(v)}`);
  }
  return v;
}

function oneOf<T extends string>(name: string, value: T | undefined, fallback: T, allowed: readonly T[]): T {
  const v = value ?? fallback;
  if (!allowed.includes(v)) throw new ConfigurationError(name, `expected one of ${allowed.join(', ')}, got ${String(v)}`);
  return v;
}

const PROVISIONER_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?(\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/**
 * Checks a provisioner name: `<vendor>/<name>` or a DNS-like CSI driver name, at most 253 characters.
 * `kubernetes.io/` is reserved for in-tree plugins and refused as the controller's own name (it remains
 * allowed in additionalProvisionerNames, which exist precisely for migrated in-tree names).
 */
export function validateProvisionerName(name: string, option = 'provisionerName', allowInTree = false): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 253 || !PROVISIONER_NAME.test(name)) {
    throw new ConfigurationError(option, `"${String(name)}" is not a valid provisioner name (expected <vendor>/<name>)`);
  }
  if (!allowInTree && name.startsWith('kubernetes.io/')) {
    throw new ConfigurationError(option, `"${name}": the kubernetes.io/ prefix is reserved for in-tree plugins`);
  }
}

function resolveVolumeSave(save: VolumeSaveOptions | undefined): ResolvedOptions['volumeSave'] {
  if (save === undefined || save.mode === 'retry') {
    if (save && ('baseDelayMs' in save || 'maxDelayMs' in save)) {
      throw new ConfigurationError('volumeSave', "baseDelayMs/maxDelayMs belong to mode 'background'");
    }
    return {
      mode: 'retry',
      retryCount: integer('volumeSave.retryCount', save?.retryCount, DEFAULTS.saveRetryCount, 1),
      intervalMs: duration('volumeSave.intervalMs', save?.intervalMs, DEFAULTS.saveIntervalMs),
    };
  }
  if (save.mode === 'background') {
    if ('retryCount' in save || 'intervalMs' in save) {
      // The Go library errors on CreateProvisionedPVLimiter combined with RetryCount/Interval: same here.
      throw new ConfigurationError('volumeSave', "retryCount/intervalMs belong to mode 'retry'");
    }
    const baseDelayMs = duration('volumeSave.baseDelayMs', save.baseDelayMs, DEFAULTS.backgroundSaveBaseDelayMs, { min: 1 });
    const maxDelayMs = duration('volumeSave.maxDelayMs', save.maxDelayMs, DEFAULTS.backgroundSaveMaxDelayMs, { min: 1 });
    if (maxDelayMs < baseDelayMs) throw new ConfigurationError('volumeSave.maxDelayMs', 'must be >= baseDelayMs');
    return { mode: 'background', baseDelayMs, maxDelayMs };
  }
  throw new ConfigurationError('volumeSave.mode', `expected 'retry' or 'background', got ${String((save as { mode: unknown }).mode)}`);
}

/**
 * Applies the defaults and validates. Throws ConfigurationError naming the offending option; never exits.
 * `environment` supplies the default leader-election namespace (defaults to the process environment).
 */
export function resolveOptions(
  partial: ProvisionControllerOptions = {},
  environment: OptionsEnvironment = processEnvironment(),
): ResolvedOptions {
  const leaderElection = oneOf('leaderElection', partial.leaderElection, DEFAULTS.leaderElection, ['lease', 'none', 'per-claim']);
  const leaseDurationMs = duration('leaseDurationMs', partial.leaseDurationMs, DEFAULTS.leaseDurationMs, { min: 1 });
  const renewDeadlineMs = duration('renewDeadlineMs', partial.renewDeadlineMs, DEFAULTS.renewDeadlineMs, { min: 1 });
  const retryPeriodMs = duration('retryPeriodMs', partial.retryPeriodMs, DEFAULTS.retryPeriodMs, { min: 1 });
  if (leaderElection !== 'none') {
    // client-go's rule: leaseDuration > renewDeadline > 1.2 x retryPeriod (JitterFactor).
    if (!(leaseDurationMs > renewDeadlineMs)) {
      throw new ConfigurationError('leaseDurationMs', `must be greater than renewDeadlineMs (${leaseDurationMs} <= ${renewDeadlineMs})`);
    }
    if (!(renewDeadlineMs > 1.2 * retryPeriodMs)) {
      throw new ConfigurationError('renewDeadlineMs', `must be greater than 1.2 x retryPeriodMs (${renewDeadlineMs} <= ${1.2 * retryPeriodMs})`);
    }
  }
  const namespace = partial.leaderElectionNamespace ?? environment.podNamespace ?? environment.serviceAccountNamespace ?? 'default';
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace) || namespace.length > 63) {
    throw new ConfigurationError('leaderElectionNamespace', `"${namespace}" is not a valid namespace name`);
  }

  const backoffBaseMs = duration('backoffBaseMs', partial.backoffBaseMs, DEFAULTS.backoffBaseMs, { min: 1 });
  const backoffMaxMs = duration('backoffMaxMs', partial.backoffMaxMs, DEFAULTS.backoffMaxMs, { min: 1 });
  if (backoffMaxMs < backoffBaseMs) throw new ConfigurationError('backoffMaxMs', 'must be >= backoffBaseMs');
  const queueQps = duration('queueQps', partial.queueQps, DEFAULTS.queueQps, { min: Number.MIN_VALUE });
  const queueBurst = integer('queueBurst', partial.queueBurst, DEFAULTS.queueBurst, 1);

  const additionalProvisionerNames = partial.additionalProvisionerNames ?? [];
  if (!Array.isArray(additionalProvisionerNames)) {
    throw new ConfigurationError('additionalProvisionerNames', 'expected an array of provisioner names');
  }
  additionalProvisionerNames.forEach((n, i) => validateProvisionerName(n, `additionalProvisionerNames[${i}]`, true));

  const volumeNameHook = partial.volumeNameHook ?? defaultVolumeName;
  if (typeof volumeNameHook !== 'function') throw new ConfigurationError('volumeNameHook', 'expected a function');

  const leak = partial.leakInventory ?? {};
  const leakInventory: Required<LeakInventoryOptions> = {
    enabled: leak.enabled ?? false,
    intervalMs: duration('leakInventory.intervalMs', leak.intervalMs, DEFAULTS.leakInventoryIntervalMs, { min: 1 }),
    gracePeriodMs: duration('leakInventory.gracePeriodMs', leak.gracePeriodMs, DEFAULTS.leakInventoryGracePeriodMs),
    deleteLeaked: leak.deleteLeaked ?? false,
  };
  if (leakInventory.deleteLeaked && !leakInventory.enabled) {
    throw new ConfigurationError('leakInventory.deleteLeaked', 'requires leakInventory.enabled');
  }

  return {
    resyncPeriodMs: duration('resyncPeriodMs', partial.resyncPeriodMs, DEFAULTS.resyncPeriodMs),
    threadiness: integer('threadiness', partial.threadiness, DEFAULTS.threadiness, 1),
    exponentialBackoffOnError: partial.exponentialBackoffOnError ?? DEFAULTS.exponentialBackoffOnError,
    backoffBaseMs,
    backoffMaxMs,
    queueQps,
    queueBurst,
    failedProvisionThreshold: integer('failedProvisionThreshold', partial.failedProvisionThreshold, DEFAULTS.failedProvisionThreshold, 0),
    failedDeleteThreshold: integer('failedDeleteThreshold', partial.failedDeleteThreshold, DEFAULTS.failedDeleteThreshold, 0),
    volumeSave: resolveVolumeSave(partial.volumeSave),
    leaderElection,
    leaderElectionNamespace: namespace,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    provisionTimeoutMs: duration('provisionTimeoutMs', partial.provisionTimeoutMs, 0),
    deletionTimeoutMs: duration('deletionTimeoutMs', partial.deletionTimeoutMs, 0),
    additionalProvisionerNames: [...additionalProvisionerNames],
    addFinalizer: partial.addFinalizer ?? false,
    volumeNameHook,
    retryIntervalMaxMs: duration('retryIntervalMaxMs', partial.retryIntervalMaxMs, DEFAULTS.retryIntervalMaxMs),
    selectorPolicy: oneOf('selectorPolicy', partial.selectorPolicy, DEFAULTS.selectorPolicy, ['reject', 'allow']),
    leakInventory,
    nodeCache: partial.nodeCache ?? false,
    shutdownTimeoutMs: duration('shutdownTimeoutMs', partial.shutdownTimeoutMs, DEFAULTS.shutdownTimeoutMs),
  };
}

/** The Lease name for a provisioner: "/" and other characters a name cannot hold become "-" (`example.com/nfs` -> `example.com-nfs`). */
export function leaseNameFor(provisionerName: string): string {
  return provisionerName.replace(/[^a-zA-Z0-9.-]/g, '-').toLowerCase();
}
