// ProvisionController options: the public option types, and resolveOptions, which applies the defaults and checks
// every value from the option table (option-table.ts, the Go library's defaults) plus the rules between options,
// once at construction. Invalid options throw a typed ConfigurationError; nothing here ever exits the process.
import { readFileSync } from 'node:fs';
import type { PersistentVolumeClaim } from '../types/k8s.ts';
import { isDnsLabel } from '../types/names.ts';
import { CONTROLLER_OPTIONS, optionDefault, optionRow, type OptionRow } from './option-table.ts';

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
  /** Needs provisioner.listVolumes(). */
  enabled?: boolean;
  /** How often to take the inventory. */
  intervalMs?: number;
  /** A backend volume younger than this is never reported (its PV may be on its way). */
  gracePeriodMs?: number;
  /** Opt-in: call provisioner.delete() on leaked volumes (with a minimal PV describing them). */
  deleteLeaked?: boolean;
}

/**
 * Options of a ProvisionController. Durations are milliseconds. Every field is optional; the defaults are in the
 * option table (CONTROLLER_OPTIONS, listed in docs/configuration.md).
 */
export interface ProvisionControllerOptions {
  /** Informer resync: every object is re-evaluated this often. */
  resyncPeriodMs?: number;
  /** Claim workers, and as many volume workers. */
  threadiness?: number;
  /** Exponential per-item backoff on errors (true) or a fixed delay of `backoffBaseMs` (false). */
  exponentialBackoffOnError?: boolean;
  /** First retry delay after an error. */
  backoffBaseMs?: number;
  /** Retry delay cap. */
  backoffMaxMs?: number;
  /** Overall queue rate limit (token bucket) shared by retries of one queue: qps. */
  queueQps?: number;
  /** Token bucket burst. */
  queueBurst?: number;
  /**
   * Failed provisioning attempts of one claim before it is given up (Warning event + metric). A given-up claim is
   * not retried, not even by resync, until its spec, its annotations or its StorageClass change. 0 = retry forever.
   */
  failedProvisionThreshold?: number;
  /** Same for deleting volumes. */
  failedDeleteThreshold?: number;
  /** PV save mode (mode 'retry' unless set). */
  volumeSave?: VolumeSaveOptions;
  /** How leadership is shared between replicas. */
  leaderElection?: LeaderElectionMode;
  /** Namespace of the Lease; unset: $POD_NAMESPACE, then the service account's namespace file, then 'default'. */
  leaderElectionNamespace?: string;
  /** How long a Lease (and a per-claim lock) is valid without renewal. */
  leaseDurationMs?: number;
  /** The leader steps down when it cannot renew within this. */
  renewDeadlineMs?: number;
  /** Interval between acquire/renew attempts. */
  retryPeriodMs?: number;
  /** Abort signal timeout around one claim sync (provision() included). 0 = none. */
  provisionTimeoutMs?: number;
  /** Same around one volume sync (delete() included). 0 = none. */
  deletionTimeoutMs?: number;
  /** Extra names treated as ours (CSI migration: the in-tree name, e.g. `kubernetes.io/aws-ebs`). */
  additionalProvisionerNames?: string[];
  /** Put `external-provisioner.volume.kubernetes.io/finalizer` on Bound PVs with reclaim policy Delete. */
  addFinalizer?: boolean;
  /** PV name for a claim; must be deterministic and unique (unset: `pvc-<claim uid>`). */
  volumeNameHook?: (claim: PersistentVolumeClaim) => string;
  /**
   * Slow retry after an InfeasibleError: the claim is not provisioned again before this delay, unless the claim or
   * its class changes. (In the Go library the option had no effect; here it does.)
   */
  retryIntervalMaxMs?: number;
  /** What to do with claims that have `spec.selector`. */
  selectorPolicy?: SelectorPolicy;
  /** Leak inventory (off unless enabled). */
  leakInventory?: LeakInventoryOptions;
  /**
   * Keep a cache of Nodes (one more informer) and pass the selected node's object to provision() as
   * `selectedNode` (v13 of the Go library dropped its node lister: provisioners look nodes up).
   */
  nodeCache?: boolean;
  /**
   * On stop, how long to wait for in-flight provision()/delete() calls to return after their signal aborted, before
   * run() resolves anyway (a provisioner that ignores its AbortSignal must not hang shutdown).
   */
  shutdownTimeoutMs?: number;
}

/** Options with every default applied, as the controller uses them (derived from the options type). */
export type ResolvedOptions = Required<Omit<ProvisionControllerOptions, 'volumeSave' | 'leakInventory'>> & {
  volumeSave:
    | { mode: 'retry'; retryCount: number; intervalMs: number }
    | { mode: 'background'; baseDelayMs: number; maxDelayMs: number };
  leakInventory: Required<LeakInventoryOptions>;
};

/** The defaults, read from the option table (kept under these names for existing callers). */
export const DEFAULTS = Object.freeze({
  resyncPeriodMs: optionDefault<number>('resyncPeriodMs'),
  threadiness: optionDefault<number>('threadiness'),
  exponentialBackoffOnError: optionDefault<boolean>('exponentialBackoffOnError'),
  backoffBaseMs: optionDefault<number>('backoffBaseMs'),
  backoffMaxMs: optionDefault<number>('backoffMaxMs'),
  queueQps: optionDefault<number>('queueQps'),
  queueBurst: optionDefault<number>('queueBurst'),
  failedProvisionThreshold: optionDefault<number>('failedProvisionThreshold'),
  failedDeleteThreshold: optionDefault<number>('failedDeleteThreshold'),
  saveRetryCount: optionDefault<number>('volumeSave.retryCount'),
  saveIntervalMs: optionDefault<number>('volumeSave.intervalMs'),
  backgroundSaveBaseDelayMs: optionDefault<number>('volumeSave.baseDelayMs'),
  backgroundSaveMaxDelayMs: optionDefault<number>('volumeSave.maxDelayMs'),
  leaderElection: optionDefault<LeaderElectionMode>('leaderElection'),
  leaseDurationMs: optionDefault<number>('leaseDurationMs'),
  renewDeadlineMs: optionDefault<number>('renewDeadlineMs'),
  retryPeriodMs: optionDefault<number>('retryPeriodMs'),
  retryIntervalMaxMs: optionDefault<number>('retryIntervalMaxMs'),
  selectorPolicy: optionDefault<SelectorPolicy>('selectorPolicy'),
  leakInventoryIntervalMs: optionDefault<number>('leakInventory.intervalMs'),
  leakInventoryGracePeriodMs: optionDefault<number>('leakInventory.gracePeriodMs'),
  shutdownTimeoutMs: optionDefault<number>('shutdownTimeoutMs'),
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

/** `value` (or the row's default) checked against the row's kind; ConfigurationError names the option. */
function checked<T>(key: string, value: T | undefined): T {
  const row: OptionRow = optionRow(key);
  const v = (value ?? row.default) as unknown;
  const k = row.kind;
  const fail = (expected: string): never => {
    throw new ConfigurationError(key, `expected ${expected}, got ${String(v)}`);
  };
  switch (k.type) {
    case 'duration':
      if (typeof v !== 'number' || !Number.isFinite(v) || v < (k.min ?? 0)) fail(`a finite number of milliseconds >= ${k.min ?? 0}`);
      break;
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v) || v < k.min) fail(`a finite number of milliseconds >= ${k.min}`);
      break;
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v) || v < k.min) fail(`an integer >= ${k.min}`);
      break;
    case 'choice':
      if (typeof v !== 'string' || !k.values.includes(v)) fail(`one of ${k.values.join(', ')}`);
      break;
    case 'boolean':
    case 'list':
    case 'string':
      break;
  }
  return v as T;
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
      retryCount: checked('volumeSave.retryCount', save?.retryCount),
      intervalMs: checked('volumeSave.intervalMs', save?.intervalMs),
    };
  }
  if (save.mode === 'background') {
    if ('retryCount' in save || 'intervalMs' in save) {
      // The Go library errors on CreateProvisionedPVLimiter combined with RetryCount/Interval: same here.
      throw new ConfigurationError('volumeSave', "retryCount/intervalMs belong to mode 'retry'");
    }
    const baseDelayMs = checked('volumeSave.baseDelayMs', save.baseDelayMs);
    const maxDelayMs = checked('volumeSave.maxDelayMs', save.maxDelayMs);
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
  const leaderElection = checked('leaderElection', partial.leaderElection);
  const leaseDurationMs = checked('leaseDurationMs', partial.leaseDurationMs);
  const renewDeadlineMs = checked('renewDeadlineMs', partial.renewDeadlineMs);
  const retryPeriodMs = checked('retryPeriodMs', partial.retryPeriodMs);
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
  if (!isDnsLabel(namespace)) {
    throw new ConfigurationError('leaderElectionNamespace', `"${namespace}" is not a valid namespace name`);
  }

  const backoffBaseMs = checked('backoffBaseMs', partial.backoffBaseMs);
  const backoffMaxMs = checked('backoffMaxMs', partial.backoffMaxMs);
  if (backoffMaxMs < backoffBaseMs) throw new ConfigurationError('backoffMaxMs', 'must be >= backoffBaseMs');

  const additionalProvisionerNames = partial.additionalProvisionerNames ?? [];
  if (!Array.isArray(additionalProvisionerNames)) {
    throw new ConfigurationError('additionalProvisionerNames', 'expected an array of provisioner names');
  }
  additionalProvisionerNames.forEach((n, i) => validateProvisionerName(n, `additionalProvisionerNames[${i}]`, true));

  const volumeNameHook = partial.volumeNameHook ?? defaultVolumeName;
  if (typeof volumeNameHook !== 'function') throw new ConfigurationError('volumeNameHook', 'expected a function');

  const leak = partial.leakInventory ?? {};
  const leakInventory: Required<LeakInventoryOptions> = {
    enabled: checked('leakInventory.enabled', leak.enabled),
    intervalMs: checked('leakInventory.intervalMs', leak.intervalMs),
    gracePeriodMs: checked('leakInventory.gracePeriodMs', leak.gracePeriodMs),
    deleteLeaked: checked('leakInventory.deleteLeaked', leak.deleteLeaked),
  };
  if (leakInventory.deleteLeaked && !leakInventory.enabled) {
    throw new ConfigurationError('leakInventory.deleteLeaked', 'requires leakInventory.enabled');
  }

  // Every top-level row is checked and defaulted the same way; the options with rules of their own follow.
  const rows: Record<string, unknown> = {};
  for (const row of CONTROLLER_OPTIONS) {
    if (!row.key.includes('.')) rows[row.key] = checked(row.key, (partial as Record<string, unknown>)[row.key]);
  }
  return {
    ...(rows as Omit<ResolvedOptions, 'volumeSave' | 'leakInventory' | 'volumeNameHook'>),
    backoffBaseMs,
    backoffMaxMs,
    volumeSave: resolveVolumeSave(partial.volumeSave),
    leaderElection,
    leaderElectionNamespace: namespace,
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
    additionalProvisionerNames: [...additionalProvisionerNames],
    volumeNameHook,
    leakInventory,
  };
}

/** The Lease name for a provisioner: "/" and other characters a name cannot hold become "-" (`example.com/nfs` -> `example.com-nfs`). */
export function leaseNameFor(provisionerName: string): string {
  return provisionerName.replace(/[^a-zA-Z0-9.-]/g, '-').toLowerCase();
}
