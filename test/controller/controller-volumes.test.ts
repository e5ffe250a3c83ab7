// Integration: the volume flow in finalizer mode on the embedded cluster: our finalizer on Bound Delete PVs, the
// deletion (backend once, PV with uid precondition, finalizer removed), HonorPVReclaimPolicy (PV deleted before its
// claim), Retain PVs dropping our finalizer, VolumeFailedDelete, the DeletionGuard and the live-claim guard.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { persistentVolumeClaims, persistentVolumes } from '../../src/runtime/resources.ts';
import { ANN_DYNAMICALLY_PROVISIONED, FINALIZER_EXTERNAL_PROVISIONER as FIN } from '../../src/types/annotations.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import {
  claim,
  createClaim,
  getPV,
  PROVISIONER,
  reasons,
  storageClass,
  useController,
  volumeDecisionLogger,
  waitFor,
  type VolumeDecisionEntry,
} from './harness.ts';

/** Resolves once the controller decided `code` about `pv` at `resourceVersion` or later: it saw that version. */
function decided(
  log: VolumeDecisionEntry[],
  pv: string,
  resourceVersion: string | undefined,
  code: string,
): Promise<VolumeDecisionEntry> {
  const rv = Number(resourceVersion);
  assert.ok(Number.isFinite(rv), `resourceVersion ${String(resourceVersion)}`);
  return waitFor(`${code} decided about ${pv} at resourceVersion >= ${rv}`, () =>
    log.find((e) => e.pv === pv && e.resourceVersion >= rv && e.code === code),
  );
}

describe('ProvisionController: volumes in finalizer mode', () => {
  const decisions: VolumeDecisionEntry[] = [];
  const f = useController({
    options: { addFinalizer: true, retry: { failedDeleteThreshold: 0 }, logger: volumeDecisionLogger(decisions) },
    classes: [storageClass('std')],
  });

  /** Sets the PV's phase; returns the new resourceVersion. */
  function setPhase(name: string, phase: 'Bound' | 'Released'): string | undefined {
    const pv = getPV(f.env, name) as PersistentVolume;
    return (
      f.env.cluster.store.update(
        'persistentvolumes',
        { ...pv, status: { phase } },
        { subresource: 'status' },
      ) as PersistentVolume
    ).metadata.resourceVersion;
  }

  async function provisioned(name: string): Promise<{ uid: string; pvName: string }> {
    const c = await createClaim(f.env, claim(name, 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor(`PV for ${name}`, () => getPV(f.env, pvName));
    return { uid: c.metadata.uid ?? '', pvName };
  }

  it('creates PVs with our finalizer and deletes them once Released: delete() once, finalizer removed, PV gone', async () => {
    const { pvName } = await provisioned('a');
    assert.deepEqual(getPV(f.env, pvName)?.metadata.finalizers, [FIN]);
    await f.env.client.delete(persistentVolumeClaims, 'a', { namespace: 'default' });
    setPhase(pvName, 'Released');
    await waitFor('PV gone', () => !getPV(f.env, pvName));
    assert.equal(f.backend.deleteCalls.filter((n) => n === pvName).length, 1, 'delete() called exactly once');
    assert.equal(f.backend.volumes.has(pvName), false);
  });

  it('adds the finalizer to a Bound PV of ours that lacks it', async () => {
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'static-ours', annotations: { [ANN_DYNAMICALLY_PROVISIONED]: PROVISIONER } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        hostPath: { path: '/x' },
      },
    };
    f.env.cluster.store.create('persistentvolumes', pv);
    setPhase('static-ours', 'Bound');
    await waitFor('finalizer added', () => getPV(f.env, 'static-ours')?.metadata.finalizers?.includes(FIN));
  });

  it('removes our finalizer from a Retain PV (never stuck Terminating)', async () => {
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'kept', annotations: { [ANN_DYNAMICALLY_PROVISIONED]: PROVISIONER }, finalizers: [FIN] },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        hostPath: { path: '/x' },
      },
    };
    f.env.cluster.store.create('persistentvolumes', pv);
    await waitFor(
      'finalizer removed',
      () =>
        getPV(f.env, 'kept')?.metadata.finalizers === undefined ||
        getPV(f.env, 'kept')?.metadata.finalizers?.length === 0,
    );
    assert.equal(f.backend.deleteCalls.includes('kept'), false);
  });

  it('HonorPVReclaimPolicy: a PV deleted before its claim stays until the claim is gone, then its volume is deleted', async () => {
    const { pvName } = await provisioned('b');
    setPhase(pvName, 'Bound');
    const terminating = (await f.env.client.delete(persistentVolumes, pvName)) as PersistentVolume;
    assert.ok(terminating.metadata.deletionTimestamp, 'PV terminating, held by our finalizer');
    // The controller saw the terminating PV and let it be: its claim is still Bound.
    await decided(decisions, pvName, terminating.metadata.resourceVersion, 'NotReleased');
    assert.ok(getPV(f.env, pvName)?.metadata.deletionTimestamp, 'PV still terminating, held by our finalizer');
    assert.equal(f.backend.deleteCalls.includes(pvName), false);
    await f.env.client.delete(persistentVolumeClaims, 'b', { namespace: 'default' });
    setPhase(pvName, 'Released');
    await waitFor('PV gone', () => !getPV(f.env, pvName));
    assert.equal(f.backend.deleteCalls.filter((n) => n === pvName).length, 1);
  });

  it('records VolumeFailedDelete on the PV and retries', async () => {
    const { pvName } = await provisioned('c');
    let failures = 2;
    f.backend.onDelete = (v) => {
      if (v.metadata.name === pvName && failures-- > 0) throw new Error('device busy');
    };
    try {
      await f.env.client.delete(persistentVolumeClaims, 'c', { namespace: 'default' });
      setPhase(pvName, 'Released');
      await waitFor('PV gone after retries', () => !getPV(f.env, pvName));
      await waitFor('VolumeFailedDelete event', () => reasons(f.env, pvName).includes('VolumeFailedDelete'));
      assert.equal(f.backend.deleteCalls.filter((n) => n === pvName).length, 3);
    } finally {
      f.backend.onDelete = undefined;
    }
  });

  it('never deletes a PV the DeletionGuard protects, nor one whose claim still exists', async () => {
    const guarded = await provisioned('d');
    f.backend.protectedVolumes.add(guarded.pvName);
    await f.env.client.delete(persistentVolumeClaims, 'd', { namespace: 'default' });
    const guardedRv = setPhase(guarded.pvName, 'Released');
    // Stale phase: Released while its claim (same uid) still exists.
    const live = await provisioned('e');
    const liveRv = setPhase(live.pvName, 'Released');
    // The controller looked at both Released PVs, and refused each for its reason.
    await decided(decisions, guarded.pvName, guardedRv, 'DeletionGuard');
    await decided(decisions, live.pvName, liveRv, 'ClaimStillExists');
    assert.ok(getPV(f.env, guarded.pvName));
    assert.ok(getPV(f.env, live.pvName));
    assert.equal(f.backend.deleteCalls.includes(guarded.pvName), false);
    assert.equal(f.backend.deleteCalls.includes(live.pvName), false);
  });
});

describe('ProvisionController: delete failure threshold', () => {
  const decisions: VolumeDecisionEntry[] = [];
  const f = useController({
    options: { retry: { failedDeleteThreshold: 2 }, resyncPeriodMs: 100, logger: volumeDecisionLogger(decisions) },
    setup: (backend) => {
      backend.onDelete = () => {
        throw new Error('volume in use');
      };
    },
  });

  it('gives up after failedDeleteThreshold failures with VolumeDeleteGivenUp, and resync does not retry', async () => {
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'stubborn', annotations: { [ANN_DYNAMICALLY_PROVISIONED]: PROVISIONER } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        hostPath: { path: '/x' },
      },
    };
    const created = f.env.cluster.store.create('persistentvolumes', pv) as PersistentVolume;
    f.env.cluster.store.update(
      'persistentvolumes',
      { ...created, status: { phase: 'Released' } },
      { subresource: 'status' },
    );
    await waitFor('given-up event', () => reasons(f.env, 'stubborn').includes('VolumeDeleteGivenUp'));
    assert.equal(f.backend.deleteCalls.length, 2);
    // Three resyncs looked at the PV again after the give-up: each decided GivenUp and called nothing.
    const mark = decisions.length;
    await waitFor(
      'three resync decisions after the give-up',
      () => decisions.slice(mark).filter((e) => e.pv === 'stubborn' && e.code === 'GivenUp').length >= 3,
    );
    assert.equal(f.backend.deleteCalls.length, 2, 'not retried by resync');
    assert.ok(getPV(f.env, 'stubborn'));
  });
});
