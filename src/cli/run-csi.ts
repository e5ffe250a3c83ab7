// `kube-provisioner run csi`: the sidecar next to a CSI plugin. One process does external-provisioner's job
// (ProvisionController + CsiProvisioner), external-resizer's (the controller's resize flow, when the plugin expands
// volumes) and the capacity tracker's (CSIStorageCapacity objects, --enable-capacity), with one API client, one
// leader election and one /metrics. startCsiSidecar is the module API (`dev --csi` and tests use it); the command
// (run-csi-command.ts) wraps it with signals.
import type { Registry } from 'prom-client';
import { ProvisionController } from '../controller/provision-controller.ts';
import { mergeOptions, type ProvisionControllerOptions } from '../controller/options/controller-options.ts';
import {
  CapacityController,
  ownerReferenceFor,
  type CapacityControllerOptions,
  type CapacityOwner,
} from '../csi/capacity-publisher.ts';
import { InformedClusterAccess } from '../csi/cluster-access.ts';
import { CloneProtection } from '../csi/clone-protection.ts';
import type { ClaimAccess } from '../csi/node-ownership.ts';
import { CsiProvisioner, type CsiProvisionerSettings } from '../csi/csi-provisioner.ts';
import { KubeClient } from '../runtime/client.ts';
import { startHealthServer, type HealthServer } from '../runtime/health-server.ts';
import { createLogger, type Logger } from '../runtime/logger.ts';
import { createMetricsRegistry } from '../runtime/metrics.ts';
import { nodes, persistentVolumeClaims } from '../runtime/resources.ts';
import { undefinedIfNotFound } from '../runtime/errors.ts';
import { errorMessage } from '../types/errors.ts';
import type { Node, PersistentVolumeClaim } from '../types/k8s.ts';
import type { RunCsiOptions } from './csi-options.ts';
import { loadCliKubeConfig } from './user-errors.ts';
import { userAgent } from './version.ts';

/** What startCsiSidecar needs besides the options; everything has a default. */
export interface CsiSidecarDeps {
  /** The API client (default: one from --kubeconfig/--context, closed by stop()). A given client is not closed. */
  client?: KubeClient;
  logger?: Logger;
  /** Where every metric goes (default: a registry with the process metrics). */
  registry?: Registry;
  /** Between two looks for the socket and two probes at start-up (default 1 s). */
  startupIntervalMs?: number;
  /** Aborts the start-up waits (socket, Probe); after start, use stop(). */
  signal?: AbortSignal;
}

/** A started sidecar. */
export interface CsiSidecar {
  /** GetPluginInfo's name: the provisioner name StorageClasses use. */
  driverName: string;
  provisioner: CsiProvisioner;
  controller: ProvisionController;
  /** The capacity loop (with --enable-capacity). */
  capacity?: CapacityController;
  registry: Registry;
  healthUrl?: string;
  metricsUrl?: string;
  /** Settles after a stop (workers drained, Lease released, endpoints closed, channel closed). */
  done: Promise<void>;
  /** Stops everything and waits for it. */
  stop(): Promise<void>;
}

/**
 * Starts the sidecar: waits for the plugin's socket, Probes until ready, reads its name and capabilities (refusing
 * a plugin without CREATE_DELETE_VOLUME), then runs the controller (provisioning, deletion, resize when the plugin
 * expands), the cloning-protection loop, the capacity loop (--enable-capacity) and the health/metrics endpoints.
 * Throws when it cannot start; nothing is left running then.
 */
export async function startCsiSidecar(o: RunCsiOptions, deps: CsiSidecarDeps = {}): Promise<CsiSidecar> {
  const logger = deps.logger ?? createLogger({ level: o.logLevel, name: 'kube-provisioner' });
  const ownClient = !deps.client;
  const client =
    deps.client ??
    new KubeClient({
      kubeConfig: loadCliKubeConfig({ path: o.kubeconfig, context: o.context }).kubeConfig,
      userAgent: userAgent('csi'),
      qps: o.kubeApiQps,
      burst: o.kubeApiBurst,
      timeoutMs: o.kubeApiTimeoutMs,
    });
  const registry = deps.registry ?? createMetricsRegistry({ processMetrics: true });
  const stopping = new AbortController();
  const startSignal = deps.signal ? AbortSignal.any([deps.signal, stopping.signal]) : stopping.signal;
  const cluster = new InformedClusterAccess(client, { logger });
  const cleanup: Array<() => unknown> = [];
  if (ownClient) cleanup.push(() => client.close());
  cluster.start();
  cleanup.push(() => cluster.stop());
  try {
    let node: CsiProvisionerSettings['node'];
    if (o.nodeDeployment && o.nodeName) {
      const n = await undefinedIfNotFound(client.get<Node>(nodes, o.nodeName, { signal: startSignal }));
      node = {
        name: o.nodeName,
        labels: n?.metadata.labels ?? {},
        ...(o.nodeDeploymentImmediateBinding
          ? {
              immediateBinding: {
                claims: claimAccess(client),
                baseDelayMs: o.nodeDeploymentBaseDelayMs,
                maxDelayMs: o.nodeDeploymentMaxDelayMs,
              },
            }
          : {}),
      };
    }
    const provisioner = await CsiProvisioner.start({
      address: o.csiAddress,
      timeoutMs: o.timeoutMs,
      registry,
      signal: startSignal,
      cluster,
      logger,
      naming: { prefix: o.volumeNamePrefix, uuidLength: o.volumeNameUuidLength },
      defaultFsType: o.defaultFsType,
      strictTopology: o.strictTopology,
      immediateTopology: o.immediateTopology,
      extraCreateMetadata: o.extraCreateMetadata,
      controllerPublishReadOnly: o.controllerPublishReadOnly,
      preventVolumeModeConversion: o.preventVolumeModeConversion,
      ...(node ? { node } : {}),
      ...(deps.startupIntervalMs !== undefined ? { startupIntervalMs: deps.startupIntervalMs } : {}),
    });
    cleanup.push(() => provisioner.close());
    const controller = new ProvisionController(client, provisioner.driverName, provisioner, {
      ...mergeOptions<ProvisionControllerOptions>(provisioner.controllerOptions(), controllerOptionsOf(o)),
      logger,
      registry,
    });

    let capacity: CapacityController | undefined;
    if (o.enableCapacity) {
      capacity = await startCapacity(o, client, provisioner, logger, registry, startSignal, {
        active: () => controller.isLeader(),
        onActive: (listener) => controller.onStartedLeading(listener),
      });
    }

    const servers: HealthServer[] = [];
    let healthUrl: string | undefined;
    let metricsUrl: string | undefined;
    const checks = controller.healthChecks();
    cleanup.push(() => Promise.all(servers.map((s) => s.stop())));
    if (o.healthAddress) {
      const shared = o.metricsAddress === o.healthAddress;
      const server = await startHealthServer({
        address: o.healthAddress,
        registry: shared ? registry : undefined,
        checks: checks,
      });
      servers.push(server);
      healthUrl = server.url;
      if (shared) metricsUrl = `${server.url}/metrics`;
    }
    if (o.metricsAddress && o.metricsAddress !== o.healthAddress) {
      const server = await startHealthServer({ address: o.metricsAddress, registry });
      servers.push(server);
      metricsUrl = `${server.url}/metrics`;
    }

    // The source-protection loop: cloning protection, and the orphaned snapshot finalizer sweep for plugins that
    // restore snapshots.
    const snapshots = provisioner.driver.controllerCapabilities.has('CREATE_DELETE_SNAPSHOT');
    const clones = new CloneProtection({
      client,
      cluster,
      logger,
      snapshotSweepMs: snapshots ? o.snapshotOrphanSweepIntervalMs : 0,
    });
    logger.info(
      {
        driver: provisioner.driverName,
        leaderElection: o.leaderElection,
        capacity: o.enableCapacity,
        expand: provisioner.expand !== undefined,
        health: healthUrl,
        metrics: metricsUrl,
      },
      'CSI sidecar starting',
    );
    const loops = [
      controller.run(stopping.signal),
      clones.run(stopping.signal),
      ...(capacity ? [capacity.run(stopping.signal)] : []),
    ];
    const done = (async () => {
      try {
        const results = await Promise.allSettled(loops);
        for (const r of results)
          if (r.status === 'rejected') logger.error({ err: errorMessage(r.reason) }, 'a CSI sidecar loop failed');
      } finally {
        await runCleanup(cleanup);
      }
    })();
    // A loop that ends by itself (not through stop()) ends them all.
    void Promise.race(loops).finally(() => stopping.abort(new Error('CSI sidecar stopped')));
    return {
      driverName: provisioner.driverName,
      provisioner,
      controller,
      ...(capacity ? { capacity } : {}),
      registry,
      ...(healthUrl ? { healthUrl } : {}),
      ...(metricsUrl ? { metricsUrl } : {}),
      done,
      stop: async () => {
        stopping.abort(new Error('CSI sidecar stopped'));
        await done;
      },
    };
  } catch (err) {
    stopping.abort(err);
    await runCleanup(cleanup);
    throw err;
  }
}

async function runCleanup(steps: Array<() => unknown>): Promise<void> {
  for (const step of steps.reverse()) {
    try {
      await step();
    } catch {
      // best effort: the rest still runs
    }
  }
}

/** Claims read and written for the node deployment's ownership race: a GET, and a PUT with the resourceVersion. */
function claimAccess(client: KubeClient): ClaimAccess {
  return {
    get: (namespace, name, signal) =>
      undefinedIfNotFound(client.get<PersistentVolumeClaim>(persistentVolumeClaims, name, { namespace, signal })),
    update: (claim, signal) => client.update(persistentVolumeClaims, claim, { signal }),
  };
}

/** The controller options the flags set, layered over CsiProvisioner's (external-provisioner's) defaults. */
export function controllerOptionsOf(o: RunCsiOptions): ProvisionControllerOptions {
  return {
    leaderElection: {
      mode: o.leaderElection,
      namespace: o.leaderElectionNamespace ?? o.podNamespace,
      leaseDurationMs: o.leaseDurationMs,
      renewDeadlineMs: o.renewDeadlineMs,
      retryPeriodMs: o.retryPeriodMs,
    },
    threadiness: o.workerThreads,
    retry: {
      backoffBaseMs: o.retryIntervalStartMs,
      backoffMaxMs: o.retryIntervalMaxMs,
      infeasibleDelayMs: o.retryIntervalMaxMs,
    },
  };
}

/** The capacity loop: its segments (the node's own with --node-deployment), its owner, its managed-by label. */
async function startCapacity(
  o: RunCsiOptions,
  client: KubeClient,
  provisioner: CsiProvisioner,
  logger: Logger,
  registry: Registry,
  signal: AbortSignal,
  leadership: Pick<CapacityControllerOptions, 'active' | 'onActive'>,
): Promise<CapacityController> {
  if (!provisioner.driver.controllerCapabilities.has('GET_CAPACITY')) {
    throw new Error(
      `--enable-capacity: CSI driver ${provisioner.driverName} does not report the GET_CAPACITY controller capability`,
    );
  }
  const topology = provisioner.driver.pluginCapabilities.has('VOLUME_ACCESSIBILITY_CONSTRAINTS');
  let fixedSegment: Record<string, string> | undefined;
  if (o.nodeDeployment) {
    const info = await provisioner.client.call('nodeGetInfo', {}, { signal });
    fixedSegment = info.accessibleTopology?.segments ?? {};
  } else if (!topology) {
    fixedSegment = {};
  }
  let owner: CapacityOwner | undefined;
  if (o.podName && o.capacityOwnerrefLevel >= 0) {
    owner = await ownerReferenceFor(client, o.podNamespace, o.podName, o.capacityOwnerrefLevel as 0 | 1 | 2, signal);
  } else if (o.capacityOwnerrefLevel >= 0) {
    logger.warn({}, 'POD_NAME is not set: CSIStorageCapacity objects get no owner reference');
  }
  return new CapacityController({
    client,
    csi: provisioner.client,
    driverName: provisioner.driverName,
    namespace: o.podNamespace,
    managedBy: o.nodeDeployment && o.nodeName ? managedByForNode(o.nodeName) : 'external-provisioner',
    ...(owner ? { owner } : {}),
    ...(fixedSegment ? { fixedSegment } : {}),
    pollIntervalMs: o.capacityPollIntervalMs,
    immediateBinding: o.capacityForImmediateBinding,
    // Written by the Lease holder only (node deployments and `none` are always active); a standby's keys wait for
    // the election event.
    ...leadership,
    registry,
    logger,
  });
}

/** external-provisioner's managed-by value of a node deployment: `external-provisioner-<node>`, at most 63 characters. */
export function managedByForNode(nodeName: string): string {
  const name = `external-provisioner-${nodeName}`;
  return name.length <= 63 ? name : name.slice(0, 63).replace(/[-.]+$/, '');
}
