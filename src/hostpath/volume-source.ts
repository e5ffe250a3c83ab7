// Where a PV's directory is on this machine, whoever created the PV: ours carry their base path in an
// annotation; PVs adopted from local-path (hostPath or local source under a configured node path) or older
// versions have only their path, so the base is the configured root that contains it. This is the one place
// that turns a PV's volume source into a local directory: an nfs source (nfs-subdir) maps here once the shared
// path is declared as the mount of that export.
import type { PersistentVolume } from '../types/k8s.ts';
import { isQuantity, parseQuantity } from '../types/quantity.ts';
import { SHARED_SCOPE, type Allocation, type Scope } from './capacity.ts';
import type { HostPathConfig } from './config.ts';
import { isStrictlyUnder } from './path-safety.ts';
import { readVolumeLocation, ANN_HOSTPATH_BASE_PATH } from './volume-spec.ts';

/** A PV's directory, the configured base path holding it and the scope (node, or shared) of that base. */
export interface ResolvedVolumeSource {
  path: string;
  basePath: string;
  scope: Scope;
  /** True when the PV has no base-path annotation of ours (an older version's, or another provisioner's). */
  adopted: boolean;
}

/** The shared filesystem paths of a configuration (top level and per class). */
export function sharedBasePaths(config: HostPathConfig): Set<string> {
  const out = new Set<string>();
  for (const set of [config, ...Object.values(config.storageClassConfigs)]) if (set.sharedFileSystemPath) out.add(set.sharedFileSystemPath.path);
  return out;
}

/**
 * The local directory a PV's volume source stands for: its `local` or `hostPath` path. An `nfs` source has none
 * until a configured shared path is declared as the mount of that export; mapping it belongs here, so every
 * caller (delete, accounting, live-volume checks) sees the same directory.
 */
export function localDirectoryOf(pv: PersistentVolume): string | undefined {
  const p = pv.spec.local?.path ?? pv.spec.hostPath?.path;
  return typeof p === 'string' ? p : undefined;
}

/**
 * Resolves a PV's source to a local directory under one of `roots`, or undefined (no local/hostPath path, or a
 * path under none of the roots). An annotated base path must itself be one of the roots.
 */
export function resolveVolumeSource(pv: PersistentVolume, roots: readonly string[], config: HostPathConfig): ResolvedVolumeSource | undefined {
  const loc = readVolumeLocation(pv);
  const dir = localDirectoryOf(pv);
  if (!dir) return undefined;
  const annotated = pv.metadata.annotations?.[ANN_HOSTPATH_BASE_PATH];
  const basePath = annotated ?? longestRootOf(dir, roots);
  if (!basePath || !roots.includes(basePath) || !isStrictlyUnder(basePath, dir)) return undefined;
  const shared = loc.kind ? loc.kind === 'shared' : sharedBasePaths(config).has(basePath);
  return { path: dir, basePath, scope: shared ? SHARED_SCOPE : loc.node ?? SHARED_SCOPE, adopted: annotated === undefined };
}

/** The configured root that contains `p` most closely. */
export function longestRootOf(p: string, roots: readonly string[]): string | undefined {
  return roots.filter((r) => isStrictlyUnder(r, p)).sort((a, b) => b.length - a.length)[0];
}

/** The allocation of a PV without our annotations whose directory is under a configured root. */
export function adoptedAllocation(pv: PersistentVolume, roots: readonly string[], config: HostPathConfig): Allocation | undefined {
  const storage = pv.spec.capacity?.storage;
  if (!pv.metadata.name || !isQuantity(storage)) return undefined;
  const src = resolveVolumeSource(pv, roots, config);
  if (!src) return undefined;
  return { pvName: pv.metadata.name, scope: src.scope, basePath: src.basePath, path: src.path, bytes: parseQuantity(storage) };
}
