// The hostpath provisioner's public surface (re-exports only), for the CLI and src/index.ts.
export { HostPathProvisioner } from './provisioner.ts';
export type { HostPathProvisionerOptions, HostPathMode, ConfigHolder, BasePathStatus } from './provisioner.ts';
export {
  parseHostPathConfig,
  validateHostPathConfig,
  checkConfigPaths,
  loadHostPathConfig,
  pathSetForClass,
  nodeBasePaths,
  localBasePaths,
  allBasePaths,
  ConfigError,
  DEFAULT_NODE,
} from './config.ts';
export type {
  HostPathConfig,
  PathSet,
  NodePaths,
  BasePath,
  NfsExport,
  VolumeScripts,
  ConfigCompanions,
} from './config.ts';
export { ConfigFileSource, summarize as summarizeHostPathConfig } from './config-source.ts';
export type { ConfigFileSourceOptions } from './config-source.ts';
export {
  parseClassParameters,
  parseGoBool,
  StorageClassParameterError,
  DEFAULT_VOLUME_MODE_BITS,
} from './class-parameters.ts';
export type { ClassParameters, OnDeletePolicy, VolumeType } from './class-parameters.ts';
export {
  compilePathPattern,
  renderPathPattern,
  defaultVolumeDirName,
  nfsSubdirVolumeDirName,
  DEFAULT_PATH_PATTERN,
  PathTemplateError,
  TemplateSyntaxError,
  MissingTemplateKeyError,
} from './path-template.ts';
export type { CompiledPathPattern, PathTemplateData, TemplateField } from './path-template.ts';
export {
  checkRelativeVolumePath,
  checkBasePath,
  resolveVolumePath,
  checkExistingVolumePath,
  isStrictlyUnder,
  UnsafePathError,
  MAX_SEGMENT_BYTES,
  MAX_PATH_BYTES,
  MAX_DEPTH,
  RESERVED_PREFIXES,
} from './path-safety.ts';
export type { UnsafePathRule, RelativePathRules } from './path-safety.ts';
export { VolumePathIndex } from './volume-path-index.ts';
export type { InodeChain } from './volume-path-index.ts';
export { createVolumeDir, removeVolumeDir, archiveVolumeDir, archiveName, BasePathError } from './fs-ops.ts';
export { directoryUsage, nodeUsageFs, WalkBudget, type UsageFs } from './usage.ts';
export type { FsOpsOptions, CreateVolumeDirOptions, RemoveOptions, ArchiveOptions } from './fs-ops.ts';
export { nodeHostFs } from './host-fs.ts';
export type { HostFs } from './host-fs.ts';
export type { UsageOptions, DirectoryUsage } from './usage.ts';
export { VolumeLedger, SHARED_SCOPE } from './capacity.ts';
export type { Allocation, AllocationSource, BasePathAllocation, Scope } from './capacity.ts';
export {
  buildVolume,
  readVolumeLocation,
  allocationOfVolume,
  ANN_HOSTPATH_NODE,
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_KIND,
  ANN_HOSTPATH_ON_DELETE,
} from './volume-spec.ts';
export type { PathKind, VolumeLocation, VolumeSpecInput } from './volume-spec.ts';
export { readVolumeRecords, RECORDS_SEGMENTS } from './volume-records.ts';
export type { VolumeRecord } from './volume-records.ts';
export {
  chooseVolumeType,
  volumeSourceSpec,
  localPathOfNfsSource,
  localDirectoryOf,
  mountedExports,
  VolumeTypeAnnotationError,
  ANN_VOLUME_TYPE,
  ANN_DEFAULT_VOLUME_TYPE,
} from './volume-source.ts';
export type { MountedExport, PublishedType } from './volume-source.ts';
export { runVolumeScript, VolumeScriptError } from './scripts.ts';
export { VolumeWatch, slimVolume } from './volume-watch.ts';
export { StaleVolumeIndexError } from './live-volumes.ts';
export type { VolumeFeed } from './live-volumes.ts';
export type { VolumeScriptRun, ScriptName } from './scripts.ts';
