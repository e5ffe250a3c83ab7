// The volume flow's effects: decideVolume on the cached PV, then the finalizer patch, provisioner.delete() (once
// per PV uid), the PV deletion with a uid precondition (never deletes a same-named successor; other conflicts are
// retried), our finalizer's removal, the per-claim-mode volume lock around delete(), VolumeFailedDelete events,
// delete metrics and the failure threshold.
import { ConflictError, NotFoundError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/logger.ts';
import { persistentVolumes } from '../runtime/resources.ts';
import { FINALIZER_EXTERNAL_PROVISIONER } from '../types/annotations.ts';
import type { PersistentVolume } from '../types/k8s.ts';
import type { ClaimLockHandle } from './claim-lock.ts';
import { errorMessage, timeoutSignal, volumeObject, type ControllerShared, type ControllerTerm } from './controller-state.ts';
import { decideVolume, hasOurFinalizer, type VolumeDecision } from './decide-volume.ts';
import { recordFailure, thresholdReached } from './failures.ts';
import { IgnoredError } from './provisioner.ts';

/** The decision for one PV from the term's caches. */
export function decideCachedVolume(s: ControllerShared, t: ControllerTerm, volume: PersistentVolume): VolumeDecision {
  return decideVolume({
    volume,
    provisionerName: s.provisionerName,
    options: s.options,
    provisioner: s.provisioner,
    getClaim: (namespace, name) => t.claims.get(namespace, name),
    failures: s.volumeFailures.get(volume.metadata.name ?? ''),
    backendDeleted: s.deletedBackends.has(volume.metadata.uid ?? ''),
  });
}

/** Processes one PV key (name). Handles requeueing itself. */
export async function syncVolume(s: ControllerShared, t: ControllerTerm, name: string): Promise<void> {
  const volume = t.volumes.get(name);
  if (!volume) {
    t.volumeQueue.forget(name);
    s.volumeFailures.delete(name);
    return;
  }
  const d = decideCachedVolume(s, t, volume);
  const log = s.logger.child({ pv: name, storageClass: volume.spec.storageClassName });
  log.debug({ action: d.action, code: d.code, reason: d.reason, finalizer: d.finalizer }, 'volume decision');
  if (d.finalizer) {
    try {
      await patchFinalizer(s, volume, d.finalizer, t.signal);
    } catch (err) {
      if (err instanceof NotFoundError) {
        t.volumeQueue.forget(name);
        return;
      }
      log.warn({ err: errorMessage(err), finalizer: d.finalizer }, 'could not change the PV finalizer');
      t.volumeQueue.addRateLimited(name);
      return;
    }
  }
  switch (d.action) {
    case 'ignore':
    case 'give-up':
      t.volumeQueue.forget(name);
      return;
    case 'delete':
      await deleteVolume(s, t, volume, d, log);
      return;
    case 'finish-delete':
      await finishDelete(s, t, volume, log, undefined);
      return;
  }
}

/** Adds or removes our finalizer with a JSON patch guarded by a test of the current list (no lost updates). */
async function patchFinalizer(s: ControllerShared, volume: PersistentVolume, change: 'add' | 'remove', signal: AbortSignal): Promise<void> {
  const current = volume.metadata.finalizers;
  const next =
    change === 'add'
      ? [...(current ?? []), FINALIZER_EXTERNAL_PROVISIONER]
      : (current ?? []).filter((f) => f !== FINALIZER_EXTERNAL_PROVISIONER);
  const ops = current === undefined
    ? [{ op: 'add', path: '/metadata/finalizers', value: next }]
    : [
        { op: 'test', path: '/metadata/finalizers', value: current },
        { op: 'replace', path: '/metadata/finalizers', value: next },
      ];
  await s.client.patch(persistentVolumes, volume.metadata.name ?? '', ops, { type: 'json', signal });
}

async function deleteVolume(s: ControllerShared, t: ControllerTerm, volume: PersistentVolume, d: VolumeDecision, log: Logger): Promise<void> {
  const name = volume.metadata.name ?? '';
  const labels = { class: volume.spec.storageClassName ?? '' };
  const started = s.clock.now();
  // Per-claim mode: every replica syncs this PV; only the one holding its lock calls delete(), the others requeue.
  let lock: ClaimLockHandle | undefined;
  if (s.claimLock) {
    const got = await s.claimLock.acquireVolume(volume, t.signal);
    if (!got.acquired) {
      log.debug({ holder: got.holder, retryAfterMs: got.retryAfterMs }, 'volume lock held elsewhere; not deleting');
      if (got.retryAfterMs > 0) t.volumeQueue.addAfter(name, got.retryAfterMs);
      else t.volumeQueue.addRateLimited(name);
      return;
    }
    lock = got.handle;
  }
  const timeout = timeoutSignal(t.signal, s.options.deletionTimeoutMs, s.clock);
  log.debug({}, 'delete started');
  let deleted = false;
  try {
    await s.provisioner.delete(volumeObject(volume), timeout.signal);
    deleted = true;
  } catch (err) {
    if (err instanceof IgnoredError) {
      log.debug({ reason: err.reason }, 'volume deletion ignored');
      t.volumeQueue.forget(name);
      return;
    }
    const message = errorMessage(err);
    s.events.event(volumeObject(volume), 'Warning', 'VolumeFailedDelete', message);
    s.metrics.deleteFailedTotal.inc(labels);
    const record = recordFailure(s.volumeFailures.get(name), d.fingerprint ?? '', message);
    s.volumeFailures.set(name, record);
    const threshold = s.options.failedDeleteThreshold;
    if (thresholdReached(record, threshold)) {
      log.error({ failures: record.failures, threshold, err: message }, 'giving up deleting volume because failures >= threshold');
      s.events.event(
        volumeObject(volume),
        'Warning',
        'VolumeDeleteGivenUp',
        `Giving up deleting the volume after ${record.failures} failed attempts (failedDeleteThreshold ${threshold}); last error: ${message}. Change the volume to retry.`,
      );
      s.metrics.deleteGivenUpTotal.inc(labels);
      t.volumeQueue.forget(name);
      return;
    }
    log.info({ failures: record.failures, threshold, err: message }, 'retrying syncing volume');
    t.volumeQueue.addRateLimited(name);
    return;
  } finally {
    timeout.dispose();
    // After a success the PV goes away with its lock; after a failure any replica may retry.
    await lock?.end(!deleted);
  }
  s.deletedBackends.add(volume.metadata.uid ?? '');
  log.debug({}, 'backend volume deleted');
  await finishDelete(s, t, volume, log, started);
}

/** Deletes the PV object (uid precondition) and drops our finalizer. `started` set: record the duration too. */
async function finishDelete(s: ControllerShared, t: ControllerTerm, volume: PersistentVolume, log: Logger, started: number | undefined): Promise<void> {
  const name = volume.metadata.name ?? '';
  const labels = { class: volume.spec.storageClassName ?? '' };
  try {
    if (volume.metadata.deletionTimestamp === undefined) {
      try {
        await s.client.delete(persistentVolumes, name, { preconditions: { uid: volume.metadata.uid }, signal: t.signal });
      } catch (err) {
        // NotFound: already gone. A Conflict is done only when the name now belongs to a new PV (the uid
        // precondition failed) or ours is already being deleted; any other 409 is retried.
        if (!(err instanceof NotFoundError) && !(err instanceof ConflictError && (await replacedOrDeleting(s, volume, t.signal)))) throw err;
      }
    }
    if (hasOurFinalizer(volume)) {
      try {
        await patchFinalizer(s, volume, 'remove', t.signal);
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
  } catch (err) {
    log.warn({ err: errorMessage(err) }, 'deleting the PV object failed; the backend volume is already gone');
    s.metrics.deleteFailedTotal.inc(labels);
    t.volumeQueue.addRateLimited(name);
    return;
  }
  s.metrics.deleteTotal.inc(labels);
  if (started !== undefined) s.metrics.deleteDuration.observe(labels, (s.clock.now() - started) / 1000);
  s.volumeFailures.delete(name);
  t.volumeQueue.forget(name);
  log.info({}, 'volume deleted');
}

/** After a 409 on the PV delete: whether the PV we meant is gone, replaced by a same-named one, or terminating. */
async function replacedOrDeleting(s: ControllerShared, volume: PersistentVolume, signal: AbortSignal): Promise<boolean> {
  try {
    const fresh = await s.client.get<PersistentVolume>(persistentVolumes, volume.metadata.name ?? '', { signal });
    return fresh.metadata.uid !== volume.metadata.uid || fresh.metadata.deletionTimestamp !== undefined;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    throw err;
  }
}
