// The PV source of a hostpath volume, both ways: which source a new PV gets (local, hostPath, or nfs when the
// shared path is the mount of an NFS export), and which local directory an existing PV's source stands for,
// whoever created the PV (ours, an older version's, local-path's hostPath/local PVs, nfs-subdir's nfs PVs). This
// is the one place that turns a PV's volume source into a local directory: delete, accounting, usage and
// live-volume checks all go through localDirectoryOf. The nfs mapping is lexical and fails closed: anything not
// exactly below a known export maps to nothing.
import path from 'node:path';
import type { PersistentVolume, PersistentVolumeSpec } from '../types/k8s.ts';
import type { HostPathConfig, NfsExport, PathSet } from './config.ts';
import { isStrictlyUnder } from './path-safety.ts';
import type { VolumeType } from './class-parameters.ts';

/** An NFS export and the directory it is mounted at on this instance. */
export interface MountedExport extends NfsExport {
  mountPath: string;
}

/** How the PV publishes the directory. `hostPath-or-create` is local-path's hostPath type DirectoryOrCreate. */
export type PublishedType = VolumeType | 'hostPath-or-create' | 'nfs';

/** local-path's PVC annotation choosing the PV type of one claim. */
export const ANN_VOLUME_TYPE = 'volumeType';
/** local-path's StorageClass annotation choosing the default PV type of a class. */
export const ANN_DEFAULT_VOLUME_TYPE = 'defaultVolumeType';

/** A `volumeType` / `defaultVolumeType` annotation that is not local or hostPath. */
export class VolumeTypeAnnotationError extends Error {
  override name = 'VolumeTypeAnnotationError';
  constructor(readonly annotation: string, readonly value: string, readonly on: 'claim' | 'class') {
    super(`the ${on}'s ${annotation} annotation ${JSON.stringify(value.slice(0, 64))} is not one of local, hostPath`);
  }
}

/**
 * The PV type for a claim. Precedence: the claim's `volumeType` annotation, the class's `volumeType` parameter,
 * the class's `defaultVolumeType` annotation, then the path kind's default (node: local, shared: hostPath). A
 * shared path that is an NFS export is nfs unless the class parameter says otherwise (annotations do not apply). A type chosen by local-path's annotations is written as
 * local-path writes it (hostPath type DirectoryOrCreate). Throws VolumeTypeAnnotationError.
 */
export function chooseVolumeType(o: {
  claimAnnotations?: Record<string, string>;
  classAnnotations?: Record<string, string>;
  parameter?: VolumeType;
  shared: boolean;
  nfs: boolean;
}): PublishedType {
  const fromAnnotation = (ann: Record<string, string> | undefined, key: string, on: 'claim' | 'class'): PublishedType | undefined => {
    const v = ann?.[key];
    if (v === undefined) return undefined;
    // local-path lower-cases the value before matching.
    const lower = v.toLowerCase();
    if (lower === 'local') return 'local';
    if (lower === 'hostpath') return 'hostPath-or-create';
    throw new VolumeTypeAnnotationError(key, v, on);
  };
  // An NFS export is published as nfs unless the class itself says otherwise: local-path's annotations (a tenant's
  // among them) would turn it into hostPath volumes that only work where the export happens to be mounted.
  if (o.shared && o.nfs) return o.parameter ?? 'nfs';
  const claimChoice = fromAnnotation(o.claimAnnotations, ANN_VOLUME_TYPE, 'claim');
  if (claimChoice) return claimChoice;
  if (o.parameter) return o.parameter;
  const classChoice = fromAnnotation(o.classAnnotations, ANN_DEFAULT_VOLUME_TYPE, 'class');
  if (classChoice) return classChoice;
  if (!o.shared) return 'local';
  return o.nfs ? 'nfs' : 'hostPath';
}

/** The PV spec fields of the source: exactly one of local, hostPath, nfs. */
export function volumeSourceSpec(type: PublishedType, localPath: string, mount?: MountedExport): Partial<PersistentVolumeSpec> {
  switch (type) {
    case 'local':
      return { local: { path: localPath } };
    case 'hostPath':
      // `Directory`: an unmounted disk must not silently get an empty directory.
      return { hostPath: { path: localPath, type: 'Directory' } };
    case 'hostPath-or-create':
      return { hostPath: { path: localPath, type: 'DirectoryOrCreate' } };
    case 'nfs': {
      if (!mount) throw new Error('an nfs volume source needs the mounted export');
      const rel = path.posix.relative(mount.mountPath, localPath);
      if (rel === '' || rel.startsWith('..') || path.posix.isAbsolute(rel)) throw new Error(`${localPath} is not below the export mount ${mount.mountPath}`);
      return { nfs: { server: mount.server, path: mount.path === '/' ? `/${rel}` : `${mount.path}/${rel}` } };
    }
  }
}

/**
 * The local directory an `nfs:` PV source stands for: `<mountPath>/<rest>` when the source names the export's
 * server and a path at or below the export path, else undefined. Fails closed on anything not normalised
 * (`..`, `.`, doubled or trailing slashes), so a crafted PV can never map outside the mount. The export root
 * itself maps to mountPath (callers' delete-identity checks refuse it as a base path).
 */
export function localPathOfNfsSource(source: { server?: string; path?: string }, mount: MountedExport): string | undefined {
  const { server, path: p } = source;
  if (typeof server !== 'string' || typeof p !== 'string') return undefined;
  if (server.toLowerCase() !== mount.server.toLowerCase()) return undefined;
  if (!p.startsWith('/') || p.includes('\0') || path.posix.normalize(p) !== p || (p.length > 1 && p.endsWith('/'))) return undefined;
  if (p === mount.path) return mount.mountPath;
  const prefix = mount.path === '/' ? '/' : `${mount.path}/`;
  if (!p.startsWith(prefix)) return undefined;
  return `${mount.mountPath}/${p.slice(prefix.length)}`;
}

/** Every mounted export in a configuration (global and per class), plus a default for the global shared path. */
export function mountedExports(config: HostPathConfig, defaultExport?: NfsExport): MountedExport[] {
  const out: MountedExport[] = [];
  const globalExport = config.nfs ?? defaultExport;
  if (config.sharedFileSystemPath && globalExport) out.push({ ...globalExport, mountPath: config.sharedFileSystemPath.path });
  for (const set of Object.values(config.storageClassConfigs)) {
    if (set.sharedFileSystemPath && set.nfs) out.push({ ...set.nfs, mountPath: set.sharedFileSystemPath.path });
  }
  return out;
}

/** The export a path set's shared path is mounted from: its own, or `defaultExport` for the top level. */
export function exportOfPathSet(set: PathSet, config: HostPathConfig, defaultExport?: NfsExport): MountedExport | undefined {
  const e = set.nfs ?? (set === config ? defaultExport : undefined);
  return e && set.sharedFileSystemPath ? { ...e, mountPath: set.sharedFileSystemPath.path } : undefined;
}

/**
 * The local directory a PV's volume source stands for: its `local` or `hostPath` path, or its `nfs` source mapped
 * through `exports` (the configured shared paths that are the mounts of NFS exports). Undefined when there is
 * none, or when an nfs source is under no export, or under two (ambiguous: refused rather than picked).
 */
export function localDirectoryOf(pv: PersistentVolume, exports: readonly MountedExport[] = []): string | undefined {
  const direct = pv.spec.local?.path ?? pv.spec.hostPath?.path;
  if (direct !== undefined) return typeof direct === 'string' ? direct : undefined;
  const nfs = pv.spec.nfs;
  if (!nfs) return undefined;
  const hits = exports.map((m) => localPathOfNfsSource(nfs, m)).filter((p): p is string => p !== undefined);
  return new Set(hits).size === 1 ? hits[0] : undefined;
}

/** The shared filesystem paths of a configuration (top level and per class). */
export function sharedBasePaths(config: HostPathConfig): Set<string> {
  const out = new Set<string>();
  for (const set of [config, ...Object.values(config.storageClassConfigs)]) if (set.sharedFileSystemPath) out.add(set.sharedFileSystemPath.path);
  return out;
}

/** The configured root that contains `p` most closely. */
export function longestRootOf(p: string, roots: readonly string[]): string | undefined {
  return roots.filter((r) => isStrictlyUnder(r, p)).sort((a, b) => b.length - a.length)[0];
}
