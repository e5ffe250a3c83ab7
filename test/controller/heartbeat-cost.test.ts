// The heartbeat that tells `explain` a controller is running costs one Lease write per interval, none per claim:
// counted with the embedded cluster's audit (API requests by verb and resource), with 10 and with 1,000 claims
// provisioned by a controller in `none` mode (only the heartbeat writes Leases there) on a TestClock. The Lease
// writes are the same in both: one create when the controller starts, one update per interval the clock moves,
// one release at stop; and one Lease read in all (the first, which finds none).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import {
  createClass,
  fast,
  MemoryProvisioner,
  PROVISIONER,
  startEnv,
  storageClass,
  claim,
  waitFor,
} from './harness.ts';

const INTERVAL_MS = 30_000;
const INTERVALS = 3;

interface LeaseCost {
  /** Lease requests while the controller provisioned every claim (the clock did not move). */
  whileProvisioning: { create: number; update: number; get: number };
  /** Lease updates per interval the clock then moved. */
  perInterval: number[];
  /** Lease writes at stop. */
  atStop: number;
}

async function leaseCost(claims: number): Promise<LeaseCost> {
  const env = await startEnv();
  const clock = new TestClock(Date.now());
  const backend = new MemoryProvisioner();
  const ctrl = new ProvisionController(
    env.client,
    PROVISIONER,
    backend,
    fast({ clock, heartbeatIntervalMs: INTERVAL_MS }),
  );
  const leases = (verb: string) => env.cluster.audit.count({ resource: 'leases', verb });
  try {
    await createClass(env, storageClass('std'));
    for (let i = 0; i < claims; i++) env.cluster.store.create('persistentvolumeclaims', claim(`c-${i}`, 'std'));
    void ctrl.run();
    await waitFor(
      `${claims} PVs saved`,
      () => env.cluster.store.list('persistentvolumes').items.length === claims,
      120_000,
    );
    await waitFor('the first beat', () => leases('create') === 1);
    const whileProvisioning = { create: leases('create'), update: leases('update'), get: leases('get') };
    const perInterval: number[] = [];
    for (let i = 0; i < INTERVALS; i++) {
      const before = leases('update');
      await clock.advance(INTERVAL_MS);
      await waitFor(`beat ${i + 1}`, () => leases('update') > before);
      perInterval.push(leases('update') - before);
    }
    const beforeStop = leases('update') + leases('create');
    await ctrl.stop();
    return { whileProvisioning, perInterval, atStop: leases('update') + leases('create') - beforeStop };
  } finally {
    await ctrl.stop();
    await env.stop();
  }
}

test('heartbeat Lease writes: one per interval, the same with 10 and 1,000 claims', async () => {
  const ten = await leaseCost(10);
  const thousand = await leaseCost(1_000);
  const expected: LeaseCost = {
    whileProvisioning: { create: 1, update: 0, get: 1 },
    perInterval: [1, 1, 1],
    atStop: 1,
  };
  assert.deepEqual(ten, expected);
  assert.deepEqual(thousand, expected);
});
