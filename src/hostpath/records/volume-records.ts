// On-disk records of the volumes in a base path, one file per PV name: `<base>/.kube-provisioner/volumes/<pv>.json`,
// written (write-then-rename) before the volume directory is created and removed after it is deleted. They make
// the backend's own inventory exact whatever the pathPattern (listVolumes for the leak inventory), let capacity
// accounting survive a restart without the API, and prove at delete time which PV and which claim a directory
// belongs to (delete-identity.ts). A PV name too long for a file name is stored as `_sha256-<hex>.json`: `_` is in
// no PV name (DNS-1123), so no PV can share that file, on case-insensitive filesystems too. Files older versions
// wrote (`<hex>.json` for long names) are still read, and trusted only for the PV they name; before a record named
// `<hex>.json` (a PV named like that hash) or `_sha256-<hex>.json` is written, such a file is moved to its hashed
// name, so a real PV named `<hex>` gets a `<hex>.json` of its own without clobbering the long-named PV's record.
// `.kube-provisioner` is a reserved name no pattern can produce. Path-keyed claims beside them are path-claims.ts's.
import { createHash, randomBytes } from 'node:crypto';
import { withDir, type FsOpsOptions, type KnownDirs } from '../disk/volume-dirs.ts';
import { errnoCode, hostFsOf } from '../disk/host-fs.ts';

/** Where under a base path the provisioner keeps its per-volume records. */
export const RECORDS_SEGMENTS = ['.kube-provisioner', 'volumes'];

/** What the provisioner records next to a volume directory, to prove later that the directory is that volume. */
export interface VolumeRecord {
  pvName: string;
  /**
   * The uid of the claim the volume was provisioned for: the PV carries it in spec.claimRef.uid (the PV's own
   * uid does not exist yet when the record is written). Absent in records written by older versions.
   */
  claimUid?: string;
  /** The volume directory relative to the base path, canonical. */
  relativePath: string;
  /** Allocated bytes, as a decimal string (BigInt in JSON). */
  bytes: string;
  /** Node name for node-local paths, '' for the shared path. */
  scope: string;
  createdAt: string;
}

/** The records directory of a base path. */
export const recordsDir = (basePath: string) => `${basePath}/${RECORDS_SEGMENTS.join('/')}`;

const MAX_PLAIN_NAME = 240;
const HASHED_PREFIX = '_sha256-';
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/** The record's file name: `<pv>.json`, or `_sha256-<hex>.json` for a name too long for one. */
export function recordFileName(pvName: string): string {
  return pvName.length <= MAX_PLAIN_NAME ? `${pvName}.json` : `${HASHED_PREFIX}${sha256(pvName)}.json`;
}

// What older versions named a long PV's record: the bare hash, which a PV named like that hash shared.
const legacyFileName = (pvName: string) => (pvName.length <= MAX_PLAIN_NAME ? undefined : `${sha256(pvName)}.json`);

/**
 * Writes (atomically: a temporary file renamed over the record) the record of a volume, through the records
 * directory held open. `known`: where the records directories reached before are remembered (withDir).
 */
export async function writeVolumeRecord(
  basePath: string,
  record: VolumeRecord,
  fsOpts?: FsOpsOptions,
  known?: KnownDirs,
): Promise<void> {
  const fs = hostFsOf(fsOpts);
  const tmp = `.tmp-${randomBytes(6).toString('hex')}`;
  // The walk refuses a base path that is missing, a file or a symlink (BasePathError, a clear message) and a records
  // directory swapped for a symlink, before anything is written; after it, while the path still leads to the
  // directory it reached (same device and inode), one open and one fstat stand for it (withDir).
  const opts = { ...fsOpts, mode: 0o700, parentMode: 0o700, known };
  await withDir(basePath, RECORDS_SEGMENTS, opts, async (at) => {
    const hex = hashOfLegacyName(record.pvName);
    if (hex !== undefined) await moveLegacyRecord(basePath, hex, fsOpts);
    await fs.writeFile(at(tmp), JSON.stringify(record), { mode: 0o600, flag: 'wx' });
    try {
      await fs.rename(at(tmp), at(recordFileName(record.pvName)));
    } catch (e) {
      await fs.rm(at(tmp), { force: true });
      throw e;
    }
  });
}

// The `<hex>.json` a write may meet: its own older file (a long name) or the older file of the long name whose
// hash this PV is named (a 64-hex name, which is a valid PV name). Other names never meet one.
const hashOfLegacyName = (pvName: string) =>
  pvName.length > MAX_PLAIN_NAME ? sha256(pvName) : /^[0-9a-f]{64}$/.test(pvName) ? pvName : undefined;

/**
 * Moves an older version's `<hex>.json`, when its content names the long PV of that hash, to `_sha256-<hex>.json`
 * (removes it when that file exists already: the newer record wins, as readVolumeRecord reads it first). Called
 * before `<hex>.json` or `_sha256-<hex>.json` is written, so a PV named `<hex>` never overwrites the long-named
 * PV's record, and a long-named PV never keeps an older copy of its own that a later load could count.
 */
async function moveLegacyRecord(basePath: string, hex: string, fsOpts?: FsOpsOptions): Promise<void> {
  const fs = hostFsOf(fsOpts);
  const legacy = `${hex}.json`;
  const old = await readRecordFile(basePath, legacy, fsOpts);
  if (!old || old.pvName.length <= MAX_PLAIN_NAME || sha256(old.pvName) !== hex) return;
  const dir = recordsDir(basePath);
  const hashed = `${HASHED_PREFIX}${hex}.json`;
  if (await readRecordFile(basePath, hashed, fsOpts)) await fs.rm(`${dir}/${legacy}`, { force: true });
  else await fs.rename(`${dir}/${legacy}`, `${dir}/${hashed}`);
}

/** Removes the record of a volume (no error when absent); an older version's file only when it names this PV. */
export async function removeVolumeRecord(basePath: string, pvName: string, fsOpts?: FsOpsOptions): Promise<void> {
  const fs = hostFsOf(fsOpts);
  await fs.rm(`${recordsDir(basePath)}/${recordFileName(pvName)}`, { force: true });
  const legacy = legacyFileName(pvName);
  if (legacy && (await readRecordFile(basePath, legacy, fsOpts))?.pvName === pvName)
    await fs.rm(`${recordsDir(basePath)}/${legacy}`, { force: true });
}

/** Reads the record of `pvName`, or undefined (none, unreadable, or a file that names another PV). */
export async function readVolumeRecord(
  basePath: string,
  pvName: string,
  fsOpts?: FsOpsOptions,
): Promise<VolumeRecord | undefined> {
  const current = await readRecordFile(basePath, recordFileName(pvName), fsOpts);
  if (current?.pvName === pvName) return current;
  const legacy = legacyFileName(pvName);
  const old = legacy === undefined ? undefined : await readRecordFile(basePath, legacy, fsOpts);
  return old?.pvName === pvName ? old : undefined;
}

/** The file names in a base path's records directory that hold records (none when it does not exist). */
export async function listRecordFiles(basePath: string, fsOpts?: FsOpsOptions): Promise<string[]> {
  const names = await hostFsOf(fsOpts)
    .readdir(recordsDir(basePath))
    .catch((e: unknown) => {
      if (errnoCode(e) === 'ENOENT') return [] as string[];
      throw e;
    });
  return names.filter((n) => n.endsWith('.json') && !n.startsWith('.tmp-'));
}

/** The PV name a record file name stands for, when the name says it (not for hashed names). */
export function pvNameOfRecordFile(fileName: string): string | undefined {
  if (!fileName.endsWith('.json') || fileName.startsWith(HASHED_PREFIX)) return undefined;
  const name = fileName.slice(0, -'.json'.length);
  // An older version's hashed name is 64 hex characters: also a valid PV name, so only its content tells.
  return /^[0-9a-f]{64}$/.test(name) ? undefined : name;
}

/** Reads one record file by its name in the records directory, or undefined. */
export async function readRecordFile(
  basePath: string,
  fileName: string,
  fsOpts?: FsOpsOptions,
): Promise<VolumeRecord | undefined> {
  const text = await hostFsOf(fsOpts)
    .readFile(`${recordsDir(basePath)}/${fileName}`)
    .catch(() => undefined);
  return text === undefined ? undefined : parseRecord(text);
}

/** Every record in a base path: one directory read, one read per record (loading an index, not per claim). */
export async function readVolumeRecords(basePath: string, fsOpts?: FsOpsOptions): Promise<VolumeRecord[]> {
  const out: VolumeRecord[] = [];
  for (const n of await listRecordFiles(basePath, fsOpts)) {
    const r = await readRecordFile(basePath, n, fsOpts);
    if (r) out.push(r);
  }
  return out;
}

function parseRecord(text: string): VolumeRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<VolumeRecord>;
    if (
      typeof r.pvName !== 'string' ||
      typeof r.relativePath !== 'string' ||
      typeof r.bytes !== 'string' ||
      !/^\d+$/.test(r.bytes)
    )
      return undefined;
    const out: VolumeRecord = {
      pvName: r.pvName,
      relativePath: r.relativePath,
      bytes: r.bytes,
      scope: typeof r.scope === 'string' ? r.scope : '',
      createdAt: String(r.createdAt ?? ''),
    };
    if (typeof r.claimUid === 'string' && r.claimUid !== '') out.claimUid = r.claimUid;
    return out;
  } catch {
    return undefined;
  }
}
