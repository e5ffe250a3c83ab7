// What brings the hostpath ledger up to date before an operation, at a cost that does not grow with the number of
// volumes: the records of each base path (loaded once, record-store.ts), the live PVs (kept current by watch
// events through the volumeFeed option, live-volumes.ts; or, for library users who give only a list function, the
// knownVolumes list at most every knownVolumesRefreshMs), and the identity reads those PVs scheduled. A leaf proof
// asks for freshness: with a feed, one GET of the volume and a wait until the index has seen its resourceVersion;
// with a list, a list now.
import type { PersistentVolume } from '../../types/k8s.ts';
import type { Clock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import type { VolumeRecordStore } from './record-store.ts';
import type { LiveVolumes, VolumeFeed } from './live-volumes.ts';

/** Where the live PVs come from. */
export interface LedgerSourcesOptions {
  records: VolumeRecordStore;
  live: LiveVolumes;
  /** The base paths whose records this instance reads. */
  roots(): string[];
  volumeFeed?: VolumeFeed;
  /** One PV now (a GET): what a leaf proof waits for the feed to have seen. Needed with volumeFeed. */
  getVolume?: (name: string, signal: AbortSignal) => Promise<PersistentVolume | undefined>;
  knownVolumes?: (signal: AbortSignal) => PersistentVolume[] | Promise<PersistentVolume[]>;
  knownVolumesRefreshMs?: number;
  clock: Clock;
  logger: Logger;
}

/** A volume the leaf proof needs the index to be current for has vanished from the API. */
export class VolumeGoneError extends Error {
  override name = 'VolumeGoneError';
}

/** Keeps the ledger's sources current. */
export class LedgerSources {
  private lastListAt = -Infinity;
  private listing: Promise<void> | undefined;

  constructor(private readonly o: LedgerSourcesOptions) {
    if (o.volumeFeed) {
      if (!o.getVolume)
        throw new Error(
          'HostPathProvisioner: volumeFeed needs getVolume (a GET of one PV, for the freshness of delete proofs)',
        );
      o.live.follow(o.volumeFeed);
    }
  }

  /** The configuration changed: the live volumes are read again (the next ensure lists them, without a feed). */
  configurationChanged(): void {
    if (!this.o.live.reread()) this.lastListAt = -Infinity;
  }

  /**
   * Brings the ledger up to date. `fresh`: the live volumes must include every PV that existed when the volume
   * `fresh.pvName` was last changed (a delete's leaf proof).
   */
  async ensure(signal: AbortSignal, fresh?: { pvName: string }): Promise<void> {
    await this.o.records.ensureLoaded(this.o.roots());
    if (this.o.volumeFeed) {
      await untilAborted(this.o.live.synced(), signal);
      if (fresh) {
        const now = await this.o.getVolume!(fresh.pvName, signal);
        if (!now)
          throw new VolumeGoneError(
            `volume ${fresh.pvName} is no longer in the API; not deleting its directory without it`,
          );
        await this.o.live.waitForResourceVersion(now.metadata.resourceVersion, signal);
      }
    } else if (this.o.knownVolumes) {
      await this.refreshList(signal, fresh !== undefined);
    }
    await this.o.live.settled();
  }

  // Concurrent callers wait for the list in flight: after a restart, a second provision must not place a volume on
  // the still-empty ledger while the first is fetching the PVs (that overcommitted a base path).
  private async refreshList(signal: AbortSignal, fresh: boolean): Promise<void> {
    const src = this.o.knownVolumes!;
    if (this.listing) return this.listing;
    if (!fresh && this.o.clock.now() - this.lastListAt < (this.o.knownVolumesRefreshMs ?? 60_000)) return;
    this.lastListAt = this.o.clock.now();
    // Always asynchronous (even when src throws at once), so the finally below runs after the assignment.
    this.listing = Promise.resolve()
      .then(() => src(signal))
      .then((volumes) => this.o.live.replaceAll(volumes))
      .catch((e: unknown) =>
        this.o.logger.warn({ err: (e as Error).message }, 'could not list volumes to rebuild capacity accounting'),
      )
      .finally(() => {
        this.listing = undefined;
      });
    return this.listing;
  }
}

// A wait that ends when the signal aborts (a watch that never syncs must not hold a shutdown).
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
