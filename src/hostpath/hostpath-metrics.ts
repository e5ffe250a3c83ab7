// Prometheus metrics of a running hostpath provisioner, on the caller's registry: allocation and capacity per
// base path (read from the provisioner's ledger at scrape time), disk usage and inodes per volume (a bounded `du`
// of each of this instance's volumes, paced by one entries-per-second budget for all of them, refreshed in the
// background: kubelet's volume stats are filesystem-wide for directory volumes), a Warning on the claim when a
// volume's usage crosses its capacity, the usage published on the PV for `explain`, and configuration reloads.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EventSink } from '../types/events.ts';
import type { HostPathProvisioner } from './hostpath-provisioner.ts';
import { WalkBudget, type DirectoryUsage, type UsageFs } from './usage/directory-usage.ts';
import { UsageWatch } from './usage/usage-watch.ts';
import { ANN_HOSTPATH_KIND, ANN_HOSTPATH_NODE } from './volume/volume-spec.ts';
import type { Clock, Timer } from '../runtime/clock.ts';
import { realClock } from '../runtime/clock.ts';
import type { Logger } from '../types/logger.ts';
import type { PersistentVolume } from '../types/k8s.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../types/annotations.ts';
import { formatBytes, isQuantity, parseQuantity } from '../types/quantity.ts';
import { ANN_VOLUME_USAGE, parseVolumeUsage, type VolumeUsageSummary } from '../types/volume-usage.ts';

export const HOSTPATH_METRIC_NAMES = Object.freeze({
  allocatedBytes: 'hostpath_base_path_allocated_bytes',
  capacityBytes: 'hostpath_base_path_capacity_bytes',
  volumes: 'hostpath_base_path_volumes',
  volumeUsedBytes: 'hostpath_volume_used_bytes',
  volumeUsageScanComplete: 'hostpath_volume_usage_complete',
  volumeUsedInodes: 'hostpath_volume_used_inodes',
  configReloadsTotal: 'hostpath_config_reloads_total',
});

export interface HostPathMetricsOptions {
  registry: Registry;
  provisioner: HostPathProvisioner;
  provisionerName: string;
  /** daemonset mode: only volumes of this node are measured. */
  nodeName?: string;
  mode: 'deployment' | 'daemonset';
  /** The PVs to measure (the caller lists them). */
  listVolumes: (signal: AbortSignal) => Promise<PersistentVolume[]>;
  /** Usage refresh interval; 0 = no usage metrics. */
  usageIntervalMs: number;
  /** Files visited per volume before the walk stops (the value is then a lower bound). Default 100,000. */
  maxEntries?: number;
  /**
   * Entries per second, all volumes together (default 1,000). A refresh that cannot finish within its interval at
   * that pace stops early; the volumes it did not finish report lower bounds.
   */
  walkEntriesPerSecond?: number;
  /** The filesystem calls of the walk (tests count them). */
  usageFs?: UsageFs;
  /** Where the over-capacity Warning goes (on the claim); none = no event. */
  events?: EventSink;
  /** Writes the usage annotation on a PV; none = not published. */
  publishUsage?: (pv: PersistentVolume, value: VolumeUsageSummary, signal: AbortSignal) => Promise<void>;
  clock?: Clock;
  logger: Logger;
}

/** Counters the configuration sources report to. */
export interface HostPathMetrics {
  configApplied(): void;
  configInvalid(): void;
  /** Starts the usage refresh loop; stops on `signal`. */
  run(signal: AbortSignal): void;
  /** One usage refresh now (tests). */
  refreshUsage(signal: AbortSignal): Promise<void>;
}

const num = (b: bigint) => Number(b);

function ours(pv: PersistentVolume, o: HostPathMetricsOptions): boolean {
  const ann = pv.metadata.annotations ?? {};
  if (ann[ANN_DYNAMICALLY_PROVISIONED] !== o.provisionerName) return false;
  // A node-local volume of another node is not on this machine's disk.
  return o.mode !== 'daemonset' || ann[ANN_HOSTPATH_KIND] !== 'node' || ann[ANN_HOSTPATH_NODE] === o.nodeName;
}

/** Registers the metrics on `registry` (a second call on the same registry reuses them). */
export function createHostPathMetrics(o: HostPathMetricsOptions): HostPathMetrics {
  const registers = [o.registry];
  const existing = <T>(name: string) => o.registry.getSingleMetric(name) as unknown as T | undefined;
  const once = (name: string, make: () => unknown) => {
    if (!o.registry.getSingleMetric(name)) make();
  };
  const pathLabels = ['base_path', 'scope'] as const;
  const scopeOf = (s: string) => (s === '' ? 'shared' : s);
  once(
    HOSTPATH_METRIC_NAMES.allocatedBytes,
    () =>
      new Gauge({
        name: HOSTPATH_METRIC_NAMES.allocatedBytes,
        help: 'Bytes allocated to volumes (sum of their capacities) per base path; scope is the node, or "shared".',
        labelNames: pathLabels,
        registers,
        collect() {
          this.reset();
          for (const a of o.provisioner.allocations())
            this.set({ base_path: a.basePath, scope: scopeOf(a.scope) }, num(a.allocated));
        },
      }),
  );
  once(
    HOSTPATH_METRIC_NAMES.capacityBytes,
    () =>
      new Gauge({
        name: HOSTPATH_METRIC_NAMES.capacityBytes,
        help: 'Configured capacity per base path (only paths with a capacity).',
        labelNames: pathLabels,
        registers,
        collect() {
          this.reset();
          for (const a of o.provisioner.allocations())
            if (a.capacity !== undefined) this.set({ base_path: a.basePath, scope: scopeOf(a.scope) }, num(a.capacity));
        },
      }),
  );
  once(
    HOSTPATH_METRIC_NAMES.volumes,
    () =>
      new Gauge({
        name: HOSTPATH_METRIC_NAMES.volumes,
        help: 'Volumes allocated per base path.',
        labelNames: pathLabels,
        registers,
        collect() {
          this.reset();
          for (const a of o.provisioner.allocations())
            this.set({ base_path: a.basePath, scope: scopeOf(a.scope) }, a.volumes);
        },
      }),
  );
  const volumeLabels = ['persistentvolume', 'namespace', 'persistentvolumeclaim'] as const;
  const used =
    existing<Gauge<(typeof volumeLabels)[number]>>(HOSTPATH_METRIC_NAMES.volumeUsedBytes) ??
    new Gauge({
      name: HOSTPATH_METRIC_NAMES.volumeUsedBytes,
      help: 'Disk usage of a volume directory (allocated blocks, like du), refreshed in the background.',
      labelNames: volumeLabels,
      registers,
    });
  const complete =
    existing<Gauge<(typeof volumeLabels)[number]>>(HOSTPATH_METRIC_NAMES.volumeUsageScanComplete) ??
    new Gauge({
      name: HOSTPATH_METRIC_NAMES.volumeUsageScanComplete,
      help: '1 when the last usage walk of the volume visited every file, 0 when it stopped at the entry limit (the usage is then a lower bound).',
      labelNames: volumeLabels,
      registers,
    });
  const inodes =
    existing<Gauge<(typeof volumeLabels)[number]>>(HOSTPATH_METRIC_NAMES.volumeUsedInodes) ??
    new Gauge({
      name: HOSTPATH_METRIC_NAMES.volumeUsedInodes,
      help: 'Inodes used by a volume directory (files and directories, hard links once), refreshed with the usage.',
      labelNames: volumeLabels,
      registers,
    });
  const reloads =
    existing<Counter<'result'>>(HOSTPATH_METRIC_NAMES.configReloadsTotal) ??
    new Counter({
      name: HOSTPATH_METRIC_NAMES.configReloadsTotal,
      help: 'Configuration changes seen after the first load, by result: applied, or invalid (the last good configuration stays).',
      labelNames: ['result'],
      registers,
    });
  const clock = o.clock ?? realClock;

  const budget = new WalkBudget(o.walkEntriesPerSecond ?? 1_000, clock);
  const watch = new UsageWatch();

  const refreshUsage = async (signal: AbortSignal) => {
    const volumes = (await o.listVolumes(signal)).filter((pv) => ours(pv, o));
    const seen = new Set<string>();
    // One refresh must not run into the next: what the budget cannot walk by then is reported as a lower bound.
    const deadline = o.usageIntervalMs > 0 ? clock.now() + o.usageIntervalMs : Infinity;
    for (const pv of volumes) {
      if (signal.aborted) return;
      const labels = {
        persistentvolume: pv.metadata.name ?? '',
        namespace: pv.spec.claimRef?.namespace ?? '',
        persistentvolumeclaim: pv.spec.claimRef?.name ?? '',
      };
      try {
        const usage = await o.provisioner.volumeUsage(pv, {
          maxEntries: o.maxEntries ?? 100_000,
          budget,
          deadline,
          fs: o.usageFs,
          signal,
        });
        used.set(labels, num(usage.bytes));
        inodes.set(labels, usage.inodes);
        complete.set(labels, usage.complete ? 1 : 0);
        seen.add(JSON.stringify(labels));
        await afterMeasure(pv, usage, signal);
      } catch (err) {
        o.logger.debug({ pv: pv.metadata.name, err: (err as Error).message }, 'volume usage not measured');
      }
    }
    watch.retain(new Set(volumes.map((pv) => pv.metadata.name ?? '')));
    // Deleted volumes disappear from the metrics.
    for (const g of [used, inodes, complete]) {
      for (const v of (await g.get()).values) {
        const l = v.labels as Record<(typeof volumeLabels)[number], string>;
        if (
          !seen.has(
            JSON.stringify({
              persistentvolume: l.persistentvolume,
              namespace: l.namespace,
              persistentvolumeclaim: l.persistentvolumeclaim,
            }),
          )
        )
          g.remove(l);
      }
    }
  };

  // The over-capacity Warning (once per crossing) and the published summary.
  const afterMeasure = async (pv: PersistentVolume, usage: DirectoryUsage, signal: AbortSignal) => {
    const name = pv.metadata.name ?? '';
    const cap = pv.spec.capacity?.storage;
    const capacity = isQuantity(cap) ? parseQuantity(cap) : undefined;
    const ref = pv.spec.claimRef;
    if (watch.crossed(name, usage, capacity) && o.events && ref?.name) {
      const claim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: ref.name, namespace: ref.namespace, uid: ref.uid },
      };
      o.events.event(
        claim,
        'Warning',
        'VolumeUsageOverCapacity',
        `volume ${name} uses ${usage.complete ? '' : 'at least '}${formatBytes(usage.bytes)}, more than its capacity ${cap}; hostpath sizes are not enforced (no project quota)`,
      );
    }
    if (!o.publishUsage) return;
    const summary: VolumeUsageSummary = {
      bytes: usage.bytes.toString(),
      inodes: usage.inodes,
      complete: usage.complete,
      measuredAt: new Date(clock.now()).toISOString(),
    };
    if (!watch.needsPublish(name, summary, capacity, parseVolumeUsage(pv.metadata.annotations?.[ANN_VOLUME_USAGE])))
      return;
    await o.publishUsage(pv, summary, signal).then(
      () => watch.markPublished(name, summary),
      (err: unknown) => o.logger.warn({ pv: name, err: (err as Error).message }, 'could not publish the volume usage'),
    );
  };

  return {
    configApplied: () => reloads.inc({ result: 'applied' }),
    configInvalid: () => reloads.inc({ result: 'invalid' }),
    refreshUsage,
    run(signal) {
      if (o.usageIntervalMs <= 0) return;
      let timer: Timer | undefined;
      const tick = () => {
        refreshUsage(signal)
          .catch((err: unknown) => o.logger.warn({ err: (err as Error).message }, 'volume usage refresh failed'))
          .finally(() => {
            if (!signal.aborted) timer = clock.setTimeout(tick, o.usageIntervalMs, { unref: true });
          });
      };
      timer = clock.setTimeout(tick, 0, { unref: true });
      signal.addEventListener('abort', () => timer?.cancel(), { once: true });
    },
  };
}
