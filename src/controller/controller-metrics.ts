// The controller's Prometheus metrics: the Go library's six collectors with their exact names and labels
// (docs/metrics.md lists them), plus what the Go library lacks: given-up counters, claims in progress, leaked
// volumes and leadership. Registered on a registry the caller owns; two controllers may share one registry
// (the collectors are reused, not registered twice).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The claim loop's collectors. */
export type ClaimMetrics = Pick<
  ControllerMetrics,
  'provisionTotal' | 'provisionFailedTotal' | 'provisionDuration' | 'provisionGivenUpTotal' | 'claimsInProgress'
>;

/** The volume loop's collectors. */
export type VolumeMetrics = Pick<
  ControllerMetrics,
  'deleteTotal' | 'deleteFailedTotal' | 'deleteDuration' | 'deleteGivenUpTotal'
>;

/** Prometheus DefBuckets, as the Go library uses for both duration histograms. */
export const DEFAULT_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const METRIC_NAMES = Object.freeze({
  provisionTotal: 'controller_persistentvolumeclaim_provision_total',
  provisionFailedTotal: 'controller_persistentvolumeclaim_provision_failed_total',
  provisionDuration: 'controller_persistentvolumeclaim_provision_duration_seconds',
  provisionGivenUpTotal: 'controller_persistentvolumeclaim_provision_given_up_total',
  deleteTotal: 'controller_persistentvolume_delete_total',
  deleteFailedTotal: 'controller_persistentvolume_delete_failed_total',
  deleteDuration: 'controller_persistentvolume_delete_duration_seconds',
  deleteGivenUpTotal: 'controller_persistentvolume_delete_given_up_total',
  claimsInProgress: 'controller_persistentvolumeclaim_provision_in_progress',
  leakedVolumes: 'controller_leaked_volumes',
  leakedVolumesDeletedTotal: 'controller_leaked_volumes_deleted_total',
  isLeader: 'controller_leader_election_is_leader',
});

type ClaimLabels = 'class' | 'source';

export interface ControllerMetrics {
  provisionTotal: Counter<ClaimLabels>;
  provisionFailedTotal: Counter<ClaimLabels>;
  provisionDuration: Histogram<ClaimLabels>;
  provisionGivenUpTotal: Counter<ClaimLabels>;
  deleteTotal: Counter<'class'>;
  deleteFailedTotal: Counter<'class'>;
  deleteDuration: Histogram<'class'>;
  deleteGivenUpTotal: Counter<'class'>;
  claimsInProgress: Gauge<'provisioner'>;
  leakedVolumes: Gauge<'provisioner'>;
  leakedVolumesDeletedTotal: Counter<'provisioner'>;
  isLeader: Gauge<'provisioner'>;
}

/** The collector already registered under `name`, or a new one (two controllers may share a registry). */
export function reuse<T>(registry: Registry, name: string, make: () => T): T {
  const existing = registry.getSingleMetric(name);
  return existing ? (existing as unknown as T) : make();
}

/** Creates (or finds, when another controller already registered them) the controller metrics on `registry`. */
export function createControllerMetrics(registry: Registry): ControllerMetrics {
  const registers = [registry];
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    reuse(registry, name, () => new Counter<L>({ name, help, labelNames, registers }));
  const histogram = <L extends string>(name: string, help: string, labelNames: L[]) =>
    reuse(
      registry,
      name,
      () => new Histogram<L>({ name, help, labelNames, buckets: DEFAULT_DURATION_BUCKETS, registers }),
    );
  const gauge = <L extends string>(name: string, help: string, labelNames: L[]) =>
    reuse(registry, name, () => new Gauge<L>({ name, help, labelNames, registers }));
  const claim: ClaimLabels[] = ['class', 'source'];
  return {
    provisionTotal: counter(
      METRIC_NAMES.provisionTotal,
      'Total number of persistent volumes provisioned successfully. Broken down by storage class name and source of the claim.',
      claim,
    ),
    provisionFailedTotal: counter(
      METRIC_NAMES.provisionFailedTotal,
      'Total number of persistent volume provisioning attempts that failed. Broken down by storage class name and source of the claim.',
      claim,
    ),
    provisionDuration: histogram(
      METRIC_NAMES.provisionDuration,
      'Latency in seconds to provision persistent volumes. Failed provisioning attempts are ignored. Broken down by storage class name and source of the claim.',
      claim,
    ),
    provisionGivenUpTotal: counter(
      METRIC_NAMES.provisionGivenUpTotal,
      'Total number of claims given up after failedProvisionThreshold failed attempts. Broken down by storage class name and source of the claim.',
      claim,
    ),
    deleteTotal: counter(
      METRIC_NAMES.deleteTotal,
      'Total number of persistent volumes deleted successfully. Broken down by storage class name.',
      ['class'],
    ),
    deleteFailedTotal: counter(
      METRIC_NAMES.deleteFailedTotal,
      'Total number of persistent volume deletion attempts that failed. Broken down by storage class name.',
      ['class'],
    ),
    deleteDuration: histogram(
      METRIC_NAMES.deleteDuration,
      'Latency in seconds to delete persistent volumes. Failed deletion attempts are ignored. Broken down by storage class name.',
      ['class'],
    ),
    deleteGivenUpTotal: counter(
      METRIC_NAMES.deleteGivenUpTotal,
      'Total number of persistent volumes whose deletion was given up after failedDeleteThreshold failed attempts. Broken down by storage class name.',
      ['class'],
    ),
    claimsInProgress: gauge(
      METRIC_NAMES.claimsInProgress,
      'Claims whose provisioning may still be running in the backend (InBackground).',
      ['provisioner'],
    ),
    leakedVolumes: gauge(
      METRIC_NAMES.leakedVolumes,
      'Backend volumes without a PersistentVolume older than the grace period, at the last leak inventory.',
      ['provisioner'],
    ),
    leakedVolumesDeletedTotal: counter(
      METRIC_NAMES.leakedVolumesDeletedTotal,
      'Leaked backend volumes deleted by the leak inventory (deleteLeaked).',
      ['provisioner'],
    ),
    isLeader: gauge(METRIC_NAMES.isLeader, '1 while this instance leads (always 1 without leader election).', [
      'provisioner',
    ]),
  };
}
