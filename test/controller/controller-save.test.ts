// Integration: saving the PV under injected API faults. 'retry' mode: bounded attempts, then the backend volume
// is deleted (ProvisioningFailed "... Deleting the volume.") or ProvisioningCleanupFailed when that fails too,
// and the claim is provisioned again later. 'background' mode: retried until saved, the backend volume is never
// deleted. AlreadyExists is accepted only for this claim's uid; a foreign PV is a conflict that keeps the volume.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, createClaim, eventsFor, getPV, reasons, storageClass, useController, waitFor } from './harness.ts';

describe("ProvisionController: PV save in 'retry' mode", () => {
  const f = useController({
    options: { volumeSave: { mode: 'retry', retryCount: 3, intervalMs: 10 } },
    classes: [storageClass('std')],
  });

  it('deletes the backend volume after the last failed save, then provisions again', async () => {
    const rule = f.env.cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', status: 500, count: 3 });
    const c = await createClaim(f.env, claim('unsaved', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    const pv = await waitFor('PV saved on the second round', () => getPV(f.env, pvName));
    f.env.cluster.faults.remove(rule);
    assert.equal(pv.spec.claimRef?.uid, c.metadata.uid);
    assert.deepEqual(
      f.backend.deleteCalls.filter((n) => n === pvName),
      [pvName],
      'cleanup deleted the backend volume once',
    );
    assert.equal(f.backend.provisionCalls.filter((n) => n === pvName).length, 2);
    assert.ok(f.backend.volumes.has(pvName), 'the second volume is kept');
    const failed = eventsFor(f.env, 'unsaved').find((e) => e.reason === 'ProvisioningFailed');
    assert.match(
      failed?.message ?? '',
      /^Error creating provisioned PV object for claim default\/unsaved: .*\. Deleting the volume\.$/,
    );
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
      assert.equal(
        ev?.message,
        'Error cleaning provisioned volume for claim default/dirty: backend offline. Please delete manually.',
      );
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
      await waitFor('conflict event', () =>
        eventsFor(f.env, 'stolen').some(
          (e) => e.reason === 'ProvisioningFailed' && /another claim/.test(e.message ?? ''),
        ),
      );
      assert.equal(getPV(f.env, pvName)?.spec.claimRef?.uid, 'another-uid', 'the foreign PV is untouched');
      assert.equal(
        f.backend.deleteCalls.includes(pvName),
        false,
        "no cleanup of a volume that may be the other claim's",
      );
      assert.equal(reasons(f.env, 'stolen').includes('ProvisioningSucceeded'), false);
    } finally {
      f.backend.onProvision = undefined;
    }
  });
});

describe("ProvisionController: PV save in 'background' mode", () => {
  const f = useController({
    options: { volumeSave: { mode: 'background', baseDelayMs: 10, maxDelayMs: 50 } },
    classes: [storageClass('std')],
  });

  it('retries the save until it succeeds and never deletes the backend volume', async () => {
    const rule = f.env.cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', status: 500, count: 6 });
    const c = await createClaim(f.env, claim('patient', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor('PV saved in the background', () => getPV(f.env, pvName));
    f.env.cluster.faults.remove(rule);
    assert.deepEqual(f.backend.deleteCalls, []);
    assert.equal(
      f.backend.provisionCalls.filter((n) => n === pvName).length,
      1,
      'provision() once: the claim counted as done',
    );
    await waitFor('success event', () => reasons(f.env, 'patient').includes('ProvisioningSucceeded'));
  });
});

// A PV the API server refuses (422: here a PV without spec.capacity, which the type allows) can never be saved by
// retrying: the save is final at once, with the server's message in a Warning event, in either mode.
for (const volumeSave of [
  { mode: 'retry' as const, retryCount: 5, intervalMs: 600_000 },
  { mode: 'background' as const, baseDelayMs: 600_000, maxDelayMs: 600_000 },
]) {
  describe(`ProvisionController: an invalid PV in '${volumeSave.mode}' mode`, () => {
    const f = useController({ options: { volumeSave }, classes: [storageClass('std')] });

    it('is final at once: one create, a Warning event quoting the API server, the backend volume deleted', async () => {
      f.backend.onProvision = (o) => ({
        volume: {
          metadata: { name: o.pvName },
          spec: { accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/memory/${o.pvName}` } },
        },
      });
      try {
        const before = f.env.cluster.audit.count({ verb: 'create', resource: 'persistentvolumes', code: 422 });
        const c = await createClaim(f.env, claim('invalid', 'std'));
        const pvName = `pvc-${c.metadata.uid}`;
        const failed = await waitFor('ProvisioningFailed quoting the API server', () =>
          eventsFor(f.env, 'invalid').find(
            (e) => e.reason === 'ProvisioningFailed' && /spec\.capacity/.test(e.message ?? ''),
          ),
        );
        assert.equal(failed.type, 'Warning');
        assert.match(
          failed.message ?? '',
          /^Error creating provisioned PV object for claim default\/invalid: .*is invalid.*spec\.capacity.*Deleting the volume\.$/,
        );
        await waitFor('backend volume deleted', () => f.backend.deleteCalls.includes(pvName));
        assert.equal(
          f.env.cluster.audit.count({ verb: 'create', resource: 'persistentvolumes', code: 422 }) - before,
          1,
          'one create, no retries',
        );
        assert.equal(getPV(f.env, pvName), undefined);
      } finally {
        f.backend.onProvision = undefined;
      }
    });
  });
}
