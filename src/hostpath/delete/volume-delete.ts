// delete() of the hostpath provisioner: find the directory a PV stands for (ours, adopted, or name-only from the
// leak inventory; in canonical form, and refused when its source names no single directory), let a gone node's PV
// go, prove the directory is exactly that volume's, then apply its onDelete policy (delete, archive, retain;
// adopted PVs take it from their class) and forget its record and path claim. A teardown script is never handed a
// path holding a character a shell reads as syntax.
import type { EventSink } from '../../types/events.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import { IgnoredError } from '../../controller/provisioner.ts';
import { shortenText } from '../../types/text.ts';
import type { Clock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import { allBasePaths, type HostPathConfig } from '../config/hostpath-config.ts';
import { parseClassParameters, onDeleteFor, type OnDeletePolicy } from '../config/class-parameters.ts';
import { checkExistingVolumePath, checkScriptPath, UnsafePathError } from '../paths/path-safety.ts';
import type { VolumePathIndex } from '../ledger/volume-path-index.ts';
import { removeVolumeDir, archiveVolumeDir, type FsOpsOptions } from '../disk/volume-dirs.ts';
import { isRealDirectory } from '../disk/volume-scripts.ts';
import type { VolumeRecord } from '../records/volume-records.ts';
import type { VolumeRecordStore } from '../ledger/record-store.ts';
import { readVolumeLocation, volumeBytes, ANN_HOSTPATH_ON_DELETE } from '../volume/volume-spec.ts';
import { proveVolumeIdentity } from './delete-identity.ts';
import { canonicalAbsolutePath } from '../paths/canonical-path.ts';
import {
  localDirectoryOf,
  longestRootOf,
  readVolumeDirectory,
  sharedBasePaths,
  type MountedExport,
} from '../volume/volume-source.ts';
import { REASON_NODE_GONE, type GoneNodePolicy } from './gone-node.ts';

/** What delete needs from the provisioner: its mode, options, configuration and live-volume ledger. */
export interface DeleteContext {
  mode: 'deployment' | 'daemonset';
  nodeName?: string;
  logger: Logger;
  clock: Clock;
  fs?: FsOpsOptions;
  events?: EventSink<PersistentVolumeClaim | PersistentVolume>;
  storageClass?: (name: string, signal: AbortSignal) => StorageClass | undefined | Promise<StorageClass | undefined>;
  goneNodes?: GoneNodePolicy;
  config(): HostPathConfig;
  /** The roots delete may touch: those reachable from this instance. */
  configuredRoots(): string[];
  /** Brings the live-volume ledger up to date; `fresh`: current as of the volume's last change (a leaf proof). */
  ensureLedger(signal: AbortSignal, fresh?: { pvName: string }): Promise<void>;
  /** Every live-volume index a directory here can collide with. */
  reachableIndexes(): VolumePathIndex[];
  /** Throws UnsafePathError when `<base>/<segments>` is, holds or is inside a live volume's directory by device and inode. */
  checkDiskIdentity(base: string, segments: string[], pvName: string): Promise<void>;
  /** Forgets a volume in the ledger. */
  release(pvName: string): void;
  /** The NFS exports mounted at the shared paths: an nfs PV source maps to its directory through them. */
  exports(): MountedExport[];
  /** Runs the configured teardown script on a volume directory (none configured: nothing). */
  teardown(dir: string, bytes: bigint, signal: AbortSignal): Promise<void>;
  /** The records and path claims of the base paths. */
  records: VolumeRecordStore;
}

/** Applies the volume's onDelete policy to its directory once its identity is proven (see delete-identity.ts). */
export async function deleteVolumeDirectory(
  ctx: DeleteContext,
  volume: PersistentVolume,
  pvName: string,
  signal: AbortSignal,
): Promise<void> {
  signal.throwIfAborted();
  const target = await deleteTarget(ctx, volume, pvName, signal);
  if ('goneNode' in target) {
    ctx.events?.event(volume, 'Warning', REASON_NODE_GONE, target.message);
    ctx.release(pvName);
    return;
  }
  const { base, path: vpath, segments } = target;
  const rel = segments.join('/');
  await ctx.ensureLedger(signal);
  const record = target.record ?? (await ctx.records.read(base, pvName));
  // Without a record that names this PV and its claim, the leaf rule needs the live volumes as they are now.
  const proof = await proveVolumeIdentity({
    // No claimRef (a name-only volume, or a PV never bound: the controller deletes only released ones): the
    // record's name and path must still match.
    pvName,
    claimUid: target.nameOnly ? undefined : volume.spec.claimRef?.uid,
    path: vpath,
    basePath: base,
    record,
    pathClaim: await ctx.records.claimOfPath(base, rel),
    otherClaim: () => ctx.records.conflict(base, rel, pvName),
    liveVolumes: async (fresh) => {
      // A name-only volume has no PV to be current with; its record proved it.
      if (fresh && !target.nameOnly) await ctx.ensureLedger(signal, { pvName });
      return ctx.reachableIndexes();
    },
    checkInodes: () => ctx.checkDiskIdentity(base, segments, pvName),
    basePaths: allBasePaths(ctx.config()),
  });
  const onDelete = target.onDelete ?? (await adoptedOnDelete(ctx, volume, signal));
  const log = ctx.logger.child({ pv: pvName, path: vpath, proof });
  if (onDelete === 'retain') {
    log.info({}, 'onDelete retain: keeping the directory');
  } else if (onDelete === 'archive') {
    const r = await archiveVolumeDir(base, segments, {
      ...ctx.fs,
      pvName,
      now: new Date(ctx.clock.now()),
      // Not the place of a live volume (one whose directory does not exist yet would mount the archive).
      isFree: async (archived) => {
        try {
          for (const index of ctx.reachableIndexes())
            index.checkFree(`${base}/${archived.join('/')}`, pvName, allBasePaths(ctx.config()));
          await ctx.checkDiskIdentity(base, archived, pvName);
          return true;
        } catch (e) {
          if (e instanceof UnsafePathError) return false;
          throw e;
        }
      },
    });
    if (r.archivedPath) log.info({ archivedPath: r.archivedPath }, 'volume directory archived');
    else log.warn({}, 'volume directory was already gone; nothing to archive');
  } else {
    // Teardown only for delete (a local-path teardown is typically `rm -rf`, which archive and retain must not
    // run), after the identity proof above, on that proven directory and only while it is still a real one.
    if (ctx.config().scripts.teardown !== undefined && (await isRealDirectory(vpath, ctx.fs))) {
      checkScriptPath('teardown', base, vpath);
      await ctx.teardown(vpath, volumeBytes(volume), signal).catch((e: unknown) => {
        log.warn(
          { err: (e as Error).message },
          'teardown script failed; the directory is kept and the deletion retried',
        );
        throw e;
      });
    }
    const r = await removeVolumeDir(base, segments, { ...ctx.fs, signal });
    if (r.existed) log.info({}, 'volume directory deleted');
    else log.warn({}, 'volume directory was already gone');
  }
  await ctx.records.remove(base, pvName, rel);
  ctx.release(pvName);
}

// The directory a delete would touch, checked against the configured roots (not yet against other volumes).
async function deleteTarget(
  ctx: DeleteContext,
  volume: PersistentVolume,
  pvName: string,
  signal: AbortSignal,
): Promise<DeleteTarget | { goneNode: string; message: string }> {
  const exports = ctx.exports();
  const loc = readVolumeLocation(volume, exports);
  const reading = readVolumeDirectory(volume, exports);
  if (reading.kind === 'ambiguous') {
    throw new UnsafePathError(
      'outside-root',
      reading.candidates[0] ?? '',
      `is what volume ${pvName}'s source may mean, but it cannot be mapped to exactly one directory (${reading.why}); refusing to guess`,
    );
  }
  const dir = reading.kind === 'one' ? reading.path : undefined;
  if (!dir) {
    // A name-only volume (the leak inventory deleting a directory that has no PV): our record says where.
    // A PV we published always has a path, so one with our annotations and none is refused.
    if (loc.basePath !== undefined)
      throw new Error(
        `volume ${pvName} has no local directory (no local or hostPath path, and no nfs source under a configured export); refusing to guess`,
      );
    const found = await ctx.records.find(pvName, ctx.configuredRoots());
    if (!found) {
      if (ctx.mode === 'daemonset')
        throw new IgnoredError(`volume ${pvName} has no path and no record on node ${ctx.nodeName}`);
      throw new Error(noLocalPathMessage(volume));
    }
    const path = `${found.basePath}/${found.record.relativePath}`;
    const segments = checkExistingVolumePath(found.basePath, path);
    return { base: found.basePath, path, segments, onDelete: 'delete', record: found.record, nameOnly: true };
  }
  if (ctx.mode === 'daemonset' && loc.node !== ctx.nodeName) {
    const verdict = await ctx.goneNodes?.check(volume, signal);
    if (verdict?.gone && !verdict.reachable) return { goneNode: verdict.node, message: verdict.message };
    // A shared-path volume of a gone node: its directory is here too, and goes through the usual checks.
    if (!verdict?.gone)
      throw new IgnoredError(
        `volume ${pvName} belongs to ${loc.node ? `node ${loc.node}` : 'no node'}; this instance serves node ${ctx.nodeName}${verdict ? ` (${verdict.reason})` : ''}`,
      );
  }
  if (loc.onDelete === undefined)
    throw new Error(`volume ${pvName} has an unrecognised ${ANN_HOSTPATH_ON_DELETE} annotation; refusing to guess`);
  signal.throwIfAborted();
  const roots = ctx.configuredRoots();
  const annotatedBase = loc.basePath === undefined ? undefined : (canonicalAbsolutePath(loc.basePath) ?? loc.basePath);
  const base = annotatedBase ?? longestRootOf(dir, roots);
  if (!base || !roots.includes(base)) {
    throw new UnsafePathError(
      'outside-root',
      dir,
      `is not under a configured base path (${base ?? 'none'} is not configured here); refusing to touch it`,
    );
  }
  const segments = checkExistingVolumePath(base, dir);
  const annotated = volume.metadata.annotations?.[ANN_HOSTPATH_ON_DELETE] !== undefined;
  return { base, path: dir, segments, onDelete: annotated ? loc.onDelete : undefined, nameOnly: false };
}

// A PV without our onDelete annotation (an older version's, or adopted from local-path / nfs-subdir): its
// class decides, as it did for the provisioner that created it. No class lookup configured: delete.
async function adoptedOnDelete(
  ctx: DeleteContext,
  volume: PersistentVolume,
  signal: AbortSignal,
): Promise<OnDeletePolicy> {
  const lookup = ctx.storageClass;
  // No class to ask: what the provisioner of that shape did by default (nfs-subdir archives, local-path deletes).
  if (!lookup) return onDeleteFor({}, sharedVolume(ctx, volume));
  const name = volume.spec.storageClassName ?? '';
  const sc = name ? await lookup(name, signal) : undefined;
  if (!sc) {
    throw new Error(
      `volume ${volume.metadata.name} has no onDelete annotation and its storage class ${JSON.stringify(name)} does not exist, so whether to delete, archive or retain its directory is unknown; refusing to guess (recreate the class, or annotate the volume with ${ANN_HOSTPATH_ON_DELETE})`,
    );
  }
  return onDeleteFor(parseClassParameters(sc.parameters), sharedVolume(ctx, volume));
}

// An nfs source, or a directory under a shared path, is nfs-subdir's shape; the rest local-path's.
function sharedVolume(ctx: DeleteContext, volume: PersistentVolume): boolean {
  if (volume.spec.nfs) return true;
  const dir = localDirectoryOf(volume, ctx.exports());
  const roots = [...sharedBasePaths(ctx.config())];
  return dir !== undefined && longestRootOf(dir, roots) !== undefined;
}

interface DeleteTarget {
  base: string;
  path: string;
  segments: string[];
  /** From our annotation; undefined: the PV has none (adopted), its class decides. */
  onDelete: OnDeletePolicy | undefined;
  record?: VolumeRecord;
  /** Found through its record (leak inventory): no claimRef to compare. */
  nameOnly: boolean;
}

// Why a PV has no directory here, in words that fit an existing PV (not a pathPattern hint).
function noLocalPathMessage(pv: PersistentVolume): string {
  const name = pv.metadata.name ?? '';
  const nfs = pv.spec.nfs;
  if (nfs) {
    return `volume ${name} is an nfs volume (${shortenText(`${nfs.server}:${nfs.path}`, 512)}) and no configured shared path is the mount of that export, so its directory cannot be found here; nothing was touched`;
  }
  return `volume ${name} has no local or hostPath path and no record in any configured base path, so it is not a hostpath volume this provisioner can find; nothing was touched`;
}
