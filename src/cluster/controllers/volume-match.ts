// Pure PV/PVC matching of kube-controller-manager 1.32 (component-helpers storage/volume pv_helpers.go
// FindMatchingVolume, checkVolumeSatisfyClaim; pv controller index.go findByClaim): which existing volume
// a claim binds to, and the small predicates both the binder and the scheduler stand-in share.
import type { AccessMode, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import {
  ANN_BETA_STORAGE_CLASS,
  ANN_DEFAULT_STORAGE_CLASS,
  ANN_BETA_DEFAULT_STORAGE_CLASS,
  ANN_SELECTED_NODE,
} from '../../types/annotations.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import { labelSelectorToPredicate, SelectorError } from '../common/selectors.ts';

/** GetPersistentVolumeClaimClass: the beta annotation wins, else spec.storageClassName, else "". */
export function claimClass(claim: PersistentVolumeClaim): string {
  const beta = claim.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (beta !== undefined) return beta;
  return claim.spec.storageClassName ?? '';
}

/** True when the claim names no class at all (an explicit "" counts as a class: "no class, never default"). */
export function claimHasNoClass(claim: PersistentVolumeClaim): boolean {
  const beta = claim.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  return beta === undefined && (claim.spec.storageClassName === undefined || claim.spec.storageClassName === null);
}

/** GetPersistentVolumeClass: the beta annotation wins, else spec.storageClassName, else "". */
export function volumeClass(volume: PersistentVolume): string {
  const beta = volume.metadata.annotations?.[ANN_BETA_STORAGE_CLASS];
  if (beta !== undefined) return beta;
  return volume.spec.storageClassName ?? '';
}

/** `namespace/name`: the key of a claim in the binder's caches and queues. */
export function claimKey(namespace: string | undefined, name: string | undefined): string {
  return `${namespace ?? ''}/${name ?? ''}`;
}

/** IsVolumeBoundToClaim: claimRef names the claim, and its uid (when set) is the claim's. */
export function isVolumeBoundToClaim(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  const ref = volume.spec.claimRef;
  if (!ref) return false;
  if (ref.name !== claim.metadata.name || (ref.namespace ?? '') !== (claim.metadata.namespace ?? '')) return false;
  return !ref.uid || ref.uid === claim.metadata.uid;
}

/** CheckVolumeModeMismatches: nil means Filesystem on both sides. */
export function volumeModeMismatch(claim: PersistentVolumeClaim, volume: PersistentVolume): boolean {
  return (claim.spec.volumeMode ?? 'Filesystem') !== (volume.spec.volumeMode ?? 'Filesystem');
}

/** CheckAccessModes: every mode the claim asks for is offered by the volume. */
export function accessModesSatisfied(
  claimModes: readonly AccessMode[] | undefined,
  volumeModes: readonly AccessMode[] | undefined,
): boolean {
  const offered = new Set(volumeModes ?? []);
  return (claimModes ?? []).every((m) => offered.has(m));
}

/** The storage a claim requests (0 when absent); undefined when the quantity cannot be parsed. */
export function requestedStorage(claim: PersistentVolumeClaim): bigint | undefined {
  const q = claim.spec.resources?.requests?.storage;
  if (q === undefined) return 0n;
  return isQuantity(q) ? parseQuantity(q) : undefined;
}

/** A volume's capacity.storage (0 when absent, as a zero Quantity); undefined when it cannot be parsed. */
export function volumeCapacity(volume: PersistentVolume): bigint | undefined {
  const q = volume.spec.capacity?.storage;
  if (q === undefined) return 0n;
  return isQuantity(q) ? parseQuantity(q) : undefined;
}

/** True when the claim asks to wait for its first consumer (class exists and says WaitForFirstConsumer). */
export function isDelayBinding(cls: StorageClass | undefined): boolean {
  return cls?.volumeBindingMode === 'WaitForFirstConsumer';
}

/** IsDelayBindingProvisioning: the scheduler (or our stand-in) already picked a node for this claim. */
export function hasSelectedNode(claim: PersistentVolumeClaim): boolean {
  return claim.metadata.annotations?.[ANN_SELECTED_NODE] !== undefined;
}

/**
 * checkVolumeSatisfyClaim, for a claim that names its volume (spec.volumeName): the reason the volume does
 * not fit, or undefined when it does.
 */
export function volumeSatisfiesClaimError(volume: PersistentVolume, claim: PersistentVolumeClaim): string | undefined {
  if (volume.metadata.deletionTimestamp)
    return `the volume is marked for deletion ${JSON.stringify(volume.metadata.name)}`;
  const requested = requestedStorage(claim) ?? 0n;
  const capacity = volumeCapacity(volume);
  if (capacity === undefined || capacity < requested) return 'requested PV is too small';
  if (volumeClass(volume) !== claimClass(claim)) return 'storageClassName does not match';
  if ((volume.spec.volumeAttributesClassName ?? '') !== (claim.spec.volumeAttributesClassName ?? ''))
    return 'volumeAttributesClassName does not match';
  if (volumeModeMismatch(claim, volume)) return 'incompatible volumeMode';
  if (!accessModesSatisfied(claim.spec.accessModes, volume.spec.accessModes)) return 'incompatible accessMode';
  return undefined;
}

/**
 * Where candidate volumes come from. The binder backs this with indexes (claimRef key; class + access modes +
 * capacity) so matching one claim never scans every PV; tests use listVolumeSource.
 */
export interface VolumeSource {
  /** Volumes whose claimRef names this claim's namespace/name (any class, any phase). */
  preBoundTo(claim: PersistentVolumeClaim): Iterable<PersistentVolume>;
  /**
   * Volumes without claimRef in class `className`, in groups of equal access-mode sets that include every mode
   * the claim asks for, fewest modes first; within a group, ascending capacity from `minCapacity`.
   */
  unclaimedGroups(
    className: string,
    modes: readonly AccessMode[],
    minCapacity: bigint,
  ): Iterable<Iterable<PersistentVolume>>;
}

/** Why a claim's own matching was refused outright (bad input the binder reports as an event). */
export class ClaimMatchError extends Error {
  override name = 'ClaimMatchError';
}

/**
 * findBestMatchForClaim: the volume the claim should bind to, or undefined. A volume pre-bound to the claim
 * wins whatever its phase, class or selector; otherwise, unless binding is delayed for the scheduler, the
 * smallest Available volume of the claim's class that satisfies modes, capacity, volumeMode, VAC and selector.
 * (Go iterates access-mode groups first and could prefer an Available volume of a narrower group over a
 * pre-bound one in a wider group; pre-bound always winning is the intent of that code and what we do.)
 * @throws ClaimMatchError when the claim's request or selector cannot be evaluated.
 */
export function findBestMatchForClaim(
  claim: PersistentVolumeClaim,
  source: VolumeSource,
  delayBinding: boolean,
): PersistentVolume | undefined {
  const requested = requestedStorage(claim);
  if (requested === undefined)
    throw new ClaimMatchError(
      `claim has an unparsable storage request ${JSON.stringify(claim.spec.resources?.requests?.storage)}`,
    );
  const claimVac = claim.spec.volumeAttributesClassName ?? '';
  const fits = (pv: PersistentVolume): boolean => {
    const capacity = volumeCapacity(pv);
    return (
      capacity !== undefined &&
      capacity >= requested &&
      !volumeModeMismatch(claim, pv) &&
      !pv.metadata.deletionTimestamp &&
      (pv.spec.volumeAttributesClassName ?? '') === claimVac
    );
  };
  for (const pv of source.preBoundTo(claim)) {
    if (
      isVolumeBoundToClaim(pv, claim) &&
      accessModesSatisfied(claim.spec.accessModes, pv.spec.accessModes) &&
      fits(pv)
    )
      return pv;
  }
  // The scheduler binds unbound volumes of delayed claims (with a node in hand); the PV controller does not.
  if (delayBinding) return undefined;
  let selector: (labels: Record<string, string> | undefined) => boolean;
  try {
    selector = labelSelectorToPredicate(claim.spec.selector);
  } catch (err) {
    if (err instanceof SelectorError)
      throw new ClaimMatchError(
        `error creating internal label selector for claim: ${claimKey(claim.metadata.namespace, claim.metadata.name)}: ${err.message}`,
      );
    throw err;
  }
  for (const group of source.unclaimedGroups(claimClass(claim), claim.spec.accessModes ?? [], requested)) {
    for (const pv of group) {
      if (pv.spec.claimRef || pv.status?.phase !== 'Available' || volumeClass(pv) !== claimClass(claim)) continue;
      if (!fits(pv) || !selector(pv.metadata.labels)) continue;
      return pv; // groups are in ascending capacity: the first fit is the smallest
    }
  }
  return undefined;
}

/** The canonical key of an access-mode set (sorted, deduplicated). */
export function accessModesKey(modes: readonly AccessMode[] | undefined): string {
  return [...new Set(modes ?? [])].sort().join(',');
}

/** A VolumeSource over a plain list: for tests and small callers. */
export function listVolumeSource(volumes: readonly PersistentVolume[]): VolumeSource {
  return {
    preBoundTo(claim) {
      return volumes.filter(
        (pv) =>
          pv.spec.claimRef?.name === claim.metadata.name &&
          (pv.spec.claimRef?.namespace ?? '') === (claim.metadata.namespace ?? ''),
      );
    },
    unclaimedGroups(className, modes, minCapacity) {
      const groups = new Map<string, PersistentVolume[]>();
      for (const pv of volumes) {
        if (pv.spec.claimRef || volumeClass(pv) !== className || !accessModesSatisfied(modes, pv.spec.accessModes))
          continue;
        const cap = volumeCapacity(pv);
        if (cap === undefined || cap < minCapacity) continue;
        const key = accessModesKey(pv.spec.accessModes);
        groups.set(key, [...(groups.get(key) ?? []), pv]);
      }
      return [...groups.entries()]
        .sort(([a], [b]) => a.split(',').length - b.split(',').length || (a < b ? -1 : 1))
        .map(([, list]) =>
          list.sort((x, y) => {
            const d = (volumeCapacity(x) ?? 0n) - (volumeCapacity(y) ?? 0n);
            return d < 0n ? -1 : d > 0n ? 1 : 0;
          }),
        );
    },
  };
}

/**
 * GetDefaultClass (1.26+): among classes annotated is-default-class "true" (GA or beta name), the newest
 * creationTimestamp wins, ties broken by name ascending. Undefined when there is none.
 */
export function pickDefaultClass(classes: Iterable<StorageClass>): StorageClass | undefined {
  let best: StorageClass | undefined;
  let bestTime = -Infinity;
  for (const sc of classes) {
    const a = sc.metadata.annotations ?? {};
    if (a[ANN_DEFAULT_STORAGE_CLASS] !== 'true' && a[ANN_BETA_DEFAULT_STORAGE_CLASS] !== 'true') continue;
    const t = Date.parse(sc.metadata.creationTimestamp ?? '') || 0;
    if (!best || t > bestTime || (t === bestTime && (sc.metadata.name ?? '') < (best.metadata.name ?? ''))) {
      best = sc;
      bestTime = t;
    }
  }
  return best;
}
