// Integration: saving the PV under injected API faults. 'retry' mode: bounded attempts, then the backend volume
// is deleted (ProvisioningFailed "... Deleting the volume.") or ProvisioningCleanupFailed when that fails too,
// and the claim is provisioned again later. 'background' mode: retried until saved, the backend volume is never
// deleted. AlreadyExists is accepted only for this claim's uid; a foreign PV is a conflict that keeps the volume.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, createClaim, eventsFor, getPV, reasons, storageClass, useController, waitFor } from './harness.ts';

describe("ProvisionController: PV save in 'retry' mode", () => {
  const f = useController({ options: { volumeSave: { mode: 'retry', retryCount: 3, intervalMs: 10 } }, classes: [storageClass('std')] });

  it('deletes the backend volume after the last failed save, then provisions again', async () => {
    const rule = f.env.cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', status: 500, count: 3 });
    const c = await createClaim(f.env, claim('unsaved', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    const pv = await waitFor('PV saved on the second round', () => getPV(f.env, pvName));
    f.env.cluster.faults.remove(rule);
    assert.equal(pv.spec.claimRef?.uid, c.metadata.uid);
    assert.deepEqual(f.backend.deleteCalls.filter((n) => n === pvName), [pvName], 'cleanup deleted the backend volume once');
    assert.equal(f.backend.provisionCalls.filter((n) => n === pvName).length, 2);
    assert.ok(f.backend.volumes.has(pvName), 'the second volume is kept');
    const failed = eventsFor(f.env, 'unsaved').find((e) => e.reason === 'ProvisioningFailed');
    assert.match(failed?.message ?? '', /^Error creating provisioned PV object for claim default\/unsaved: .*\. Deleting the volume\.$/);
  });

  it('reports ProvisioningCleanupFailed when the backend volume cannot be deleted', async () => {
    const rule = f.env.cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', status: 500, count: 3 });
    f.backend.onDelete = () => {
      throw new Error('backend offline');
    };
    try {
      const c = await createClaim(f.env, claim('dirty', 'std'));
      await waitFor('cleanup-failed event', () => reasons(f.env, 'dirty').includes('ProvisioningCleanupFailed'));
      const ev = eventsFor(f.env, 'dirty').find((e) => e.reason === 'ProvisioningCleanupFailed');
      assert.equal(ev?.message, 'Error cleaning provisioned volume for claim default/dirty: backend offline. Please delete manually.');
      f.backend.onDelete = undefined;
      await waitFor('PV saved eventually', () => getPV(f.env, `pvc-${c.metadata.uid}`));
    } finally {
      f.backend.onDelete = undefined;
      f.env.cluster.faults.remove(rule);
    }
  });

  it('accepts AlreadyExists only for a PV of this claim; a foreign PV is a conflict and the backend volume is kept', async () => {
    f.backend.onProvision = (o) => {
      if (o.claim.metadata.name !== 'stolen') return undefined;
      // Someone else's PV appears under our name after the cache was consulted.
      const foreign: PersistentVolume = {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: o.pvName },
        spec: {
          capacity: { storage: '1Mi' },
          accessModes: ['ReadWriteOnce'],
          hostPath: { path: '/elsewhere' },
          claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'other', uid: 'another-uid' },
        },
      };
      if (!getPV(f.env, o.pvName)) f.env.cluster.store.create('persistentvolumes', foreign);
      return undefined;
    };
    try {
      const c = await createClaim(f.env, claim('stolen', 'std'));
      const pvName = `pvc-${c.metadata.uid}`;
      await waitFor('conflict event', () => eventsFor(f.env, 'stolen').some((e) => e.reason === 'ProvisioningFailed' && /another claim/.test(e.message ?? '')));
      assert.equal(getPV(f.env, pvName)?.spec.claimRef?.uid, 'another-uid', 'the foreign PV is untouched');
      assert.equal(f.backend.deleteCalls.includes(pvName), false, 'no cleanup of a volume that may be the other claim\'s');
      assert.equal(reasons(f.env, 'stolen').includes('ProvisioningSucceeded'), false);
    } finally {
      f.backend.onProvision = undefined;
    }
  });
});

describe("ProvisionController: PV save in 'background' mode", () => {
  const f = useController({ options: { volumeSave: { mode: 'background', baseDelayMs: 10, maxDelayMs: 50 } }, classes: [storageClass('std')] });

  it('retries the save until it succeeds and never deletes the backend volume', async () => {
    const rule = f.env.cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', status: 500, count: 6 });
    const c = await createClaim(f.env, claim('patient', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor('PV saved in the background', () => getPV(f.env, pvName));
    f.env.cluster.faults.remove(rule);
    assert.deepEqual(f.backend.deleteCalls, []);
    assert.equal(f.backend.provisionCalls.filter((n) => n === pvName).length, 1, 'provision() once: the claim counted as done');
    await waitFor('success event', () => reasons(f.env, 'patient').includes('ProvisioningSucceeded'));
  });
});
