// The controller's options as one table: each row is one option (its path in ProvisionControllerOptions, default,
// value kind and bounds, command-line flag, help and documentation text). resolveOptions validates and defaults
// from it, the command builds its flags from it, and docs/configuration.md's tables are checked against it: adding
// an option is adding a row (plus its field in ProvisionControllerOptions).

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** How an option's value is read and checked. */
export type OptionKind =
  | { type: 'duration'; min?: number }
  | { type: 'integer'; min: number }
  | { type: 'number'; min: number }
  | { type: 'boolean' }
  | { type: 'choice'; values: readonly string[] }
  | { type: 'list' }
  | { type: 'string' };

/** One controller option. */
export interface OptionRow {
  /** Path in ProvisionControllerOptions (`threadiness`, `leakInventory.intervalMs`). */
  key: string;
  kind: OptionKind;
  /** The default; undefined when there is none or it is computed (the Lease namespace). */
  default?: number | boolean | string;
  /** The flag of `run hostpath` without dashes; none for options the command does not expose. */
  flag?: string;
  /** The value placeholder in the flag (`<mode>`); derived from the kind when absent. */
  placeholder?: string;
  /** One line for `--help`. */
  help: string;
  /** The documentation's Meaning column (defaults to help). */
  doc?: string;
  /** The documentation's Default column when the default is computed or worth explaining. */
  docDefault?: string;
  /** Which table of docs/configuration.md lists it. */
  section: 'leader-election' | 'work';
}

/** Every controller option, in documentation order. */
export const CONTROLLER_OPTIONS: readonly OptionRow[] = [
  // Leader election.
  { section: 'leader-election', key: 'leaderElection', kind: { type: 'choice', values: ['lease', 'none', 'per-claim'] }, default: 'lease', flag: 'leader-election', placeholder: '<mode>',
    help: 'lease: one active replica; none: always active; per-claim: active/active with a lock per claim',
    doc: '`lease`: one `coordination.k8s.io` Lease per provisioner name, one active replica; `none`: always active (one replica, or the DaemonSet where the node is the shard); `per-claim`: every replica works, a lock annotation on each claim decides who provisions it' },
  { section: 'leader-election', key: 'leaderElectionNamespace', kind: { type: 'string' }, flag: 'leader-election-namespace', placeholder: '<ns>',
    help: "namespace of the Lease (default: $POD_NAMESPACE, the service account's, then default)", doc: 'namespace of the Lease',
    docDefault: "`$POD_NAMESPACE`, then the service account's namespace, then `default`" },
  { section: 'leader-election', key: 'leaseDurationMs', kind: { type: 'duration', min: 1 }, default: 15 * SECOND, flag: 'lease-duration',
    help: 'lease (and per-claim lock) duration', doc: 'how long a Lease (or per-claim lock) is valid without renewal' },
  { section: 'leader-election', key: 'renewDeadlineMs', kind: { type: 'duration', min: 1 }, default: 10 * SECOND, flag: 'renew-deadline',
    help: 'the leader gives up if it cannot renew within this', doc: 'the leader steps down when it cannot renew within this; must be < lease duration' },
  { section: 'leader-election', key: 'retryPeriodMs', kind: { type: 'duration', min: 1 }, default: 2 * SECOND, flag: 'retry-period',
    help: 'interval between lease attempts', doc: 'interval between acquire/renew attempts; renew deadline must be > 1.2 × this' },
  // Work, retries and failures.
  { section: 'work', key: 'threadiness', kind: { type: 'integer', min: 1 }, default: 4, flag: 'worker-threads', help: 'claim workers (and as many volume workers)',
    doc: 'claim workers, and as many volume workers' },
  { section: 'work', key: 'resyncPeriodMs', kind: { type: 'duration' }, default: 15 * MINUTE, flag: 'resync-period', help: 'every object is re-evaluated this often',
    doc: 'every claim and volume is re-evaluated this often' },
  { section: 'work', key: 'failedProvisionThreshold', kind: { type: 'integer', min: 0 }, default: 15, flag: 'failed-provision-threshold',
    help: 'failed attempts before a claim is given up (0 = retry forever)',
    doc: 'failed attempts before a claim is given up (`ProvisioningGivenUp` event; retried again only when the claim or its class changes); `0` = retry forever' },
  { section: 'work', key: 'failedDeleteThreshold', kind: { type: 'integer', min: 0 }, default: 15, flag: 'failed-delete-threshold',
    help: 'failed attempts before a volume deletion is given up (0 = retry forever)', doc: 'the same for deleting volumes' },
  { section: 'work', key: 'backoffBaseMs', kind: { type: 'duration', min: 1 }, default: 15 * SECOND, flag: 'backoff-base', help: 'first retry delay after an error' },
  { section: 'work', key: 'backoffMaxMs', kind: { type: 'duration', min: 1 }, default: 1000 * SECOND, flag: 'backoff-max', help: 'retry delay cap' },
  { section: 'work', key: 'exponentialBackoffOnError', kind: { type: 'boolean' }, default: true, flag: 'exponential-backoff',
    help: 'double the retry delay after each error (false: a fixed --backoff-base)', doc: 'double the delay after each failure; `false`: always `--backoff-base`' },
  { section: 'work', key: 'queueQps', kind: { type: 'number', min: Number.MIN_VALUE }, default: 10, flag: 'queue-qps', help: 'rate limit of retries per queue',
    doc: 'overall rate of retries per queue (claims, volumes: separate buckets)' },
  { section: 'work', key: 'queueBurst', kind: { type: 'integer', min: 1 }, default: 100, flag: 'queue-burst', help: 'burst of retries per queue', doc: 'burst of that bucket' },
  { section: 'work', key: 'retryIntervalMaxMs', kind: { type: 'duration' }, default: 5 * MINUTE, flag: 'retry-interval-max',
    help: 'earliest retry of an infeasible claim (unless it or its class changes)',
    doc: 'an infeasible claim (e.g. a bad StorageClass parameter) is not retried before this, unless it or its class changes' },
  { section: 'work', key: 'provisionTimeoutMs', kind: { type: 'duration' }, default: 0, flag: 'provision-timeout', help: 'abort one provisioning attempt after this (0 = none)',
    doc: 'abort one provisioning attempt after this', docDefault: '`0` (none)' },
  { section: 'work', key: 'deletionTimeoutMs', kind: { type: 'duration' }, default: 0, flag: 'deletion-timeout', help: 'abort one deletion attempt after this (0 = none)',
    doc: 'abort one deletion attempt after this', docDefault: '`0` (none)' },
  { section: 'work', key: 'volumeSave.mode', kind: { type: 'choice', values: ['retry', 'background'] }, default: 'retry', flag: 'volume-save', placeholder: '<mode>',
    help: 'retry: save the PV a few times, then delete the directory and retry; background: retry saving forever',
    doc: 'how the PV is saved after the directory is created. `retry`: `--volume-save-retries` attempts `--volume-save-interval` apart, then the directory is removed again and the claim retried; `background`: one attempt, then retried forever from a queue (the directory is never removed)' },
  { section: 'work', key: 'volumeSave.retryCount', kind: { type: 'integer', min: 1 }, default: 5, flag: 'volume-save-retries', help: '(retry) PV create attempts',
    doc: '(`retry`) PV create attempts' },
  { section: 'work', key: 'volumeSave.intervalMs', kind: { type: 'duration' }, default: 10 * SECOND, flag: 'volume-save-interval', help: '(retry) delay between PV create attempts',
    doc: '(`retry`) delay between them' },
  { section: 'work', key: 'volumeSave.baseDelayMs', kind: { type: 'duration', min: 1 }, default: 5, help: '(background) first retry delay of the save queue' },
  { section: 'work', key: 'volumeSave.maxDelayMs', kind: { type: 'duration', min: 1 }, default: 1000 * SECOND, help: '(background) retry delay cap of the save queue' },
  { section: 'work', key: 'selectorPolicy', kind: { type: 'choice', values: ['reject', 'allow'] }, default: 'reject', flag: 'selector-policy', placeholder: '<policy>',
    help: 'claims with spec.selector: reject (Warning event) or allow (hand to the provisioner)',
    doc: 'claims with `spec.selector`: `reject` (Warning event; the hostpath provisioner refuses them anyway) or `allow` (handed to the provisioner)' },
  { section: 'work', key: 'nodeCache', kind: { type: 'boolean' }, default: false, flag: 'node-cache',
    help: "watch Nodes and hand the selected node's object to the provisioner (needs list/watch on nodes)",
    doc: "watch Nodes and give provision() the selected node's object; needs `list`, `watch` on `nodes` (not granted by `deploy/`). Not needed for `nodeAffinityKey`: without it the node is read with one GET when a class needs its labels." },
  { section: 'work', key: 'shutdownTimeoutMs', kind: { type: 'duration' }, default: 30 * SECOND, flag: 'shutdown-timeout',
    help: 'on shutdown, how long to wait for in-flight provision/delete calls', doc: 'on shutdown, how long to wait for in-flight provision/delete calls after their signal aborted' },
  { section: 'work', key: 'additionalProvisionerNames', kind: { type: 'list' }, flag: 'additional-provisioner-names', placeholder: '<a,b>',
    help: 'comma-separated extra names treated as ours (migrated classes)', doc: 'comma-separated extra provisioner names treated as ours', docDefault: 'none' },
  { section: 'work', key: 'addFinalizer', kind: { type: 'boolean' }, default: false, flag: 'add-finalizer',
    help: 'put external-provisioner.volume.kubernetes.io/finalizer on Delete-policy PVs',
    doc: 'put `external-provisioner.volume.kubernetes.io/finalizer` on Bound PVs with reclaim policy Delete, so the directory is removed even if the PV object is deleted first' },
  { section: 'work', key: 'leakInventory.enabled', kind: { type: 'boolean' }, default: false, flag: 'leak-inventory', help: 'periodically report directories that have no PV',
    doc: 'periodically compare the volume records on disk with the PVs and report directories without a PV (`controller_leaked_volumes`)' },
  { section: 'work', key: 'leakInventory.intervalMs', kind: { type: 'duration', min: 1 }, default: 10 * MINUTE, flag: 'leak-inventory-interval',
    help: 'how often to take the leak inventory', doc: 'how often' },
  { section: 'work', key: 'leakInventory.gracePeriodMs', kind: { type: 'duration' }, default: 60 * MINUTE, flag: 'leak-inventory-grace-period',
    help: 'a directory younger than this is never reported', doc: 'a directory younger than this is never reported (its PV may be on its way)' },
  { section: 'work', key: 'leakInventory.deleteLeaked', kind: { type: 'boolean' }, default: false, flag: 'delete-leaked',
    help: 'delete the leaked directories the inventory finds (needs --leak-inventory)', doc: 'delete what the inventory reports (needs `--leak-inventory`)' },
];

/** The row of `key`; throws for an unknown key (a programming error). */
export function optionRow(key: string): OptionRow {
  const row = CONTROLLER_OPTIONS.find((r) => r.key === key);
  if (!row) throw new Error(`no option row ${key}`);
  return row;
}

/** The default of `key` from its row. */
export function optionDefault<T extends number | boolean | string>(key: string): T {
  return optionRow(key).default as T;
}

/** A duration as Go writes it in flags: `15s`, `15m`, `1h`, `1000s`, `0`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
