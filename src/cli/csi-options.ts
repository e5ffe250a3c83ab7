// Flag definitions of `kube-provisioner run csi`: the sidecar next to a CSI plugin, doing external-provisioner's,
// external-resizer's and the capacity tracker's jobs in one process. Flag names are external-provisioner's where
// the meaning is the same (docs/csi.md has the table, flag by flag). Parsing is kept apart from running (and from
// the gRPC code) so the flags are testable without a plugin and the manifests' args can be checked against it.
import { Command, InvalidArgumentError, type Option } from 'commander';
import { CONTROLLER_OPTIONS, type LeaderElectionMode } from '../controller/options/option-table.ts';
import { LEADER_ELECTION_DEFAULTS } from '../runtime/leader-election.ts';
import {
  addConnectionOptions,
  addressArg,
  applyEnvironment,
  CliOptionError,
  durationValue,
  givenIn,
  intArg,
  listenAddresses,
  LOG_LEVELS,
  opt,
  parseBoolean,
  rowArg,
  type GivenFlag,
  type LogLevel,
} from './flags.ts';

/** `--capacity-ownerref-level`: -1 none, 0 the pod, 1 its controller (StatefulSet, DaemonSet, ReplicaSet), 2 the ReplicaSet's Deployment. */
export type CapacityOwnerLevel = -1 | 0 | 1 | 2;

/** Everything `run csi` needs, typed and validated. */
export interface RunCsiOptions {
  /** The plugin's unix socket: a path or unix:///path. */
  csiAddress: string;
  kubeconfig?: string;
  context?: string;
  kubeApiQps: number;
  kubeApiBurst: number;
  kubeApiTimeoutMs: number;
  /** Per CSI call deadline (`--timeout`). */
  timeoutMs: number;
  retryIntervalStartMs: number;
  retryIntervalMaxMs: number;
  leaderElection: LeaderElectionMode;
  leaderElectionNamespace?: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  workerThreads: number;
  volumeNamePrefix: string;
  volumeNameUuidLength: number;
  extraCreateMetadata: boolean;
  defaultFsType: string;
  strictTopology: boolean;
  immediateTopology: boolean;
  controllerPublishReadOnly: boolean;
  enableCapacity: boolean;
  capacityPollIntervalMs: number;
  capacityOwnerrefLevel: CapacityOwnerLevel;
  capacityForImmediateBinding: boolean;
  /** `--node-deployment`: one instance per node, serving the claims selected for NODE_NAME. */
  nodeDeployment: boolean;
  /** NODE_NAME (required with --node-deployment). */
  nodeName?: string;
  /** `--node-deployment-immediate-binding`: node instances race for unselected Immediate claims. */
  nodeDeploymentImmediateBinding: boolean;
  /** `--node-deployment-base-delay`: the first attempt's delay is at most this. */
  nodeDeploymentBaseDelayMs: number;
  /** `--node-deployment-max-delay`: the longest delay of a later attempt. */
  nodeDeploymentMaxDelayMs: number;
  /** `--prevent-volume-mode-conversion`: a restore may not change the snapshot source's volume mode unless allowed. */
  preventVolumeModeConversion: boolean;
  /** `--snapshot-orphan-sweep-interval`: how often orphaned snapshot source-protection finalizers are removed; 0 off. */
  snapshotOrphanSweepIntervalMs: number;
  /** $POD_NAMESPACE: where CSIStorageCapacity objects (and the Lease) go; `default` when unset. */
  podNamespace: string;
  /** $POD_NAME: the owner of the CSIStorageCapacity objects; absent = no owner references. */
  podName?: string;
  /** `host:port` of /healthz and /readyz (and /metrics when metricsAddress is the same); undefined = off. */
  healthAddress?: string;
  /** `host:port` of /metrics; undefined = off. */
  metricsAddress?: string;
  logLevel: LogLevel;
}

/** external-provisioner's default socket. */
export const DEFAULT_CSI_ADDRESS = '/run/csi/socket';

function positiveDuration(v: string): number {
  const ms = durationValue(v);
  if (ms <= 0) throw new InvalidArgumentError(`"${v}" must be longer than 0`);
  return ms;
}
function nonNegativeDuration(v: string): number {
  const ms = durationValue(v);
  if (ms < 0) throw new InvalidArgumentError(`"${v}" must not be negative`);
  return ms;
}
/** `none|lease|per-claim`, and external-provisioner's boolean spelling: true = lease, false = none. */
function leaderElectionArg(v: string): LeaderElectionMode {
  const t = v.trim().toLowerCase();
  if (t === 'none' || t === 'lease' || t === 'per-claim') return t;
  if (['true', '1', 'yes'].includes(t)) return 'lease';
  if (['false', '0', 'no'].includes(t)) return 'none';
  throw new InvalidArgumentError(`"${v}" is not none, lease or per-claim (true/false as in external-provisioner)`);
}
function ownerLevel(v: string): CapacityOwnerLevel {
  const n = intArg(-1)(v);
  if (n > 2) throw new InvalidArgumentError(`"${v}" is not -1, 0, 1 or 2`);
  return n as CapacityOwnerLevel;
}
const bool = (o: Option, dflt: boolean) => o.argParser(parseBoolean).default(dflt).preset('true');

/** Adds every flag of `run csi` to `cmd`. */
export function addRunCsiOptions(cmd: Command): Command {
  addConnectionOptions(cmd);
  const own: Option[] = [
    opt('--csi-address <path>', "the CSI plugin's unix socket: /path or unix:///path").default(DEFAULT_CSI_ADDRESS),
    opt('--timeout <duration>', 'deadline of each CSI call').argParser(positiveDuration).default(10_000, '10s'),
    opt(
      '--retry-interval-start <duration>',
      'first retry delay of a failed provisioning, deletion or expansion; doubles each time',
    )
      .argParser(positiveDuration)
      .default(1_000, '1s'),
    opt('--retry-interval-max <duration>', 'longest retry delay (also the slow retry of an infeasible claim)')
      .argParser(positiveDuration)
      .default(300_000, '5m'),
    opt(
      '--leader-election [mode]',
      'none, lease (one active replica) or per-claim (active/active); true/false as in external-provisioner',
    )
      .argParser(leaderElectionArg)
      .default('lease')
      .preset('lease'),
    opt('--leader-election-namespace <ns>', 'namespace of the Lease (default: $POD_NAMESPACE)'),
    opt('--leader-election-lease-duration <duration>', 'lease (and per-claim lock) duration')
      .argParser(positiveDuration)
      .default(LEADER_ELECTION_DEFAULTS.leaseDurationMs, `${LEADER_ELECTION_DEFAULTS.leaseDurationMs / 1000}s`),
    opt('--leader-election-renew-deadline <duration>', 'the leader gives up if it cannot renew within this')
      .argParser(positiveDuration)
      .default(LEADER_ELECTION_DEFAULTS.renewDeadlineMs, `${LEADER_ELECTION_DEFAULTS.renewDeadlineMs / 1000}s`),
    opt('--leader-election-retry-period <duration>', 'interval between lease attempts')
      .argParser(positiveDuration)
      .default(LEADER_ELECTION_DEFAULTS.retryPeriodMs, `${LEADER_ELECTION_DEFAULTS.retryPeriodMs / 1000}s`),
    opt('--worker-threads <n>', 'claim workers (and as many volume and resize workers)')
      .argParser(rowArg(CONTROLLER_OPTIONS.threadiness))
      .default(100),
    opt('--volume-name-prefix <prefix>', 'prefix of volume (and PV) names: <prefix>-<claim uid>').default('pvc'),
    opt(
      '--volume-name-uuid-length <n>',
      'keep this many characters of the claim uid, dashes dropped (-1: the whole uid)',
    )
      .argParser(intArg(-1))
      .default(-1),
    bool(
      opt(
        '--extra-create-metadata [bool]',
        "add csi.storage.k8s.io/pvc/name, pvc/namespace and pv/name to CreateVolume's parameters",
      ),
      false,
    ),
    opt('--default-fstype <type>', 'fstype when the class sets none (default: none, the plugin decides)').default(''),
    bool(opt('--strict-topology [bool]', "with a selected node, request only that node's segment"), false),
    bool(opt('--immediate-topology [bool]', 'send topology requirements for Immediate classes (all segments)'), true),
    bool(
      opt('--controller-publish-readonly [bool]', 'a claim whose only mode is ReadOnlyMany gets a read-only PV source'),
      false,
    ),
    bool(
      opt(
        '--enable-capacity [bool]',
        'publish CSIStorageCapacity objects (GetCapacity per topology segment and WaitForFirstConsumer class) in $POD_NAMESPACE',
      ),
      false,
    ),
    opt('--capacity-poll-interval <duration>', 'how often GetCapacity is asked again')
      .argParser(positiveDuration)
      .default(60_000, '1m'),
    opt(
      '--capacity-ownerref-level <n>',
      'owner of the capacity objects: -1 none, 0 the pod, 1 its StatefulSet/DaemonSet/ReplicaSet, 2 the Deployment (needs POD_NAME)',
    )
      .argParser(ownerLevel)
      .default(1),
    bool(opt('--capacity-for-immediate-binding [bool]', 'publish capacity for Immediate classes too'), false),
    bool(
      opt(
        '--node-deployment [bool]',
        "one instance per node: serve the claims selected for NODE_NAME, publish that node's capacity",
      ),
      false,
    ),
    opt('--node-name <name>', 'this node (with --node-deployment)', 'NODE_NAME'),
    bool(
      opt(
        '--node-deployment-immediate-binding [bool]',
        'with --node-deployment: race the other nodes for Immediate claims no node was selected for',
      ),
      true,
    ),
    opt(
      '--node-deployment-base-delay <duration>',
      'with --node-deployment: the first attempt to own an Immediate claim waits a random delay up to this',
    )
      .argParser(positiveDuration)
      .default(20_000, '20s'),
    opt(
      '--node-deployment-max-delay <duration>',
      'with --node-deployment: later attempts wait doubling delays up to this',
    )
      .argParser(positiveDuration)
      .default(60_000, '1m'),
    bool(
      opt(
        '--prevent-volume-mode-conversion [bool]',
        'refuse a restore whose volume mode differs from the snapshot source unless its VolumeSnapshotContent allows it',
      ),
      true,
    ),
    opt(
      '--snapshot-orphan-sweep-interval <duration>',
      'how often volumesnapshot-as-source-protection finalizers no Pending claim needs are removed (0 disables)',
    )
      .argParser(nonNegativeDuration)
      .default(300_000, '5m'),
    opt(
      '--health-address <host:port>',
      '/healthz, /readyz (and /metrics unless --metrics-address differs); off to disable',
    )
      .argParser(addressArg)
      .default(':8080'),
    opt('--metrics-address <host:port>', '/metrics address (default: the health address); off to disable').argParser(
      addressArg,
    ),
    opt('--log-level <level>', 'log level (JSON logs on stderr)')
      .choices([...LOG_LEVELS])
      .default('info'),
  ];
  for (const o of own) cmd.addOption(o);
  return cmd;
}

/** Raw commander values of `run csi`. */
export interface RawRunCsiFlags {
  kubeconfig?: string;
  context?: string;
  kubeApiQps: number;
  kubeApiBurst: number;
  kubeApiTimeout: number;
  csiAddress: string;
  timeout: number;
  retryIntervalStart: number;
  retryIntervalMax: number;
  leaderElection: LeaderElectionMode;
  leaderElectionNamespace?: string;
  leaderElectionLeaseDuration: number;
  leaderElectionRenewDeadline: number;
  leaderElectionRetryPeriod: number;
  workerThreads: number;
  volumeNamePrefix: string;
  volumeNameUuidLength: number;
  extraCreateMetadata: boolean;
  defaultFstype: string;
  strictTopology: boolean;
  immediateTopology: boolean;
  controllerPublishReadonly: boolean;
  enableCapacity: boolean;
  capacityPollInterval: number;
  capacityOwnerrefLevel: CapacityOwnerLevel;
  capacityForImmediateBinding: boolean;
  nodeDeployment: boolean;
  nodeName?: string;
  nodeDeploymentImmediateBinding: boolean;
  nodeDeploymentBaseDelay: number;
  nodeDeploymentMaxDelay: number;
  preventVolumeModeConversion: boolean;
  snapshotOrphanSweepInterval: number;
  healthAddress: string;
  metricsAddress?: string;
  logLevel: LogLevel;
}

/** Validates the combination of flags and converts them. Throws CliOptionError. */
export function resolveRunCsiOptions(
  f: RawRunCsiFlags,
  env: NodeJS.ProcessEnv,
  given: GivenFlag = () => false,
): RunCsiOptions {
  if (f.nodeDeployment && !f.nodeName)
    throw new CliOptionError('--node-deployment', "needs the node's name: set NODE_NAME (or --node-name)");
  if (f.nodeDeployment && f.leaderElection !== 'none') {
    // Each node's instance serves its own node: there is nobody to elect (external-provisioner runs it without).
    if (given('leaderElection'))
      throw new CliOptionError(
        '--leader-election',
        "must be none with --node-deployment (each node's instance serves its own claims)",
      );
    f = { ...f, leaderElection: 'none' };
  }
  if (f.enableCapacity && f.leaderElection === 'per-claim') {
    throw new CliOptionError(
      '--enable-capacity',
      'needs --leader-election lease or none (per-claim replicas would all write the same CSIStorageCapacity objects)',
    );
  }
  if (f.nodeDeploymentBaseDelay > f.nodeDeploymentMaxDelay)
    throw new CliOptionError('--node-deployment-base-delay', 'is longer than --node-deployment-max-delay');
  if (f.retryIntervalStart > f.retryIntervalMax)
    throw new CliOptionError('--retry-interval-start', 'is longer than --retry-interval-max');
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(f.volumeNamePrefix))
    throw new CliOptionError('--volume-name-prefix', `"${f.volumeNamePrefix}" is not a DNS label`);
  if (f.leaderElectionRenewDeadline >= f.leaderElectionLeaseDuration)
    throw new CliOptionError(
      '--leader-election-renew-deadline',
      'must be shorter than --leader-election-lease-duration',
    );
  const { healthAddress, metricsAddress } = listenAddresses(f);
  return {
    csiAddress: f.csiAddress,
    kubeconfig: f.kubeconfig,
    context: f.context,
    kubeApiQps: f.kubeApiQps,
    kubeApiBurst: f.kubeApiBurst,
    kubeApiTimeoutMs: f.kubeApiTimeout,
    timeoutMs: f.timeout,
    retryIntervalStartMs: f.retryIntervalStart,
    retryIntervalMaxMs: f.retryIntervalMax,
    leaderElection: f.leaderElection,
    leaderElectionNamespace: f.leaderElectionNamespace,
    leaseDurationMs: f.leaderElectionLeaseDuration,
    renewDeadlineMs: f.leaderElectionRenewDeadline,
    retryPeriodMs: f.leaderElectionRetryPeriod,
    workerThreads: f.workerThreads,
    volumeNamePrefix: f.volumeNamePrefix,
    volumeNameUuidLength: f.volumeNameUuidLength,
    extraCreateMetadata: f.extraCreateMetadata,
    defaultFsType: f.defaultFstype,
    strictTopology: f.strictTopology,
    immediateTopology: f.immediateTopology,
    controllerPublishReadOnly: f.controllerPublishReadonly,
    enableCapacity: f.enableCapacity,
    capacityPollIntervalMs: f.capacityPollInterval,
    capacityOwnerrefLevel: f.capacityOwnerrefLevel,
    capacityForImmediateBinding: f.capacityForImmediateBinding,
    nodeDeployment: f.nodeDeployment,
    nodeName: f.nodeName,
    nodeDeploymentImmediateBinding: f.nodeDeploymentImmediateBinding,
    nodeDeploymentBaseDelayMs: f.nodeDeploymentBaseDelay,
    nodeDeploymentMaxDelayMs: f.nodeDeploymentMaxDelay,
    preventVolumeModeConversion: f.preventVolumeModeConversion,
    snapshotOrphanSweepIntervalMs: f.snapshotOrphanSweepInterval,
    podNamespace: env.POD_NAMESPACE || env.NAMESPACE || 'default',
    podName: env.POD_NAME || undefined,
    healthAddress,
    metricsAddress,
    logLevel: f.logLevel,
  };
}

/** Parses `run csi` arguments (without `run csi`) as the command would; for tests, manifests and `dev --csi`. */
export function parseRunCsiArgs(args: string[], env: NodeJS.ProcessEnv = {}): RunCsiOptions {
  const cmd = addRunCsiOptions(new Command('csi'))
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} });
  cmd.parse(args, { from: 'user' });
  applyEnvironment(cmd, env);
  return resolveRunCsiOptions(cmd.opts<RawRunCsiFlags>(), env, givenIn(cmd));
}
