// Volume names as external-provisioner makes them: `<prefix>-<claim uid>`, the same string for the PV and for
// CreateVolume's name (so a retried or restarted CreateVolume asks for the same volume), optionally with the uid's
// dashes removed and truncated (`--volume-name-uuid-length`).
import type { PersistentVolumeClaim } from '../types/k8s.ts';

/** A prefix or uuid length that cannot make a name. */
export class VolumeNameError extends Error {
  override name = 'VolumeNameError';
}

/** How volume names are made: `--volume-name-prefix` (default `pvc`) and `--volume-name-uuid-length` (-1: whole uid). */
export interface VolumeNaming {
  prefix: string;
  uuidLength: number;
}

/** The defaults of external-provisioner. */
export const DEFAULT_VOLUME_NAMING: Readonly<VolumeNaming> = Object.freeze({ prefix: 'pvc', uuidLength: -1 });

/** Checks a naming (as the sidecar's flags are checked at start). */
export function checkVolumeNaming(n: VolumeNaming): void {
  if (n.prefix.length === 0) throw new VolumeNameError('volume name prefix cannot be of length 0');
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n.prefix))
    throw new VolumeNameError(`volume name prefix "${n.prefix}" is not a DNS-1123 subdomain`);
  if (!Number.isInteger(n.uuidLength) || (n.uuidLength !== -1 && (n.uuidLength < 1 || n.uuidLength > 32))) {
    throw new VolumeNameError(`volume name uuid length must be -1 (the whole uid) or 1..32, got ${n.uuidLength}`);
  }
}

/** external-provisioner's makeVolumeName. */
export function makeVolumeName(naming: VolumeNaming, claimUid: string): string {
  if (naming.prefix.length === 0) throw new VolumeNameError('volume name prefix cannot be of length 0');
  if (claimUid.length === 0) throw new VolumeNameError('corrupted PVC object, it is missing UID');
  if (naming.uuidLength === -1) return `${naming.prefix}-${claimUid}`;
  return `${naming.prefix}-${claimUid.replaceAll('-', '').slice(0, naming.uuidLength)}`;
}

/** The controller's volumeNameHook for a naming: the PV name is the CreateVolume name. */
export function volumeNameHook(naming: VolumeNaming): (claim: PersistentVolumeClaim) => string {
  return (claim) => makeVolumeName(naming, claim.metadata.uid ?? '');
}
