// ProvisionController options: the public option types, derived from the option table (option-table.ts, the Go
// library's defaults), and resolveOptions, which applies the defaults and checks every value from the table plus the
// rules between options, once at construction. Invalid options throw a typed ConfigurationError; nothing here ever
// exits the process.
import { readFileSync } from 'node:fs';
import { leaderElectionTimingProblem } from '../../runtime/leader-election.ts';
import { isJsonObject } from '../../types/json.ts';
import { isDnsLabel } from '../../types/names.ts';
import { CONTROLLER_OPTIONS } from './option-table.ts';
import { OptionValueError, resolveTable, type OptionsOf, type OptionTable, type ResolvedOf } from './option-spec.ts';

/** Thrown by resolveOptions() (and the controller's constructor) when options are invalid or contradictory. */
export class ConfigurationError extends Error {
  override name = 'ConfigurationError';
  constructor(
    readonly option: string,
    message: string,
  ) {
    super(`invalid option ${option}: ${message}`);
  }
}

/**
 * Options of a ProvisionController, grouped as the option table is (`leaderElection: {…}`, `retry: {…}`,
 * `volumeSave: {…}`, `leakInventory: {…}`). Durations are milliseconds. Every field is optional; the defaults are
 * in the option table (CONTROLLER_OPTIONS, listed in docs/writing-a-provisioner.md).
 */
// An interface (not a type alias) so that hovers and declarations say its name. (Compiler messages about a wrong
// key still expand the mapped type; they end with "Did you mean …" for a misspelt one.)
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ProvisionControllerOptions extends OptionsOf<typeof CONTROLLER_OPTIONS> {}

/** Options with every default applied, as the controller uses them. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ResolvedOptions extends ResolvedOf<typeof CONTROLLER_OPTIONS> {}

/** How the controller saves the PV object provision() returned (`retry`: delete and retry the claim after the last failed save; `background`: retry forever). */
export type VolumeSaveOptions = NonNullable<ProvisionControllerOptions['volumeSave']>;
/** Leak inventory: compares provisioner.listVolumes() with the PVs and reports backend volumes without a PV. */
export type LeakInventoryOptions = NonNullable<ProvisionControllerOptions['leakInventory']>;
/** Leader election mode and timings. */
export type LeaderElectionOptions = NonNullable<ProvisionControllerOptions['leaderElection']>;
/** Retries after errors: backoff, the queues' rate limit, and the give-up thresholds. */
export type RetryOptions = NonNullable<ProvisionControllerOptions['retry']>;

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

const PROVISIONER_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?(\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/**
 * Checks a provisioner name: `<vendor>/<name>` or a DNS-like CSI driver name, at most 253 characters.
 * `kubernetes.io/` is reserved for in-tree plugins and refused as the controller's own name (it remains
 * allowed in additionalProvisionerNames, which exist precisely for migrated in-tree names).
 */
export function validateProvisionerName(name: string, option = 'provisionerName', allowInTree = false): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > 253 || !PROVISIONER_NAME.test(name)) {
    throw new ConfigurationError(
      option,
      `"${String(name)}" is not a valid provisioner name (expected <vendor>/<name>)`,
    );
  }
  if (!allowInTree && name.startsWith('kubernetes.io/')) {
    throw new ConfigurationError(option, `"${name}": the kubernetes.io/ prefix is reserved for in-tree plugins`);
  }
}

/** The rules between options that no single row can check. */
function checkRules(o: ResolvedOptions): void {
  const le = o.leaderElection;
  const timing =
    le.mode === 'none'
      ? undefined
      : leaderElectionTimingProblem(le.leaseDurationMs, le.renewDeadlineMs, le.retryPeriodMs);
  if (timing) throw new ConfigurationError(`leaderElection.${timing.timing}`, timing.message);
  if (!isDnsLabel(le.namespace))
    throw new ConfigurationError('leaderElection.namespace', `"${le.namespace}" is not a valid namespace name`);
  if (o.retry.backoffMaxMs < o.retry.backoffBaseMs)
    throw new ConfigurationError('retry.backoffMaxMs', 'must be >= backoffBaseMs');
  o.additionalProvisionerNames.forEach((n, i) => validateProvisionerName(n, `additionalProvisionerNames[${i}]`, true));
  if (o.volumeSave.mode === 'background' && o.volumeSave.maxDelayMs < o.volumeSave.baseDelayMs) {
    throw new ConfigurationError('volumeSave.maxDelayMs', 'must be >= baseDelayMs');
  }
  if (o.leakInventory.deleteLeaked && !o.leakInventory.enabled) {
    throw new ConfigurationError('leakInventory.deleteLeaked', 'requires leakInventory.enabled');
  }
}

/**
 * Applies the defaults and validates. Throws ConfigurationError naming the offending option (an unknown one too);
 * never exits. `environment` supplies
 * the default leader-election namespace (defaults to the process environment); `allowedKeys` are other top-level
 * keys the caller's object may hold (the controller's dependencies).
 */
export function resolveOptions(
  partial: ProvisionControllerOptions = {},
  environment: OptionsEnvironment = processEnvironment(),
  allowedKeys: ReadonlySet<string> = new Set(),
): ResolvedOptions {
  if (!isJsonObject(partial)) {
    throw new ConfigurationError(
      'options',
      `expected an object, got ${Array.isArray(partial) ? 'an array' : String(partial)}`,
    );
  }
  let resolved: ResolvedOptions;
  try {
    resolved = resolveTable(CONTROLLER_OPTIONS, partial, '', allowedKeys) as ResolvedOptions;
  } catch (err) {
    if (err instanceof OptionValueError) throw new ConfigurationError(err.option, err.message);
    throw err;
  }
  const le = resolved.leaderElection;
  le.namespace =
    partial.leaderElection?.namespace ?? environment.podNamespace ?? environment.serviceAccountNamespace ?? 'default';
  checkRules(resolved);
  return resolved;
}

/**
 * Options layered left to right, like an object spread, except that groups (`leaderElection`, `retry`,
 * `leakInventory`) merge field by field, so `{ retry: { failedProvisionThreshold: 3 } }` over a base that sets
 * `retry.backoffBaseMs` keeps both. Variants (`volumeSave`) and everything else are replaced whole. Keys that are
 * not options (a controller's dependencies) are carried like a spread.
 */
export function mergeOptions<T extends ProvisionControllerOptions>(...layers: Array<T | undefined>): T {
  const out: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer ?? {})) {
      const entry = Object.hasOwn(CONTROLLER_OPTIONS, key) ? (CONTROLLER_OPTIONS as OptionTable)[key] : undefined;
      const before = out[key];
      const merged =
        entry?.entry === 'group' && isJsonObject(before) && isJsonObject(value) ? { ...before, ...value } : value;
      // defineProperty: a `__proto__` key stays data (an assignment would replace the result's prototype).
      Object.defineProperty(out, key, { value: merged, enumerable: true, writable: true, configurable: true });
    }
  }
  return out as T;
}

/** `T` with every object and array inside it read-only (functions stay as they are). */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends ReadonlyArray<infer E>
    ? ReadonlyArray<DeepReadonly<E>>
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value as DeepReadonly<T>;
}

/** The defaults (the Lease namespace as outside a pod: `default`), frozen all the way down. */
export const DEFAULTS: DeepReadonly<ResolvedOptions> = deepFreeze(resolveOptions({}, {}));

/** The Lease name for a provisioner: "/" and other characters a name cannot hold become "-" (`example.com/nfs` -> `example.com-nfs`). */
export function leaseNameFor(provisionerName: string): string {
  return provisionerName.replace(/[^a-zA-Z0-9.-]/g, '-').toLowerCase();
}
