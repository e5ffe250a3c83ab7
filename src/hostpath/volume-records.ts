// On-disk records of the volumes in a base path: `<base>/.kube-provisioner/volumes/<pv>.json`, written before
// the volume directory is created and removed after it is deleted. They make the backend's own inventory
// exact whatever the pathPattern (listVolumes for the leak inventory) and let capacity accounting survive a
// restart without the API, and they prove at delete time which PV a directory belongs to (delete-identity.ts).
// `.kube-provisioner` is a reserved name no pattern can produce.
import { createHash, randomBytes } from 'node:crypto';
import { createVolumeDir, type FsOpsOptions } from './fs-ops.ts';
import { hostFsOf } from './host-fs.ts';

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
  /** The volume directory relative to the base path. */
  relativePath: string;
  /** Allocated bytes, as a decimal string (BigInt in JSON). */
  bytes: string;
  /** Node name for node-local paths, '' for the shared path. */
  scope: string;
  createdAt: string;
}

const recordsDir = (basePath: string) => `${basePath}/${RECORDS_SEGMENTS.join('/')}`;

// PV names are DNS subdomains (<= 253 chars): long ones are hashed so the file name fits 255 bytes.
function fileName(pvName: string): string {
  return pvName.length <= 240 ? `${pvName}.json` : `${createHash('sha256').update(pvName).digest('hex')}.json`;
}

/** Writes (atomically) the record of a volume. */
export async function writeVolumeRecord(basePath: string, record: VolumeRecord, fsOpts?: FsOpsOptions): Promise<void> {
  const target = `${recordsDir(basePath)}/${fileName(record.pvName)}`;
  const tmp = `${recordsDir(basePath)}/.tmp-${randomBytes(6).toString('hex')}`;
  // Every time, not only for the first record: the walk refuses a base path that is missing, a file or a symlink
  // (BasePathError, a clear message) and a records directory swapped for a symlink, before anything is written.
  await createVolumeDir(basePath, RECORDS_SEGMENTS, { ...fsOpts, mode: 0o700, parentMode: 0o700 });
  const fs = hostFsOf(fsOpts);
  await fs.writeFile(tmp, JSON.stringify(record), { mode: 0o600, flag: 'wx' });
  try {
    await fs.rename(tmp, target);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
}

/** Removes the record of a volume (no error when absent). */
export async function removeVolumeRecord(basePath: string, pvName: string, fsOpts?: FsOpsOptions): Promise<void> {
  await hostFsOf(fsOpts).rm(`${recordsDir(basePath)}/${fileName(pvName)}`, { force: true });
}

/** Reads one record, or undefined. */
export async function readVolumeRecord(basePath: string, pvName: string, fsOpts?: FsOpsOptions): Promise<VolumeRecord | undefined> {
  const text = await hostFsOf(fsOpts).readFile(`${recordsDir(basePath)}/${fileName(pvName)}`).catch(() => undefined);
  return text === undefined ? undefined : parseRecord(text);
}

/** All records of a base path (none when the base or the records directory is missing). Corrupt files are skipped. */
export async function readVolumeRecords(basePath: string, fsOpts?: FsOpsOptions): Promise<VolumeRecord[]> {
  const fs = hostFsOf(fsOpts);
  const names = await fs.readdir(recordsDir(basePath)).catch(() => [] as string[]);
  const out: VolumeRecord[] = [];
  for (const n of names) {
    if (!n.endsWith('.json')) continue;
    const text = await fs.readFile(`${recordsDir(basePath)}/${n}`).catch(() => undefined);
    const r = text === undefined ? undefined : parseRecord(text);
    if (r) out.push(r);
  }
  return out;
}

/**
 * Another volume's record whose directory is `relativePath`, or above or below it (read now: another instance may
 * have just written it), or undefined.
 */
export async function findOverlappingRecord(basePath: string, relativePath: string, pvName: string, fsOpts?: FsOpsOptions): Promise<VolumeRecord | undefined> {
  const under = (a: string, b: string) => b.startsWith(`${a}/`);
  for (const r of await readVolumeRecords(basePath, fsOpts)) {
    if (r.pvName === pvName) continue;
    if (r.relativePath === relativePath || under(r.relativePath, relativePath) || under(relativePath, r.relativePath)) return r;
  }
  return undefined;
}

function parseRecord(text: string): VolumeRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<VolumeRecord>;
    if (typeof r.pvName !== 'string' || typeof r.relativePath !== 'string' || typeof r.bytes !== 'string' || !/^\d+$/.test(r.bytes)) return undefined;
    const out: VolumeRecord = { pvName: r.pvName, relativePath: r.relativePath, bytes: r.bytes, scope: typeof r.scope === 'string' ? r.scope : '', createdAt: String(r.createdAt ?? '') };
    if (typeof r.claimUid === 'string' && r.claimUid !== '') out.claimUid = r.claimUid;
    return out;
  } catch {
    return undefined;
  }
}
