// The hostpath provisioner's public surface (re-exports only), for the CLI and src/index.ts.
export { HostPathProvisioner } from './hostpath-provisioner.ts';
export type { HostPathProvisionerOptions, HostPathMode, BasePathStatus } from './hostpath-provisioner.ts';
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
} from './config/hostpath-config.ts';
export type {
  HostPathConfig,
  PathSet,
  NodePaths,
  BasePath,
  NfsExport,
  VolumeScripts,
  ConfigCompanions,
  ConfigHolder,
} from './config/hostpath-config.ts';
export { ConfigFileSource, summarize as summarizeHostPathConfig } from './config/config-file-source.ts';
export type { ConfigFileSourceOptions } from './config/config-file-source.ts';
export {
  parseClassParameters,
  parseGoBool,
  StorageClassParameterError,
  DEFAULT_VOLUME_MODE_BITS,
} from './config/class-parameters.ts';
export type { ClassParameters, OnDeletePolicy, VolumeType } from './config/class-parameters.ts';
export {
  compilePathPattern,
  renderPathPattern,
  defaultVolumeDirName,
  nfsSubdirVolumeDirName,
  DEFAULT_PATH_PATTERN,
  PathTemplateError,
  TemplateSyntaxError,
  MissingTemplateKeyError,
} from './paths/path-template.ts';
export type { CompiledPathPattern, PathTemplateData, TemplateField } from './paths/path-template.ts';
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
} from './paths/path-safety.ts';
export type { UnsafePathRule, RelativePathRules } from './paths/path-safety.ts';
export { VolumePathIndex } from './ledger/volume-path-index.ts';
export type { InodeChain } from './ledger/volume-path-index.ts';
export { createVolumeDir, removeVolumeDir, archiveVolumeDir, archiveName, BasePathError } from './disk/volume-dirs.ts';
export { directoryUsage, nodeUsageFs, WalkBudget, type UsageFs } from './usage/directory-usage.ts';
export type { FsOpsOptions, CreateVolumeDirOptions, RemoveOptions, ArchiveOptions } from './disk/volume-dirs.ts';
export { nodeHostFs } from './disk/host-fs.ts';
export type { HostFs } from './disk/host-fs.ts';
export type { UsageOptions, DirectoryUsage } from './usage/directory-usage.ts';
export { VolumeLedger, SHARED_SCOPE } from './ledger/volume-ledger.ts';
export type { Allocation, AllocationSource, BasePathAllocation, Scope } from './ledger/volume-ledger.ts';
export {
  buildVolume,
  readVolumeLocation,
  ANN_HOSTPATH_NODE,
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_KIND,
  ANN_HOSTPATH_ON_DELETE,
} from './volume/volume-spec.ts';
export type { PathKind, VolumeLocation, VolumeSpecInput } from './volume/volume-spec.ts';
export { readVolumeRecords, RECORDS_SEGMENTS } from './records/volume-records.ts';
export type { VolumeRecord } from './records/volume-records.ts';
export {
  chooseVolumeType,
  volumeSourceSpec,
  localPathOfNfsSource,
  localDirectoryOf,
  mountedExports,
  VolumeTypeAnnotationError,
  ANN_VOLUME_TYPE,
  ANN_DEFAULT_VOLUME_TYPE,
} from './volume/volume-source.ts';
export type { MountedExport, PublishedType } from './volume/volume-source.ts';
export { runVolumeScript, VolumeScriptError } from './disk/volume-scripts.ts';
export { VolumeWatch, slimVolume } from './ledger/volume-watch.ts';
export { StaleVolumeIndexError, allocationOfVolume } from './ledger/live-volumes.ts';
export type { VolumeFeed } from './ledger/live-volumes.ts';
export type { VolumeScriptRun, ScriptName } from './disk/volume-scripts.ts';
