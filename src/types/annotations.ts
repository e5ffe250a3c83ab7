// Well-known annotation, label and finalizer names, shared by the embedded cluster and the controller.

/** Set by the PV controller on a claim it hands to an external provisioner (GA name, 1.23+). */
export const ANN_STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
/** The beta name of the same annotation, still set by kube-controller-manager for old provisioners. */
export const ANN_BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';
/** Set on a WaitForFirstConsumer claim by the scheduler: the node the first consumer was scheduled to. */
export const ANN_SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** Set on a PV by its provisioner: which provisioner owns (and will delete) it. */
export const ANN_DYNAMICALLY_PROVISIONED = 'pv.kubernetes.io/provisioned-by';
/** Set on a PV migrated from an in-tree plugin to CSI: the CSI driver now responsible. */
export const ANN_MIGRATED_TO = 'pv.kubernetes.io/migrated-to';
/** The legacy class annotation (before spec.storageClassName). */
export const ANN_BETA_STORAGE_CLASS = 'volume.beta.kubernetes.io/storage-class';
/** The CSI driver an external resizer must be to expand a claim (kube-controller-manager sets it). */
export const ANN_STORAGE_RESIZER = 'volume.kubernetes.io/storage-resizer';
/** Set by the PV controller on a claim once binding completed. */
export const ANN_BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
/** Set by the PV controller on objects it bound (rather than the user). */
export const ANN_BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
/** Marks the default StorageClass. */
export const ANN_DEFAULT_STORAGE_CLASS = 'storageclass.kubernetes.io/is-default-class';
/** Marks the default StorageClass (beta name, still honoured). */
export const ANN_BETA_DEFAULT_STORAGE_CLASS = 'storageclass.beta.kubernetes.io/is-default-class';
/** The seed's per-claim lock (external-storage lib/leaderelection), kept so the format is recognisable. */
export const ANN_CONTROL_PLANE_LEADER = 'control-plane.alpha.kubernetes.io/leader';

/** Finalizer that keeps a claim in use by a pod from going away. */
export const FINALIZER_PVC_PROTECTION = 'kubernetes.io/pvc-protection';
/** Finalizer that keeps a bound PersistentVolume from going away. */
export const FINALIZER_PV_PROTECTION = 'kubernetes.io/pv-protection';
/** Added by external provisioners to PVs they must delete (HonorPVReclaimPolicy, KEP-2644). */
export const FINALIZER_EXTERNAL_PROVISIONER = 'external-provisioner.volume.kubernetes.io/finalizer';

/** metav1.FinalizerOrphanDependents: the garbage collector orphans the object's dependents before it goes. */
export const FINALIZER_ORPHAN_DEPENDENTS = 'orphan';
/** metav1.FinalizerDeleteDependents: the garbage collector deletes the blocking dependents before the object goes. */
export const FINALIZER_DELETE_DEPENDENTS = 'foregroundDeletion';

/** The node label PVs use in node affinity. */
export const LABEL_HOSTNAME = 'kubernetes.io/hostname';
