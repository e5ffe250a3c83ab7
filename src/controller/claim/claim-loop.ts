// The claim loop (provisioning), declared in the shape every loop has: key (claim uid), decideClaim on the cached
// objects, syncClaim, the claim records, the provisioning metrics, and its informer hooks: Bound claims are skipped
// (no work and no API calls at resync) and forgotten, a deleted claim still in progress is carried on, our saved PVs
// are matched against the volume cache, a deleted PV unblocks claims refused for its name, and class changes
// re-queue their claims.
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import { decideCachedClaim, forgetClaim } from './decide-cached-claim.ts';
import { syncClaim } from './claim-sync.ts';
import type { ControllerShared } from '../controller-state.ts';
import type { ClaimDecision } from './decide-claim.ts';
import type { ControlLoop } from '../loop.ts';
import type { ClaimMetrics } from '../controller-metrics.ts';
import type { ClaimRecord } from '../object-records.ts';

/** The claim loop of one controller. */
export function claimLoop(
  s: ControllerShared,
): ControlLoop<PersistentVolumeClaim, ClaimDecision, ClaimRecord, ClaimMetrics> {
  return {
    name: 'claims',
    key: (claim) => claim.metadata.uid ?? '',
    decide: (t, claim) => decideCachedClaim(s, t, claim),
    sync: (t, uid) => syncClaim(s, t, uid),
    records: s.claimRecords,
    metrics: s.metrics,
    hooks: (t, queue) => {
      const enqueue = (c: PersistentVolumeClaim) => {
        const uid = c.metadata.uid ?? '';
        // Bound claims need nothing (unless an operation of ours is still in progress for them), and nothing about
        // them is kept: a claim's record, our write of it and its lock observation go once it is bound (the key's
        // backoff history went when its sync returned done).
        if (c.spec.volumeName && !s.claimRecords.inProgress(uid)) {
          forgetClaim(s, uid);
          return;
        }
        queue.add(uid);
      };
      const enqueueIndexed = (index: 'class' | 'pvName', value: string) => {
        for (const c of t.claims.byIndex(index, value)) enqueue(c);
      };
      return {
        claims: {
          onAdd: enqueue,
          onUpdate: (_old, c) => enqueue(c),
          onDelete: (c) => {
            const uid = c.metadata.uid ?? '';
            // Carry on with the in-progress copy: the backend may be creating the volume right now.
            if (s.claimRecords.inProgress(uid)) {
              queue.add(uid);
              return;
            }
            queue.forget(uid);
            forgetClaim(s, uid);
          },
        },
        volumes: {
          onAdd: (v) => s.savedVolumes.observe(v.metadata.name ?? '', v),
          onUpdate: (_old, v) => s.savedVolumes.observe(v.metadata.name ?? '', v),
          onDelete: (v) => {
            const name = v.metadata.name ?? '';
            s.savedVolumes.forget(name);
            // A claim refused because this name was taken may proceed now.
            enqueueIndexed('pvName', name);
          },
        },
        // Creating or fixing a class re-evaluates its claims now (the Go library had no class handlers).
        classes: {
          onAdd: (c) => enqueueIndexed('class', c.metadata.name ?? ''),
          onUpdate: (oldClass, c) => {
            if (oldClass !== c) enqueueIndexed('class', c.metadata.name ?? '');
          },
          onDelete: (c) => enqueueIndexed('class', c.metadata.name ?? ''),
        },
      };
    },
  };
}
