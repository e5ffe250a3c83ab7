// Storage object in-use protection: the StorageObjectInUseProtection admission plugin (finalizers
// `kubernetes.io/pvc-protection` / `kubernetes.io/pv-protection` on create) and the pvc-/pv-protection
// controllers, which remove them once nothing uses the object (a claim: no unfinished pod of its namespace
// references it; a volume: not Bound) and put them back on live objects that lost them.
import type { KubeObject, PersistentVolume } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { FINALIZER_PV_PROTECTION, FINALIZER_PVC_PROTECTION } from '../../types/annotations.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { podClaimNames, podIsActive, type ClusterCache } from './cluster-cache.ts';
import { claimKey } from './volume-match.ts';
import { backoff, done, KeyedQueue, QueueController, type SyncNext } from './keyed-queue.ts';

export const PROTECTION_USER = 'system:serviceaccount:kube-system:pvc-protection-controller';

/** Installs the admission half; returns a switch that turns it off (admission plugins cannot be removed). */
export function installProtectionAdmission(store: ClusterStore): { disable(): void } {
  let enabled = true;
  const add = (finalizer: string) => (op: 'create' | 'update', obj: KubeObject) => {
    if (!enabled || op !== 'create') return;
    const finalizers = obj.metadata.finalizers ?? [];
    if (!finalizers.includes(finalizer)) obj.metadata.finalizers = [...finalizers, finalizer];
  };
  store.addAdmission('persistentvolumeclaims', add(FINALIZER_PVC_PROTECTION));
  store.addAdmission('persistentvolumes', add(FINALIZER_PV_PROTECTION));
  return { disable: () => void (enabled = false) };
}

const PVC = 'pvc:';
const PV = 'pv:';

export class ProtectionController extends QueueController {
  private readonly store: ClusterStore;
  private readonly cache: ClusterCache;
  private readonly logger: Logger;
  protected readonly queue: KeyedQueue;

  constructor(deps: { store: ClusterStore; cache: ClusterCache; logger: Logger }) {
    super();
    this.store = deps.store;
    this.cache = deps.cache;
    this.logger = deps.logger;
    this.queue = new KeyedQueue({
      handle: (key) => this.handle(key),
      onError: (key, err) => deps.logger.error({ err, key }, 'protection sync failed'),
    });
    deps.cache.onChange((change) => {
      const { obj, old } = change;
      if (change.type === 'DELETED' && change.resource !== 'pods') return;
      switch (change.resource) {
        case 'persistentvolumeclaims':
          if (needsWork(obj, FINALIZER_PVC_PROTECTION))
            this.queue.add(PVC + claimKey(obj.metadata.namespace, obj.metadata.name));
          break;
        case 'persistentvolumes':
          if (needsWork(obj, FINALIZER_PV_PROTECTION)) this.queue.add(PV + (obj.metadata.name ?? ''));
          break;
        case 'pods':
          // A pod that finished or went away may release its claims.
          for (const pod of [obj, old]) {
            if (!pod) continue;
            for (const name of podClaimNames(pod as Parameters<typeof podClaimNames>[0])) {
              const claim = deps.cache.getClaim(pod.metadata.namespace ?? '', name);
              if (claim?.metadata.deletionTimestamp) this.queue.add(PVC + claimKey(pod.metadata.namespace, name));
            }
          }
          break;
        default:
          break;
      }
    });
  }

  resync(): void {
    for (const [key, claim] of this.cache.claims)
      if (needsWork(claim, FINALIZER_PVC_PROTECTION)) this.queue.add(PVC + key);
    for (const { volume } of this.cache.volumes.values())
      if (needsWork(volume, FINALIZER_PV_PROTECTION)) this.queue.add(PV + (volume.metadata.name ?? ''));
  }

  private handle(key: string): SyncNext {
    if (key.startsWith(PVC)) {
      const rest = key.slice(PVC.length);
      const i = rest.indexOf('/');
      const claim = this.cache.getClaim(rest.slice(0, i), rest.slice(i + 1));
      if (!claim) return done;
      const inUse = () =>
        this.cache.podsUsingClaim(claim.metadata.namespace ?? '', claim.metadata.name ?? '').some(podIsActive);
      return this.sync('persistentvolumeclaims', claim, FINALIZER_PVC_PROTECTION, inUse);
    }
    const volume = this.cache.volumes.get(key.slice(PV.length));
    if (!volume) return done;
    return this.sync(
      'persistentvolumes',
      volume,
      FINALIZER_PV_PROTECTION,
      () => (volume as PersistentVolume).status?.phase === 'Bound',
    );
  }

  private sync(resource: string, obj: KubeObject, finalizer: string, inUse: () => boolean): SyncNext {
    const finalizers = obj.metadata.finalizers ?? [];
    let next: string[] | undefined;
    if (obj.metadata.deletionTimestamp) {
      if (finalizers.includes(finalizer) && !inUse()) next = finalizers.filter((f) => f !== finalizer);
    } else if (!finalizers.includes(finalizer)) {
      next = [...finalizers, finalizer];
    }
    if (!next) return done;
    try {
      this.store.update(
        resource,
        { ...obj, metadata: { ...obj.metadata, finalizers: next } },
        { user: PROTECTION_USER },
      );
      this.logger.debug(
        { resource, name: obj.metadata.name, finalizer, removed: next.length < finalizers.length },
        'protection finalizer updated',
      );
      return done;
    } catch (err) {
      if (err instanceof ClusterApiError) return err.code === 404 ? done : backoff;
      throw err;
    }
  }
}

/** Terminating with our finalizer (maybe removable), or live without it (to re-add). */
function needsWork(obj: KubeObject, finalizer: string): boolean {
  const has = obj.metadata.finalizers?.includes(finalizer) ?? false;
  return obj.metadata.deletionTimestamp ? has : !has;
}
