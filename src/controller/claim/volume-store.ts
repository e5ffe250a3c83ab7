// Saving the PV that provision() returned, in one of two modes:
// - 'retry' (the Go backoffStore): N create attempts, then delete the backend volume so nothing leaks, with
//   ProvisioningCleanupFailed when even that fails; the claim is retried;
// - 'background' (the Go queueStore): one inline attempt, then a queue retries forever; the backend volume is never
//   deleted, so nothing leaks either.
// Unlike the Go library, AlreadyExists counts as saved only when the existing PV is bound to this claim's uid
// (the Go library's issue #55 in kubernetes-sigs/sig-storage-lib-external-provisioner); a PV of another claim under our name is a conflict, and then we never delete the backend volume,
// because an idempotent provisioner may have handed us that other claim's volume.
// A PV the API server refuses as invalid (422/400) can never be saved by trying again: in either mode the save is
// final at once, the backend volume is deleted and the Warning event quotes the server's message.
import type { Clock } from '../../runtime/clock.ts';
import type { ObjectClient } from '../../runtime/client.ts';
import { AlreadyExistsError, InvalidError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { ItemExponentialFailureRateLimiter } from '../../runtime/rate-limiters.ts';
import { persistentVolumes } from '../../runtime/resources.ts';
import { WorkQueue } from '../../runtime/workqueue.ts';
import type { EventSink } from '../../types/events.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../types/k8s.ts';
import { claimKey } from './decide-claim.ts';
import type { ResolvedOptions } from '../options/controller-options.ts';
import type { OwnWrites } from '../own-writes.ts';
import { IgnoredError, type Provisioner } from '../provisioner.ts';

/** Thrown (as SaveOutcome.error) when our PV name is taken by a PV of another claim. */
export class VolumeConflictError extends Error {
  override name = 'VolumeConflictError';
  constructor(
    readonly volumeName: string,
    readonly ownerUid: string | undefined,
  ) {
    super(`PersistentVolume ${volumeName} already exists and is bound to another claim (uid ${ownerUid ?? 'none'})`);
  }
}

export type SaveOutcome =
  /** The PV exists now (created, or already there for this claim): the API server's copy. */
  | { kind: 'saved'; volume: PersistentVolume }
  /** Background mode: the PV will be created by the background queue. */
  | { kind: 'queued' }
  /**
   * Not saved. `cleanedUp`: the backend volume was deleted again. `invalid`: the API server refused the PV itself
   * (422/400), so provisioning the same claim again would fail the same way.
   */
  | { kind: 'failed'; error: Error; cleanedUp: boolean; invalid?: boolean };

export interface VolumeStoreDeps {
  client: ObjectClient;
  provisioner: Provisioner;
  events: EventSink;
  clock: Clock;
  logger: Logger;
  save: ResolvedOptions['volumeSave'];
  /** Where PVs saved by the background queue are recorded until the volume informer delivers them. */
  savedVolumes: OwnWrites<PersistentVolume>;
  /** The volume informer's copy of a PV now (none outside a term). */
  cachedVolume?(name: string): PersistentVolume | undefined;
}

interface Unsaved {
  volume: PersistentVolume;
  claim: PersistentVolumeClaim;
}

export class VolumeStore {
  private readonly unsaved = new Map<string, Unsaved>();
  private readonly queue: WorkQueue<string> | undefined;
  private workers: Promise<void>[] = [];

  constructor(private readonly deps: VolumeStoreDeps) {
    if (deps.save.mode === 'background') {
      this.queue = new WorkQueue<string>({
        name: 'unsavedpvs',
        clock: deps.clock,
        rateLimiter: new ItemExponentialFailureRateLimiter<string>(deps.save.baseDelayMs, deps.save.maxDelayMs),
      });
    }
  }

  /** Names of PVs waiting in the background queue. */
  pending(): string[] {
    return [...this.unsaved.keys()];
  }

  /** Starts the background workers (background mode only). They stop when `signal` aborts. */
  run(signal: AbortSignal, workers = 4): void {
    const queue = this.queue;
    if (!queue) return;
    signal.addEventListener('abort', () => queue.shutdown(), { once: true });
    for (let i = 0; i < workers; i++) {
      this.workers.push(
        (async () => {
          for (;;) {
            const item = await queue.get().catch(() => ({ shutdown: true as const }));
            if (item.shutdown) return;
            try {
              await this.retryUnsaved(item.key, signal);
            } finally {
              queue.done(item.key);
            }
          }
        })(),
      );
    }
  }

  /** Waits for the background workers after the run signal aborted. */
  async stopped(): Promise<void> {
    this.queue?.shutdown();
    await Promise.all(this.workers);
    this.workers = [];
  }

  /** Saves `volume` for `claim`. Never throws: the outcome says what happened. */
  async save(claim: PersistentVolumeClaim, volume: PersistentVolume, signal: AbortSignal): Promise<SaveOutcome> {
    const save = this.deps.save;
    const log = this.deps.logger.child({ pvc: claimKey(claim), pv: volume.metadata.name });
    if (save.mode === 'background') {
      const first = await this.create(claim, volume, signal).catch((err: unknown) => err as Error);
      if (!(first instanceof Error)) return { kind: 'saved', volume: first };
      if (first instanceof VolumeConflictError) return this.conflict(claim, first);
      if (first instanceof InvalidError) return this.refused(claim, volume, first, signal);
      log.info({ err: first.message }, 'saving PV failed; retrying in the background');
      this.unsaved.set(volume.metadata.name ?? '', { volume, claim });
      this.queue?.addRateLimited(volume.metadata.name ?? '');
      return { kind: 'queued' };
    }

    let lastError: Error = new Error('no attempt made');
    for (let attempt = 1; attempt <= save.retryCount; attempt++) {
      try {
        return { kind: 'saved', volume: await this.create(claim, volume, signal) };
      } catch (err) {
        if (err instanceof VolumeConflictError) return this.conflict(claim, err);
        if (err instanceof InvalidError) return this.refused(claim, volume, err, signal);
        lastError = err as Error;
        log.info({ err: lastError.message, attempt }, 'saving PV failed');
      }
      if (signal.aborted) {
        // Shutting down: the claim is still pending, so the next start calls provision() again for the same
        // (deterministic) PV name; an idempotent provisioner returns this very volume and nothing leaks.
        return { kind: 'failed', error: lastError, cleanedUp: false };
      }
      if (attempt < save.retryCount) await this.deps.clock.sleep(save.intervalMs, signal).catch(() => {});
    }

    return this.cleanUp(claim, volume, lastError, signal);
  }

  /** The API server refused the PV as invalid: no retry can save it. */
  private refused(
    claim: PersistentVolumeClaim,
    volume: PersistentVolume,
    err: InvalidError,
    signal: AbortSignal,
  ): Promise<SaveOutcome> {
    this.deps.logger.warn(
      { pvc: claimKey(claim), pv: volume.metadata.name, err: err.message },
      'the API server refused the provisioned PV as invalid',
    );
    return this.cleanUp(claim, volume, err, signal, true);
  }

  /** Deletes the backend volume of a PV that will not be saved (bounded attempts), with the events that say so. */
  private async cleanUp(
    claim: PersistentVolumeClaim,
    volume: PersistentVolume,
    lastError: Error,
    signal: AbortSignal,
    invalid = false,
  ): Promise<SaveOutcome> {
    const save = this.deps.save;
    const retryCount = save.mode === 'retry' ? save.retryCount : 1;
    const intervalMs = save.mode === 'retry' ? save.intervalMs : 0;
    const log = this.deps.logger.child({ pvc: claimKey(claim), pv: volume.metadata.name });
    const key = claimKey(claim);
    this.deps.events.event(
      claim,
      'Warning',
      'ProvisioningFailed',
      `Error creating provisioned PV object for claim ${key}: ${lastError.message}. Deleting the volume.`,
    );
    let cleanupError: Error | undefined;
    for (let attempt = 1; attempt <= retryCount; attempt++) {
      try {
        await this.deps.provisioner.delete(volume, signal);
        cleanupError = undefined;
        log.info({}, 'deleted the backend volume of the unsaved PV');
        break;
      } catch (err) {
        if (err instanceof IgnoredError) {
          cleanupError = undefined;
          break;
        }
        cleanupError = err as Error;
        log.warn({ err: cleanupError.message, attempt }, 'cleaning up the backend volume failed');
      }
      if (signal.aborted) break;
      if (attempt < retryCount) await this.deps.clock.sleep(intervalMs, signal).catch(() => {});
    }
    if (cleanupError) {
      this.deps.events.event(
        claim,
        'Warning',
        'ProvisioningCleanupFailed',
        `Error cleaning provisioned volume for claim ${key}: ${cleanupError.message}. Please delete manually.`,
      );
      return { kind: 'failed', error: lastError, cleanedUp: false, invalid };
    }
    return { kind: 'failed', error: lastError, cleanedUp: true, invalid };
  }

  private conflict(claim: PersistentVolumeClaim, err: VolumeConflictError): SaveOutcome {
    this.deps.events.event(
      claim,
      'Warning',
      'ProvisioningFailed',
      `${err.message}; the backend volume is kept (it may be that claim's).`,
    );
    return { kind: 'failed', error: err, cleanedUp: false };
  }

  /** One create. Resolves to the PV once it exists for this claim; throws VolumeConflictError or the API error. */
  private async create(
    claim: PersistentVolumeClaim,
    volume: PersistentVolume,
    signal: AbortSignal,
  ): Promise<PersistentVolume> {
    const name = volume.metadata.name ?? '';
    let created: PersistentVolume;
    try {
      created = await this.deps.client.create(persistentVolumes, volume, { signal });
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
      const existing = await this.deps.client.get<PersistentVolume>(persistentVolumes, name, { signal });
      const ownerUid = existing.spec.claimRef?.uid;
      if (ownerUid !== claim.metadata.uid) throw new VolumeConflictError(name, ownerUid);
      this.deps.logger.debug({ pv: name }, 'PV already exists for this claim, reusing it');
      this.succeeded(claim, name);
      return existing;
    }
    this.succeeded(claim, name);
    return created;
  }

  private succeeded(claim: PersistentVolumeClaim, name: string): void {
    this.deps.events.event(claim, 'Normal', 'ProvisioningSucceeded', `Successfully provisioned volume ${name}`);
  }

  private async retryUnsaved(name: string, signal: AbortSignal): Promise<void> {
    const entry = this.unsaved.get(name);
    if (!entry || !this.queue) return;
    const claim = entry.claim;
    try {
      this.deps.savedVolumes.record(
        name,
        await this.create(claim, entry.volume, signal),
        this.deps.cachedVolume?.(name),
      );
      this.unsaved.delete(name);
      this.queue.forget(name);
    } catch (err) {
      if (err instanceof VolumeConflictError || err instanceof InvalidError) {
        // Neither can be saved by trying again; the conflicting volume is kept, a refused one deleted.
        if (err instanceof VolumeConflictError) this.conflict(claim, err);
        this.unsaved.delete(name);
        this.queue.forget(name);
        if (err instanceof InvalidError) await this.refused(claim, entry.volume, err, signal);
        return;
      }
      this.deps.logger.info(
        { pv: name, err: (err as Error).message, failures: this.queue.numRequeues(name) },
        'saving PV failed; retrying in the background',
      );
      if (!signal.aborted) this.queue.addRateLimited(name);
    }
  }
}
