// The volume records of the base paths this instance serves, on disk (volume-records.ts: one file per PV name;
// path-claims.ts: one claim per directory, with ancestor markers) and indexed in memory. Each base path is loaded
// once (one read of its records directory, one read per record), its records fed to the ledger, and claims written
// for records older versions left without one; from then on a claim costs O(1) filesystem calls whatever the
// number of volumes: its own record is read or written by name, and another instance's work is seen through the
// claims of this one path, its ancestors and what is below it. The memory index (name -> base path, creation time,
// a few dozen bytes) serves the leak inventory and name-only deletes; this process keeps it current on every write.
import type { Logger } from '../../types/logger.ts';
import type { FsOpsOptions, KnownDirs } from '../disk/volume-dirs.ts';
import { hostFsOf } from '../disk/host-fs.ts';
import type { VolumeLedger } from './volume-ledger.ts';
import { checkRelativeVolumePath } from '../paths/path-safety.ts';
import {
  listRecordFiles,
  pvNameOfRecordFile,
  readRecordFile,
  readVolumeRecord,
  removeVolumeRecord,
  writeVolumeRecord,
  type VolumeRecord,
} from '../records/volume-records.ts';
import {
  claimPath,
  findConflictingClaim,
  listPathClaimKeys,
  pathClaimKey,
  readPathClaim,
  releasePath,
  type PathClaim,
} from '../records/path-claims.ts';

const LOAD_CONCURRENCY = 32;

interface Known {
  base: string;
  /** ms since the epoch; NaN when the record has no valid time. */
  createdAt: number;
}

/** Records of the base paths, on disk and in memory. */
export class VolumeRecordStore {
  private readonly loads = new Map<string, Promise<void>>();
  private readonly known = new Map<string, Known>();
  /** The records directories reached so far (device and inode): a record write opens one, not walks to it. */
  private readonly dirs: KnownDirs = new Map();

  constructor(private readonly o: { ledger: VolumeLedger; logger: Logger; fs?: FsOpsOptions }) {}

  /**
   * Loads every base path not loaded yet (concurrent callers share one load). A base path that cannot be read (not
   * mounted yet, a file, a symlink) is skipped and tried again next time: a volume placed there fails with what is
   * wrong with it (BasePathError), and the other base paths keep serving.
   */
  async ensureLoaded(bases: readonly string[]): Promise<void> {
    for (const base of bases) {
      let load = this.loads.get(base);
      if (!load) {
        load = this.load(base);
        this.loads.set(base, load);
        load.catch((e: unknown) => {
          this.loads.delete(base);
          this.o.logger.debug(
            { basePath: base, err: (e as Error).message },
            'could not read the volume records of a base path; trying again later',
          );
        });
      }
      await load.catch(() => {});
    }
  }

  /** Whether a base path has been loaded (a base added by a reload is loaded when it first appears). */
  isLoaded(base: string): boolean {
    return this.loads.has(base);
  }

  private async load(base: string): Promise<void> {
    const fs = this.o.fs;
    // Not there (yet), or not a real directory: nothing to load now, and the base path is read again next time.
    const st = await hostFsOf(fs).lstat(base);
    if (!st.isDirectory()) throw new Error(`${base} is not a directory`);
    const claimed = await listPathClaimKeys(base, fs);
    const files = await listRecordFiles(base, fs);
    // A few reads in flight at once: a start with 10,000 volumes should not wait for 10,000 round trips in a row.
    for (let first = 0; first < files.length; first += LOAD_CONCURRENCY) {
      const batch = files.slice(first, first + LOAD_CONCURRENCY);
      await Promise.all(
        batch.map(async (file) => {
          const r = await readRecordFile(base, file, fs);
          if (!r) return;
          try {
            checkRelativeVolumePath(r.relativePath);
          } catch {
            this.o.logger.warn({ pv: r.pvName, basePath: base }, 'ignoring a volume record with an unsafe path');
            return;
          }
          this.remember(base, r);
          this.o.ledger.observe('disk', {
            pvName: r.pvName,
            scope: r.scope,
            basePath: base,
            path: `${base}/${r.relativePath}`,
            bytes: BigInt(r.bytes),
          });
          // Written by an older version: give it the claim that lets other instances see it in O(1).
          if (claimed.has(pathClaimKey(r.relativePath))) return;
          const held = await claimPath(base, claimOf(r), fs);
          if (held)
            this.o.logger.warn(
              { pv: r.pvName, basePath: base, heldBy: held.pvName },
              'two volume records name the same directory',
            );
        }),
      );
    }
  }

  /** Reads the record of `pvName` in `base` now (another instance may have written it). */
  read(base: string, pvName: string): Promise<VolumeRecord | undefined> {
    return readVolumeRecord(base, pvName, this.o.fs);
  }

  /** Writes the record of a volume (a new one, or a changed size: callers keep every other field). */
  async write(base: string, r: VolumeRecord): Promise<void> {
    await writeVolumeRecord(base, r, this.o.fs, this.dirs);
    this.remember(base, r);
  }

  /** Claims the record's directory; returns the claim of the volume holding it when that is another. */
  claim(base: string, r: VolumeRecord): Promise<PathClaim | undefined> {
    return claimPath(base, claimOf(r), this.o.fs);
  }

  /** The claim of `rel` (who holds that directory), read now. */
  claimOfPath(base: string, rel: string): Promise<PathClaim | undefined> {
    return readPathClaim(base, rel, this.o.fs);
  }

  /** Another volume's claim at, above or below `rel`, read now; `claimed`: claim() just took `rel`, not read again. */
  conflict(base: string, rel: string, pvName: string, claimed = false): Promise<PathClaim | undefined> {
    return findConflictingClaim(base, rel, pvName, this.o.fs, claimed);
  }

  /** Removes the record of a volume and releases its directory's claim (when it holds it). */
  async remove(base: string, pvName: string, rel: string | undefined): Promise<void> {
    if (rel !== undefined) await releasePath(base, rel, pvName, this.o.fs);
    await removeVolumeRecord(base, pvName, this.o.fs);
    this.known.delete(pvName);
  }

  /** The base path holding the record of `pvName` (memory first, then each root's file), with the record. */
  async find(
    pvName: string,
    roots: readonly string[],
  ): Promise<{ basePath: string; record: VolumeRecord } | undefined> {
    const k = this.known.get(pvName);
    const order = k && roots.includes(k.base) ? [k.base, ...roots.filter((r) => r !== k.base)] : roots;
    for (const base of order) {
      const record = await this.read(base, pvName);
      if (record) return { basePath: base, record };
    }
    return undefined;
  }

  /**
   * The volumes whose records are in `bases` (the leak inventory): one directory read per base path; only records
   * this process has not seen yet (written by another instance) are read.
   */
  async list(bases: readonly string[], signal: AbortSignal): Promise<Array<{ name: string; createdAt?: Date }>> {
    const out = new Map<string, { name: string; createdAt?: Date }>();
    for (const base of bases) {
      signal.throwIfAborted();
      for (const file of await listRecordFiles(base, this.o.fs)) {
        const byName = pvNameOfRecordFile(file);
        let k = byName === undefined ? undefined : this.known.get(byName);
        let name = byName;
        if (!k || k.base !== base) {
          const r = await readRecordFile(base, file, this.o.fs);
          if (!r) continue;
          name = r.pvName;
          k = this.remember(base, r);
        }
        if (name === undefined) continue;
        out.set(name, Number.isNaN(k.createdAt) ? { name } : { name, createdAt: new Date(k.createdAt) });
      }
    }
    return [...out.values()];
  }

  private remember(base: string, r: VolumeRecord): Known {
    const k = { base, createdAt: Date.parse(r.createdAt) };
    this.known.set(r.pvName, k);
    return k;
  }
}

function claimOf(r: VolumeRecord): PathClaim {
  return r.claimUid === undefined
    ? { pvName: r.pvName, relativePath: r.relativePath }
    : { pvName: r.pvName, claimUid: r.claimUid, relativePath: r.relativePath };
}
