// external-provisioner's CloningProtectionController: provisioning a clone puts the cloning-protection finalizer on
// its source claim; once the source is being deleted and no clone of it is Pending any more, the finalizer is
// removed and the deletion completes. A claims informer, a work queue of source keys, and one pure rule.
// With `snapshotSweepMs` (`--snapshot-orphan-sweep-interval`), it is also external-provisioner's
// SnapshotFinalizerController: every interval, a VolumeSnapshot carrying the source-protection finalizer that no
// Pending claim restores from loses it (a sidecar killed between adding and removing it, a claim deleted mid-restore),
// read from the same claims informer (no second claim cache).
import type { KubeClient } from '../runtime/client.ts';
import { ForbiddenError } from '../runtime/errors.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { objectKey, splitKey } from '../runtime/object-store.ts';
import { persistentVolumeClaims } from '../runtime/resources.ts';
import { ItemExponentialFailureRateLimiter } from '../runtime/rate-limiters.ts';
import { WorkQueue } from '../runtime/workqueue.ts';
import type { PersistentVolumeClaim } from '../types/k8s.ts';
import type { VolumeSnapshot } from '../types/storage-objects.ts';
import { errorMessage } from '../types/errors.ts';
import type { CsiClusterAccess } from './cluster-access.ts';
import { FINALIZER_CLONE_PROTECTION, FINALIZER_SNAPSHOT_SOURCE_PROTECTION } from './content-source.ts';
import { volumeSnapshots } from './kinds.ts';

const CLONES_OF = 'clonesOf';
const RESTORES_OF = 'restoresOf';

/** The VolumeSnapshot a claim restores from (`namespace/name`), if any: dataSource, else a same-namespace dataSourceRef. */
function snapshotSourceKey(claim: PersistentVolumeClaim): string | undefined {
  const ns = claim.metadata.namespace ?? '';
  const ds = claim.spec.dataSource ?? claim.spec.dataSourceRef;
  if (!ds || ds.kind !== 'VolumeSnapshot' || ds.apiGroup !== 'snapshot.storage.k8s.io') return undefined;
  const refNs = 'namespace' in ds ? (ds.namespace ?? ns) : ns;
  return refNs === ns ? `${ns}/${ds.name}` : undefined;
}

/** The sweep's rule: a snapshot with our finalizer that no Pending (or phase-less) claim restores from is an orphan. */
export function isOrphanedSnapshotFinalizer(
  snapshot: VolumeSnapshot,
  restores: readonly PersistentVolumeClaim[],
): boolean {
  if (!(snapshot.metadata.finalizers ?? []).includes(FINALIZER_SNAPSHOT_SOURCE_PROTECTION)) return false;
  return !restores.some((c) => (c.status?.phase ?? 'Pending') === 'Pending');
}

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
      /** `--snapshot-orphan-sweep-interval`: 0 or absent disables the sweep (plugins without snapshots). */
      snapshotSweepMs?: number;
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
    const sweepMs = this.o.snapshotSweepMs ?? 0;
    if (sweepMs > 0)
      informer.addIndex(RESTORES_OF, (c) => {
        const key = snapshotSourceKey(c);
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
    let sweeping: Promise<void> | undefined;
    try {
      await informer.synced;
      if (sweepMs > 0) sweeping = this.sweepLoop(informer, sweepMs, signal);
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
      await sweeping;
      await informer.stop();
    }
  }

  /** At start, then every `ms`: sweep the orphaned snapshot finalizers. Stops on a 403 (the verbs are optional). */
  private async sweepLoop(informer: Informer<PersistentVolumeClaim>, ms: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.sweepSnapshots(informer, signal);
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ForbiddenError) {
          this.logger.info({ err: errorMessage(err) }, 'snapshot finalizer sweep disabled: no list permission');
          return;
        }
        this.logger.warn({ err: errorMessage(err) }, 'snapshot finalizer sweep failed; next one at the interval');
      }
      await this.clock.sleep(ms, signal).catch(() => undefined);
    }
  }

  /** One sweep: every VolumeSnapshot (paged), our finalizer removed where no Pending claim restores from it. */
  async sweepSnapshots(informer: Informer<PersistentVolumeClaim>, signal: AbortSignal): Promise<number> {
    let removed = 0;
    let token: string | undefined;
    do {
      const page = await this.o.client.list<VolumeSnapshot>(volumeSnapshots, { limit: 500, continue: token, signal });
      for (const snap of page.items) {
        const key = `${snap.metadata.namespace ?? ''}/${snap.metadata.name ?? ''}`;
        if (!isOrphanedSnapshotFinalizer(snap, informer.store.byIndex(RESTORES_OF, key))) continue;
        await this.o.cluster.removeFinalizer(
          'VolumeSnapshot',
          snap.metadata.namespace ?? '',
          snap.metadata.name ?? '',
          FINALIZER_SNAPSHOT_SOURCE_PROTECTION,
          signal,
        );
        removed++;
        this.logger.info({ snapshot: key }, 'removed an orphaned volumesnapshot-as-source-protection finalizer');
      }
      token = page.metadata?.continue || undefined;
    } while (token);
    return removed;
  }
}
