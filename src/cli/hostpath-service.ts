// One running hostpath provisioner: configuration source (file or ConfigMap), HostPathProvisioner,
// ProvisionController, health and metrics endpoints, wired together and stopped in order. Used by
// `run hostpath` (against any cluster) and by `dev` (in-process, against the embedded cluster).
import { hostname } from 'node:os';
import type { Registry } from 'prom-client';
import { ProvisionController } from '../controller/provision-controller.ts';
import type { ProvisionControllerOptions } from '../controller/options.ts';
import { MAX_EVENT_MESSAGE_BYTES, shortenText } from '../controller/event-bounds.ts';
import { ConfigFileSource } from '../hostpath/config-source.ts';
import { filesystemFreeBytes } from '../hostpath/free-space.ts';
import type { HostPathConfig } from '../hostpath/config.ts';
import { HostPathProvisioner, type ConfigHolder, type HostPathMode } from '../hostpath/provisioner.ts';
import type { KubeClient } from '../runtime/client.ts';
import { EventRecorder } from '../runtime/event-recorder.ts';
import { startHealthServer, type HealthCheck, type HealthServer } from '../runtime/health-server.ts';
import type { Logger } from '../runtime/logger.ts';
import { createMetricsRegistry } from '../runtime/metrics.ts';
import { persistentVolumes } from '../runtime/resources.ts';
import type { KubeObject, PersistentVolume } from '../types/k8s.ts';
import { ConfigMapSource, REASON_CONFIG_RELOADED, REASON_INVALID_CONFIG } from './config-map-source.ts';
import { createHostPathMetrics } from './hostpath-metrics.ts';
import type { ConfigMapRef } from './options.ts';

export interface HostPathServiceOptions {
  client: KubeClient;
  provisionerName: string;
  mode: HostPathMode;
  nodeName?: string;
  /** A fixed configuration, a file (watched), or a ConfigMap (watched through the API). */
  config: { value: HostPathConfig } | { file: string } | { configMap: ConfigMapRef };
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
  const configEvents = new EventRecorder({ client: o.client, component: `${o.provisionerName}/config`, host: o.nodeName ?? hostname(), logger });
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

  const listVolumes = async (s: AbortSignal) => (await o.client.listAll<PersistentVolume>(persistentVolumes, { signal: s })).items;
  const provisioner = new HostPathProvisioner({
    config: holder,
    mode: o.mode,
    nodeName: o.nodeName,
    logger,
    // Capacity accounting is rebuilt from the PVs (the records on disk cover the rest).
    knownVolumes: listVolumes,
    freeSpace: o.freeSpaceCapacity ? filesystemFreeBytes : undefined,
  });
  const metrics = createHostPathMetrics({
    registry,
    provisioner,
    provisionerName: o.provisionerName,
    nodeName: o.nodeName,
    mode: o.mode,
    listVolumes,
    usageIntervalMs: o.metricsAddress ? (o.volumeUsageIntervalMs ?? 60_000) : 0,
    logger,
  });
  const controller = new ProvisionController(o.client, o.provisionerName, provisioner, { ...o.controller, logger, registry });
  // A reload may fix what made claims infeasible (a class added, a path, a capacity): retry them at once.
  reloads.applied = () => {
    metrics.configApplied();
    provisioner.configurationChanged();
    controller.recheckBlocked();
  };
  reloads.invalid = metrics.configInvalid;

  const servers: HealthServer[] = [];
  const checks = controller.healthChecks();
  const readyz: Record<string, HealthCheck> = { ...checks.readyz, config: () => (holder.current() ? true : 'no configuration') };
  let healthUrl: string | undefined;
  let metricsUrl: string | undefined;
  try {
    if (o.healthAddress) {
      const shared = o.metricsAddress === o.healthAddress;
      const server = await startHealthServer({ address: o.healthAddress, registry: shared ? registry : undefined, checks: { healthz: checks.healthz, readyz } });
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
    await Promise.all(servers.map((s) => s.stop()));
    await holder.stop();
    await configEvents.stop();
    throw err;
  }
  logger.info({ provisioner: o.provisionerName, mode: o.mode, node: o.nodeName, health: healthUrl, metrics: metricsUrl }, 'hostpath provisioner starting');

  metrics.run(signal);
  const done = (async () => {
    try {
      await controller.run(signal);
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await holder.stop();
      await configEvents.stop();
    }
  })();
  return { controller, provisioner, registry, healthUrl, metricsUrl, done };
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
    const node: KubeObject | undefined = o.nodeName ? { apiVersion: 'v1', kind: 'Node', metadata: { name: o.nodeName } } : undefined;
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
        if (node) events.event(node, 'Warning', REASON_INVALID_CONFIG, `invalid hostpath configuration file ${file}, keeping the last good configuration: ${shortenText(err.message, MAX_EVENT_MESSAGE_BYTES - 512)}`);
      },
    });
    await source.start();
    return source;
  }
  const source = new ConfigMapSource({ client: o.client, ...o.config.configMap, nodeName: o.nodeName, events, logger: o.logger, ...callbacks });
  await source.start(signal);
  return source;
}
