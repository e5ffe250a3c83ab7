// The leak inventory: the pure comparison of backend volumes with PVs (grace period, undated volumes), and the
// deletion guard on in-process fakes: a volume cache lagging the API server must not make the inventory delete a
// live volume, nothing is deleted before the caches synced or when a GET leaves doubt, and protected names stay.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { findLeakedVolumes, runLeakInventory } from '../../src/controller/leak-inventory.ts';
import { boundVolume, fakeController, notFound, stored } from './fakes.ts';
import { claim, MemoryProvisioner } from './harness.ts';

const HOUR = 3_600_000;

describe('findLeakedVolumes', () => {
  it('reports backend volumes without PV older than the grace period', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const firstSeen = new Map<string, number>();
    const args = {
      backend: [
        { name: 'pvc-has-pv', createdAt: new Date(now - 10 * 3600_000) },
        { name: 'pvc-old-orphan', createdAt: new Date(now - 2 * 3600_000) },
        { name: 'pvc-young-orphan', createdAt: new Date(now - 60_000) },
        { name: 'pvc-being-saved', createdAt: new Date(now - 2 * 3600_000) },
        { name: 'pvc-no-date' },
      ],
      volumeNames: new Set(['pvc-has-pv']),
      protectedNames: new Set(['pvc-being-saved']),
      firstSeen,
      now,
      gracePeriodMs: 3600_000,
    };
    assert.deepEqual(findLeakedVolumes(args), ['pvc-old-orphan']);
    assert.equal(firstSeen.get('pvc-no-date'), now, 'undated volumes age from first sight');
    assert.deepEqual(findLeakedVolumes({ ...args, now: now + 3600_000 }), [
      'pvc-no-date',
      'pvc-old-orphan',
      'pvc-young-orphan',
    ]);
    assert.deepEqual(findLeakedVolumes({ ...args, backend: [], now: now + 3600_000 }), []);
    assert.equal(firstSeen.size, 0, 'volumes gone from the backend are forgotten');
  });
});

describe('runLeakInventory with a volume cache lagging the API server', () => {
  const leakOptions = { leakInventory: { enabled: true, gracePeriodMs: 0, deleteLeaked: true } };

  function setup() {
    const backend = new MemoryProvisioner();
    const f = fakeController(backend, leakOptions);
    backend.volumes.set('pvc-live', { claimUid: 'c1', createdAt: new Date(f.clock.now() - HOUR) });
    backend.volumes.set('pvc-orphan', { claimUid: 'gone', createdAt: new Date(f.clock.now() - HOUR) });
    // The API server has pvc-live; the volume cache (f.volumes) has not delivered it yet.
    f.client.onGet = (name) => {
      if (name === 'pvc-live') return boundVolume('pvc-live', 'c1');
      throw notFound();
    };
    return { backend, f };
  }

  it('deletes only volumes a live GET confirms have no PV', async () => {
    const { backend, f } = setup();
    const report = await runLeakInventory(f.s, f.t, new Map(), true);
    assert.deepEqual(report.deleted, ['pvc-orphan']);
    assert.deepEqual(backend.deleteCalls, ['pvc-orphan']);
    assert.ok(backend.volumes.has('pvc-live'), 'the live PV keeps its backend volume');
    assert.ok(
      f.client.calls.some((c) => c.verb === 'get' && c.name === 'pvc-live'),
      'the PV was read from the API',
    );
  });

  it('deletes nothing before the caches synced, and nothing a GET error leaves in doubt', async () => {
    const { backend, f } = setup();
    const early = await runLeakInventory(f.s, f.t, new Map(), false);
    assert.deepEqual(early.deleted, []);
    f.client.onGet = () => {
      throw new Error('connection reset');
    };
    const failing = await runLeakInventory(f.s, f.t, new Map(), true);
    assert.deepEqual(failing.deleted, []);
    assert.deepEqual(backend.deleteCalls, []);
  });

  it('never deletes a volume a cached claim is bound to, nor one whose PV save is pending', async () => {
    const { backend, f } = setup();
    f.client.onGet = () => {
      throw notFound();
    };
    const bound = stored(claim('c', 'std'), 'c1');
    bound.spec.volumeName = 'pvc-live';
    f.claims.upsert(bound);
    f.pendingSaves.push('pvc-orphan');
    const report = await runLeakInventory(f.s, f.t, new Map(), true);
    assert.deepEqual(report.deleted, []);
    assert.deepEqual(backend.deleteCalls, []);
  });
});
