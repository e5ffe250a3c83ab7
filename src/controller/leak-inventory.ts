// Leak inventory (beyond the Go library): compare the backend's volumes (provisioner.listVolumes) with the PVs and
// report backend volumes that have no PV and are older than a grace period: the volumes leaked by restarts before
// a PV was saved, or by deletes racing creates. Reported as a metric, a Warning event and a log line; deleted only
// with the opt-in `deleteLeaked`. Volumes we are still saving or provisioning are never reported. The volume cache
// may lag (a cut watch backing off), so a deletion is confirmed first: caches synced, no claim names the volume,
// and a live GET of the PV answers NotFound (anything else, including errors, leaves the volume alone).
import { NotFoundError } from '../runtime/status-errors.ts';
import { persistentVolumes } from '../runtime/resources.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../types/annotations.ts';
import type { PersistentVolume } from '../types/k8s.ts';
import { errorMessage } from '../types/error-message.ts';
import { type ControllerShared, type ControllerTerm } from './controller-state.ts';
import { IgnoredError } from './provisioner.ts';

/** A volume the backend holds, as reported by `Provisioner.listVolumes` for the leak inventory. */
export interface BackendVolume {
  name: string;
  createdAt?: Date;
}

export interface LeakReport {
  /** Backend volumes without a PV, older than the grace period. */
  leaked: string[];
  /** Of those, the ones deleted (deleteLeaked). */
  deleted: string[];
  /** Backend volumes listed. */
  total: number;
}

/**
 * The pure comparison. `firstSeen` remembers when a volume without createdAt was first listed (updated in place),
 * so its age counts from then; `protectedNames` are PV names being provisioned or saved right now.
 */
export function findLeakedVolumes(args: {
  backend: readonly BackendVolume[];
  volumeNames: ReadonlySet<string>;
  protectedNames: ReadonlySet<string>;
  firstSeen: Map<string, number>;
  now: number;
  gracePeriodMs: number;
}): string[] {
  const leaked: string[] = [];
  const listed = new Set<string>();
  for (const v of args.backend) {
    listed.add(v.name);
    if (args.volumeNames.has(v.name) || args.protectedNames.has(v.name)) {
      args.firstSeen.delete(v.name);
      continue;
    }
    let since = v.createdAt?.getTime();
    if (since === undefined || Number.isNaN(since)) {
      since = args.firstSeen.get(v.name) ?? args.now;
      args.firstSeen.set(v.name, since);
    }
    if (args.now - since >= args.gracePeriodMs) leaked.push(v.name);
  }
  for (const name of [...args.firstSeen.keys()]) if (!listed.has(name)) args.firstSeen.delete(name);
  return leaked.sort();
}

/** A minimal PV standing for a leaked backend volume (what delete() and the events get). */
function leakedVolumeObject(s: ControllerShared, name: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: { [ANN_DYNAMICALLY_PROVISIONED]: s.provisionerName } },
    spec: { persistentVolumeReclaimPolicy: 'Delete' },
  };
}

/** PV names nothing may delete right now: saves pending, claims in progress, names claims point at. */
function protectedVolumeNames(s: ControllerShared, t: ControllerTerm): Set<string> {
  const names = new Set<string>([...s.savedVolumes.keys(), ...s.volumeStore.pending()]);
  for (const claim of s.claimRecords.inProgressClaims()) names.add(s.options.volumeNameHook(claim));
  for (const claim of t.claims.list()) {
    // Claims being provisioned right now (pending, ours or not) may have a backend volume before their PV exists;
    // a bound claim's volume exists even when the volume cache has not delivered its PV yet.
    if (claim.spec.volumeName) names.add(claim.spec.volumeName);
    else names.add(s.options.volumeNameHook(claim));
  }
  return names;
}

/** Whether the API server (not the cache) says the PV does not exist. Any doubt answers false. */
async function confirmedMissing(s: ControllerShared, name: string, signal: AbortSignal): Promise<boolean> {
  try {
    await s.client.get<PersistentVolume>(persistentVolumes, name, { signal });
    return false;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    s.logger.warn(
      { pv: name, err: errorMessage(err) },
      'could not confirm that a leaked volume has no PV; not deleting it',
    );
    return false;
  }
}

/**
 * Takes one inventory: lists the backend, reports, and deletes when enabled. `synced`: the term's caches completed
 * their first list (without it nothing is deleted, only reported).
 */
export async function runLeakInventory(
  s: ControllerShared,
  t: ControllerTerm,
  firstSeen: Map<string, number>,
  synced: boolean,
): Promise<LeakReport> {
  const list = s.provisioner.listVolumes;
  if (!list) return { leaked: [], deleted: [], total: 0 };
  const backend = await list.call(s.provisioner, t.signal);
  const protectedNames = protectedVolumeNames(s, t);
  const leaked = findLeakedVolumes({
    backend,
    volumeNames: new Set(t.volumes.keys()),
    protectedNames,
    firstSeen,
    now: s.clock.now(),
    gracePeriodMs: s.options.leakInventory.gracePeriodMs,
  });
  const deleting = s.options.leakInventory.deleteLeaked;
  const reported: string[] = [];
  const deleted: string[] = [];
  for (const name of leaked) {
    // Before deleting, the cache may lag: only with synced caches, only if the API server has no such PV, and
    // re-checking what may have started since the list. Checked right before each delete() (no stale verdicts).
    if (deleting && (!synced || !(await confirmedMissing(s, name, t.signal)) || protectedVolumeNames(s, t).has(name))) {
      s.logger.info({ pv: name, synced }, 'volume missing from the PV cache is not confirmed leaked; not deleting it');
      continue;
    }
    reported.push(name);
    const obj = leakedVolumeObject(s, name);
    s.logger.warn({ pv: name }, 'backend volume has no PersistentVolume (leaked)');
    if (!deleting) {
      s.events.event(
        obj,
        'Warning',
        'VolumeLeaked',
        `Backend volume ${name} has no PersistentVolume; delete it, or enable leakInventory.deleteLeaked`,
      );
      continue;
    }
    try {
      await s.provisioner.delete(obj, t.signal);
      deleted.push(name);
      firstSeen.delete(name);
      s.metrics.leakedVolumesDeletedTotal.inc({ provisioner: s.provisionerName });
      s.events.event(
        obj,
        'Normal',
        'LeakedVolumeDeleted',
        `Deleted backend volume ${name}, which had no PersistentVolume`,
      );
    } catch (err) {
      if (err instanceof IgnoredError) continue;
      s.events.event(
        obj,
        'Warning',
        'VolumeLeaked',
        `Backend volume ${name} has no PersistentVolume and could not be deleted: ${errorMessage(err)}`,
      );
    }
  }
  s.metrics.leakedVolumes.set({ provisioner: s.provisionerName }, reported.length);
  return { leaked: reported, deleted, total: backend.length };
}
