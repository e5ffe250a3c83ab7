// The volume loop's sync: decideVolume on the cached PV, then the finalizer patch (guarded by a test of the list
// read; re-read and retried when the list changed meanwhile), provisioner.delete() (once per PV uid), the PV deletion
// with a uid precondition (never deletes a same-named successor; other conflicts are retried), our finalizer's
// removal, the per-claim-mode volume lock around delete(), VolumeFailedDelete events, delete metrics and the shared
// failure tail. Returns what should happen next; the worker applies it to the queue.
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/status-errors.ts';
import type { Logger } from '../../types/logger.ts';
import { persistentVolumes } from '../../runtime/resources.ts';
import { FINALIZER_EXTERNAL_PROVISIONER } from '../../types/annotations.ts';
import type { PersistentVolume } from '../../types/k8s.ts';
import { errorMessage } from '../../types/error-message.ts';
import { decideCachedVolume } from './decide-cached-volume.ts';
import type { ClaimLockHandle } from '../claim-lock.ts';
import { timeoutSignal, volumeObject, type ControllerShared, type ControllerTerm } from '../controller-state.ts';
import { hasOurFinalizer, type VolumeDecision } from './decide-volume.ts';
import { failureTail, notAFailure, takeLock, type GiveUpWords } from '../failures.ts';
import { backoff, done, giveUp, type Next } from '../next.ts';

/** One attempt to delete one PV: everything the effects need, in one value. */
interface VolumeAttempt {
  s: ControllerShared;
  t: ControllerTerm;
  volume: PersistentVolume;
  decision: VolumeDecision;
  log: Logger;
  labels: { class: string };
}

/** Processes one PV key (name) and says what should happen next. */
export async function syncVolume(s: ControllerShared, t: ControllerTerm, name: string): Promise<Next> {
  const volume = t.volumes.get(name);
  if (!volume) {
    s.volumeRecords.set(name, 'failures', undefined);
    return done;
  }
  const decision = decideCachedVolume(s, t, volume);
  const log = s.logger.child({ pv: name, storageClass: volume.spec.storageClassName });
  log.debug(
    {
      action: decision.action,
      code: decision.code,
      reason: decision.reason,
      finalizer: decision.finalizer,
      resourceVersion: volume.metadata.resourceVersion,
    },
    'volume decision',
  );
  if (decision.finalizer) {
    try {
      await patchFinalizer(s, volume, decision.finalizer, t.signal);
    } catch (err) {
      if (err instanceof NotFoundError) return done;
      log.warn({ err: errorMessage(err), finalizer: decision.finalizer }, 'could not change the PV finalizer');
      return backoff;
    }
  }
  const a: VolumeAttempt = { s, t, volume, decision, log, labels: { class: volume.spec.storageClassName ?? '' } };
  switch (decision.action) {
    case 'ignore':
      return done;
    case 'giveUp':
      return giveUp;
    case 'delete':
      return deleteVolume(a);
    case 'finishDelete':
      return finishDelete(a, undefined);
  }
}

/**
 * Tries of the guarded finalizer patch. A failed `test` (kube-apiserver answers 422 Invalid) means the list changed
 * since we read it, e.g. the pv-protection controller dropped its finalizer right after our PV delete: we re-read
 * and patch the fresh list, as client-go's RetryOnConflict does, a bounded number of times.
 */
const FINALIZER_PATCH_TRIES = 3;

/**
 * Adds or removes our finalizer with a JSON patch guarded by a test of the current list (no lost updates). When the
 * guard fails, re-reads the PV and retries on the fresh list; our finalizer already as wanted, or the PV replaced by
 * a same-named one, is success. A NotFound is thrown as it came (callers treat it as done).
 */
async function patchFinalizer(
  s: ControllerShared,
  volume: PersistentVolume,
  change: 'add' | 'remove',
  signal: AbortSignal,
): Promise<void> {
  const name = volume.metadata.name ?? '';
  let seen = volume.metadata.finalizers;
  for (let attempt = 1; ; attempt++) {
    try {
      await s.client.patch(persistentVolumes, name, finalizerPatch(seen, change), { type: 'json', signal });
      return;
    } catch (err) {
      if (!(err instanceof InvalidError || err instanceof ConflictError) || attempt >= FINALIZER_PATCH_TRIES) throw err;
      const fresh = await s.client.get<PersistentVolume>(persistentVolumes, name, { signal });
      if (fresh.metadata.uid !== volume.metadata.uid) return;
      if (hasOurFinalizer(fresh) === (change === 'add')) return;
      // The same list we tested: the 422 was not our guard failing; retrying would fail the same way.
      if (sameList(fresh.metadata.finalizers, seen)) throw err;
      seen = fresh.metadata.finalizers;
    }
  }
}

/** The JSON patch taking `current` to the list with our finalizer added or removed, guarded by a test of `current`. */
function finalizerPatch(current: string[] | undefined, change: 'add' | 'remove'): object[] {
  const next =
    change === 'add'
      ? [...(current ?? []), FINALIZER_EXTERNAL_PROVISIONER]
      : (current ?? []).filter((f) => f !== FINALIZER_EXTERNAL_PROVISIONER);
  // A missing list passes a test for null (evanphx/json-patch, as kube-apiserver applies it): `add` is guarded too.
  return [
    { op: 'test', path: '/metadata/finalizers', value: current ?? null },
    { op: current === undefined ? 'add' : 'replace', path: '/metadata/finalizers', value: next },
  ];
}

function sameList(a: string[] | undefined, b: string[] | undefined): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

async function deleteVolume(a: VolumeAttempt): Promise<Next> {
  const { s, t, volume, log } = a;
  const started = s.clock.now();
  // Per-claim mode: every replica syncs this PV; only the one holding its lock calls delete(), the others requeue.
  let lock: ClaimLockHandle | undefined;
  if (s.claimLock) {
    const claimLock = s.claimLock;
    const got = await takeLock(
      () => claimLock.acquireVolume(volume, t.signal),
      s.options.leaderElection.retryPeriodMs,
      log,
    );
    if ('next' in got) return got.next;
    lock = got.handle;
  }
  const timeout = timeoutSignal(t.signal, s.options.deletionTimeoutMs, s.clock);
  log.debug({}, 'delete started');
  let deleted = false;
  try {
    await s.provisioner.delete(volumeObject(volume), timeout.signal);
    deleted = true;
  } catch (err) {
    return notAFailure(err, t.signal, log, 'deleting the volume') ?? deleteFailed(a, errorMessage(err));
  } finally {
    timeout.dispose();
    // After a success the PV goes away with its lock; after a failure any replica may retry.
    await lock?.end(!deleted);
  }
  s.volumeRecords.set(volume.metadata.name ?? '', 'backendDeletedUid', volume.metadata.uid ?? '');
  log.debug({}, 'backend volume deleted');
  return finishDelete(a, started);
}

/** How the volume loop words a give-up. */
const VOLUME_GIVE_UP: GiveUpWords = {
  reason: 'VolumeDeleteGivenUp',
  doing: 'deleting the volume',
  thresholdOption: 'failedDeleteThreshold',
  retryHint: 'Change the volume to retry.',
};

/** A failed delete(): the event and the metric, then the shared failure tail. */
function deleteFailed(a: VolumeAttempt, message: string): Next {
  const { s, volume, log } = a;
  s.events.event(volumeObject(volume), 'Warning', 'VolumeFailedDelete', message);
  s.metrics.deleteFailedTotal.inc(a.labels);
  return failureTail(s, {
    book: s.volumeRecords,
    key: volume.metadata.name ?? '',
    fingerprint: a.decision.fingerprint ?? '',
    message,
    failure: 'final',
    infeasibleError: false,
    object: volumeObject(volume),
    threshold: s.options.retry.failedDeleteThreshold,
    log,
    words: VOLUME_GIVE_UP,
    countGiveUp: () => s.metrics.deleteGivenUpTotal.inc(a.labels),
  }).next;
}

/** Deletes the PV object (uid precondition) and drops our finalizer. `started` set: record the duration too. */
async function finishDelete(a: VolumeAttempt, started: number | undefined): Promise<Next> {
  const { s, t, volume, log, labels } = a;
  const name = volume.metadata.name ?? '';
  try {
    if (volume.metadata.deletionTimestamp === undefined) {
      try {
        await s.client.delete(persistentVolumes, name, {
          preconditions: { uid: volume.metadata.uid },
          signal: t.signal,
        });
      } catch (err) {
        // NotFound: already gone. A Conflict is done only when the name now belongs to a new PV (the uid
        // precondition failed) or ours is already being deleted; any other 409 is retried.
        if (
          !(err instanceof NotFoundError) &&
          !(err instanceof ConflictError && (await replacedOrDeleting(s, volume, t.signal)))
        )
          throw err;
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
    return backoff;
  }
  s.metrics.deleteTotal.inc(labels);
  if (started !== undefined) s.metrics.deleteDuration.observe(labels, (s.clock.now() - started) / 1000);
  s.volumeRecords.set(name, 'failures', undefined);
  log.info({}, 'volume deleted');
  return done;
}

/** After a 409 on the PV delete: whether the PV we meant is gone, replaced by a same-named one, or terminating. */
async function replacedOrDeleting(
  s: ControllerShared,
  volume: PersistentVolume,
  signal: AbortSignal,
): Promise<boolean> {
  try {
    const fresh = await s.client.get<PersistentVolume>(persistentVolumes, volume.metadata.name ?? '', { signal });
    return fresh.metadata.uid !== volume.metadata.uid || fresh.metadata.deletionTimestamp !== undefined;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    throw err;
  }
}
