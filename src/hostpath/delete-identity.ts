// Delete identity: before delete, archive or teardown touches a directory, prove it belongs to exactly that
// PV. Either the record written at provision time names the PV, the claim it was made for and this path, or
// (volumes with no record: older versions, adopted from local-path / nfs-subdir) the directory is a leaf:
// not a base path, not another volume's directory, not inside one, and no volume (live PV or record on disk)
// below it. A PV name found somewhere in the path proves nothing: `bob`, `sub` or `default` are substrings
// or parents of other volumes' directories. Anything unproven is refused and nothing is touched.
import { shortenText, MAX_QUOTED_INPUT_BYTES } from '../types/text.ts';
import { isStrictlyUnder, UnsafePathError, type VolumePathIndex } from './path-safety.ts';
import type { VolumeRecord } from './volume-records.ts';

/** Why a directory could not be proven to be the volume's. Stable codes for tests and logs. */
export type IdentityRule =
  /** This PV's record says its directory is elsewhere, or that it was made for another claim. */
  | 'record-mismatch'
  /** The directory is (or contains) a configured base path. */
  | 'is-base-path'
  /** Another volume's directory is this one, below it or above it. */
  | 'overlaps-volume';

/** A directory that cannot be proven to belong to the volume. The controller reports it as VolumeFailedDelete. */
export class VolumeIdentityError extends Error {
  override name = 'VolumeIdentityError';
  constructor(readonly rule: IdentityRule, readonly pvName: string, readonly path: string, detail: string) {
    super(`refusing to delete, archive or tear down ${shortenText(JSON.stringify(path), MAX_QUOTED_INPUT_BYTES)} for volume ${pvName}: ${detail}; nothing was touched`);
  }
}

/** How the identity was proven. */
export type IdentityProof = 'record' | 'leaf';

export interface IdentityEvidence {
  pvName: string;
  /** The PV's spec.claimRef.uid; undefined when it has none (a name-only volume from the leak inventory). */
  claimUid: string | undefined;
  /** The directory (absolute, normalised, strictly under basePath: checked before). */
  path: string;
  basePath: string;
  /** The record of `pvName` in basePath, when there is one. */
  record: VolumeRecord | undefined;
  /** Every record of basePath, read now (needed only when the record does not prove the identity). */
  records: () => Promise<VolumeRecord[]>;
  /** The live volumes this instance can reach; `fresh`: list the PVs now (a leaf proof), not from the last refresh. */
  liveVolumes: (fresh: boolean) => Promise<VolumePathIndex[]>;
  /** Every configured base path. */
  basePaths: string[];
}

/**
 * Proves that `e.path` is exactly the directory of `e.pvName`, or throws VolumeIdentityError. With a matching
 * record (name, claim uid, path) the live-volume overlap check still applies; without one the directory must
 * also hold no record of another volume at, above or below it.
 */
export async function proveVolumeIdentity(e: IdentityEvidence): Promise<IdentityProof> {
  const rel = e.path.slice(e.basePath.length + 1);
  let proof: IdentityProof = 'leaf';
  if (e.record) {
    if (e.record.relativePath !== rel) {
      throw new VolumeIdentityError('record-mismatch', e.pvName, e.path,
        `the record written when ${e.pvName} was provisioned says its directory is ${e.basePath}/${e.record.relativePath}`);
    }
    if (e.record.claimUid !== undefined && e.claimUid !== undefined && e.record.claimUid !== e.claimUid) {
      throw new VolumeIdentityError('record-mismatch', e.pvName, e.path,
        `the record written when ${e.pvName} was provisioned names claim uid ${e.record.claimUid}, and this volume is bound to claim uid ${JSON.stringify(e.claimUid)}`);
    }
    // A record without a claim uid (older versions) proves the name only: the leaf rule decides.
    if (e.claimUid === undefined || e.record.claimUid !== undefined) proof = 'record';
  }
  for (const index of await e.liveVolumes(proof === 'leaf')) {
    try {
      index.checkFree(e.path, e.pvName, e.basePaths);
    } catch (err) {
      if (!(err instanceof UnsafePathError)) throw err;
      const rule: IdentityRule = err.rule === 'is-base-path' ? 'is-base-path' : 'overlaps-volume';
      throw new VolumeIdentityError(rule, e.pvName, e.path, `it ${err.detail}`);
    }
  }
  if (proof === 'leaf') {
    for (const r of await e.records()) {
      if (r.pvName === e.pvName) continue;
      const other = `${e.basePath}/${r.relativePath}`;
      if (other === e.path) throw new VolumeIdentityError('overlaps-volume', e.pvName, e.path, `it is the directory of volume ${r.pvName} (its record says so)`);
      if (isStrictlyUnder(e.path, other)) throw new VolumeIdentityError('overlaps-volume', e.pvName, e.path, `it contains the directory of volume ${r.pvName}`);
      if (isStrictlyUnder(other, e.path)) throw new VolumeIdentityError('overlaps-volume', e.pvName, e.path, `it is inside the directory of volume ${r.pvName}`);
    }
  }
  return proof;
}
