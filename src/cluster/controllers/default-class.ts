// The DefaultStorageClass admission plugin: a claim created with no class at all (neither
// spec.storageClassName nor the beta annotation; an explicit "" is a choice and kept) gets the default class,
// the newest one annotated is-default-class "true". Claims created before any default existed are assigned
// one later by the binder (retroactive default, GA 1.28).
import type { KubeObject, PersistentVolumeClaim } from '../../types/k8s.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import type { ClusterCache } from './cluster-cache.ts';
import { claimHasNoClass } from './volume-match.ts';

/** Installs the plugin; returns a switch that turns it off (admission plugins cannot be removed). */
export function installDefaultClassAdmission(store: ClusterStore, cache: ClusterCache): { disable(): void } {
  let enabled = true;
  store.addAdmission('persistentvolumeclaims', (op: 'create' | 'update', obj: KubeObject) => {
    if (!enabled || op !== 'create') return;
    const claim = obj as PersistentVolumeClaim;
    if (!claim.spec || typeof claim.spec !== 'object' || !claimHasNoClass(claim)) return;
    const name = cache.defaultClass()?.metadata.name;
    if (name) claim.spec.storageClassName = name;
  });
  return { disable: () => void (enabled = false) };
}
