// Expansion of a hostpath volume: a directory has no size of its own, so growing it is accounting. The new size
// must fit the base path's configured capacity (the volume's own allocation counts as free); the ledger and the
// on-disk record then carry the new size. Idempotent: asking again for a size the volume already has changes
// nothing, so an expand() repeated after a crash or a leader change is never counted twice. The record keeps every
// other field (PV name, claim uid, path): an expansion changes the size only, so the record still proves whose
// directory it is; an older record without a claim uid gets the bound claim's. Volumes that are no longer in use
// as such (Released/retained, archived, being deleted) are refused.
import type { ExpandResult } from '../../controller/provisioner.ts';
import { IgnoredError, InfeasibleError } from '../../controller/provisioner.ts';
import type { PersistentVolume } from '../../types/k8s.ts';
import { formatBytes, isQuantity, parseQuantity } from '../../types/quantity.ts';
import { SHARED_SCOPE, type Allocation, type VolumeLedger } from '../ledger/volume-ledger.ts';
import { nodeBasePaths, pathSetForClass, type HostPathConfig } from '../config/hostpath-config.ts';
import { checkExistingVolumePath, UnsafePathError } from '../paths/path-safety.ts';
import type { VolumeRecord } from '../records/volume-records.ts';
import type { VolumeRecordStore } from '../ledger/record-store.ts';
import { readVolumeLocation } from '../volume/volume-spec.ts';
import { allocationOfVolume } from '../ledger/live-volumes.ts';
import type { MountedExport } from '../volume/volume-source.ts';
import type { FsOpsOptions } from '../disk/volume-dirs.ts';
import type { Logger } from '../../types/logger.ts';
import { hostFsOf } from '../disk/host-fs.ts';

export interface ExpandContext {
  ledger: VolumeLedger;
  config: HostPathConfig;
  /** The base paths this instance may touch. */
  roots: string[];
  /** daemonset mode: the only node served. */
  servedNode?: string;
  now: number;
  fs?: FsOpsOptions;
  /** The base paths' records (read and written by name: O(1)). */
  records: VolumeRecordStore;
  /** The mounted NFS exports: a volume published as nfs maps to its directory through them. */
  exports?: readonly MountedExport[];
  logger?: Logger;
}

/** Grows `volume` to `newSize` in the accounting (ledger + record). Call with the volume's operation lock held. */
export async function expandHostPathVolume(
  ctx: ExpandContext,
  volume: PersistentVolume,
  newSize: string,
  signal: AbortSignal,
): Promise<ExpandResult> {
  signal.throwIfAborted();
  const pvName = volume.metadata.name ?? '';
  if (!isQuantity(newSize)) throw new InfeasibleError(`${JSON.stringify(newSize)} is not a valid size`);
  const bytes = parseQuantity(newSize);
  const loc = readVolumeLocation(volume, ctx.exports);
  const alloc = allocationOfVolume(volume, ctx.exports);
  if (!loc.path || !loc.basePath || !alloc)
    throw new InfeasibleError(
      `volume ${pvName} is not a hostpath volume of this provisioner (no base-path annotation or path)`,
    );
  if (ctx.servedNode !== undefined && alloc.scope !== SHARED_SCOPE && loc.node !== ctx.servedNode) {
    throw new IgnoredError(
      `volume ${pvName} belongs to node ${loc.node ?? '(none)'}; this instance serves node ${ctx.servedNode}`,
    );
  }
  const phase = volume.status?.phase;
  if (volume.metadata.deletionTimestamp || phase === 'Released' || phase === 'Failed') {
    throw new InfeasibleError(
      `volume ${pvName} is ${volume.metadata.deletionTimestamp ? 'being deleted' : `${phase} (retained or archived)`}; only volumes in use are expanded`,
    );
  }
  if (!ctx.roots.includes(loc.basePath))
    throw new InfeasibleError(`volume ${pvName} is under ${loc.basePath}, not a configured base path here`);
  let segments: string[];
  try {
    segments = checkExistingVolumePath(loc.basePath, loc.path);
  } catch (e) {
    if (e instanceof UnsafePathError) throw new InfeasibleError(e.message, { cause: e });
    throw e;
  }
  const stat = await hostFsOf(ctx.fs)
    .lstat(loc.path)
    .catch(() => undefined);
  if (!stat?.isDirectory())
    throw new InfeasibleError(
      `volume ${pvName}'s directory ${loc.path} is gone (archived or deleted); refusing to expand`,
    );

  const current = ctx.ledger.get(pvName) ?? alloc;
  const claimUid = volume.spec.claimRef?.uid;
  if (current.bytes >= bytes) {
    await syncRecord(ctx, current, segments, claimUid);
    return { capacity: current.bytes === bytes ? newSize : formatBytes(current.bytes) };
  }
  const capacity = baseCapacity(ctx.config, volume.spec.storageClassName ?? '', alloc.scope, loc.basePath);
  // From fits() to observe(): no await, so two expansions (or a provision) cannot both take the last free bytes.
  if (!ctx.ledger.fits(alloc.scope, loc.basePath, capacity, bytes, pvName)) {
    const free = ctx.ledger.free(alloc.scope, loc.basePath, capacity, pvName) ?? 0n;
    throw new InfeasibleError(
      `base path ${loc.basePath} cannot hold ${newSize} for volume ${pvName}: ${formatBytes(free > 0n ? free : 0n)} free for it out of ${formatBytes(capacity ?? 0n)}`,
    );
  }
  const grown: Allocation = { ...current, bytes };
  ctx.ledger.observe('local', grown);
  try {
    await syncRecord(ctx, grown, segments, claimUid);
  } catch (e) {
    ctx.ledger.observe('local', current);
    throw e;
  }
  return { capacity: newSize };
}

/**
 * The on-disk record carries the allocation's size (written only when it differs), every other field unchanged,
 * except that a record of this directory without a claim uid (an older version's) gets the bound claim's uid.
 * A volume of ours without a record (an older version's) gets one, with that claim's uid.
 */
async function syncRecord(
  ctx: ExpandContext,
  a: Allocation,
  segments: string[],
  claimUid: string | undefined,
): Promise<void> {
  const existing = await ctx.records.read(a.basePath, a.pvName);
  // An older version's record has no claim uid: the claim the volume is bound to (the one asking to grow it) goes
  // in, when the record names this directory (one that names another proves nothing, and is left as it is).
  const addUid =
    existing?.claimUid === undefined && claimUid && existing?.relativePath === segments.join('/') ? { claimUid } : {};
  if (existing && existing.bytes === a.bytes.toString() && !addUid.claimUid) return;
  if (existing) {
    await ctx.records.write(a.basePath, { ...existing, bytes: a.bytes.toString(), ...addUid });
    return;
  }
  const record: VolumeRecord = {
    pvName: a.pvName,
    relativePath: segments.join('/'),
    bytes: a.bytes.toString(),
    scope: a.scope,
    createdAt: new Date(ctx.now).toISOString(),
    ...(claimUid ? { claimUid } : {}),
  };
  await ctx.records.write(a.basePath, record);
  const held = await ctx.records.claim(a.basePath, record);
  if (held)
    ctx.logger?.warn(
      { pv: a.pvName, heldBy: held.pvName },
      'the directory of an expanded volume is claimed by another volume',
    );
}

/** The configured capacity of a base path for the volume's class and scope (undefined = unlimited). */
function baseCapacity(config: HostPathConfig, className: string, scope: string, basePath: string): bigint | undefined {
  const set = pathSetForClass(config, className);
  if (!set) return undefined;
  if (scope === SHARED_SCOPE)
    return set.sharedFileSystemPath?.path === basePath ? set.sharedFileSystemPath.capacity : undefined;
  return nodeBasePaths(set, scope)?.find((p) => p.path === basePath)?.capacity;
}
