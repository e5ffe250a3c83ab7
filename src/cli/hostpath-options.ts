// Flag definitions of `kube-provisioner run hostpath` (its own flags, and one flag per row of the controller's
// option table), and their conversion into typed options. The rows' flags, their readers and the environment
// fallbacks come from src/cli/flags.ts and the option room (src/controller/options/); this file is the command's
// wiring. Parsing is separate from running so that the flags are testable without a cluster and the manifests'
// args can be checked against the real parser.
import { Command } from 'commander';
import { validateProvisionerName, type ProvisionControllerOptions } from '../controller/options/controller-options.ts';
import { controllerFlagRows, optionsFromFlags } from '../controller/options/option-parse.ts';
import { OptionValueError, TIMER_MAX_MS } from '../controller/options/option-spec.ts';
import { CONTROLLER_OPTIONS } from '../controller/options/option-table.ts';
import type { HostPathMode } from '../hostpath/hostpath-provisioner.ts';
import { checkNfsExport, type NfsExport } from '../hostpath/config/hostpath-config.ts';
import { isDnsLabel, isDnsSubdomain } from '../types/names.ts';
import {
  addConnectionOptions,
  addressArg,
  applyEnvironment,
  attributeOf,
  CliOptionError,
  durationArg,
  givenIn,
  listenAddresses,
  LOG_LEVELS,
  numberArg,
  opt,
  rowOption,
  type GivenFlag,
  type LogLevel,
} from './flags.ts';

/** The default provisioner name of `run hostpath` (StorageClass `provisioner:` field). */
export const DEFAULT_PROVISIONER_NAME = 'kube-provisioner.io/hostpath';
/** ConfigMap key holding the configuration when `--config-key` is not given (local-path's name). */
export const DEFAULT_CONFIG_KEY = 'config.json';

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

/**
 * The controller options the flags set: each row's flag value at the row's path. A row of a variant the mode flag
 * did not choose is left out when it only holds its default, and refused when it was given.
 */
function controllerOptionsFrom(f: RawRunHostPathFlags, given: GivenFlag): ProvisionControllerOptions {
  try {
    return optionsFromFlags(
      CONTROLLER_OPTIONS,
      (flag) => f[attributeOf(flag)],
      (flag) => given(attributeOf(flag)),
    ) as ProvisionControllerOptions;
  } catch (err) {
    if (err instanceof OptionValueError) throw new CliOptionError(err.option, err.message);
    throw err;
  }
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
  const { healthAddress, metricsAddress } = listenAddresses(f);
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
    healthAddress,
    metricsAddress,
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
