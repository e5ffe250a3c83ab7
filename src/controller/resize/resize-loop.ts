// The resize loop (claims whose request exceeds their capacity, when the provisioner implements expand()), declared
// in the shape every loop has: key (claim uid), decideResize on the cached claim, PV and class, syncResize, the
// resize records, its metrics, and the informer events that may start or finish a resize.
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import type { ControllerShared } from '../controller-state.ts';
import { mayNeedResize, type ResizeDecision } from './decide-resize.ts';
import type { ControlLoop } from '../loop.ts';
import type { ResizeRecord } from '../object-records.ts';
import type { ResizeMetrics } from './resize-metrics.ts';
import { decideCachedResize, syncResize } from './resize-sync.ts';

/** The resize loop of one controller. */
export function resizeLoop(
  s: ControllerShared,
  metrics: ResizeMetrics,
): ControlLoop<PersistentVolumeClaim, ResizeDecision, ResizeRecord, ResizeMetrics> {
  return {
    name: 'resizes',
    key: (claim) => claim.metadata.uid ?? '',
    decide: (t, claim) => decideCachedResize(s, t, claim),
    sync: (t, uid) => syncResize(s, t, metrics, uid),
    records: s.resizeRecords,
    metrics,
    hooks: (t, queue) => {
      const consider = (c: PersistentVolumeClaim | undefined) => {
        if (c && mayNeedResize(c)) queue.add(c.metadata.uid ?? '');
      };
      const considerClass = (name: string) => {
        for (const c of t.claims.byIndex('class', name)) consider(c);
      };
      return {
        claims: {
          onAdd: consider,
          onUpdate: (_old, c) => consider(c),
          onDelete: (c) => {
            const uid = c.metadata.uid ?? '';
            queue.forget(uid);
            s.resizeRecords.forget(uid);
          },
        },
        volumes: {
          // A PV write (ours, or its capacity set by hand) may finish or unblock its claim's resize.
          onUpdate: (_old, v) => consider(v.spec.claimRef?.uid ? t.claims.getByUid(v.spec.claimRef.uid) : undefined),
          // The claims waiting for that PV name are looked at again, as by the claim loop.
          onDelete: (v) => {
            for (const c of t.claims.byIndex('pvName', v.metadata.name ?? '')) consider(c);
          },
        },
        // allowVolumeExpansion switched on, or a class edit that restarts a given-up resize.
        classes: {
          onAdd: (c) => considerClass(c.metadata.name ?? ''),
          onUpdate: (oldClass, c) => {
            if (oldClass !== c) considerClass(c.metadata.name ?? '');
          },
          onDelete: (c) => considerClass(c.metadata.name ?? ''),
        },
      };
    },
  };
}
