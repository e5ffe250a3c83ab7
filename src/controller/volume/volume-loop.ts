// The volume loop (deletion), declared in the shape every loop has: key (PV name), decideVolume on the cached PV,
// syncVolume, the volume records, the delete metrics, and its informer hooks: every PV event queues the PV, a
// deleted PV is forgotten, and a deleted claim re-queues its volume (the PV's Released event may have come while
// the claim cache still held the claim: ClaimStillExists).
import type { PersistentVolume } from '../../types/k8s.ts';
import type { ControllerShared } from '../controller-state.ts';
import { decideCachedVolume } from './decide-cached-volume.ts';
import type { VolumeDecision } from './decide-volume.ts';
import type { ControlLoop } from '../loop.ts';
import type { VolumeMetrics } from '../controller-metrics.ts';
import type { VolumeRecord } from '../object-records.ts';
import { VOLUME_CLAIM_UID_INDEX } from '../term-caches.ts';
import { syncVolume } from './volume-sync.ts';

/** The volume loop of one controller. */
export function volumeLoop(
  s: ControllerShared,
): ControlLoop<PersistentVolume, VolumeDecision, VolumeRecord, VolumeMetrics> {
  return {
    name: 'volumes',
    key: (volume) => volume.metadata.name ?? '',
    decide: (t, volume) => decideCachedVolume(s, t, volume),
    sync: (t, name) => syncVolume(s, t, name),
    records: s.volumeRecords,
    metrics: s.metrics,
    hooks: (t, queue) => ({
      volumes: {
        onAdd: (v) => queue.add(v.metadata.name ?? ''),
        onUpdate: (_old, v) => queue.add(v.metadata.name ?? ''),
        onDelete: (v) => {
          const name = v.metadata.name ?? '';
          queue.forget(name);
          s.volumeRecords.forget(name);
          s.claimLock?.forget(v.metadata.uid ?? ''); // the PV's delete lock (per-claim mode)
        },
      },
      claims: {
        // Both the claim's volumeName and the PVs whose claimRef is the claim (volumeName not written yet).
        onDelete: (c) => {
          const uid = c.metadata.uid ?? '';
          const names = new Set(t.volumes.indexKeys(VOLUME_CLAIM_UID_INDEX, uid));
          if (c.spec.volumeName) names.add(c.spec.volumeName);
          for (const name of names) queue.add(name);
        },
      },
    }),
  };
}
