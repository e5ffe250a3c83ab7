// The PV source of a hostpath volume, both ways: which source a new PV gets (local, hostPath, or nfs when the
// shared path is the mount of an NFS export), and which local directory an existing PV's source stands for,
// whoever created the PV (ours, an older version's, local-path's hostPath/local PVs, nfs-subdir's nfs PVs). This
// is the one place that turns a PV's volume source into a local directory: delete, accounting, usage and
// live-volume checks all go through readVolumeDirectory. Every path is read in its canonical form
// (canonical-path.ts): `BASE//x`, `BASE/./x`, `BASE/x/` and an nfs source `/export/x/` on server `NFS.Example.`
// all name the same directory. A source holding `..`, or an nfs source that two exports map, cannot be mapped to
// exactly one directory: it is `ambiguous`, and callers block everything it could mean.
import path from 'node:path';
import type { PersistentVolume, PersistentVolumeSpec } from '../../types/k8s.ts';
import type { HostPathConfig, NfsExport, PathSet } from '../config/hostpath-config.ts';
import { isStrictlyUnder } from '../paths/path-safety.ts';
import type { VolumeType } from '../config/class-parameters.ts';
import { canonicalNfsServer, readAbsolutePath } from '../paths/canonical-path.ts';

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
  constructor(
    readonly annotation: string,
    readonly value: string,
    readonly on: 'claim' | 'class',
  ) {
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
  const fromAnnotation = (
    ann: Record<string, string> | undefined,
    key: string,
    on: 'claim' | 'class',
  ): PublishedType | undefined => {
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
export function volumeSourceSpec(
  type: PublishedType,
  localPath: string,
  mount?: MountedExport,
): Partial<PersistentVolumeSpec> {
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
      if (rel === '' || rel.startsWith('..') || path.posix.isAbsolute(rel))
        throw new Error(`${localPath} is not below the export mount ${mount.mountPath}`);
      return { nfs: { server: mount.server, path: mount.path === '/' ? `/${rel}` : `${mount.path}/${rel}` } };
    }
  }
}

/**
 * The local directory an `nfs:` PV source stands for: `<mountPath>/<rest>` when the source names the export's
 * server (without case, without a trailing dot) and a path at or below the export path (canonical: `//`, `.` and a
 * trailing `/` do not matter), else undefined. A path holding `..` maps to nothing here (readVolumeDirectory calls
 * it ambiguous). The export root itself maps to mountPath (callers' delete-identity checks refuse it as a base path).
 */
export function localPathOfNfsSource(
  source: { server?: string; path?: string },
  mount: MountedExport,
): string | undefined {
  const r = nfsReading(source, mount);
  return r?.kind === 'canonical' ? r.path : undefined;
}

// The source's path read below one export: undefined when the server is another one or the path is not below it.
function nfsReading(
  source: { server?: string; path?: string },
  mount: MountedExport,
): ReturnType<typeof readAbsolutePath> {
  const { server, path: p } = source;
  if (typeof server !== 'string' || canonicalNfsServer(server) !== canonicalNfsServer(mount.server)) return undefined;
  const reading = readAbsolutePath(p);
  const exportPath = readAbsolutePath(mount.path);
  if (!reading || exportPath?.kind !== 'canonical') return undefined;
  const map = (abs: string): string | undefined => {
    if (abs === exportPath.path) return mount.mountPath;
    if (exportPath.path === '/') return `${mount.mountPath}${abs}`;
    return isStrictlyUnder(exportPath.path, abs) ? `${mount.mountPath}${abs.slice(exportPath.path.length)}` : undefined;
  };
  if (reading.kind === 'canonical') {
    const local = map(reading.path);
    return local === undefined ? undefined : { kind: 'canonical', path: local };
  }
  // `..` below the export could mean anything the export holds: the export root, at least.
  const candidates = reading.candidates.map(map).filter((c): c is string => c !== undefined);
  return { kind: 'ambiguous', candidates: candidates.length > 0 ? candidates : [mount.mountPath], why: reading.why };
}

/** Every mounted export in a configuration (global and per class), plus a default for the global shared path. */
export function mountedExports(config: HostPathConfig, defaultExport?: NfsExport): MountedExport[] {
  const out: MountedExport[] = [];
  const globalExport = config.nfs ?? defaultExport;
  if (config.sharedFileSystemPath && globalExport)
    out.push({ ...globalExport, mountPath: config.sharedFileSystemPath.path });
  for (const set of Object.values(config.storageClassConfigs)) {
    if (set.sharedFileSystemPath && set.nfs) out.push({ ...set.nfs, mountPath: set.sharedFileSystemPath.path });
  }
  return out;
}

/** The export a path set's shared path is mounted from: its own, or `defaultExport` for the top level. */
export function exportOfPathSet(
  set: PathSet,
  config: HostPathConfig,
  defaultExport?: NfsExport,
): MountedExport | undefined {
  const e = set.nfs ?? (set === config ? defaultExport : undefined);
  return e && set.sharedFileSystemPath ? { ...e, mountPath: set.sharedFileSystemPath.path } : undefined;
}

/** What a PV's volume source names on this machine. */
export type DirectoryReading =
  /** No local, hostPath or nfs source, or an nfs source under no configured export. */
  | { kind: 'none' }
  /** Exactly one directory, in canonical form. */
  | { kind: 'one'; path: string }
  /** Not one directory (`..`, or an nfs source two exports map): the paths it could mean, and why. */
  | { kind: 'ambiguous'; candidates: string[]; why: string };

/**
 * The local directory a PV's volume source stands for: its `local` or `hostPath` path, or its `nfs` source mapped
 * through `exports` (the configured shared paths that are the mounts of NFS exports), in canonical form.
 */
export function readVolumeDirectory(pv: PersistentVolume, exports: readonly MountedExport[] = []): DirectoryReading {
  const direct = pv.spec.local?.path ?? pv.spec.hostPath?.path;
  if (direct !== undefined) {
    const r = readAbsolutePath(direct);
    if (!r) return { kind: 'none' };
    return r.kind === 'canonical' ? { kind: 'one', path: r.path } : r;
  }
  const nfs = pv.spec.nfs;
  if (!nfs) return { kind: 'none' };
  const readings = exports.map((m) => nfsReading(nfs, m)).filter((r) => r !== undefined);
  const ambiguous = readings.find((r) => r.kind === 'ambiguous');
  const paths = [...new Set(readings.flatMap((r) => (r.kind === 'canonical' ? [r.path] : r.candidates)))];
  if (ambiguous) return { kind: 'ambiguous', candidates: paths, why: ambiguous.why };
  if (paths.length === 0) return { kind: 'none' };
  if (paths.length === 1) return { kind: 'one', path: paths[0] };
  return { kind: 'ambiguous', candidates: paths, why: 'more than one configured export maps it' };
}

/**
 * The directories an nfs source that no configured export maps (another server name) would name if its server were
 * an export's server under another name: a DNS name and an address, a CNAME, a second address of a multi-homed
 * server. Which of these is true needs the network (and even DNS cannot tell two addresses of one server apart),
 * so live volumes block them (fail closed). Empty when the source's path is below no export path.
 */
export function possibleNfsDirectories(pv: PersistentVolume, exports: readonly MountedExport[]): string[] {
  const nfs = pv.spec.nfs;
  if (!nfs || typeof nfs.server !== 'string') return [];
  const out = new Set<string>();
  for (const m of exports) {
    const r = nfsReading({ ...nfs, server: m.server }, m);
    if (r?.kind === 'canonical') out.add(r.path);
    // A `..` one: only what it could mean below the export (not the export root by default, as for its own server).
    else if (r?.kind === 'ambiguous') {
      const reading = readAbsolutePath(nfs.path);
      if (reading?.kind === 'ambiguous' && reading.candidates.some((c) => nfsReading({ server: m.server, path: c }, m)))
        for (const c of r.candidates) out.add(c);
    }
  }
  return [...out];
}

/** The one local directory of a PV (canonical), or undefined (none, or not exactly one: see readVolumeDirectory). */
export function localDirectoryOf(pv: PersistentVolume, exports: readonly MountedExport[] = []): string | undefined {
  const r = readVolumeDirectory(pv, exports);
  return r.kind === 'one' ? r.path : undefined;
}

/** The shared filesystem paths of a configuration (top level and per class). */
export function sharedBasePaths(config: HostPathConfig): Set<string> {
  const out = new Set<string>();
  for (const set of [config, ...Object.values(config.storageClassConfigs)])
    if (set.sharedFileSystemPath) out.add(set.sharedFileSystemPath.path);
  return out;
}

/** The configured root that contains `p` most closely. */
export function longestRootOf(p: string, roots: readonly string[]): string | undefined {
  return roots.filter((r) => isStrictlyUnder(r, p)).sort((a, b) => b.length - a.length)[0];
}
