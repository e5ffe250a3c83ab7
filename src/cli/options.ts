// Flag definitions of `kube-provisioner run hostpath` (every controller option, with environment-variable
// fallbacks) and their conversion into typed options. Parsing is separate from running so that the flags are
// testable without a cluster and the manifests' args can be checked against the real parser.
import { Command, InvalidArgumentError, Option } from 'commander';
import type { ProvisionControllerOptions } from '../controller/options.ts';
import { validateProvisionerName } from '../controller/options.ts';
import type { HostPathMode } from '../hostpath/provisioner.ts';
import { checkNfsExport, type NfsExport } from '../hostpath/config.ts';
import { parseListenAddress } from '../runtime/health-server.ts';

/** The default provisioner name of `run hostpath` (StorageClass `provisioner:` field). */
export const DEFAULT_PROVISIONER_NAME = 'kube-provisioner.io/hostpath';
/** ConfigMap key holding the configuration when `--config-key` is not given (local-path's name). */
export const DEFAULT_CONFIG_KEY = 'config.json';
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Invalid or contradictory flags (after commander's own per-flag parsing). */
export class CliOptionError extends Error {
  override name = 'CliOptionError';
  constructor(readonly flag: string, message: string) {
    super(`${flag}: ${message}`);
  }
}

/** A ConfigMap reference `namespace/name` (namespace defaulted from the pod's). */
export interface ConfigMapRef {
  namespace: string;
  name: string;
  key: string;
}

/** Everything `run hostpath` needs, typed and validated. */
export interface RunHostPathOptions {
  kubeconfig?: string;
  context?: string;
  provisionerName: string;
  mode: HostPathMode;
  nodeName?: string;
  /** At most one of configFile / configMap; neither only with nfs (then the export mount is the shared path). */
  configFile?: string;
  configMap?: ConfigMapRef;
  /** nfs-subdir's NFS_SERVER / NFS_PATH: the export the top-level shared path is mounted from. */
  nfs?: NfsExport;
  /** Where the export is mounted when there is no configuration (nfs-subdir's /persistentvolumes). */
  nfsMountPath: string;
  /** deployment mode: node-local claims of other nodes are refused (Warning event) or left to their node's instance. */
  otherNodeClaims: 'refuse' | 'ignore';
  /** `host:port` of /healthz and /readyz (and /metrics when metricsAddress is the same); undefined = off. */
  healthAddress?: string;
  /** `host:port` of /metrics; undefined = off. */
  metricsAddress?: string;
  /** Per-volume disk usage refresh (ms); 0 = off. */
  volumeUsageIntervalMs: number;
  logLevel: LogLevel;
  kubeApiQps: number;
  kubeApiBurst: number;
  kubeApiTimeoutMs: number;
  controller: ProvisionControllerOptions;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go-style durations: `15s`, `1m30s`, `250ms`, `2h`, `0`. Returns milliseconds. */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    matched = re.lastIndex;
  }
  if (matched === 0 || matched !== s.length) throw new InvalidArgumentError(`"${text}" is not a duration (e.g. 500ms, 15s, 1m30s, 2h)`);
  return total;
}

function intArg(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`"${v}" is not an integer >= ${min}`);
    return n;
  };
}

function numberArg(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min) throw new InvalidArgumentError(`"${v}" is not a number >= ${min}`);
    return n;
  };
}

function addressArg(v: string): string {
  if (v === 'off' || v === '') return 'off';
  try {
    parseListenAddress(v);
  } catch {
    throw new InvalidArgumentError(`"${v}" is not host:port, :port or off`);
  }
  return v;
}

/** `true/false`, `1/0`, `yes/no`: switches take an optional value so that `ENV=false` means false. */
export function parseBoolean(v: string): boolean {
  const t = v.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(t)) return true;
  if (['false', '0', 'no', 'off'].includes(t)) return false;
  throw new InvalidArgumentError(`"${v}" is not true or false`);
}

function listArg(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

/** `KUBE_PROVISIONER_<FLAG>`: the environment fallback of a flag without a conventional variable. */
export function envName(flag: string): string {
  return `KUBE_PROVISIONER_${flag.replace(/-/g, '_').toUpperCase()}`;
}

/** One flag: `--name <value>` (or a boolean switch) with its env fallback. */
function opt(flags: string, description: string, env?: string | false): Option {
  const o = new Option(flags, description);
  const name = /--([a-z0-9-]+)/.exec(flags)?.[1] ?? '';
  if (env !== false) o.env(env ?? envName(name));
  return o;
}

/** Adds the flags shared by commands that talk to an API server. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .addOption(opt('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)', false))
    .addOption(opt('--context <name>', 'kubeconfig context (default: its current-context)'))
    .addOption(opt('--kube-api-qps <n>', 'client-side request rate limit (0 = unlimited)').argParser(numberArg(0)).default(20))
    .addOption(opt('--kube-api-burst <n>', 'client-side burst above the rate').argParser(intArg(1)).default(30))
    .addOption(opt('--kube-api-timeout <duration>', 'timeout of one API request').argParser(parseDuration).default(30_000, '30s'));
}

/** Adds every flag of `run hostpath` to `cmd`. */
export function addRunHostPathOptions(cmd: Command): Command {
  addConnectionOptions(cmd);
  return (
    cmd
      // Identity and topology.
      .addOption(opt('--provisioner-name <name>', 'provisioner name StorageClasses refer to', 'PROVISIONER_NAME').default(DEFAULT_PROVISIONER_NAME))
      .addOption(opt('--mode <mode>', 'daemonset: serve only --node-name\'s volumes; deployment: every configured path is reachable here').choices(['deployment', 'daemonset']).default('deployment'))
      .addOption(opt('--node-name <name>', 'the node this instance runs on (required with --mode daemonset)', 'NODE_NAME'))
      // Configuration.
      .addOption(opt('--config <file>', 'hostpath configuration file (JSON or YAML), watched and hot-reloaded'))
      .addOption(opt('--config-map <namespace/name>', 'hostpath configuration ConfigMap, watched through the API (namespace defaults to $POD_NAMESPACE)'))
      .addOption(opt('--config-key <key>', 'ConfigMap key holding the configuration').default(DEFAULT_CONFIG_KEY))
      .addOption(opt('--nfs-server <host>', 'NFS server of the export mounted at the shared path: PVs are published as nfs volumes (nfs-subdir\'s variable)', 'NFS_SERVER'))
      .addOption(opt('--nfs-path <path>', 'path the NFS server exports (nfs-subdir\'s variable); with --nfs-server', 'NFS_PATH'))
      .addOption(opt('--nfs-mount-path <dir>', 'where the export is mounted, used as the shared path when neither --config nor --config-map is given').default('/persistentvolumes'))
      .addOption(opt('--other-node-claims <policy>', 'deployment mode, a node-local claim scheduled to another node: refuse (Warning event) or ignore (the node\'s DaemonSet instance serves it)').choices(['refuse', 'ignore']).default('refuse'))
      // Leader election.
      .addOption(opt('--leader-election <mode>', 'lease: one active replica; none: always active; per-claim: active/active with a lock per claim').choices(['lease', 'none', 'per-claim']).default('lease'))
      .addOption(opt('--leader-election-namespace <ns>', 'namespace of the Lease (default: $POD_NAMESPACE, the service account\'s, then default)'))
      .addOption(opt('--lease-duration <duration>', 'lease (and per-claim lock) duration').argParser(parseDuration).default(15_000, '15s'))
      .addOption(opt('--renew-deadline <duration>', 'the leader gives up if it cannot renew within this').argParser(parseDuration).default(10_000, '10s'))
      .addOption(opt('--retry-period <duration>', 'interval between lease attempts').argParser(parseDuration).default(2_000, '2s'))
      // Work.
      .addOption(opt('--worker-threads <n>', 'claim workers (and as many volume workers)').argParser(intArg(1)).default(4))
      .addOption(opt('--resync-period <duration>', 'every object is re-evaluated this often').argParser(parseDuration).default(900_000, '15m'))
      .addOption(opt('--failed-provision-threshold <n>', 'failed attempts before a claim is given up (0 = retry forever)').argParser(intArg(0)).default(15))
      .addOption(opt('--failed-delete-threshold <n>', 'failed attempts before a volume deletion is given up (0 = retry forever)').argParser(intArg(0)).default(15))
      .addOption(opt('--backoff-base <duration>', 'first retry delay after an error').argParser(parseDuration).default(15_000, '15s'))
      .addOption(opt('--backoff-max <duration>', 'retry delay cap').argParser(parseDuration).default(1_000_000, '1000s'))
      .addOption(opt('--exponential-backoff [bool]', 'double the retry delay after each error (false: a fixed --backoff-base)').argParser(parseBoolean).default(true))
      .addOption(opt('--queue-qps <n>', 'rate limit of retries per queue').argParser(numberArg(Number.MIN_VALUE)).default(10))
      .addOption(opt('--queue-burst <n>', 'burst of retries per queue').argParser(intArg(1)).default(100))
      .addOption(opt('--retry-interval-max <duration>', 'earliest retry of an infeasible claim (unless it or its class changes)').argParser(parseDuration).default(300_000, '5m'))
      .addOption(opt('--provision-timeout <duration>', 'abort one provisioning attempt after this (0 = none)').argParser(parseDuration).default(0, '0'))
      .addOption(opt('--deletion-timeout <duration>', 'abort one deletion attempt after this (0 = none)').argParser(parseDuration).default(0, '0'))
      .addOption(opt('--volume-save <mode>', 'retry: save the PV a few times, then delete the directory and retry; background: retry saving forever').choices(['retry', 'background']).default('retry'))
      .addOption(opt('--volume-save-retries <n>', '(retry) PV create attempts').argParser(intArg(1)).default(5))
      .addOption(opt('--volume-save-interval <duration>', '(retry) delay between PV create attempts').argParser(parseDuration).default(10_000, '10s'))
      .addOption(opt('--selector-policy <policy>', 'claims with spec.selector: reject (Warning event) or allow (hand to the provisioner)').choices(['reject', 'allow']).default('reject'))
      .addOption(opt('--node-cache [bool]', 'watch Nodes and hand the selected node\'s object to the provisioner (needs list/watch on nodes)').argParser(parseBoolean).default(false))
      .addOption(opt('--shutdown-timeout <duration>', 'on shutdown, how long to wait for in-flight provision/delete calls').argParser(parseDuration).default(30_000, '30s'))
      .addOption(opt('--additional-provisioner-names <names>', 'comma-separated extra names treated as ours (migrated classes)').argParser(listArg))
      .addOption(opt('--add-finalizer [bool]', 'put external-provisioner.volume.kubernetes.io/finalizer on Delete-policy PVs').argParser(parseBoolean).default(false))
      .addOption(opt('--leak-inventory [bool]', 'periodically report directories that have no PV').argParser(parseBoolean).default(false))
      .addOption(opt('--leak-inventory-interval <duration>', 'how often to take the leak inventory').argParser(parseDuration).default(600_000, '10m'))
      .addOption(opt('--leak-inventory-grace-period <duration>', 'a directory younger than this is never reported').argParser(parseDuration).default(3_600_000, '1h'))
      .addOption(opt('--delete-leaked [bool]', 'delete the leaked directories the inventory finds (needs --leak-inventory)').argParser(parseBoolean).default(false))
      // Observability.
      .addOption(opt('--health-address <host:port>', '/healthz, /readyz (and /metrics unless --metrics-address differs); off to disable').argParser(addressArg).default(':8080'))
      .addOption(opt('--metrics-address <host:port>', '/metrics address (default: the health address); off to disable').argParser(addressArg))
      .addOption(opt('--volume-usage-interval <duration>', 'refresh of the per-volume disk usage metric (0 = off)').argParser(parseDuration).default(60_000, '1m'))
      .addOption(opt('--log-level <level>', 'log level (JSON logs on stderr)').choices([...LOG_LEVELS]).default('info'))
  );
}

/** Raw commander values of `run hostpath` (what `cmd.opts()` returns). */
export interface RawRunHostPathFlags {
  kubeconfig?: string;
  context?: string;
  kubeApiQps: number;
  kubeApiBurst: number;
  kubeApiTimeout: number;
  provisionerName: string;
  mode: HostPathMode;
  nodeName?: string;
  config?: string;
  configMap?: string;
  configKey: string;
  nfsServer?: string;
  nfsPath?: string;
  nfsMountPath: string;
  otherNodeClaims: 'refuse' | 'ignore';
  leaderElection: 'lease' | 'none' | 'per-claim';
  leaderElectionNamespace?: string;
  leaseDuration: number;
  renewDeadline: number;
  retryPeriod: number;
  workerThreads: number;
  resyncPeriod: number;
  failedProvisionThreshold: number;
  failedDeleteThreshold: number;
  backoffBase: number;
  backoffMax: number;
  exponentialBackoff: boolean;
  queueQps: number;
  queueBurst: number;
  retryIntervalMax: number;
  provisionTimeout: number;
  deletionTimeout: number;
  volumeSave: 'retry' | 'background';
  volumeSaveRetries: number;
  volumeSaveInterval: number;
  selectorPolicy: 'reject' | 'allow';
  nodeCache?: boolean;
  shutdownTimeout: number;
  additionalProvisionerNames?: string[];
  addFinalizer?: boolean;
  leakInventory?: boolean;
  leakInventoryInterval: number;
  leakInventoryGracePeriod: number;
  deleteLeaked?: boolean;
  healthAddress: string;
  metricsAddress?: string;
  volumeUsageInterval: number;
  logLevel: LogLevel;
}

/** `ns/name` or `name` (namespace from $POD_NAMESPACE, else `default`). */
export function parseConfigMapRef(ref: string, key: string, env: NodeJS.ProcessEnv = process.env): ConfigMapRef {
  const parts = ref.split('/');
  const dns = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
  const [namespace, name] = parts.length === 2 ? parts : [env.POD_NAMESPACE || 'default', parts[0]];
  if (parts.length > 2 || !dns.test(namespace) || !dns.test(name)) throw new CliOptionError('--config-map', `"${ref}" is not namespace/name`);
  if (!/^[-._a-zA-Z0-9]+$/.test(key)) throw new CliOptionError('--config-key', `"${key}" is not a valid ConfigMap key`);
  return { namespace, name, key };
}

function resolveNfs(f: RawRunHostPathFlags): NfsExport | undefined {
  if (f.nfsServer === undefined && f.nfsPath === undefined) return undefined;
  if (!f.nfsServer || !f.nfsPath) throw new CliOptionError(f.nfsServer ? '--nfs-path' : '--nfs-server', 'give both --nfs-server and --nfs-path (NFS_SERVER and NFS_PATH)');
  const bad = checkNfsExport(f.nfsServer, f.nfsPath);
  if (bad) throw new CliOptionError('--nfs-server', bad);
  if (!f.nfsMountPath.startsWith('/') || f.nfsMountPath === '/') throw new CliOptionError('--nfs-mount-path', `"${f.nfsMountPath}" must be an absolute path other than /`);
  return { server: f.nfsServer, path: f.nfsPath };
}

/** Validates the combination of flags and converts them. Throws CliOptionError (or ConfigurationError for names). */
export function resolveRunHostPathOptions(f: RawRunHostPathFlags, env: NodeJS.ProcessEnv = process.env): RunHostPathOptions {
  if (f.config && f.configMap) throw new CliOptionError('--config', 'give either --config or --config-map, not both');
  const nfs = resolveNfs(f);
  if (!f.config && !f.configMap && !nfs) throw new CliOptionError('--config', 'a configuration is required: --config FILE, --config-map NAMESPACE/NAME, or --nfs-server and --nfs-path');
  if (f.mode === 'daemonset' && !f.nodeName) throw new CliOptionError('--node-name', 'required with --mode daemonset (or set NODE_NAME)');
  validateProvisionerName(f.provisionerName, '--provisioner-name');
  const controller: ProvisionControllerOptions = {
    resyncPeriodMs: f.resyncPeriod,
    threadiness: f.workerThreads,
    exponentialBackoffOnError: f.exponentialBackoff,
    backoffBaseMs: f.backoffBase,
    backoffMaxMs: f.backoffMax,
    queueQps: f.queueQps,
    queueBurst: f.queueBurst,
    failedProvisionThreshold: f.failedProvisionThreshold,
    failedDeleteThreshold: f.failedDeleteThreshold,
    volumeSave: f.volumeSave === 'background' ? { mode: 'background' } : { mode: 'retry', retryCount: f.volumeSaveRetries, intervalMs: f.volumeSaveInterval },
    leaderElection: f.leaderElection,
    leaderElectionNamespace: f.leaderElectionNamespace,
    leaseDurationMs: f.leaseDuration,
    renewDeadlineMs: f.renewDeadline,
    retryPeriodMs: f.retryPeriod,
    provisionTimeoutMs: f.provisionTimeout,
    deletionTimeoutMs: f.deletionTimeout,
    additionalProvisionerNames: f.additionalProvisionerNames ?? [],
    addFinalizer: f.addFinalizer ?? false,
    retryIntervalMaxMs: f.retryIntervalMax,
    selectorPolicy: f.selectorPolicy,
    nodeCache: f.nodeCache ?? false,
    shutdownTimeoutMs: f.shutdownTimeout,
    leakInventory: {
      enabled: f.leakInventory ?? false,
      intervalMs: f.leakInventoryInterval,
      gracePeriodMs: f.leakInventoryGracePeriod,
      deleteLeaked: f.deleteLeaked ?? false,
    },
  };
  const health = f.healthAddress === 'off' ? undefined : f.healthAddress;
  const metrics = f.metricsAddress === undefined ? health : f.metricsAddress === 'off' ? undefined : f.metricsAddress;
  return {
    kubeconfig: f.kubeconfig,
    context: f.context,
    provisionerName: f.provisionerName,
    mode: f.mode,
    nodeName: f.nodeName,
    configFile: f.config,
    configMap: f.configMap ? parseConfigMapRef(f.configMap, f.configKey, env) : undefined,
    nfs,
    nfsMountPath: f.nfsMountPath,
    otherNodeClaims: f.otherNodeClaims,
    healthAddress: health,
    metricsAddress: metrics,
    volumeUsageIntervalMs: f.volumeUsageInterval,
    logLevel: f.logLevel,
    kubeApiQps: f.kubeApiQps,
    kubeApiBurst: f.kubeApiBurst,
    kubeApiTimeoutMs: f.kubeApiTimeout,
    controller,
  };
}

/** Parses `run hostpath` arguments (without `run hostpath`) as the command would; for tests and manifest checks. */
export function parseRunHostPathArgs(args: string[], env: NodeJS.ProcessEnv = {}): RunHostPathOptions {
  const cmd = addRunHostPathOptions(new Command('hostpath')).exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} });
  const saved = { ...process.env };
  // commander reads option env fallbacks from process.env: swap in the given environment for the parse.
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, env);
  try {
    cmd.parse(args, { from: 'user' });
  } finally {
    for (const k of Object.keys(process.env)) delete process.env[k];
    Object.assign(process.env, saved);
  }
  return resolveRunHostPathOptions(cmd.opts<RawRunHostPathFlags>(), env);
}
