// Integration: two controllers in 'per-claim' mode deleting Released PVs on the embedded cluster (docs/reliability.md):
// only the replica holding the PV's lock calls delete(), also when delete() outlasts the lease (renewals) and
// after a failed delete() (the volume is still deleted).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, createClaim, getPV, MemoryProvisioner, storageClass, useController, waitFor } from './harness.ts';

// Lock records carry second-precision times: with a lease under 2 s a renewal may leave the record unchanged (same
// second), and another replica would count the lease from its first observation. 2 s is the shortest safe lease.
const TIMING = { leaseDurationMs: 2_000, renewDeadlineMs: 1_200, retryPeriodMs: 400 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("two controllers in 'per-claim' mode deleting volumes", () => {
  /** delete() calls running right now, and the most ever running at once, per PV name. */
  const running = new Map<string, number>();
  const maxRunning = new Map<string, number>();
  let deleteDelayMs = 300;
  let failFirstDeleteOf = '';

  /** The shared backend seen through one replica: delete() is slow and counts how many run at once. */
  const replica = (backend: MemoryProvisioner): Provisioner => ({
    provision: (o, signal) => backend.provision(o, signal),
    delete: async (v) => {
      const name = v.metadata.name ?? '';
      running.set(name, (running.get(name) ?? 0) + 1);
      maxRunning.set(name, Math.max(maxRunning.get(name) ?? 0, running.get(name) ?? 0));
      try {
        await sleep(deleteDelayMs);
        if (name === failFirstDeleteOf) {
          failFirstDeleteOf = '';
          throw new Error('backend unavailable');
        }
        await backend.delete(v);
      } finally {
        running.set(name, (running.get(name) ?? 1) - 1);
      }
    },
  });

  const f = useController({
    options: { leaderElection: { ...TIMING, mode: 'per-claim', namespace: 'default' } },
    replicas: [
      { options: { identity: 'ctrl-a' }, provisioner: replica },
      { options: { identity: 'ctrl-b' }, provisioner: replica },
    ],
    classes: [storageClass('std')],
  });

  /** Provisions a claim, deletes it and marks its PV Released (no PV binder runs here). */
  async function released(name: string): Promise<string> {
    const c = await createClaim(f.env, claim(name, 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor(`PV of ${name}`, () => getPV(f.env, pvName));
    await f.env.client.delete(persistentVolumeClaims, name, { namespace: 'default' });
    const pv = getPV(f.env, pvName) as PersistentVolume;
    f.env.cluster.store.update(
      'persistentvolumes',
      { ...pv, status: { phase: 'Released' } },
      { subresource: 'status' },
    );
    return pvName;
  }

  it('one replica at a time calls delete(), also when delete() outlasts the lease', async () => {
    deleteDelayMs = 300;
    const quick = await released('quick');
    await waitFor('quick PV gone', () => !getPV(f.env, quick), 15_000);
    assert.equal(maxRunning.get(quick), 1, 'delete() never ran on both replicas at once');
    assert.equal(f.backend.deleteCalls.filter((n) => n === quick).length, 1, 'delete() called once');

    deleteDelayMs = 1.5 * TIMING.leaseDurationMs;
    const slow = await released('slow');
    await waitFor('slow PV gone', () => !getPV(f.env, slow), 15_000);
    assert.equal(maxRunning.get(slow), 1, 'the holder renewed its lock: nobody took over');
    assert.equal(f.backend.deleteCalls.filter((n) => n === slow).length, 1);
  });

  it('after a failed delete() the volume is still deleted, one replica at a time', async () => {
    deleteDelayMs = 100;
    const c = await createClaim(f.env, claim('flaky', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    failFirstDeleteOf = pvName;
    await waitFor('PV of flaky', () => getPV(f.env, pvName));
    await f.env.client.delete(persistentVolumeClaims, 'flaky', { namespace: 'default' });
    const pv = getPV(f.env, pvName) as PersistentVolume;
    f.env.cluster.store.update(
      'persistentvolumes',
      { ...pv, status: { phase: 'Released' } },
      { subresource: 'status' },
    );
    await waitFor('flaky PV gone', () => !getPV(f.env, pvName), 15_000);
    assert.equal(failFirstDeleteOf, '', 'the first delete() failed');
    assert.equal(maxRunning.get(pvName), 1);
    assert.equal(f.backend.volumes.has(pvName), false);
  });
});
