// The PV controller ("persistentvolume-binder") on the store: cache changes become claim/volume keys on a
// queue; a worker runs the pure syncClaim/syncVolume decisions against the cache and executes the writes in
// order, stopping at the first failure (the next sync resumes, as in kube-controller-manager). A periodic
// resync re-queues every claim and volume, which also re-emits ExternalProvisioning like the real one.
import type { PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { syncClaim, syncVolume, type BinderAction, type BinderView } from './binder-logic.ts';
import { claimKey } from './volume-match.ts';
import type { ClusterCache } from './cluster-cache.ts';
import type { ClusterEventRecorder } from './cluster-event-recorder.ts';
import { backoff, done, KeyedQueue, QueueController, type SyncNext } from './keyed-queue.ts';

/** The identity the binder writes as (audit log), as kube-controller-manager's service account. */
export const PV_BINDER_USER = 'system:serviceaccount:kube-system:persistent-volume-binder';

const CLAIM = 'claim:';
const VOLUME = 'volume:';

export interface PvBinderDeps {
  store: ClusterStore;
  cache: ClusterCache;
  recorder: ClusterEventRecorder;
  logger: Logger;
}

export class PvBinder extends QueueController {
  private readonly d: PvBinderDeps;
  protected readonly queue: KeyedQueue;
  private readonly view: BinderView;

  constructor(deps: PvBinderDeps) {
    super();
    this.d = deps;
    this.queue = new KeyedQueue({
      handle: (key) => this.handle(key),
      onError: (key, err) => deps.logger.error({ err, key }, 'pv binder sync failed'),
    });
    const cache = deps.cache;
    this.view = {
      volumes: cache.volumes,
      getVolume: (name) => cache.volumes.get(name),
      getClaim: (ns, name) => cache.getClaim(ns, name),
      getClass: (name) => cache.classes.get(name),
      defaultClass: () => cache.defaultClass(),
      podsUsingClaim: (claim) => cache.podsUsingClaim(claim.metadata.namespace ?? '', claim.metadata.name ?? ''),
    };
    cache.onChange((change) => {
      const { obj, old } = change;
      switch (change.resource) {
        case 'persistentvolumeclaims': {
          const key = claimKey(obj.metadata.namespace, obj.metadata.name);
          if (change.type !== 'DELETED') this.queue.add(CLAIM + key);
          // The claim's volumes release (or re-bind) when it goes.
          for (const name of cache.volumes.namesForClaim(key)) this.queue.add(VOLUME + name);
          break;
        }
        case 'persistentvolumes': {
          if (change.type !== 'DELETED') this.queue.add(VOLUME + (obj.metadata.name ?? ''));
          for (const pv of [obj, old] as Array<PersistentVolume | undefined>) {
            const ref = pv?.spec.claimRef;
            if (ref) this.queue.add(CLAIM + claimKey(ref.namespace, ref.name));
          }
          break;
        }
        case 'storageclasses':
          // Re-queue the pending claims that may now provision or get a default class (an index, not a scan).
          for (const key of cache.pendingClaimKeys(obj.metadata.name ?? '')) this.queue.add(CLAIM + key);
          break;
        default:
          break;
      }
    });
  }

  /** Re-queues every claim and volume (the 15 s --pvclaimbinder-sync-period). */
  resync(): void {
    for (const key of this.d.cache.claims.keys()) this.queue.add(CLAIM + key);
    for (const entry of this.d.cache.volumes.values()) this.queue.add(VOLUME + (entry.volume.metadata.name ?? ''));
  }

  private handle(key: string): SyncNext {
    if (key.startsWith(CLAIM)) {
      const [ns, name] = splitClaimKey(key.slice(CLAIM.length));
      const claim = this.d.cache.getClaim(ns, name);
      return claim ? this.execute(syncClaim(claim, this.view), { pvc: `${ns}/${name}` }) : done;
    }
    const name = key.slice(VOLUME.length);
    const volume = this.d.cache.volumes.get(name);
    return volume ? this.execute(syncVolume(volume, this.view), { pv: name }) : done;
  }

  /** Runs the writes in order; each write of an object uses the resourceVersion the previous one returned. */
  private execute(actions: BinderAction[], logContext: Record<string, string>): SyncNext {
    const { store, recorder, logger } = this.d;
    const latestRv = new Map<string, string>();
    const withRv = <T extends PersistentVolume | PersistentVolumeClaim>(kind: string, obj: T): T => {
      const rv = latestRv.get(`${kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
      return rv ? { ...obj, metadata: { ...obj.metadata, resourceVersion: rv } } : obj;
    };
    const remember = (
      kind: string,
      obj: { metadata: { namespace?: string; name?: string; resourceVersion?: string } },
    ) =>
      latestRv.set(`${kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`, obj.metadata.resourceVersion ?? '');
    for (const a of actions) {
      try {
        switch (a.kind) {
          case 'updateVolume':
          case 'updateVolumeStatus': {
            const out = store.update('persistentvolumes', withRv('pv', a.volume), {
              subresource: a.kind === 'updateVolumeStatus' ? 'status' : undefined,
              user: PV_BINDER_USER,
            });
            remember('pv', out);
            break;
          }
          case 'updateClaim':
          case 'updateClaimStatus': {
            const out = store.update('persistentvolumeclaims', withRv('pvc', a.claim), {
              subresource: a.kind === 'updateClaimStatus' ? 'status' : undefined,
              user: PV_BINDER_USER,
            });
            remember('pvc', out);
            break;
          }
          case 'deleteVolume':
            logger.info({ ...logContext }, 'deleting released volume no external provisioner owns');
            store.delete('persistentvolumes', undefined, a.name, {
              preconditions: a.uid ? { uid: a.uid } : undefined,
              user: PV_BINDER_USER,
            });
            break;
          case 'enqueueClaim':
            this.queue.add(CLAIM + a.key);
            break;
          case 'event':
            if (a.type === 'Warning') logger.warn({ ...logContext, reason: a.reason }, a.message);
            recorder.record(a.on, a.type, a.reason, a.message);
            break;
        }
      } catch (err) {
        if (!(err instanceof ClusterApiError)) throw err;
        if (a.kind === 'updateClaim' && a.onError && err.code !== 409) {
          recorder.record(a.claim, 'Warning', a.onError.reason, a.onError.prefix + err.message);
        }
        // Gone: its DELETED event re-queues whatever depends on it.
        if (err.code === 404) return done;
        if (err.code === 409) logger.debug({ ...logContext, action: a.kind }, 'conflict; retrying with fresh objects');
        else logger.warn({ ...logContext, action: a.kind, err: err.message }, 'pv binder write failed');
        return backoff;
      }
    }
    return done;
  }
}

function splitClaimKey(key: string): [string, string] {
  const i = key.indexOf('/');
  return [key.slice(0, i), key.slice(i + 1)];
}
