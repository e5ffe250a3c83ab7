// Cost that stays flat, counted rather than timed: the API requests the ProvisionController makes per claim (the
// cluster's audit counter, by the controller's client name) and the cached objects the cluster's own controllers
// (PV binder, protection, scheduler and kubelet stand-ins) examine per claim (their read counter) are the same
// with 10 and with 1,000 claims and volumes already in the cluster, in lease and per-claim mode; and the requests
// stay 3 per claim in lease mode, 4 in per-claim mode (PV create, Provisioning and ProvisioningSucceeded events,
// plus the claim's lock). A list or a scan of every claim or PV per claim would make the 1,000 case cost more.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { ANN_DYNAMICALLY_PROVISIONED, ANN_STORAGE_PROVISIONER } from '../../src/types/annotations.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import {
  claim,
  createClaim,
  fast,
  MemoryProvisioner,
  PROVISIONER,
  storageClass,
  useController,
  waitFor,
} from './harness.ts';

/** Claims created and measured per case; each is Bound and its events written before the next is created. */
const MEASURED = 4;

type Mode = 'lease' | 'per-claim';
type Counts = Record<string, number>;

/** `existing` claims and their PVs, Bound, written straight into the store (as a cluster that ran for a while has them). */
function seed(cluster: TestCluster, existing: number): void {
  for (let i = 0; i < existing; i++) {
    const name = `old-${i}`;
    const pvName = `pv-old-${i}`;
    const claim = cluster.store.create('persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default', annotations: { [ANN_STORAGE_PROVISIONER]: PROVISIONER } },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Mi' } },
        storageClassName: 'std',
        volumeName: pvName,
      },
    } as PersistentVolumeClaim);
    cluster.store.create('persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: pvName, annotations: { [ANN_DYNAMICALLY_PROVISIONED]: PROVISIONER } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'std',
        hostPath: { path: `/tmp/cost/${pvName}` },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: 'default',
          name,
          uid: claim.metadata.uid,
        },
      },
    } as PersistentVolume);
  }
}

function diff(after: Counts, before: Counts): Counts {
  const out: Counts = {};
  for (const [k, v] of Object.entries(after)) if (v !== (before[k] ?? 0)) out[k] = (v - (before[k] ?? 0)) / MEASURED;
  return out;
}

/** Per measured claim: the controller's requests by `verb resource` (Lease traffic is per controller, left out) and the objects examined by resource. */
async function measure(existing: number, mode: Mode): Promise<{ requests: Counts; examined: Counts }> {
  const examined: Counts = {};
  const cluster = await startCluster({
    // No periodic resync inside the measurement: it re-queues everything by design, and is not per claim.
    controllers: {
      resyncMs: 3_600_000,
      readCounter: { examined: (resource, n) => void (examined[resource] = (examined[resource] ?? 0) + n) },
    },
  });
  const clientName = `cost-${mode}-${existing}`;
  const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: clientName });
  const ctrl = new ProvisionController(
    client,
    PROVISIONER,
    new MemoryProvisioner(),
    fast({
      registry: new Registry(),
      leaderElection: mode === 'lease' ? { mode: 'lease', namespace: 'default' } : { mode: 'per-claim' },
    }),
  );
  const running = ctrl.run();
  try {
    await cluster.client.create(storageClasses, storageClass('std'));
    seed(cluster, existing);
    await cluster.controllers?.idle();
    await waitFor('the controller synced', () => ctrl.hasSynced(), 30_000);
    // The "became leader" event is written once per term, in the background: let it land before counting.
    if (mode === 'lease') {
      await waitFor(
        'the LeaderElection event',
        () => (cluster.store.list('events').items as CoreEvent[]).some((e) => e.reason === 'LeaderElection'),
        30_000,
      );
    }
    const requests = (): Counts => {
      const out: Counts = {};
      for (const r of cluster.audit.records()) {
        if (r.client !== clientName || r.resource === 'leases') continue;
        out[`${r.verb} ${r.resource}`] = (out[`${r.verb} ${r.resource}`] ?? 0) + r.count;
      }
      return out;
    };
    const requestsBefore = requests();
    const examinedBefore = { ...examined };
    for (let i = 0; i < MEASURED; i++) {
      const name = `new-${i}`;
      await cluster.client.create(
        persistentVolumeClaims,
        {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name, namespace: 'default' },
          spec: {
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: '1Mi' } },
            storageClassName: 'std',
          },
        },
        { namespace: 'default' },
      );
      await waitFor(
        `${name} Bound with its events written`,
        () => {
          const c = cluster.store.get('persistentvolumeclaims', 'default', name) as PersistentVolumeClaim | undefined;
          const events = (cluster.store.list('events').items as CoreEvent[]).filter(
            (e) => e.involvedObject.name === name && e.reason === 'ProvisioningSucceeded',
          );
          return c?.status?.phase === 'Bound' && events.length === 1;
        },
        30_000,
      );
      await cluster.controllers?.idle();
    }
    return { requests: diff(requests(), requestsBefore), examined: diff({ ...examined }, examinedBefore) };
  } finally {
    await ctrl.stop();
    await running;
    client.close();
    await cluster.stop();
  }
}

describe('cost per claim does not grow with the claims and volumes already there', () => {
  for (const mode of ['lease', 'per-claim'] as const) {
    it(`${mode}: the same requests and cached objects examined per claim with 10 and with 1,000 existing`, async () => {
      const small = await measure(10, mode);
      const large = await measure(1000, mode);
      assert.deepEqual(large.requests, small.requests, 'API requests per claim (controller)');
      assert.deepEqual(large.examined, small.examined, 'cached objects examined per claim (cluster controllers)');
      const total = Object.values(small.requests).reduce((a, b) => a + b, 0);
      assert.equal(total, mode === 'lease' ? 3 : 4, `requests per claim: ${JSON.stringify(small.requests)}`);
      assert.ok((small.examined.persistentvolumeclaims ?? 0) > 0, 'the counter saw the controllers work');
    });
  }
});

describe('nothing is kept per claim once it is done', () => {
  const f = useController({
    env: { controllers: true },
    options: { leaderElection: { mode: 'per-claim' } },
    classes: [storageClass('std')],
  });

  it('per-claim mode: after 12 claims are Bound the controller holds no record, own write or lock observation for them', async () => {
    for (let i = 0; i < 12; i++) await createClaim(f.env, claim(`done-${i}`, 'std'));
    await waitFor(
      '12 claims Bound',
      () =>
        (f.env.cluster.store.list('persistentvolumeclaims').items as PersistentVolumeClaim[]).filter(
          (c) => c.status?.phase === 'Bound',
        ).length === 12,
      30_000,
    );
    // Bounded wait for the last informer events, then the comparison that names what is left.
    await waitFor('bookkeeping empty', () => Object.values(f.ctrl.bookkeeping()).every((n) => n === 0), 10_000).catch(
      () => {},
    );
    assert.deepEqual(f.ctrl.bookkeeping(), {
      claimRecords: 0,
      volumeRecords: 0,
      savedVolumes: 0,
      writtenClaims: 0,
      lockObservations: 0,
      unsavedVolumes: 0,
    });
  });
});
