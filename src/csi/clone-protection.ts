// external-provisioner's CloningProtectionController: provisioning a clone puts the cloning-protection finalizer on
// its source claim; once the source is being deleted and no clone of it is Pending any more, the finalizer is
// removed and the deletion completes. A claims informer, a work queue of source keys, and one pure rule.
import type { KubeClient } from '../runtime/client.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { objectKey, splitKey } from '../runtime/object-store.ts';
import { persistentVolumeClaims } from '../runtime/resources.ts';
import { ItemExponentialFailureRateLimiter } from '../runtime/rate-limiters.ts';
import { WorkQueue } from '../runtime/workqueue.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';
import { errorMessage } from '../types/errors.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import { FINALIZER_CLONE_PROTECTION } from './content-source.ts';

const CLONES_OF = 'clonesOf';

/** The source claim a claim clones (`namespace/name`), if it clones one. */
function cloneSourceKey(claim: PersistentVolumeClaim): string | undefined {
  const ds = claim.spec.dataSource;
  return ds && ds.kind === 'PersistentVolumeClaim' && !ds.apiGroup
    ? `${claim.metadata.namespace ?? ''}/${ds.name}`
    : undefined;
}

/**
 * What the cloning-protection cache keeps of a claim: its identity, deletion state and finalizers, its dataSource and
 * its phase; the rule reads nothing else. The controller's own claim cache holds the whole claim; this second one, of
 * every claim in the cluster, would otherwise double it (about 1 KB per claim).
 */
export function cloneProtectionTransform(claim: PersistentVolumeClaim): PersistentVolumeClaim {
  const m = claim.metadata;
  const slim: PersistentVolumeClaim = {
    metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion },
    spec: claim.spec.dataSource ? { dataSource: claim.spec.dataSource } : {},
  };
  if (m.deletionTimestamp) slim.metadata.deletionTimestamp = m.deletionTimestamp;
  if (m.finalizers?.length) slim.metadata.finalizers = m.finalizers;
  if (claim.status?.phase) slim.status = { phase: claim.status.phase };
  return slim;
}

/** The rule: a source being deleted with our finalizer loses it once none of its clones is Pending. */
export function mayReleaseSource(source: PersistentVolumeClaim, clones: readonly PersistentVolumeClaim[]): boolean {
  if (!source.metadata.deletionTimestamp || !(source.metadata.finalizers ?? []).includes(FINALIZER_CLONE_PROTECTION))
    return false;
  return !clones.some((c) => (c.status?.phase ?? 'Pending') === 'Pending');
}

/** The cloning-protection loop. run() until the signal aborts. */
export class CloneProtection {
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(
    private readonly o: {
      client: KubeClient;
      cluster: CsiClusterAccess;
      clock?: Clock;
      logger?: Logger;
      resyncMs?: number;
    },
  ) {
    this.clock = o.clock ?? realClock;
    this.logger = (o.logger ?? silentLogger).child({ loop: 'cloning-protection' });
  }

  async run(signal: AbortSignal): Promise<void> {
    const informer = new Informer<PersistentVolumeClaim>({
      client: this.o.client,
      resource: persistentVolumeClaims,
      clock: this.clock,
      logger: this.logger,
      resyncMs: this.o.resyncMs ?? 0,
      transform: cloneProtectionTransform,
    });
    informer.addIndex(CLONES_OF, (c) => {
      const key = cloneSourceKey(c);
      return key ? [key] : [];
    });
    const queue = new WorkQueue<string>({
      name: 'cloning-protection',
      clock: this.clock,
      rateLimiter: new ItemExponentialFailureRateLimiter<string>(1000, 300_000),
    });
    const consider = (c: PersistentVolumeClaim) => {
      if (c.metadata.deletionTimestamp && (c.metadata.finalizers ?? []).includes(FINALIZER_CLONE_PROTECTION))
        queue.add(objectKey(c));
      const source = cloneSourceKey(c);
      if (source) queue.add(source); // a clone changed phase or went away: its source may be free now
    };
    informer.addEventHandler({ onAdd: consider, onUpdate: (_old, c) => consider(c), onDelete: consider });
    informer.start(signal);
    const stop = () => queue.shutdown();
    signal.addEventListener('abort', stop, { once: true });
    try {
      await informer.synced;
      for (;;) {
        const item = await queue.get();
        if (item.shutdown) return;
        try {
          const source = informer.store.get(item.key);
          if (source && mayReleaseSource(source, informer.store.byIndex(CLONES_OF, item.key))) {
            const { namespace, name } = splitKey(item.key);
            await this.o.cluster.removeFinalizer(
              'PersistentVolumeClaim',
              namespace ?? '',
              name,
              FINALIZER_CLONE_PROTECTION,
              signal,
            );
            this.logger.info({ pvc: item.key }, 'removed the cloning-protection finalizer: no clone is pending');
          }
          queue.forget(item.key);
        } catch (err) {
          if (!signal.aborted)
            this.logger.warn({ pvc: item.key, err: errorMessage(err) }, 'could not release a clone source; retrying');
          queue.addRateLimited(item.key);
        } finally {
          queue.done(item.key);
        }
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', stop);
      queue.shutdown();
      await informer.stop();
    }
  }
}
