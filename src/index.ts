// The library's public API (`kube-provisioner`): re-exports only. The test harness is `kube-provisioner/testing`.

// The provisioner contract.
export {
  IgnoredError,
  InfeasibleError,
  ProvisioningError,
  type ExpandResult,
  type Provisioner,
  type ProvisionOptions,
  type ProvisionResult,
  type ProvisioningState,
  type ClaimCheckInput,
  type ClaimCheckResult,
} from './controller/provisioner.ts';

// The controller.
export {
  ProvisionController,
  ControllerAlreadyRunningError,
  type ProvisionControllerConfig,
  type ProvisionControllerDeps,
} from './controller/provision-controller.ts';
export {
  ConfigurationError,
  DEFAULTS,
  defaultVolumeName,
  leaseNameFor,
  resolveOptions,
  validateProvisionerName,
  type LeaderElectionMode,
  type LeakInventoryOptions,
  type ProvisionControllerOptions,
  type ResolvedOptions,
  type SelectorPolicy,
  type VolumeSaveOptions,
} from './controller/options.ts';

// Pure decisions (also what `explain` prints).
export {
  ANN_ALPHA_SELECTED_NODE,
  claimClassName,
  claimKey,
  claimProvisionerName,
  decideClaim,
  isKnownProvisioner,
  selectedNodeName,
  type ClaimAction,
  type ClaimDecision,
  type ClaimDecisionCode,
  type ClaimDecisionInput,
  type DecisionEvent,
} from './controller/decide-claim.ts';
export {
  CONDITION_FS_RESIZE_PENDING,
  CONDITION_RESIZING,
  decideResize,
  RESIZE_STATUS,
  type ResizeAction,
  type ResizeDecision,
  type ResizeDecisionCode,
  type ResizeDecisionInput,
} from './controller/decide-resize.ts';
export { RESIZE_METRIC_NAMES } from './controller/resize-metrics.ts';
export {
  decideVolume,
  finalizerChange,
  hasOurFinalizer,
  isProvisionerForVolume,
  type VolumeAction,
  type VolumeDecision,
  type VolumeDecisionCode,
  type VolumeDecisionInput,
} from './controller/decide-volume.ts';
export { claimFingerprint, volumeFingerprint, type FailureRecord } from './controller/failures.ts';
export {
  explainClaim,
  explainDecision,
  formatExplanation,
  refineDecision,
  type ClaimExplanation,
  type ClaimEventSummary,
  type ExplainClaimOptions,
  type ExplainDecisionCode,
  type ExplainedDecision,
} from './controller/explain.ts';
export { findLeakedVolumes, type BackendVolume, type LeakReport } from './controller/leak-inventory.ts';
export { createControllerMetrics, METRIC_NAMES, type ControllerMetrics } from './controller/metrics.ts';
export { parseLockRecord, type LeaderElectionRecord } from './controller/claim-lock.ts';
export { VolumeConflictError, type EventSink } from './controller/volume-store.ts';

// Runtime pieces a provisioner author needs to run a controller.
export { KubeClient, type KubeClientOptions } from './runtime/client.ts';
export { loadKubeConfig } from './runtime/kubeconfig.ts';
export { createLogger, silentLogger, type Logger } from './runtime/logger.ts';
export { realClock, TestClock, type Clock } from './runtime/clock.ts';
export { createMetricsRegistry } from './runtime/metrics.ts';
export { startHealthServer } from './runtime/health-server.ts';
export {
  ApiError,
  AlreadyExistsError,
  ConflictError,
  NotFoundError,
} from './runtime/errors.ts';

// Shared types and well-known names.
export type * from './types/k8s.ts';
export * from './types/annotations.ts';
export { parseQuantity, formatBytes, isQuantity, QuantityError } from './types/quantity.ts';
