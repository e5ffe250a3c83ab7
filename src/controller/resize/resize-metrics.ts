// The resize flow's Prometheus metrics, named like the Go library's provisioning collectors with "resize" for
// "provision" (external-resizer itself only exports per-gRPC-call timings and its work queue): successes, failed
// attempts (by kind), duration of successful resizes, and resizes given up. Registered on the caller's registry
// and reused when another controller already registered them.
import { Counter, Histogram, type Registry } from 'prom-client';
import { DEFAULT_DURATION_BUCKETS, reuse } from '../controller-metrics.ts';

export const RESIZE_METRIC_NAMES = Object.freeze({
  resizeTotal: 'controller_persistentvolumeclaim_resize_total',
  resizeFailedTotal: 'controller_persistentvolumeclaim_resize_failed_total',
  resizeDuration: 'controller_persistentvolumeclaim_resize_duration_seconds',
  resizeGivenUpTotal: 'controller_persistentvolumeclaim_resize_given_up_total',
});

export interface ResizeMetrics {
  resizeTotal: Counter<'class'>;
  /** `reason`: `infeasible` (InfeasibleError), `error` (any other expand() error) or `api` (a status/PV write failed). */
  resizeFailedTotal: Counter<'class' | 'reason'>;
  resizeDuration: Histogram<'class'>;
  resizeGivenUpTotal: Counter<'class'>;
}

/** Creates (or finds) the resize metrics on `registry`. */
export function createResizeMetrics(registry: Registry): ResizeMetrics {
  const registers = [registry];
  const n = RESIZE_METRIC_NAMES;
  return {
    resizeTotal: reuse(
      registry,
      n.resizeTotal,
      () =>
        new Counter({
          name: n.resizeTotal,
          help: 'Total number of claims resized successfully (controller side). Broken down by storage class name.',
          labelNames: ['class'],
          registers,
        }),
    ),
    resizeFailedTotal: reuse(
      registry,
      n.resizeFailedTotal,
      () =>
        new Counter({
          name: n.resizeFailedTotal,
          help: 'Total number of resize attempts that failed. Broken down by storage class name and reason (infeasible, error, api).',
          labelNames: ['class', 'reason'],
          registers,
        }),
    ),
    resizeDuration: reuse(
      registry,
      n.resizeDuration,
      () =>
        new Histogram({
          name: n.resizeDuration,
          help: 'Latency in seconds of successful resizes, from expand() to the claim status. Broken down by storage class name.',
          labelNames: ['class'],
          buckets: DEFAULT_DURATION_BUCKETS,
          registers,
        }),
    ),
    resizeGivenUpTotal: reuse(
      registry,
      n.resizeGivenUpTotal,
      () =>
        new Counter({
          name: n.resizeGivenUpTotal,
          help: 'Total number of resizes given up after failedProvisionThreshold failed attempts. Broken down by storage class name.',
          labelNames: ['class'],
          registers,
        }),
    ),
  };
}
