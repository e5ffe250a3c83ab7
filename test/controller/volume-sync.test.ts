// syncVolume on in-process fakes, asserting the Next it returns: a PV delete conflict is retried unless the name
// now belongs to a new PV or the PV is gone; our finalizer's guarded patch re-reads and retries when the cluster
// changed the finalizer list meanwhile (on the embedded cluster, whose failed JSON-patch test is kube's 422).
import { after as afterAll, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { after, backoff, done, giveUp, waitForEvent } from '../../src/controller/next.ts';
import type { ClaimLock } from '../../src/controller/claim-lock.ts';
import { volumeFingerprint } from '../../src/controller/failures.ts';
import { syncVolume } from '../../src/controller/volume/volume-sync.ts';
import { boundVolume, conflict, fakeController, interruptedBy, notFound, recordEvents } from './fakes.ts';
import { MemoryProvisioner, startEnv, type Env } from './harness.ts';
import { persistentVolumes } from '../../src/runtime/resources.ts';
import type { ObjectClient } from '../../src/runtime/client.ts';
import { FINALIZER_EXTERNAL_PROVISIONER } from '../../src/types/annotations.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { InvalidError, syntheticStatus } from '../../src/runtime/status-errors.ts';

describe('syncVolume after a 409 on the PV delete', () => {
  /** A Released PV whose backend volume is already deleted: the sync goes straight to the PV delete. */
  function setup() {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-x', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    f.s.volumeRecords.set('pvc-x', 'backendDeletedUid', 'uid-pvc-x');
    f.client.onDelete = () => {
      throw conflict();
    };
    return { f, pv };
  }

  it('is retried when the PV is still ours (a resourceVersion conflict, an injected 409)', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => pv;
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), backoff, 'retried with backoff');
  });

  it('is done when the name now belongs to a new PV (uid precondition failed) or the PV is gone', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => ({ ...pv, metadata: { ...pv.metadata, uid: 'uid-successor' } });
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), done);
    f.client.onGet = () => {
      throw notFound();
    };
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-x'), done);
  });
});

describe('syncVolume shares the failure tail of the other loops', () => {
  /** A Released PV of ours whose claim is gone: the decision is delete (or give-up once failures reach it). */
  function released(f: ReturnType<typeof fakeController>) {
    const pv = boundVolume('pvc-y', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    return pv;
  }

  it('a give-up decision returns giveUp, as for claims', async () => {
    const f = fakeController(new MemoryProvisioner(), { retry: { failedDeleteThreshold: 2 } });
    const pv = released(f);
    f.s.volumeRecords.set('pvc-y', 'failures', { failures: 2, fingerprint: volumeFingerprint(pv), lastError: 'x' });
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-y'), giveUp);
  });

  it('a delete() interrupted by shutdown is not a failure: no event, no record, waitForEvent', async () => {
    const stop = new AbortController();
    const provisioner = new MemoryProvisioner();
    provisioner.delete = interruptedBy(stop);
    const f = fakeController(provisioner);
    f.t = { ...f.t, signal: stop.signal };
    const events = recordEvents(f);
    released(f);
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-y'), waitForEvent);
    assert.deepEqual(events, []);
    assert.equal(f.s.volumeRecords.get('pvc-y')?.failures, undefined);
  });
});

describe('syncVolume waits for a lock held elsewhere by the one lock-wait rule', () => {
  function withHeldLock(retryAfterMs: number) {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-z', 'claim-gone');
    pv.status = { phase: 'Released' };
    f.volumes.upsert(pv);
    const lock = {
      acquireVolume: async () => ({ acquired: false, holder: 'replica-b', retryAfterMs }),
      forget: () => {},
    };
    f.s.claimLock = lock as unknown as ClaimLock;
    return f;
  }

  it("looks again one retry period after the holder's lease would expire", async () => {
    const f = withHeldLock(5_000);
    const period = f.s.options.leaderElection.retryPeriodMs;
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-z'), after(5_000 + period));
  });

  it('looks again after one retry period after a lost write race (not a backoff)', async () => {
    const f = withHeldLock(0);
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-z'), after(f.s.options.leaderElection.retryPeriodMs));
  });
});

describe('syncVolume when the cluster changes the finalizer list between our read and our patch', () => {
  const PROTECTION = 'kubernetes.io/pv-protection';
  let env: Env;
  before(async () => {
    env = await startEnv();
  });
  afterAll(async () => {
    await env.stop();
  });

  /**
   * A PV of ours on the embedded cluster with pv-protection and our finalizer. `released`: cached as Released, its
   * backend volume already deleted, so the sync goes to finishDelete (delete the PV object, then drop our
   * finalizer); otherwise cached as Bound with --add-finalizer off, so the sync drops our finalizer first.
   * `meanwhile` runs on the server after each of our requests named in `after`, at most `times` times (as the pv-protection controller did after the delete).
   */
  async function setup(
    name: string,
    meanwhile: { released: boolean; after: Array<'get' | 'delete' | 'patch'>; times: number; run: () => Promise<void> },
  ) {
    const f = fakeController(new MemoryProvisioner(), { addFinalizer: meanwhile.released });
    const template = boundVolume(name, 'claim-gone');
    const created = await env.client.create<PersistentVolume>(persistentVolumes, {
      ...template,
      metadata: {
        name,
        annotations: template.metadata.annotations,
        finalizers: [PROTECTION, FINALIZER_EXTERNAL_PROVISIONER],
      },
    });
    const cached: PersistentVolume = { ...created, status: { phase: meanwhile.released ? 'Released' : 'Bound' } };
    f.volumes.upsert(cached);
    f.s.volumeRecords.set(name, 'backendDeletedUid', created.metadata.uid ?? '');
    const requests: string[] = [];
    let left = meanwhile.times;
    const c = env.client;
    const client: ObjectClient = {
      get: async (...a) => {
        requests.push('get');
        const out = await c.get(...a);
        if (meanwhile.after.includes('get') && left-- > 0) await meanwhile.run();
        return out;
      },
      create: (...a) => (requests.push('create'), c.create(...a)),
      update: (...a) => (requests.push('update'), c.update(...a)),
      delete: async (...a) => {
        requests.push('delete');
        const out = await c.delete(...a);
        if (meanwhile.after.includes('delete') && left-- > 0) await meanwhile.run();
        return out;
      },
      patch: (...a) => (requests.push('patch'), c.patch(...a)),
    };
    f.s.client = client;
    let warnings = 0;
    f.s.logger = { ...f.s.logger, warn: () => void warnings++, child: () => f.s.logger } as typeof f.s.logger;
    return { f, requests, warnings: () => warnings };
  }

  /** The pv-protection controller's removal of its finalizer (a guarded patch of its own). */
  const dropProtection = (name: string) => async () => {
    const pv = await env.client.get<PersistentVolume>(persistentVolumes, name);
    await env.client.patch(
      persistentVolumes,
      name,
      { metadata: { finalizers: (pv.metadata.finalizers ?? []).filter((x) => x !== PROTECTION) } },
      { type: 'merge' },
    );
  };

  const failures = async (f: ReturnType<typeof fakeController>) =>
    (await f.s.metrics.deleteFailedTotal.get()).values.reduce((n, v) => n + v.value, 0);

  it('pv-protection removed right after our PV delete: done, no failure counted, no warning, the PV gone', async () => {
    const name = 'pvc-race-1';
    const { f, requests, warnings } = await setup(name, {
      released: true,
      after: ['delete'],
      times: 1,
      run: dropProtection(name),
    });
    assert.deepEqual(await syncVolume(f.s, f.t, name), done);
    assert.equal(await failures(f), 0, 'no deleteFailedTotal');
    assert.equal(warnings(), 0, 'no warning logged');
    await assert.rejects(env.client.get(persistentVolumes, name), /not found/i, 'our finalizer was the last one');
    assert.deepEqual(requests, ['delete', 'patch', 'get', 'patch'], 'one re-read, one more guarded patch');
  });

  it('a list that keeps changing under us: three guarded patches, then a backoff; nothing overwritten', async () => {
    // Bound, --add-finalizer off: the decision drops our finalizer first (syncVolume's own patchFinalizer call).
    const name = 'pvc-race-2';
    let n = 0;
    const addOne = async () => {
      const pv = await env.client.get<PersistentVolume>(persistentVolumes, name);
      await env.client.patch(
        persistentVolumes,
        name,
        { metadata: { finalizers: [...(pv.metadata.finalizers ?? []), `example.com/churn-${n++}`] } },
        { type: 'merge' },
      );
    };
    const { f, requests, warnings } = await setup(name, {
      released: false,
      after: ['get'],
      times: 100,
      run: addOne,
    });
    await addOne();
    assert.deepEqual(await syncVolume(f.s, f.t, name), backoff);
    assert.equal(warnings(), 1, 'could not change the PV finalizer');
    assert.deepEqual(requests, ['patch', 'get', 'patch', 'get', 'patch'], 'three guarded patches');
    const pv = await env.client.get<PersistentVolume>(persistentVolumes, name);
    assert.deepEqual(
      pv.metadata.finalizers,
      [PROTECTION, FINALIZER_EXTERNAL_PROVISIONER, ...[0, 1, 2].map((i) => `example.com/churn-${i}`)],
      'no lost update: every guarded patch saw a stale list and changed nothing',
    );
  });
});

describe('the guarded finalizer patch after a 422, on fakes', () => {
  /** A Bound PV of ours with our finalizer, --add-finalizer off: the sync drops our finalizer first. */
  function setup() {
    const f = fakeController(new MemoryProvisioner());
    const pv = boundVolume('pvc-f', 'claim-live');
    pv.metadata.finalizers = [FINALIZER_EXTERNAL_PROVISIONER];
    f.volumes.upsert(pv);
    f.client.onPatch = () => {
      throw new InvalidError(syntheticStatus(422, 'Invalid', 'the server rejected our request'));
    };
    return { f, pv };
  }
  const verbs = (f: ReturnType<typeof fakeController>) => f.client.calls.map((c) => c.verb);

  it('the list unchanged on re-read: the 422 was not our guard, so it is not retried (one GET, then backoff)', async () => {
    const { f, pv } = setup();
    f.client.onGet = () => pv;
    assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-f'), backoff);
    assert.deepEqual(verbs(f), ['patch', 'get']);
  });

  it('our finalizer already gone, the PV replaced by a same-named one, or the PV gone: done', async () => {
    const fresh = (change: Partial<PersistentVolume['metadata']>) => () => {
      const pv = setup().pv;
      return { ...pv, metadata: { ...pv.metadata, ...change } };
    };
    for (const onGet of [
      fresh({ finalizers: ['kubernetes.io/pv-protection'] }),
      fresh({ uid: 'uid-successor' }),
      () => {
        throw notFound();
      },
    ]) {
      const { f } = setup();
      f.client.onGet = onGet;
      assert.deepEqual(await syncVolume(f.s, f.t, 'pvc-f'), done);
      assert.deepEqual(verbs(f), ['patch', 'get']);
    }
  });
});
