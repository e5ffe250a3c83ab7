// Flag definitions of `kube-provisioner run hostpath` (its own flags, and one flag per row of the controller's
// option table), environment-variable fallbacks applied from an explicit environment, and their conversion into
// typed options. Parsing is separate from running so that the flags are testable without a cluster and the
// manifests' args can be checked against the real parser.
import { Command, InvalidArgumentError, Option } from 'commander';
import { CONTROLLER_OPTIONS, formatDuration } from '../controller/option-table.ts';
import { durationBounds, flatRows, TIMER_MAX_MS, type FlatRow, type OptionRow } from '../controller/option-spec.ts';
import type { ProvisionControllerOptions } from '../controller/options.ts';
import { validateProvisionerName } from '../controller/options.ts';
import type { HostPathMode } from '../hostpath/hostpath-provisioner.ts';
import { checkNfsExport, type NfsExport } from '../hostpath/config/hostpath-config.ts';
import { parseListenAddress } from '../runtime/health-server.ts';
import { isDnsLabel, isDnsSubdomain } from '../types/names.ts';

/** The default provisioner name of `run hostpath` (StorageClass `provisioner:` field). */
export const DEFAULT_PROVISIONER_NAME = 'kube-provisioner.io/hostpath';
/** ConfigMap key holding the configuration when `--config-key` is not given (local-path's name). */
export const DEFAULT_CONFIG_KEY = 'config.json';
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Invalid or contradictory flags (after commander's own per-flag parsing). */
export class CliOptionError extends Error {
  override name = 'CliOptionError';
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
  }
}

/** A ConfigMap reference `namespace/name` (namespace defaulted from the pod's). */
export interface ConfigMapRef {
  namespace: string;
  name: string;
  key: string;
}

/** Heartbeat detail key under which the hostpath provisioner says where its configuration lives (for explain). */
export const HOSTPATH_CONFIG_DETAIL = 'hostpath-config';

/** Where the configuration lives, as `explain` finds it: a file (absolute path) or a ConfigMap. */
export type HostPathConfigLocation = { file: string } | { configMap: ConfigMapRef };

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
  /** Entries per second the usage walk visits, all volumes together. */
  volumeUsageWalkRate: number;
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
  if (matched === 0 || matched !== s.length)
    throw new InvalidArgumentError(`"${text}" is not a duration (e.g. 500ms, 15s, 1m30s, 2h)`);
  return total;
}

function durationArg(min: number, max: number): (v: string) => number {
  return (v) => {
    const ms = parseDuration(v);
    if (ms < min) throw new InvalidArgumentError(`"${v}" is shorter than ${formatDuration(min)}`);
    if (ms > max)
      throw new InvalidArgumentError(
        `"${v}" is longer than ${max} ms${max === TIMER_MAX_MS ? ' (about 24.8 days, the longest timer Node keeps)' : ''}`,
      );
    return ms;
  };
}

/** A commander parser of integers >= `min`. */
export function intArg(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim()) || !Number.isSafeInteger(n) || n < min)
      throw new InvalidArgumentError(`"${v}" is not an integer >= ${min}`);
    return n;
  };
}

function numberArg(min: number): (v: string) => number {
  return (v) => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min)
      throw new InvalidArgumentError(`"${v}" is not a number >= ${min}`);
    return n;
  };
}

/** A commander parser of listen addresses: `host:port`, `:port`, or `off` (also the empty string). */
export function addressArg(v: string): string {
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
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** `KUBE_PROVISIONER_<FLAG>`: the environment fallback of a flag without a conventional variable. */
export function envName(flag: string): string {
  return `KUBE_PROVISIONER_${flag.replace(/-/g, '_').toUpperCase()}`;
}

/** The environment variable of each option that has one (kept here, not in commander, which reads process.env). */
const ENV_VARS = new WeakMap<Option, string>();

/** The environment variable that sets `option`, if any. */
export function envVarOf(option: Option): string | undefined {
  return ENV_VARS.get(option);
}

/** One flag: `--name <value>` (or a boolean switch) with its env fallback. */
export function opt(flags: string, description: string, env?: string | false): Option {
  const name = /--([a-z0-9-]+)/.exec(flags)?.[1] ?? '';
  const variable = env === false ? undefined : (env ?? envName(name));
  const o = new Option(flags, variable ? `${description} (env: ${variable})` : description);
  if (variable) ENV_VARS.set(o, variable);
  return o;
}

/**
 * Fills options not given on the command line from `env` (flag wins), through each option's own parser and
 * choices. Called before the action runs, with process.env by the command and an explicit map by tests.
 */
export function applyEnvironment(cmd: Command, env: NodeJS.ProcessEnv): void {
  for (const o of cmd.options as Option[]) {
    const variable = ENV_VARS.get(o);
    const raw = variable ? env[variable] : undefined;
    if (raw === undefined || cmd.getOptionValueSource(o.attributeName()) === 'cli') continue;
    if (o.argChoices && !o.argChoices.includes(raw)) {
      throw new CliOptionError(variable ?? '', `"${raw}" is not one of ${o.argChoices.join(', ')}`);
    }
    let value: unknown = raw;
    try {
      if (o.parseArg) value = o.parseArg(raw, undefined);
    } catch (err) {
      throw new CliOptionError(variable ?? '', err instanceof Error ? err.message : String(err));
    }
    cmd.setOptionValueWithSource(o.attributeName(), value, 'env');
  }
}

/** A flag's value placeholder: the row's own, or one derived from its kind. */
export function placeholderOf(row: OptionRow): string {
  const t = row.kind.type;
  return row.placeholder ?? (t === 'duration' ? '<duration>' : t === 'boolean' ? '[bool]' : '<n>');
}

/** The `run hostpath` flag of one controller option row. */
function rowOption(row: OptionRow & { flag: string }): Option {
  const k = row.kind;
  const o = opt(`--${row.flag} ${placeholderOf(row)}`, row.help);
  if (k.type === 'duration') o.argParser(durationArg(...durationBounds(k)));
  else if (k.type === 'integer') o.argParser(intArg(k.min));
  else if (k.type === 'number') o.argParser(numberArg(k.min));
  else if (k.type === 'boolean') o.argParser(parseBoolean);
  else if (k.type === 'choice') o.choices([...k.values]);
  else if (k.type === 'list') o.argParser(listArg);
  if (row.default !== undefined && !(Array.isArray(row.default) && row.default.length === 0)) {
    if (k.type === 'duration') o.default(row.default, formatDuration(row.default as number));
    else o.default(row.default);
  }
  return o;
}

/** A controller option row that has a flag. */
export type FlagRow = FlatRow & { row: { flag: string } };

/** The controller option rows that have a flag, in table order. */
export function controllerFlagRows(): FlagRow[] {
  return flatRows(CONTROLLER_OPTIONS).filter((r): r is FlagRow => r.row.flag !== undefined);
}

/** commander's attribute name of a flag (`worker-threads` -> `workerThreads`). */
function attributeOf(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** Adds the flags shared by commands that talk to an API server. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .addOption(
      opt('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)', false),
    )
    .addOption(opt('--context <name>', 'kubeconfig context (default: its current-context)'))
    .addOption(
      opt('--kube-api-qps <n>', 'client-side request rate limit (0 = unlimited)').argParser(numberArg(0)).default(20),
    )
    .addOption(opt('--kube-api-burst <n>', 'client-side burst above the rate').argParser(intArg(1)).default(30))
    .addOption(
      opt('--kube-api-timeout <duration>', 'timeout of one API request')
        .argParser(durationArg(0, TIMER_MAX_MS))
        .default(30_000, '30s'),
    );
}

/** Adds every flag of `run hostpath` to `cmd`. */
export function addRunHostPathOptions(cmd: Command): Command {
  addConnectionOptions(cmd);
  for (const { row } of controllerFlagRows()) cmd.addOption(rowOption(row));
  return (
    cmd
      // Identity and topology.
      .addOption(
        opt('--provisioner-name <name>', 'provisioner name StorageClasses refer to', 'PROVISIONER_NAME').default(
          DEFAULT_PROVISIONER_NAME,
        ),
      )
      .addOption(
        opt(
          '--mode <mode>',
          "daemonset: serve only --node-name's volumes; deployment: every configured path is reachable here",
        )
          .choices(['deployment', 'daemonset'])
          .default('deployment'),
      )
      .addOption(
        opt('--node-name <name>', 'the node this instance runs on (required with --mode daemonset)', 'NODE_NAME'),
      )
      // Configuration.
      .addOption(opt('--config <file>', 'hostpath configuration file (JSON or YAML), watched and hot-reloaded'))
      .addOption(
        opt(
          '--config-map <namespace/name>',
          'hostpath configuration ConfigMap, watched through the API (namespace defaults to $POD_NAMESPACE)',
        ),
      )
      .addOption(opt('--config-key <key>', 'ConfigMap key holding the configuration').default(DEFAULT_CONFIG_KEY))
      .addOption(
        opt(
          '--nfs-server <host>',
          "NFS server of the export mounted at the shared path: PVs are published as nfs volumes (nfs-subdir's variable)",
          'NFS_SERVER',
        ),
      )
      .addOption(
        opt('--nfs-path <path>', "path the NFS server exports (nfs-subdir's variable); with --nfs-server", 'NFS_PATH'),
      )
      .addOption(
        opt(
          '--nfs-mount-path <dir>',
          'where the export is mounted, used as the shared path when neither --config nor --config-map is given',
        ).default('/persistentvolumes'),
      )
      .addOption(
        opt(
          '--other-node-claims <policy>',
          "deployment mode, a node-local claim scheduled to another node: refuse (Warning event) or ignore (the node's DaemonSet instance serves it)",
        )
          .choices(['refuse', 'ignore'])
          .default('refuse'),
      )
      // Observability.
      .addOption(
        opt(
          '--health-address <host:port>',
          '/healthz, /readyz (and /metrics unless --metrics-address differs); off to disable',
        )
          .argParser(addressArg)
          .default(':8080'),
      )
      .addOption(
        opt(
          '--metrics-address <host:port>',
          '/metrics address (default: the health address); off to disable',
        ).argParser(addressArg),
      )
      .addOption(
        opt('--volume-usage-interval <duration>', 'refresh of the per-volume disk usage metric (0 = off)')
          .argParser(durationArg(0, TIMER_MAX_MS))
          .default(60_000, '1m'),
      )
      .addOption(
        opt(
          '--volume-usage-walk-rate <entries/s>',
          'files and directories the usage walk visits per second, all volumes together',
        )
          .argParser(numberArg(1))
          .default(1_000),
      )
      .addOption(
        opt('--log-level <level>', 'log level (JSON logs on stderr)')
          .choices([...LOG_LEVELS])
          .default('info'),
      )
  );
}

/** Raw commander values of `run hostpath` (what `cmd.opts()` returns): its own flags, plus one per controller row. */
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
  healthAddress: string;
  metricsAddress?: string;
  volumeUsageInterval: number;
  volumeUsageWalkRate: number;
  logLevel: LogLevel;
  /** The controller rows' flags, by attribute name. */
  [controllerFlag: string]: unknown;
}

/** Whether an option's value came from the command line or the environment (not its default). */
export type GivenFlag = (attribute: string) => boolean;

/** The GivenFlag of a parsed command. */
export function givenIn(cmd: Command): GivenFlag {
  return (attribute) => {
    const source = cmd.getOptionValueSource(attribute);
    return source === 'cli' || source === 'env';
  };
}

/**
 * The controller options the flags set: each row's flag value at the row's path. A row of a variant the mode flag
 * did not choose is left out when it only holds its default, and refused when it was given.
 */
function controllerOptionsFrom(f: RawRunHostPathFlags, given: GivenFlag): ProvisionControllerOptions {
  const out: Record<string, unknown> = {};
  const rows = controllerFlagRows();
  const modeFlagOf = (path: string): string => rows.find((r) => r.path === `${path}.mode`)?.row.flag ?? '';
  for (const { path, row, variant } of rows) {
    const attribute = attributeOf(row.flag);
    const value = f[attribute];
    if (value === undefined) continue;
    const keys = path.split('.');
    if (variant !== undefined) {
      const modeFlag = modeFlagOf(keys.slice(0, -1).join('.'));
      const mode = f[attributeOf(modeFlag)];
      if (mode !== variant) {
        if (given(attribute))
          throw new CliOptionError(`--${row.flag}`, `belongs to --${modeFlag} ${variant}, not ${String(mode)}`);
        continue;
      }
    }
    let at = out;
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[keys[keys.length - 1]] = value;
  }
  return out as ProvisionControllerOptions;
}

/** `ns/name` or `name` (namespace from $POD_NAMESPACE, else `default`). */
export function parseConfigMapRef(ref: string, key: string, env: NodeJS.ProcessEnv = process.env): ConfigMapRef {
  const parts = ref.split('/');
  const [namespace, name] = parts.length === 2 ? parts : [env.POD_NAMESPACE || 'default', parts[0]];
  if (parts.length > 2 || !isDnsLabel(namespace) || !isDnsSubdomain(name))
    throw new CliOptionError('--config-map', `"${ref}" is not namespace/name`);
  if (!/^[-._a-zA-Z0-9]+$/.test(key)) throw new CliOptionError('--config-key', `"${key}" is not a valid ConfigMap key`);
  return { namespace, name, key };
}

function resolveNfs(f: RawRunHostPathFlags): NfsExport | undefined {
  if (f.nfsServer === undefined && f.nfsPath === undefined) return undefined;
  if (!f.nfsServer || !f.nfsPath)
    throw new CliOptionError(
      f.nfsServer ? '--nfs-path' : '--nfs-server',
      'give both --nfs-server and --nfs-path (NFS_SERVER and NFS_PATH)',
    );
  const bad = checkNfsExport(f.nfsServer, f.nfsPath);
  if (bad) throw new CliOptionError('--nfs-server', bad);
  if (!f.nfsMountPath.startsWith('/') || f.nfsMountPath === '/')
    throw new CliOptionError('--nfs-mount-path', `"${f.nfsMountPath}" must be an absolute path other than /`);
  return { server: f.nfsServer, path: f.nfsPath };
}

/**
 * Validates the combination of flags and converts them. Throws CliOptionError (or ConfigurationError for names).
 * `given` tells a flag that was set from one left at its default (`givenIn(cmd)`).
 */
export function resolveRunHostPathOptions(
  f: RawRunHostPathFlags,
  env: NodeJS.ProcessEnv,
  given: GivenFlag,
): RunHostPathOptions {
  if (f.config && f.configMap) throw new CliOptionError('--config', 'give either --config or --config-map, not both');
  const nfs = resolveNfs(f);
  if (!f.config && !f.configMap && !nfs)
    throw new CliOptionError(
      '--config',
      'a configuration is required: --config FILE, --config-map NAMESPACE/NAME, or --nfs-server and --nfs-path',
    );
  if (f.mode === 'daemonset' && !f.nodeName)
    throw new CliOptionError('--node-name', 'required with --mode daemonset (or set NODE_NAME)');
  validateProvisionerName(f.provisionerName, '--provisioner-name');
  const controller = controllerOptionsFrom(f, given);
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
    volumeUsageWalkRate: f.volumeUsageWalkRate,
    logLevel: f.logLevel,
    kubeApiQps: f.kubeApiQps,
    kubeApiBurst: f.kubeApiBurst,
    kubeApiTimeoutMs: f.kubeApiTimeout,
    controller,
  };
}

/** Parses `run hostpath` arguments (without `run hostpath`) as the command would; for tests and manifest checks. */
export function parseRunHostPathArgs(args: string[], env: NodeJS.ProcessEnv = {}): RunHostPathOptions {
  const cmd = addRunHostPathOptions(new Command('hostpath'))
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  cmd.parse(args, { from: 'user' });
  applyEnvironment(cmd, env);
  return resolveRunHostPathOptions(cmd.opts<RawRunHostPathFlags>(), env, givenIn(cmd));
}
