// One running hostpath provisioner: configuration source (file or ConfigMap), HostPathProvisioner,
// ProvisionController, health and metrics endpoints, wired together and stopped in order. Used by
// `run hostpath` (against any cluster) and by `dev` (in-process, against the embedded cluster).
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { Registry } from 'prom-client';
import { ProvisionController } from '../controller/provision-controller.ts';
import type { ProvisionControllerOptions } from '../controller/options/controller-options.ts';
import { MAX_EVENT_MESSAGE_BYTES } from '../controller/event-bounds.ts';
import { shortenText } from '../types/text.ts';
import { ConfigFileSource } from '../hostpath/config/config-file-source.ts';
import { filesystemFreeBytes } from '../hostpath/provision/free-space.ts';
import type { ConfigHolder, HostPathConfig, NfsExport } from '../hostpath/config/hostpath-config.ts';
import { HostPathProvisioner, type HostPathMode } from '../hostpath/hostpath-provisioner.ts';
import type { KubeClient } from '../runtime/client.ts';
import { EventRecorder } from '../runtime/event-recorder.ts';
import { startHealthServer, type HealthCheck, type HealthServer } from '../runtime/health-server.ts';
import type { Logger } from '../runtime/logger.ts';
import { createMetricsRegistry } from '../runtime/metrics.ts';
import { NotFoundError } from '../runtime/errors.ts';
import { nodes, persistentVolumes, storageClasses } from '../runtime/resources.ts';
import type { KubeObject, Node, PersistentVolume, StorageClass } from '../types/k8s.ts';
import { ANN_VOLUME_USAGE, formatVolumeUsage } from '../types/volume-usage.ts';
import {
  ConfigMapSource,
  REASON_CONFIG_RELOADED,
  REASON_INVALID_CONFIG,
} from '../hostpath/config/config-map-source.ts';
import { createHostPathMetrics } from '../hostpath/hostpath-metrics.ts';
import { VolumeWatch } from '../hostpath/ledger/volume-watch.ts';
import { HOSTPATH_CONFIG_DETAIL, type ConfigMapRef, type HostPathConfigLocation } from './hostpath-options.ts';

export interface HostPathServiceOptions {
  client: KubeClient;
  provisionerName: string;
  mode: HostPathMode;
  nodeName?: string;
  /** A fixed configuration, a file (watched), or a ConfigMap (watched through the API). */
  config: { value: HostPathConfig } | { file: string } | { configMap: ConfigMapRef };
  /** The NFS export the top-level shared path is mounted from (NFS_SERVER / NFS_PATH). */
  nfs?: NfsExport;
  /** deployment mode: node-local claims of other nodes. Default refuse. */
  otherNodeClaims?: 'refuse' | 'ignore';
  controller: ProvisionControllerOptions;
  /** undefined = no health endpoint. */
  healthAddress?: string;
  /** undefined = no metrics endpoint; equal to healthAddress = served by the health server. */
  metricsAddress?: string;
  logger: Logger;
  registry?: Registry;
  /** Base paths without a configured capacity get their filesystem's free space as capacity (dev). Default false. */
  freeSpaceCapacity?: boolean;
  /** Per-volume disk usage refresh interval (ms); 0 = no usage metrics. Default 60 s. */
  volumeUsageIntervalMs?: number;
  /** daemonset mode: how long a volume's Node must be missing before its PV is let go. Default 10 minutes. */
  goneNodeGraceMs?: number;
  /** Entries per second the usage walk may visit, all volumes together. Default 1,000. */
  volumeUsageWalkRate?: number;
}

/** A started service: `done` settles once run() returned after the signal aborted. */
export interface HostPathService {
  controller: ProvisionController;
  provisioner: HostPathProvisioner;
  registry: Registry;
  healthUrl?: string;
  metricsUrl?: string;
  /** Resolves after a graceful stop (workers drained, lease released, events flushed, endpoints closed). */
  done: Promise<void>;
}

/**
 * Starts the configuration source (throws if the first configuration is missing or invalid), then the
 * controller and the endpoints. Everything stops when `signal` aborts.
 */
export async function startHostPathService(o: HostPathServiceOptions, signal: AbortSignal): Promise<HostPathService> {
  const logger = o.logger;
  const registry = o.registry ?? createMetricsRegistry({ processMetrics: true });
  // Configuration events (reload / invalid) are recorded on the ConfigMap by a recorder of their own, so they
  // are flushed even when the controller is not leading.
  const configEvents = new EventRecorder({
    client: o.client,
    component: `${o.provisionerName}/config`,
    host: o.nodeName ?? hostname(),
    logger,
  });
  // The provisioner and the metrics need each other (metrics read its ledger, config sources count reloads).
  // (Replaced by the metrics' counters below; the sources call through this object.)
  const reloads = { applied: () => {}, invalid: () => {} };
  let holder: ConfigHolder & { stop(): unknown };
  try {
    holder = await startConfigSource(o, configEvents, reloads, signal);
  } catch (err) {
    await configEvents.stop();
    throw err;
  }

  const listVolumes = async (s: AbortSignal) =>
    (await o.client.listAll<PersistentVolume>(persistentVolumes, { signal: s })).items;
  // The live-volume index is fed by a watch of the PVs (slim copies), not by listing every PV per claim.
  const volumeWatch = new VolumeWatch({ client: o.client, logger });
  const stopWatch = new AbortController();
  const onStop = () => stopWatch.abort();
  if (signal.aborted) stopWatch.abort();
  else signal.addEventListener('abort', onStop, { once: true });
  const watching = volumeWatch.start(stopWatch.signal).finally(() => signal.removeEventListener('abort', onStop));
  // What the provisioner itself has to tell a claim (a reused stable-name directory, usage over capacity).
  const volumeEvents = new EventRecorder({
    client: o.client,
    component: o.provisionerName,
    host: o.nodeName ?? hostname(),
    logger,
  });
  const provisioner = new HostPathProvisioner({
    config: holder,
    mode: o.mode,
    nodeName: o.nodeName,
    logger,
    // Capacity accounting and delete identity are checked against the PVs (the records on disk cover the rest).
    volumeFeed: volumeWatch,
    getVolume: (name, s) =>
      o.client.get<PersistentVolume>(persistentVolumes, name, { signal: s }).catch((e: unknown) => {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      }),
    // Adopted PVs (local-path, nfs-subdir) carry no onDelete annotation: their class decides. A list by name
    // needs only the list permission the class informer already has.
    storageClass: async (name, s) =>
      (await o.client.list<StorageClass>(storageClasses, { fieldSelector: `metadata.name=${name}`, signal: s }))
        .items[0],
    events: volumeEvents,
    // Gone nodes (daemonset mode): a Node that cannot be read (no permission, API error) counts as present.
    nodeExists: (name, s) =>
      o.client.get(nodes, name, { signal: s }).then(
        () => true,
        (e: unknown) => {
          if (e instanceof NotFoundError) return false;
          logger.debug({ node: name, err: (e as Error).message }, 'could not tell whether the node exists');
          return undefined;
        },
      ),
    goneNodeGraceMs: o.goneNodeGraceMs,
    nfs: o.nfs,
    otherNodeClaims: o.otherNodeClaims,
    // nodeAffinityKey reads the selected node's labels: one GET when the controller has no node cache.
    getNode: (name, s) =>
      o.client.get<Node>(nodes, name, { signal: s }).catch((e: unknown) => {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      }),
    freeSpace: o.freeSpaceCapacity ? filesystemFreeBytes : undefined,
  });
  if (o.nfs && !holder.current().sharedFileSystemPath) {
    logger.warn(
      { nfsServer: o.nfs.server, nfsPath: o.nfs.path },
      'NFS_SERVER/NFS_PATH apply to the top-level sharedFileSystemPath, which this configuration does not set',
    );
  }
  const metrics = createHostPathMetrics({
    registry,
    provisioner,
    provisionerName: o.provisionerName,
    nodeName: o.nodeName,
    mode: o.mode,
    listVolumes,
    usageIntervalMs: o.metricsAddress ? (o.volumeUsageIntervalMs ?? 60_000) : 0,
    walkEntriesPerSecond: o.volumeUsageWalkRate,
    events: volumeEvents,
    publishUsage: async (pv, value, s) => {
      await o.client.patch(
        persistentVolumes,
        pv.metadata.name ?? '',
        { metadata: { annotations: { [ANN_VOLUME_USAGE]: formatVolumeUsage(value) } } },
        { type: 'merge', signal: s },
      );
    },
    logger,
  });
  const controller = new ProvisionController(o.client, o.provisionerName, provisioner, {
    ...o.controller,
    logger,
    registry,
    heartbeatDetails: configLocationDetail(o.config),
  });
  // A reload may fix what made claims infeasible (a class added, a path, a capacity): retry them at once.
  reloads.applied = () => {
    metrics.configApplied();
    provisioner.configurationChanged();
    controller.recheckBlocked();
  };
  reloads.invalid = metrics.configInvalid;

  const servers: HealthServer[] = [];
  const checks = controller.healthChecks();
  const readyz: Record<string, HealthCheck> = {
    ...checks.readyz,
    config: () => (holder.current() ? true : 'no configuration'),
  };
  let healthUrl: string | undefined;
  let metricsUrl: string | undefined;
  try {
    if (o.healthAddress) {
      const shared = o.metricsAddress === o.healthAddress;
      const server = await startHealthServer({
        address: o.healthAddress,
        registry: shared ? registry : undefined,
        checks: { healthz: checks.healthz, readyz },
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
  } catch (err) {
    stopWatch.abort();
    await watching;
    await Promise.all(servers.map((s) => s.stop()));
    await holder.stop();
    await configEvents.stop();
    await volumeEvents.stop();
    throw err;
  }
  logger.info(
    { provisioner: o.provisionerName, mode: o.mode, node: o.nodeName, health: healthUrl, metrics: metricsUrl },
    'hostpath provisioner starting',
  );

  metrics.run(signal);
  const done = (async () => {
    try {
      await controller.run(signal);
    } finally {
      await watching;
      await Promise.all(servers.map((s) => s.stop()));
      await holder.stop();
      await configEvents.stop();
      await volumeEvents.stop();
    }
  })();
  return { controller, provisioner, registry, healthUrl, metricsUrl, done };
}

function configLocationDetail(config: HostPathServiceOptions['config']): Record<string, string> | undefined {
  let location: HostPathConfigLocation;
  if ('file' in config) location = { file: resolve(config.file) };
  else if ('configMap' in config) location = { configMap: config.configMap };
  else return undefined;
  return { [HOSTPATH_CONFIG_DETAIL]: JSON.stringify(location) };
}

async function startConfigSource(
  o: HostPathServiceOptions,
  events: EventRecorder,
  reloads: { applied(): void; invalid(): void },
  signal: AbortSignal,
): Promise<ConfigHolder & { stop(): unknown }> {
  if ('value' in o.config) {
    const value = o.config.value;
    return { current: () => value, stop: () => undefined };
  }
  const callbacks = { onChange: () => reloads.applied(), onInvalid: () => reloads.invalid() };
  if ('file' in o.config) {
    const file = o.config.file;
    // A file has no API object of its own: its events go on this instance's Node (none without a node name).
    const node: KubeObject | undefined = o.nodeName
      ? { apiVersion: 'v1', kind: 'Node', metadata: { name: o.nodeName } }
      : undefined;
    const source = new ConfigFileSource({
      path: file,
      nodeName: o.nodeName,
      logger: o.logger,
      onChange: () => {
        reloads.applied();
        if (node) events.event(node, 'Normal', REASON_CONFIG_RELOADED, `hostpath configuration file ${file} applied`);
      },
      onInvalid: (err) => {
        reloads.invalid();
        if (node)
          events.event(
            node,
            'Warning',
            REASON_INVALID_CONFIG,
            `invalid hostpath configuration file ${file}, keeping the last good configuration: ${shortenText(err.message, MAX_EVENT_MESSAGE_BYTES - 512)}`,
          );
      },
    });
    await source.start();
    return source;
  }
  const source = new ConfigMapSource({
    client: o.client,
    ...o.config.configMap,
    nodeName: o.nodeName,
    events,
    logger: o.logger,
    ...callbacks,
  });
  await source.start(signal);
  return source;
}
