// Integration: the happy path end to end on the embedded cluster (claim -> PV -> released -> backend volume and PV
// gone), the PV as the controller completes it, events and metrics, and the claim decisions that end in an event
// (missing class then created, block unsupported, selector) or in silence (another provisioner's claim).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ControllerAlreadyRunningError, ProvisionController } from '../../src/controller/provision-controller.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import { ANN_DYNAMICALLY_PROVISIONED, ANN_STORAGE_PROVISIONER } from '../../src/types/annotations.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import {
  claim,
  createClaim,
  createClass,
  eventsFor,
  FAST,
  getPV,
  MemoryProvisioner,
  PROVISIONER,
  reasons,
  startEnv,
  storageClass,
  waitFor,
  useController,
} from './harness.ts';

describe('ProvisionController: provisioning and deleting', () => {
  const f = useController({ classes: [storageClass('fast')] });

  it('provisions a claim: the PV carries claimRef (uid, resourceVersion), provisioned-by, class and reclaim policy', async () => {
    const created = await createClaim(f.env, claim('data', 'fast'));
    const pvName = `pvc-${created.metadata.uid}`;
    const pv = await waitFor('PV created', () => getPV(f.env, pvName));
    assert.equal(pv.spec.claimRef?.uid, created.metadata.uid);
    assert.equal(pv.spec.claimRef?.name, 'data');
    assert.equal(pv.spec.claimRef?.namespace, 'default');
    assert.equal(pv.spec.claimRef?.kind, 'PersistentVolumeClaim');
    assert.ok(pv.spec.claimRef?.resourceVersion, 'claimRef.resourceVersion set');
    assert.equal(pv.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED], PROVISIONER);
    assert.equal(pv.spec.storageClassName, 'fast');
    assert.equal(pv.spec.persistentVolumeReclaimPolicy, 'Delete');
    assert.ok(f.backend.volumes.has(pvName));
    await waitFor('events', () => reasons(f.env, 'data').includes('ProvisioningSucceeded'));
    assert.ok(reasons(f.env, 'data').includes('Provisioning'));
    const text = await f.registry.metrics();
    assert.match(text, /controller_persistentvolumeclaim_provision_total\{class="fast",source=""\} 1/);
    assert.match(text, /controller_persistentvolumeclaim_provision_duration_seconds_count\{class="fast",source=""\} 1/);
    assert.deepEqual(
      f.backend.provisionCalls.filter((n) => n === pvName),
      [pvName],
      'provision() called once',
    );
  });

  it('deletes a Released volume: backend first, then the PV, delete() once', async () => {
    const created = await createClaim(f.env, claim('to-delete', 'fast'));
    const pvName = `pvc-${created.metadata.uid}`;
    const pv = await waitFor('PV created', () => getPV(f.env, pvName));
    // Without the cluster's binder in this file: release the PV as the PV controller would once the claim is gone.
    await f.env.client.delete(persistentVolumeClaims, 'to-delete', { namespace: 'default' });
    const released: PersistentVolume = { ...pv, status: { phase: 'Released' } };
    f.env.cluster.store.update('persistentvolumes', released, { subresource: 'status' });
    await waitFor('PV deleted', () => !getPV(f.env, pvName));
    assert.equal(f.backend.volumes.has(pvName), false);
    assert.deepEqual(
      f.backend.deleteCalls.filter((n) => n === pvName),
      [pvName],
      'delete() called once',
    );
    // The PV disappears when the DELETE is served; the metric is counted when its answer arrives.
    await waitFor('delete metric', async () =>
      /controller_persistentvolume_delete_total\{class="fast"\} 1/.test(await f.registry.metrics()),
    );
  });

  it("ignores another provisioner's claims silently", async () => {
    const created = await createClaim(
      f.env,
      claim('foreign', 'fast', { annotations: { [ANN_STORAGE_PROVISIONER]: 'other.example.com/x' } }),
    );
    await createClaim(f.env, claim('marker-1', 'fast'));
    await waitFor(
      'marker provisioned',
      () =>
        f.backend.provisionCalls.length > 0 &&
        getPV(f.env, `pvc-${f.env.cluster.store.get('persistentvolumeclaims', 'default', 'marker-1')?.metadata.uid}`),
    );
    assert.equal(getPV(f.env, `pvc-${created.metadata.uid}`), undefined);
    assert.deepEqual(reasons(f.env, 'foreign'), []);
  });

  it('waits for a missing class with an event, and provisions as soon as the class is created', async () => {
    const created = await createClaim(f.env, claim('later', 'late-class'));
    await waitFor('class-missing event', () => reasons(f.env, 'later').includes('ProvisioningFailed'));
    await createClass(f.env, storageClass('late-class'));
    await waitFor('PV created after the class appeared', () => getPV(f.env, `pvc-${created.metadata.uid}`), 5_000);
  });

  it('rejects Block claims when the provisioner does not support block, with the Go message', async () => {
    const created = await createClaim(f.env, claim('block', 'fast', { spec: { volumeMode: 'Block' } }));
    const ev = await waitFor('block event', () => eventsFor(f.env, 'block')[0]);
    assert.equal(ev.reason, 'ProvisioningFailed');
    assert.equal(ev.message, `${PROVISIONER} does not support block volume provisioning`);
    assert.equal(f.backend.provisionCalls.includes(`pvc-${created.metadata.uid}`), false);
  });

  it('rejects claims with a selector by default, with a clear event', async () => {
    const created = await createClaim(
      f.env,
      claim('selective', 'fast', { spec: { selector: { matchLabels: { tier: 'gold' } } } }),
    );
    await waitFor('selector event', () => reasons(f.env, 'selective').includes('ProvisioningFailed'));
    assert.equal(f.backend.provisionCalls.includes(`pvc-${created.metadata.uid}`), false);
  });

  it('explains a claim from its caches', async () => {
    await createClaim(f.env, claim('explained', 'nowhere'));
    const e = await waitFor('explanation', () => f.ctrl.explain('default', 'explained'));
    assert.equal(e.decision.action, 'wait');
    assert.equal(e.decision.code, 'StorageClassNotFound');
  });
});

describe('ProvisionController: shutdown', () => {
  it('stop() returns even when provision() ignores its AbortSignal (shutdownTimeoutMs), and run() rejects a second call', async () => {
    const env = await startEnv();
    const backend = new MemoryProvisioner();
    let entered!: () => void;
    const inProvision = new Promise<void>((r) => (entered = r));
    backend.onProvision = () => {
      entered();
      return new Promise(() => {}); // never settles, ignores the signal
    };
    const ctrl = new ProvisionController(env.client, PROVISIONER, backend, { ...FAST, shutdownTimeoutMs: 100 });
    const running = ctrl.run();
    assert.throws(() => ctrl.run(), ControllerAlreadyRunningError);
    try {
      await createClass(env, storageClass('slow'));
      await createClaim(env, claim('stuck', 'slow'));
      await inProvision;
      await ctrl.stop();
      await running;
    } finally {
      await env.stop();
    }
  });
});
