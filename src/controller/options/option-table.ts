// The controller's options as one table. Each row is one option: its default, value kind and bounds, command-line
// flag, help and documentation text, and the TSDoc a library user sees. The option types (ProvisionControllerOptions,
// ResolvedOptions) are derived from it, resolveOptions checks and defaults from it, `run hostpath` builds its flags
// from it, and the generated tables of docs/configuration.md and docs/writing-a-provisioner.md are rendered from it
// (`npm run gen:docs`; the docs tests fail when they are stale). Adding an option is adding a row.
import { LEADER_ELECTION_DEFAULTS } from '../../runtime/leader-election.ts';
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import { boolean, choice, duration, group, hook, integer, list, number, text, variants } from './option-spec.ts';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

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

/** The default PV name: `pvc-<claim uid>`. */
export function defaultVolumeName(claim: PersistentVolumeClaim): string {
  return `pvc-${claim.metadata.uid ?? ''}`;
}

/** Every controller option, in documentation order. Durations are milliseconds. */
export const CONTROLLER_OPTIONS = {
  /** How leadership is shared between replicas, and the timings of the Lease (or per-claim lock). */
  leaderElection: group(
    {
      /** `lease`: one active replica; `none`: always active; `per-claim`: active/active with a lock per claim. */
      mode: choice<LeaderElectionMode>(['lease', 'none', 'per-claim'], {
        default: 'lease',
        flag: 'leader-election',
        placeholder: '<mode>',
        help: 'lease: one active replica; none: always active; per-claim: active/active with a lock per claim',
        doc: '`lease`: one `coordination.k8s.io` Lease per provisioner name, one active replica; `none`: always active (one replica, or the DaemonSet where the node is the shard); `per-claim`: every replica works, a lock annotation on each claim decides who provisions it',
      }),
      /** Namespace of the Lease; unset: $POD_NAMESPACE, then the service account's namespace file, then `default`. */
      namespace: text({
        flag: 'leader-election-namespace',
        placeholder: '<ns>',
        help: "namespace of the Lease (default: $POD_NAMESPACE, the service account's, then default)",
        doc: 'namespace of the Lease',
        docDefault: "`$POD_NAMESPACE`, then the service account's namespace, then `default`",
      }),
      /** How long a Lease (and a per-claim lock) is valid without renewal. */
      leaseDurationMs: duration({
        min: 1,
        default: LEADER_ELECTION_DEFAULTS.leaseDurationMs,
        flag: 'lease-duration',
        help: 'lease (and per-claim lock) duration',
        doc: 'how long a Lease (or per-claim lock) is valid without renewal',
      }),
      /** The leader steps down when it cannot renew within this; must be less than the lease duration. */
      renewDeadlineMs: duration({
        min: 1,
        default: LEADER_ELECTION_DEFAULTS.renewDeadlineMs,
        flag: 'renew-deadline',
        help: 'the leader gives up if it cannot renew within this',
        doc: 'the leader steps down when it cannot renew within this; must be < lease duration',
      }),
      /** Interval between acquire/renew attempts; the renew deadline must be more than 1.2 × this. */
      retryPeriodMs: duration({
        min: 1,
        default: LEADER_ELECTION_DEFAULTS.retryPeriodMs,
        flag: 'retry-period',
        help: 'interval between lease attempts',
        doc: 'interval between acquire/renew attempts; renew deadline must be > 1.2 × this',
      }),
    },
    'leader-election',
  ),
  /**
   * How often this instance renews its heartbeat Lease (in the Lease namespace, every mode): how `explain` knows,
   * from the cluster alone, that a controller serves the provisioner name. 0 = no heartbeat.
   */
  heartbeatIntervalMs: duration({
    default: 30 * SECOND,
    flag: 'heartbeat-interval',
    help: "renew this instance's heartbeat Lease this often (0 = none)",
    doc: "renew this instance's heartbeat Lease (one per host, in the Lease namespace, every mode) this often, so `explain` can tell whether a controller serves the provisioner name; `0` = none",
  }),
  /** Claim workers, and as many volume workers. */
  threadiness: integer({
    min: 1,
    default: 4,
    flag: 'worker-threads',
    help: 'claim workers (and as many volume workers)',
    doc: 'claim workers, and as many volume workers',
  }),
  /** Informer resync: every object is re-evaluated this often (costs no API calls for settled claims). */
  resyncPeriodMs: duration({
    default: 15 * MINUTE,
    flag: 'resync-period',
    help: 'every object is re-evaluated this often',
    doc: 'every claim and volume is re-evaluated this often',
  }),
  /** Retries after errors: per-object backoff, the queues' rate limit, and when to give up. */
  retry: group({
    /**
     * Failed provisioning attempts of one claim before it is given up (Warning event + metric). A given-up claim is
     * not retried, not even by resync, until its spec, its annotations or its StorageClass change. 0 = retry forever.
     */
    failedProvisionThreshold: integer({
      min: 0,
      default: 15,
      flag: 'failed-provision-threshold',
      help: 'failed attempts before a claim is given up (0 = retry forever)',
      doc: 'failed attempts before a claim is given up (`ProvisioningGivenUp` event; retried again only when the claim or its class changes); `0` = retry forever',
    }),
    /** The same for deleting volumes. */
    failedDeleteThreshold: integer({
      min: 0,
      default: 15,
      flag: 'failed-delete-threshold',
      help: 'failed attempts before a volume deletion is given up (0 = retry forever)',
      doc: 'the same for deleting volumes',
    }),
    /** First retry delay after an error. */
    backoffBaseMs: duration({
      min: 1,
      default: 15 * SECOND,
      flag: 'backoff-base',
      help: 'first retry delay after an error',
    }),
    /** Retry delay cap. */
    backoffMaxMs: duration({
      min: 1,
      default: 1000 * SECOND,
      flag: 'backoff-max',
      help: 'retry delay cap',
    }),
    /** Double the retry delay after each error (true) or always wait `backoffBaseMs` (false). */
    exponentialBackoff: boolean({
      default: true,
      flag: 'exponential-backoff',
      help: 'double the retry delay after each error (false: a fixed --backoff-base)',
      doc: 'double the delay after each failure; `false`: always the base delay',
    }),
    /** Overall rate of retries of one queue (token bucket; claims and volumes have separate buckets), per second. */
    qps: number({
      min: Number.MIN_VALUE,
      default: 10,
      flag: 'queue-qps',
      help: 'rate limit of retries per queue',
      doc: 'overall rate of retries per queue (claims, volumes: separate buckets)',
    }),
    /** Burst of that token bucket. */
    burst: integer({
      min: 1,
      default: 100,
      flag: 'queue-burst',
      help: 'burst of retries per queue',
      doc: 'burst of that bucket',
    }),
    /**
     * Slow retry after an InfeasibleError: the claim is not provisioned again before this delay, unless the claim or
     * its class changes. (The Go library's RetryIntervalMax had no effect; here it does.)
     */
    infeasibleDelayMs: duration({
      default: 5 * MINUTE,
      flag: 'retry-interval-max',
      help: 'earliest retry of an infeasible claim (unless it or its class changes)',
      doc: 'an infeasible claim (e.g. a bad StorageClass parameter) is not retried before this, unless it or its class changes',
    }),
  }),
  /** Abort signal timeout around one claim sync (provision() included). 0 = none. */
  provisionTimeoutMs: duration({
    default: 0,
    flag: 'provision-timeout',
    help: 'abort one provisioning attempt after this (0 = none)',
    doc: 'abort one provisioning attempt after this',
    docDefault: '`0` (none)',
  }),
  /** The same around one volume sync (delete() included). 0 = none. */
  deletionTimeoutMs: duration({
    default: 0,
    flag: 'deletion-timeout',
    help: 'abort one deletion attempt after this (0 = none)',
    doc: 'abort one deletion attempt after this',
    docDefault: '`0` (none)',
  }),
  /** How the controller saves the PV object provision() returned. */
  volumeSave: variants(
    choice<'retry' | 'background'>(['retry', 'background'], {
      default: 'retry',
      flag: 'volume-save',
      placeholder: '<mode>',
      help: 'retry: save the PV a few times, then delete the directory and retry; background: retry saving forever',
      doc: 'how the PV is saved after the volume is created. `retry`: the attempts and interval below, then the volume is deleted again (`ProvisioningCleanupFailed` if that fails) and the claim retried; `background`: one attempt, then retried forever from a queue with backoff (the volume is never deleted)',
    }),
    {
      retry: {
        /** PV create attempts before the backend volume is deleted again and the claim retried. */
        retryCount: integer({
          min: 1,
          default: 5,
          flag: 'volume-save-retries',
          help: '(retry) PV create attempts',
          doc: 'PV create attempts',
        }),
        /** Delay between those attempts. */
        intervalMs: duration({
          default: 10 * SECOND,
          flag: 'volume-save-interval',
          help: '(retry) delay between PV create attempts',
          doc: 'delay between them',
        }),
      },
      background: {
        /** First retry delay of the save queue. */
        baseDelayMs: duration({
          min: 1,
          default: 5,
          help: '(background) first retry delay of the save queue',
          doc: 'first retry delay of the save queue',
        }),
        /** Retry delay cap of the save queue. */
        maxDelayMs: duration({
          min: 1,
          default: 1000 * SECOND,
          help: '(background) retry delay cap of the save queue',
          doc: 'retry delay cap of the save queue',
        }),
      },
    },
  ),
  /** What to do with claims that have `spec.selector`. */
  selectorPolicy: choice<SelectorPolicy>(['reject', 'allow'], {
    default: 'reject',
    flag: 'selector-policy',
    placeholder: '<policy>',
    help: 'claims with spec.selector: reject (Warning event) or allow (hand to the provisioner)',
    doc: 'claims with `spec.selector`: `reject` (Warning event) or `allow` (handed to the provisioner, which labels the PV to match; the hostpath provisioner refuses them anyway)',
  }),
  /**
   * Keep a cache of Nodes (one more informer) and pass the selected node's object to provision() as
   * `selectedNode` (v13 of the Go library dropped its node lister: provisioners look nodes up).
   */
  nodeCache: boolean({
    default: false,
    flag: 'node-cache',
    help: "watch Nodes and hand the selected node's object to the provisioner (needs list/watch on nodes)",
    doc: "watch Nodes and give provision() the selected node's object; needs `list`, `watch` on `nodes` (the manifests in `deploy/` do not grant it). The hostpath provisioner's `nodeAffinityKey` does not need it: without it the node is read with one GET when a class needs its labels.",
  }),
  /**
   * On stop, how long to wait for in-flight provision()/delete() calls to return after their signal aborted, before
   * run() resolves anyway (a provisioner that ignores its AbortSignal must not hang shutdown).
   */
  shutdownTimeoutMs: duration({
    default: 30 * SECOND,
    flag: 'shutdown-timeout',
    help: 'on shutdown, how long to wait for in-flight provision/delete calls',
    doc: 'on shutdown, how long to wait for in-flight provision/delete calls after their signal aborted',
  }),
  /** Extra names treated as ours (CSI migration: the in-tree name, e.g. `kubernetes.io/aws-ebs`). */
  additionalProvisionerNames: list({
    default: [],
    flag: 'additional-provisioner-names',
    placeholder: '<a,b>',
    help: 'comma-separated extra names treated as ours (migrated classes)',
    doc: 'extra provisioner names treated as ours (e.g. the in-tree name a CSI driver migrated from); the flag takes a comma-separated list',
    docDefault: 'none',
  }),
  /** Put `external-provisioner.volume.kubernetes.io/finalizer` on Bound PVs with reclaim policy Delete. */
  addFinalizer: boolean({
    default: false,
    flag: 'add-finalizer',
    help: 'put external-provisioner.volume.kubernetes.io/finalizer on Delete-policy PVs',
    doc: 'put `external-provisioner.volume.kubernetes.io/finalizer` on Bound PVs with reclaim policy Delete, so the volume is removed even if the PV object is deleted first',
  }),
  /** PV name for a claim; must be deterministic and unique. */
  volumeNameHook: hook<(claim: PersistentVolumeClaim) => string>({
    default: defaultVolumeName,
    help: 'PV name for a claim; must be deterministic and unique',
    docDefault: '`pvc-<claim uid>`',
  }),
  /** Leak inventory: compares provisioner.listVolumes() with the PVs and reports backend volumes without a PV. */
  leakInventory: group({
    /** Take the inventory (needs provisioner.listVolumes()). */
    enabled: boolean({
      default: false,
      flag: 'leak-inventory',
      help: 'periodically report directories that have no PV',
      doc: 'periodically compare the volumes the provisioner lists (`listVolumes()`; for hostpath, the volume records on disk) with the PVs and report those without a PV (`controller_leaked_volumes`)',
    }),
    /** How often to take the inventory. */
    intervalMs: duration({
      min: 1,
      default: 10 * MINUTE,
      flag: 'leak-inventory-interval',
      help: 'how often to take the leak inventory',
      doc: 'how often',
    }),
    /** A backend volume younger than this is never reported (its PV may be on its way). */
    gracePeriodMs: duration({
      default: 60 * MINUTE,
      max: Number.MAX_SAFE_INTEGER,
      flag: 'leak-inventory-grace-period',
      help: 'a directory younger than this is never reported',
      doc: 'a volume younger than this is never reported (its PV may be on its way)',
    }),
    /** Opt-in: call provisioner.delete() on leaked volumes (with a minimal PV describing them). */
    deleteLeaked: boolean({
      default: false,
      flag: 'delete-leaked',
      help: 'delete the leaked directories the inventory finds (needs --leak-inventory)',
      doc: 'delete what the inventory reports (needs the inventory enabled)',
    }),
  }),
};
