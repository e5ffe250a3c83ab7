// The PV controller's decisions (kube-controller-manager 1.32 pv_controller.go syncClaim / syncVolume), as
// pure functions of the current objects: each returns the writes to perform, in order. The shell
// (pv-binder.ts) executes them one by one and stops at the first failure, exactly as the Go code returns on
// the first failed API call and lets the next sync resume.
import type { Pod, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../types/k8s.ts';
import {
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_BIND_COMPLETED,
  ANN_BOUND_BY_CONTROLLER,
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_MIGRATED_TO,
  ANN_STORAGE_PROVISIONER,
} from '../../types/annotations.ts';
import {
  claimClass,
  claimHasNoClass,
  claimKey,
  ClaimMatchError,
  findBestMatchForClaim,
  hasSelectedNode,
  isDelayBinding,
  isVolumeBoundToClaim,
  volumeCapacity,
  volumeModeMismatch,
  volumeSatisfiesClaimError,
  type VolumeSource,
} from './volume-match.ts';

/** An event the binder records (source component persistentvolume-controller). */
export interface BinderEvent {
  kind: 'event';
  on: PersistentVolumeClaim | PersistentVolume;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** One write (or side effect) decided by syncClaim/syncVolume, to be executed in order. */
export type BinderAction =
  | { kind: 'updateVolume'; volume: PersistentVolume }
  | { kind: 'updateVolumeStatus'; volume: PersistentVolume }
  | { kind: 'updateClaim'; claim: PersistentVolumeClaim; onError?: { reason: string; prefix: string } }
  | { kind: 'updateClaimStatus'; claim: PersistentVolumeClaim }
  | { kind: 'deleteVolume'; name: string; uid: string | undefined }
  | { kind: 'enqueueClaim'; key: string }
  | BinderEvent;

/** What the decisions may look up besides the object being synced (the binder's caches). */
export interface BinderView {
  volumes: VolumeSource;
  getVolume(name: string): PersistentVolume | undefined;
  getClaim(namespace: string, name: string): PersistentVolumeClaim | undefined;
  getClass(name: string): StorageClass | undefined;
  defaultClass(): StorageClass | undefined;
  /** Pods of the claim's namespace that use it; for the WaitForPodScheduled event. */
  podsUsingClaim?(claim: PersistentVolumeClaim): Pod[];
}

export const EXTERNAL_PROVISIONING_MESSAGE = (provisioner: string) =>
  `Waiting for a volume to be created either by the external provisioner '${provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.`;

const ev = (on: BinderEvent['on'], type: BinderEvent['type'], reason: string, message: string): BinderEvent => ({
  kind: 'event',
  on,
  type,
  reason,
  message,
});

/**
 * Copy-on-write clone for the decisions: they replace top-level fields of metadata/spec/status and the
 * annotation map, never mutate deeper (binding throughput is dominated by copies otherwise).
 */
function clone<T extends PersistentVolume | PersistentVolumeClaim>(v: T): T {
  const annotations = v.metadata.annotations;
  return {
    ...v,
    metadata: { ...v.metadata, ...(annotations ? { annotations: { ...annotations } } : {}) },
    spec: { ...v.spec },
    ...(v.status ? { status: { ...v.status } } : {}),
  };
}

function setAnnotation<T extends PersistentVolume | PersistentVolumeClaim>(obj: T, key: string, value: string): void {
  obj.metadata.annotations = { ...(obj.metadata.annotations ?? {}), [key]: value };
}

/** updateVolumePhase: a status write only when the phase (or message) changes. */
function volumePhase(
  volume: PersistentVolume,
  phase: NonNullable<PersistentVolume['status']>['phase'],
  message = '',
): { volume: PersistentVolume; actions: BinderAction[] } {
  if (volume.status?.phase === phase && (volume.status?.message ?? '') === message) return { volume, actions: [] };
  const next = clone(volume);
  next.status = { ...(next.status ?? {}), phase };
  if (message) next.status.message = message;
  else delete next.status.message;
  return { volume: next, actions: [{ kind: 'updateVolumeStatus', volume: next }] };
}

/** updateVolumePhaseWithEvent: the event only accompanies an actual phase change. */
function volumePhaseWithEvent(
  volume: PersistentVolume,
  phase: 'Failed',
  type: 'Warning',
  reason: string,
  message: string,
): BinderAction[] {
  if (volume.status?.phase === phase) return [];
  const { volume: next, actions } = volumePhase(volume, phase, message);
  return [...actions, ev(next, type, reason, message)];
}

/** updateClaimStatus: phase plus access modes and capacity copied from the volume (cleared without one). */
function claimStatus(
  claim: PersistentVolumeClaim,
  phase: 'Pending' | 'Bound' | 'Lost',
  volume: PersistentVolume | undefined,
): BinderAction[] {
  const next = clone(claim);
  const status = (next.status = { ...(next.status ?? {}) });
  let dirty = false;
  if (claim.status?.phase !== phase) {
    status.phase = phase;
    dirty = true;
  }
  if (!volume) {
    if (status.accessModes !== undefined) {
      delete status.accessModes;
      dirty = true;
    }
    if (status.capacity !== undefined) {
      delete status.capacity;
      dirty = true;
    }
  } else {
    if (JSON.stringify(claim.status?.accessModes) !== JSON.stringify(volume.spec.accessModes)) {
      status.accessModes = volume.spec.accessModes ? [...volume.spec.accessModes] : undefined;
      dirty = true;
    }
    // Capacity only when becoming Bound: a later difference may be deliberate (filesystem vs block size).
    if (claim.status?.phase !== phase && claim.status?.capacity?.storage !== volume.spec.capacity?.storage) {
      status.capacity = { ...(volume.spec.capacity ?? {}) };
      dirty = true;
    }
  }
  return dirty ? [{ kind: 'updateClaimStatus', claim: next }] : [];
}

function claimStatusWithEvent(
  claim: PersistentVolumeClaim,
  phase: 'Lost',
  reason: string,
  message: string,
): BinderAction[] {
  if (claim.status?.phase === phase) return [];
  return [...claimStatus(claim, phase, undefined), ev(claim, 'Warning', reason, message)];
}

/** GetReference of a claim, as stored in a PV's claimRef. */
function claimRefOf(claim: PersistentVolumeClaim): NonNullable<PersistentVolume['spec']['claimRef']> {
  return {
    kind: 'PersistentVolumeClaim',
    namespace: claim.metadata.namespace,
    name: claim.metadata.name,
    uid: claim.metadata.uid,
    apiVersion: 'v1',
    resourceVersion: claim.metadata.resourceVersion,
  };
}

/** bind(): PV claimRef (+bound-by-controller), PV status Bound, PVC volumeName + annotations, PVC status. */
export function bind(volume: PersistentVolume, claim: PersistentVolumeClaim): BinderAction[] {
  const actions: BinderAction[] = [];
  let pv = volume;
  const ref = pv.spec.claimRef;
  const needsRef =
    !ref ||
    ref.name !== claim.metadata.name ||
    (ref.namespace ?? '') !== (claim.metadata.namespace ?? '') ||
    ref.uid !== claim.metadata.uid;
  // bound-by-controller marks a binding the user did not make (a claimRef they set, even without uid, is theirs).
  const needsAnnotation =
    !isVolumeBoundToClaim(pv, claim) && pv.metadata.annotations?.[ANN_BOUND_BY_CONTROLLER] === undefined;
  if (needsRef || needsAnnotation) {
    pv = clone(pv);
    if (needsRef) pv.spec.claimRef = claimRefOf(claim);
    if (needsAnnotation) setAnnotation(pv, ANN_BOUND_BY_CONTROLLER, 'yes');
    actions.push({ kind: 'updateVolume', volume: pv });
  }
  const phased = volumePhase(pv, 'Bound');
  pv = phased.volume;
  actions.push(...phased.actions);

  let pvc = claim;
  const setByUs = claim.spec.volumeName !== pv.metadata.name;
  if (setByUs || claim.metadata.annotations?.[ANN_BIND_COMPLETED] === undefined) {
    pvc = clone(claim);
    pvc.spec.volumeName = pv.metadata.name;
    if (setByUs && pvc.metadata.annotations?.[ANN_BOUND_BY_CONTROLLER] === undefined)
      setAnnotation(pvc, ANN_BOUND_BY_CONTROLLER, 'yes');
    if (pvc.metadata.annotations?.[ANN_BIND_COMPLETED] === undefined) setAnnotation(pvc, ANN_BIND_COMPLETED, 'yes');
    actions.push({ kind: 'updateClaim', claim: pvc });
  }
  actions.push(...claimStatus(pvc, 'Bound', pv));
  return actions;
}

/** syncClaim: dispatch on bind-completed. */
export function syncClaim(claim: PersistentVolumeClaim, view: BinderView): BinderAction[] {
  return claim.metadata.annotations?.[ANN_BIND_COMPLETED] === undefined
    ? syncUnboundClaim(claim, view)
    : syncBoundClaim(claim, view);
}

function syncUnboundClaim(claim: PersistentVolumeClaim, view: BinderView): BinderAction[] {
  if (!claim.spec.volumeName) {
    const className = claimClass(claim);
    const cls = className ? view.getClass(className) : undefined;
    const delayBinding = isDelayBinding(cls);
    let match: PersistentVolume | undefined;
    try {
      match = findBestMatchForClaim(claim, view.volumes, delayBinding);
    } catch (err) {
      if (!(err instanceof ClaimMatchError)) throw err;
      return [ev(claim, 'Warning', 'FailedBinding', err.message), ...claimStatus(claim, 'Pending', undefined)];
    }
    if (match) return bind(match, claim);
    if (claimHasNoClass(claim)) {
      // Retroactive default class (GA 1.28): only for claims with no class at all.
      const def = view.defaultClass();
      if (def?.metadata.name) {
        const next = clone(claim);
        next.spec.storageClassName = def.metadata.name;
        return [{ kind: 'updateClaim', claim: next }];
      }
    }
    if (delayBinding && !hasSelectedNode(claim)) {
      const pending = (view.podsUsingClaim?.(claim) ?? [])
        .filter((p) => !p.spec.nodeName)
        .map((p) => p.metadata.name ?? '');
      const event =
        pending.length === 0
          ? ev(claim, 'Normal', 'WaitForFirstConsumer', 'waiting for first consumer to be created before binding')
          : ev(
              claim,
              'Normal',
              'WaitForPodScheduled',
              pending.length > 1
                ? `waiting for pods ${pending.join(',')} to be scheduled`
                : `waiting for pod ${pending[0]} to be scheduled`,
            );
      return [event, ...claimStatus(claim, 'Pending', undefined)];
    }
    if (className !== '') return provisionClaim(claim, className, cls);
    return [
      ev(
        claim,
        'Normal',
        'FailedBinding',
        'no persistent volumes available for this claim and no storage class is set',
      ),
      ...claimStatus(claim, 'Pending', undefined),
    ];
  }
  // The user pre-bound the claim to a volume by name.
  const volume = view.getVolume(claim.spec.volumeName);
  if (!volume) return claimStatus(claim, 'Pending', undefined);
  if (!volume.spec.claimRef) {
    const mismatch = volumeSatisfiesClaimError(volume, claim);
    if (mismatch) {
      return [
        ev(
          claim,
          'Warning',
          'VolumeMismatch',
          `Cannot bind to requested volume ${JSON.stringify(volume.metadata.name)}: ${mismatch}`,
        ),
        ...claimStatus(claim, 'Pending', undefined),
      ];
    }
    return bind(volume, claim);
  }
  if (isVolumeBoundToClaim(volume, claim)) return bind(volume, claim);
  // The user asked for a volume another claim holds: Warning, stay Pending, retry on the next sync. With
  // bound-by-controller (someone removed bind-completed) kube only warns and returns an error.
  const taken = ev(
    claim,
    'Warning',
    'FailedBinding',
    `volume ${JSON.stringify(volume.metadata.name)} already bound to a different claim.`,
  );
  if (claim.metadata.annotations?.[ANN_BOUND_BY_CONTROLLER] === undefined)
    return [taken, ...claimStatus(claim, 'Pending', undefined)];
  return [taken];
}

/** provisionClaim for an external provisioner: annotate the claim, then ExternalProvisioning (every sync). */
function provisionClaim(
  claim: PersistentVolumeClaim,
  className: string,
  cls: StorageClass | undefined,
): BinderAction[] {
  if (!cls)
    return [
      ev(claim, 'Warning', 'ProvisioningFailed', `storageclass.storage.k8s.io ${JSON.stringify(className)} not found`),
    ];
  const provisioner = cls.provisioner;
  if (provisioner.startsWith('kubernetes.io/')) {
    // No in-tree volume plugins live here (kubernetes.io/no-provisioner included).
    return [ev(claim, 'Warning', 'ProvisioningFailed', `no volume plugin matched name: ${provisioner}`)];
  }
  const actions: BinderAction[] = [];
  let current = claim;
  if (claim.metadata.annotations?.[ANN_STORAGE_PROVISIONER] !== provisioner) {
    current = clone(claim);
    setAnnotation(current, ANN_BETA_STORAGE_PROVISIONER, provisioner);
    setAnnotation(current, ANN_STORAGE_PROVISIONER, provisioner);
    actions.push({
      kind: 'updateClaim',
      claim: current,
      onError: { reason: 'ProvisioningFailed', prefix: 'Error saving claim: ' },
    });
  }
  actions.push(ev(current, 'Normal', 'ExternalProvisioning', EXTERNAL_PROVISIONING_MESSAGE(provisioner)));
  return actions;
}

function syncBoundClaim(claim: PersistentVolumeClaim, view: BinderView): BinderAction[] {
  if (!claim.spec.volumeName) {
    return claimStatusWithEvent(
      claim,
      'Lost',
      'ClaimLost',
      'Bound claim has lost reference to PersistentVolume. Data on the volume is lost!',
    );
  }
  const volume = view.getVolume(claim.spec.volumeName);
  if (!volume)
    return claimStatusWithEvent(
      claim,
      'Lost',
      'ClaimLost',
      'Bound claim has lost its PersistentVolume. Data on the volume is lost!',
    );
  if (!volume.spec.claimRef || volume.spec.claimRef.uid === claim.metadata.uid) return bind(volume, claim);
  return claimStatusWithEvent(
    claim,
    'Lost',
    'ClaimMisbound',
    'Two claims are bound to the same volume, this one is bound incorrectly',
  );
}

/** syncVolume: the volume side of binding, release and reclaim. */
export function syncVolume(volume: PersistentVolume, view: BinderView): BinderAction[] {
  const actions: BinderAction[] = [];
  if (volumeCapacity(volume) === undefined) {
    actions.push(
      ev(
        volume,
        'Warning',
        'VolumeMismatch',
        `PersistentVolume has an unparsable capacity ${JSON.stringify(volume.spec.capacity?.storage)}; no claim can bind to it`,
      ),
    );
  }
  const ref = volume.spec.claimRef;
  // Unused, or reserved for a claim (no uid yet) that the claim's sync will bind.
  if (!ref || !ref.uid) return [...actions, ...volumePhase(volume, 'Available').actions];
  const key = claimKey(ref.namespace, ref.name);
  let claim = view.getClaim(ref.namespace ?? '', ref.name ?? '');
  // A claim of the same name but another uid means ours was deleted and recreated.
  if (claim && claim.metadata.uid !== ref.uid) claim = undefined;
  if (!claim) {
    let pv = volume;
    // kube-controller-manager only logs here (no event), whether the claim was deleted or never existed.
    if (pv.status?.phase !== 'Released' && pv.status?.phase !== 'Failed') {
      const phased = volumePhase(pv, 'Released');
      pv = phased.volume;
      actions.push(...phased.actions);
    }
    return [...actions, ...reclaimVolume(pv)];
  }
  if (!claim.spec.volumeName) {
    if (volumeModeMismatch(claim, volume)) {
      return [
        ...actions,
        ev(
          volume,
          'Warning',
          'VolumeMismatch',
          `Cannot bind PersistentVolume to requested PersistentVolumeClaim ${JSON.stringify(claim.metadata.name)} due to incompatible volumeMode.`,
        ),
        ev(
          claim,
          'Warning',
          'VolumeMismatch',
          `Cannot bind PersistentVolume ${JSON.stringify(volume.metadata.name)} to requested PersistentVolumeClaim due to incompatible volumeMode.`,
        ),
      ];
    }
    // Bound volume, Pending claim: the claim's sync finishes the binding; run it soon.
    return [...actions, { kind: 'enqueueClaim', key }];
  }
  if (claim.spec.volumeName === volume.metadata.name) return [...actions, ...volumePhase(volume, 'Bound').actions];
  // The claim is bound to another volume (two PVs for one claim): kube-controller-manager fixes this silently.
  if (
    volume.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED] !== undefined &&
    volume.spec.persistentVolumeReclaimPolicy === 'Delete'
  ) {
    // Provisioned for this claim but not needed any more: release it to its deleter.
    let pv = volume;
    if (pv.status?.phase !== 'Released' && pv.status?.phase !== 'Failed') {
      const phased = volumePhase(pv, 'Released');
      pv = phased.volume;
      actions.push(...phased.actions);
    }
    return [...actions, ...reclaimVolume(pv)];
  }
  return [...actions, ...unbindVolume(volume)];
}

/** unbindVolume: drop a controller-made binding entirely, or only the uid of a user's pre-binding. */
function unbindVolume(volume: PersistentVolume): BinderAction[] {
  const next = clone(volume);
  if (next.metadata.annotations?.[ANN_BOUND_BY_CONTROLLER] !== undefined) {
    delete next.spec.claimRef;
    delete next.metadata.annotations[ANN_BOUND_BY_CONTROLLER];
    if (Object.keys(next.metadata.annotations).length === 0) delete next.metadata.annotations;
  } else if (next.spec.claimRef) {
    const { uid: _uid, ...ref } = next.spec.claimRef;
    next.spec.claimRef = ref;
  }
  return [{ kind: 'updateVolume', volume: next }, ...volumePhase(next, 'Available').actions];
}

/**
 * reclaimVolume for a Released volume. Delete: volumes an external provisioner owns (provisioned-by not
 * `kubernetes.io/...`, or CSI) are left to it; anything else is deleted by the binder, as an in-tree plugin
 * (hostPath) would be. The backing storage is never touched: this cluster has no kubelet.
 */
export function reclaimVolume(volume: PersistentVolume): BinderAction[] {
  if (volume.metadata.annotations?.[ANN_MIGRATED_TO] !== undefined) return [];
  switch (volume.spec.persistentVolumeReclaimPolicy ?? 'Retain') {
    case 'Retain':
      return [];
    case 'Recycle':
      return volumePhaseWithEvent(
        volume,
        'Failed',
        'Warning',
        'VolumeFailedRecycle',
        'No recycler plugin found for the volume!',
      );
    case 'Delete': {
      const owner = volume.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
      if ((owner && !owner.startsWith('kubernetes.io/')) || volume.spec.csi) return [];
      return [{ kind: 'deleteVolume', name: volume.metadata.name ?? '', uid: volume.metadata.uid }];
    }
    default:
      return volumePhaseWithEvent(
        volume,
        'Failed',
        'Warning',
        'VolumeUnknownReclaimPolicy',
        'Volume has unrecognized PersistentVolumeReclaimPolicy',
      );
  }
}
