// The CSI call metric, as external-provisioner exports it through csi-lib-utils: one histogram,
// `csi_sidecar_operations_seconds{driver_name, method_name, grpc_status_code}`, method_name being the gRPC path and
// grpc_status_code Go's code name (`OK`, `DeadlineExceeded`...). Registered on a registry the caller owns.
import { Histogram, type Registry } from 'prom-client';
import { reuse } from '../controller/controller-metrics.ts';

/** The metric's name. */
export const CSI_OPERATIONS_METRIC = 'csi_sidecar_operations_seconds';
/** csi-lib-utils' buckets (seconds). */
export const CSI_OPERATIONS_BUCKETS = Object.freeze([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600]);
/** The driver_name label before GetPluginInfo answered (csi-lib-utils' value). */
export const UNKNOWN_DRIVER_NAME = 'unknown-driver';

/** The labels of csi_sidecar_operations_seconds. */
export type CsiOperationLabels = 'driver_name' | 'method_name' | 'grpc_status_code';

/** Creates the histogram on `registry`, or finds it when another client registered it there. */
export function createCsiOperationsMetric(registry: Registry): Histogram<CsiOperationLabels> {
  return reuse(
    registry,
    CSI_OPERATIONS_METRIC,
    () =>
      new Histogram<CsiOperationLabels>({
        name: CSI_OPERATIONS_METRIC,
        help: 'Container Storage Interface operation duration with gRPC error code status total',
        labelNames: ['driver_name', 'method_name', 'grpc_status_code'],
        buckets: [...CSI_OPERATIONS_BUCKETS],
        registers: [registry],
      }),
  );
}
