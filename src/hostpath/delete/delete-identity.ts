// Delete identity: before delete, archive or teardown touches a directory, prove it belongs to exactly that
// PV. Either the record written at provision time names the PV, the claim it was made for and this path, or
// (volumes with no record: older versions, adopted from local-path / nfs-subdir) the directory is a leaf:
// not a base path, not another volume's directory, not inside one, and no volume (live PV or claim on disk)
// below it. Paths compare in canonical form, and the directory's device and inode against every live volume's,
// so another spelling of a live volume's directory is that volume's. A PV name found somewhere in the path proves
// nothing: `bob`, `sub` or `default` are substrings or parents of other volumes' directories. Anything unproven is
// refused and nothing is touched.
import { shortenText, MAX_QUOTED_INPUT_BYTES } from '../../types/text.ts';
import { isStrictlyUnder, UnsafePathError } from '../paths/path-safety.ts';
import type { VolumePathIndex } from '../ledger/volume-path-index.ts';
import type { VolumeRecord } from '../records/volume-records.ts';
import type { PathClaim } from '../records/path-claims.ts';

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
  constructor(
    readonly rule: IdentityRule,
    readonly pvName: string,
    readonly path: string,
    detail: string,
  ) {
    super(
      `refusing to delete, archive or tear down ${shortenText(JSON.stringify(path), MAX_QUOTED_INPUT_BYTES)} for volume ${pvName}: ${detail}; nothing was touched`,
    );
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
  /** Who holds the directory on disk (its path claim), read now. */
  pathClaim: PathClaim | undefined;
  /** Another volume's claim at, above or below the directory, read now (needed only when the record does not prove the identity). */
  otherClaim: () => Promise<PathClaim | undefined>;
  /** The live volumes this instance can reach; `fresh`: current as of now (a leaf proof), not as of the last event. */
  liveVolumes: (fresh: boolean) => Promise<VolumePathIndex[]>;
  /** Throws UnsafePathError when the directory is, holds or is inside a live volume's by device and inode (read now). */
  checkInodes: () => Promise<void>;
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
  if (e.pathClaim && e.pathClaim.pvName !== e.pvName) {
    throw new VolumeIdentityError(
      'overlaps-volume',
      e.pvName,
      e.path,
      `it is the directory of volume ${e.pathClaim.pvName} (its claim on disk says so)`,
    );
  }
  if (e.record) {
    if (e.record.pvName !== e.pvName) {
      throw new VolumeIdentityError('record-mismatch', e.pvName, e.path, `its record names volume ${e.record.pvName}`);
    }
    if (e.record.relativePath !== rel) {
      throw new VolumeIdentityError(
        'record-mismatch',
        e.pvName,
        e.path,
        `the record written when ${e.pvName} was provisioned says its directory is ${e.basePath}/${e.record.relativePath}`,
      );
    }
    if (e.record.claimUid !== undefined && e.claimUid !== undefined && e.record.claimUid !== e.claimUid) {
      throw new VolumeIdentityError(
        'record-mismatch',
        e.pvName,
        e.path,
        `the record written when ${e.pvName} was provisioned names claim uid ${e.record.claimUid}, and this volume is bound to claim uid ${JSON.stringify(e.claimUid)}`,
      );
    }
    // A record without a claim uid (older versions) proves the name only: the leaf rule decides.
    if (e.claimUid === undefined || e.record.claimUid !== undefined) proof = 'record';
  }
  const indexes = await e.liveVolumes(proof === 'leaf');
  try {
    for (const index of indexes) index.checkFree(e.path, e.pvName, e.basePaths);
    await e.checkInodes();
  } catch (err) {
    if (!(err instanceof UnsafePathError)) throw err;
    const rule: IdentityRule = err.rule === 'is-base-path' ? 'is-base-path' : 'overlaps-volume';
    throw new VolumeIdentityError(rule, e.pvName, e.path, `it ${err.detail}`);
  }
  if (proof === 'leaf') {
    const c = await e.otherClaim();
    if (c) {
      const other = `${e.basePath}/${c.relativePath}`;
      const how =
        other === e.path
          ? 'is the directory'
          : isStrictlyUnder(e.path, other)
            ? 'contains the directory'
            : 'is inside the directory';
      throw new VolumeIdentityError(
        'overlaps-volume',
        e.pvName,
        e.path,
        `it ${how} of volume ${c.pvName} (its claim on disk says so)`,
      );
    }
  }
  return proof;
}
