// The library's public API (`kube-provisioner`): what a provisioner author uses, re-exports only. Generic
// controller machinery is `kube-provisioner/runtime`, the hostpath provisioner `kube-provisioner/hostpath`,
// the test kit `kube-provisioner/testing`.

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
export type { BackendVolume } from './controller/leak-inventory.ts';

// The controller and its options.
export {
  ProvisionController,
  ControllerAlreadyRunningError,
  type ProvisionControllerConfig,
  type ProvisionControllerDeps,
} from './controller/provision-controller.ts';
export {
  ConfigurationError,
  DEFAULTS,
  mergeOptions,
  type LeaderElectionOptions,
  type LeakInventoryOptions,
  type ProvisionControllerOptions,
  type ResolvedOptions,
  type RetryOptions,
  type VolumeSaveOptions,
} from './controller/options/controller-options.ts';
export { defaultVolumeName, type LeaderElectionMode, type SelectorPolicy } from './controller/options/option-table.ts';
export type { EventSink } from './types/events.ts';

// Why a claim is (not) being provisioned: the same explanation `kube-provisioner explain pvc` prints, for a backend
// of your own (its checkClaim hook runs too).
export {
  explainClaim,
  formatExplanation,
  type ClaimExplanation,
  type ClaimEventSummary,
  type ExplainClaimOptions,
  type ExplainDecisionCode,
  type ExplainedDecision,
} from './controller/claim/explain-claim.ts';
export type { ClaimDecisionCode } from './controller/claim/decide-claim.ts';
export {
  decideResize,
  type ResizeAction,
  type ResizeDecision,
  type ResizeDecisionCode,
  type ResizeDecisionInput,
} from './controller/resize/decide-resize.ts';

// Talking to the cluster: client, kubeconfig, typed resource descriptors, errors.
export { KubeClient, type KubeClientOptions, type KubeConnection } from './runtime/client.ts';
export {
  loadKubeConfig,
  KubeConfigError,
  RestConfig,
  type LoadKubeConfigOptions,
  type KubeConfigSource,
} from './runtime/kubeconfig.ts';
export {
  defineResource,
  persistentVolumes,
  persistentVolumeClaims,
  storageClasses,
  nodes,
  pods,
  namespaces,
  configMaps,
  secrets,
  coreEvents,
  leases,
  type ApiResource,
} from './runtime/resources.ts';
export { ApiError, AlreadyExistsError, ConflictError, NotFoundError, isTransientError } from './runtime/errors.ts';

// What running a controller needs: logger, clock, metrics registry, health server.
export { createLogger, silentLogger, type Logger } from './runtime/logger.ts';
export { realClock, type Clock } from './runtime/clock.ts';
export { createMetricsRegistry } from './runtime/metrics.ts';
export { startHealthServer } from './runtime/health-server.ts';

// Shared types and well-known names.
export type * from './types/k8s.ts';
export * from './types/annotations.ts';
export { parseQuantity, formatBytes, isQuantity, QuantityError } from './types/quantity.ts';
