// Integration: two controllers for one provisioner name on the embedded cluster, in 'lease' mode (active/passive,
// failover on stop) and in 'per-claim' mode (active/active, one lock per claim, takeover when the holder dies
// mid-provision). Every claim must get exactly one volume.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import { ANN_CONTROL_PLANE_LEADER } from '../../src/types/annotations.ts';
import {
  claim,
  createClaim,
  getPV,
  getPVC,
  MemoryProvisioner,
  storageClass,
  useController,
  waitFor,
  type Env,
} from './harness.ts';

const TIMING = { leaseDurationMs: 1_000, renewDeadlineMs: 600, retryPeriodMs: 200 };
/**
 * The chaos runs' timings, which docs/reliability.md calls safe: lock records store times to the second, so with
 * a lease under 2 s a renewal can leave the record unchanged and another replica may take over mid-operation.
 */
const SAFE_TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 1_000 };

/** A view of the shared backend that counts the calls made through one controller. */
function through(backend: MemoryProvisioner, calls: string[]): Provisioner {
  return {
    provision: (o, signal) => {
      calls.push(o.pvName);
      return backend.provision(o, signal);
    },
    delete: (v) => backend.delete(v),
    listVolumes: () => backend.listVolumes(),
  };
}

/** Makes the first provision() of `claimName` hang until its signal aborts (the process "dies" mid-provision). */
function hangFirst(backend: MemoryProvisioner, claimName: string): void {
  let hung = false;
  backend.onProvision = (o, signal) => {
    if (o.claim.metadata.name !== claimName || hung) return undefined;
    hung = true;
    return new Promise((_resolve, reject) =>
      signal.addEventListener('abort', () => reject(new Error('process died')), { once: true }),
    );
  };
}

async function createMany(env: Env, prefix: string, n: number): Promise<string[]> {
  const uids = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      createClaim(env, claim(`${prefix}-${i}`, 'std')).then((c) => c.metadata.uid ?? ''),
    ),
  );
  return uids.map((uid) => `pvc-${uid}`);
}

function countBy(names: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const n of names) m.set(n, (m.get(n) ?? 0) + 1);
  return m;
}

for (const mode of ['lease', 'per-claim'] as const) {
  // "Exactly once" holds only with lease timings that survive a stalled event loop: with a 1 s lease, a loaded
  // machine let the standby take over while the leader still had a provision in flight (provision() ran twice).
  describe(`two controllers in '${mode}' mode`, () => {
    const calls = { a: [] as string[], b: [] as string[] };
    const f = useController({
      options: { leaderElection: { ...SAFE_TIMING, mode, namespace: 'default' } },
      replicas: [
        { options: { identity: 'ctrl-a' }, provisioner: (backend) => through(backend, calls.a) },
        { options: { identity: 'ctrl-b' }, provisioner: (backend) => through(backend, calls.b) },
      ],
      classes: [storageClass('std')],
    });

    it('gives every claim exactly one volume', async () => {
      const pvNames = await createMany(f.env, 'many', 20);
      await waitFor('all PVs', () => pvNames.every((n) => getPV(f.env, n)), 15_000);
      const all = countBy([...calls.a, ...calls.b]);
      for (const n of pvNames) assert.equal(all.get(n), 1, `provision() of ${n} called once`);
      assert.equal([...f.backend.volumes.keys()].filter((n) => pvNames.includes(n)).length, 20);
      if (mode === 'lease') {
        assert.ok(calls.a.length === 0 || calls.b.length === 0, 'only the leader provisions');
      } else {
        const lock = JSON.parse(
          getPVC(f.env, 'default', 'many-0')?.metadata.annotations?.[ANN_CONTROL_PLANE_LEADER] ?? '{}',
        ) as Record<string, unknown>;
        assert.ok(['ctrl-a', 'ctrl-b'].includes(String(lock.holderIdentity)), 'the seed lock record is on the claim');
        assert.equal(lock.leaseDurationSeconds, SAFE_TIMING.leaseDurationMs / 1000);
        assert.ok(
          typeof lock.acquireTime === 'string' &&
            typeof lock.renewTime === 'string' &&
            typeof lock.leaderTransitions === 'number',
        );
      }
    });

    it('takes over when the worker provisioning a claim dies mid-provision; still exactly one volume', async () => {
      hangFirst(f.backend, 'orphan');
      const created = await createClaim(f.env, claim('orphan', 'std'));
      const pvName = `pvc-${created.metadata.uid}`;
      const stuck = await waitFor('someone provisioning', () =>
        calls.a.includes(pvName) ? 'a' : calls.b.includes(pvName) ? 'b' : undefined,
      );
      const [a, b] = f.ctrls;
      const [dying, survivor] = stuck === 'a' ? [a, calls.b] : [b, calls.a];
      await dying.stop();
      await waitFor('PV created by the survivor', () => getPV(f.env, pvName), 10_000);
      assert.equal(countBy(survivor).get(pvName), 1, 'the survivor provisioned it once');
      assert.equal([...f.backend.volumes.keys()].filter((n) => n === pvName).length, 1);
      f.backend.onProvision = undefined;
    });
  });
}

describe("'lease' mode: losing the lease", () => {
  const f = useController({
    options: { leaderElection: { ...TIMING, mode: 'lease', namespace: 'default' } },
    classes: [storageClass('std')],
  });

  it('stops working when renewals fail, campaigns again, and resumes (no process exit)', async () => {
    await waitFor('leading', () => f.ctrl.hasSynced());
    const rule = f.env.cluster.faults.add({ resource: 'leases', verb: 'update', status: 500 });
    await waitFor('stepped down', () => !f.ctrl.isLeader(), 5_000);
    const created = await createClaim(f.env, claim('while-down', 'std'));
    const pvName = `pvc-${created.metadata.uid}`;
    assert.equal(getPV(f.env, pvName), undefined);
    f.env.cluster.faults.remove(rule);
    await waitFor('leading again', () => f.ctrl.hasSynced(), 10_000);
    await waitFor('PV after re-election', () => getPV(f.env, pvName), 10_000);
  });
});

describe("two controllers in 'per-claim' mode with the lease timings docs/reliability.md calls safe", () => {
  const calls = { a: [] as string[], b: [] as string[] };
  const f = useController({
    options: { leaderElection: { ...SAFE_TIMING, mode: 'per-claim', namespace: 'default' } },
    replicas: [
      { options: { identity: 'ctrl-a' }, provisioner: (backend) => through(backend, calls.a) },
      { options: { identity: 'ctrl-b' }, provisioner: (backend) => through(backend, calls.b) },
    ],
    classes: [storageClass('std')],
  });

  it('a live holder renews its lock during a provision() longer than the lease: nobody takes over', async () => {
    const lockOf = () =>
      JSON.parse(getPVC(f.env, 'default', 'slow')?.metadata.annotations?.[ANN_CONTROL_PLANE_LEADER] ?? '{}') as {
        holderIdentity?: string;
        acquireTime?: string;
        renewTime?: string;
        leaderTransitions?: number;
      };
    const holders = new Set<string>();
    f.backend.onProvision = async (o) => {
      if (o.claim.metadata.name !== 'slow') return undefined;
      // provision() lasts until the lock record shows renewals spanning two leases (not a fixed sleep), or until
      // the other replica took the lock over: a holder that stopped renewing loses the claim long before.
      await waitFor(
        'lock renewals spanning two leases, or a takeover',
        () => {
          const lock = lockOf();
          if (lock.holderIdentity) holders.add(lock.holderIdentity);
          return (
            holders.size > 1 ||
            Date.parse(lock.renewTime ?? '') - Date.parse(lock.acquireTime ?? '') >= 2 * SAFE_TIMING.leaseDurationMs
          );
        },
        60_000,
      );
      return undefined;
    };
    try {
      const created = await createClaim(f.env, claim('slow', 'std'));
      const pvName = `pvc-${created.metadata.uid}`;
      await waitFor('PV', () => getPV(f.env, pvName), 90_000);
      assert.equal(countBy([...calls.a, ...calls.b]).get(pvName), 1, 'provision() called once');
      assert.deepEqual([...holders].length, 1, `one holder throughout: ${[...holders].join(', ')}`);
      assert.equal(lockOf().leaderTransitions ?? 0, 0, 'the lock never changed hands');
    } finally {
      f.backend.onProvision = undefined;
    }
  });
});
