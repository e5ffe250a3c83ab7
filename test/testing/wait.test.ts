// waitFor() as an author uses it: a plain predicate works like a condition, and a timeout says where the object
// was (its phase, its conditions, its last events), not only what was awaited.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { coreEvents, persistentVolumeClaims, type CoreEvent, type PersistentVolumeClaim } from 'kube-provisioner';
import { startCluster, waitFor, WaitTimeoutError, type TestCluster } from 'kube-provisioner/testing';

const claim: PersistentVolumeClaim = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'stuck', namespace: 'default' },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'none' },
};

describe('waitFor', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster({ controllers: false });
    const created = await cluster.create(persistentVolumeClaims, claim);
    cluster.store.update(
      'persistentvolumeclaims',
      {
        ...created,
        status: {
          phase: 'Pending',
          conditions: [{ type: 'Resizing', status: 'True', message: 'waiting for the resizer' }],
        },
      } as PersistentVolumeClaim,
      { subresource: 'status' },
    );
    for (const [i, reason] of ['Provisioning', 'ProvisioningFailed'].entries()) {
      await cluster.create(coreEvents, {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `stuck.${i}`, namespace: 'default' },
        involvedObject: {
          kind: 'PersistentVolumeClaim',
          namespace: 'default',
          name: 'stuck',
          uid: created.metadata.uid,
        },
        reason,
        message: i === 1 ? 'the backend is full' : 'External provisioner is provisioning volume',
        type: i === 1 ? 'Warning' : 'Normal',
        lastTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        count: 1,
      } as CoreEvent);
    }
  });
  after(async () => {
    await cluster.stop();
  });

  it('takes a plain predicate', async () => {
    const seen = await waitFor(
      cluster.client,
      persistentVolumeClaims,
      'stuck',
      (c) => c?.spec.resources?.requests?.storage === '1Gi',
      { namespace: 'default' },
    );
    assert.equal(seen?.metadata.name, 'stuck');
  });

  it("names the object's last phase, conditions and events on timeout", async () => {
    const err = await waitFor(cluster.client, persistentVolumeClaims, 'stuck', (c) => c?.status?.phase === 'Bound', {
      namespace: 'default',
      timeoutMs: 100,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof WaitTimeoutError, String(err));
    assert.match(err.message, /PersistentVolumeClaim default\/stuck: not .* after 100 ms/);
    assert.match(err.message, /phase Pending/);
    assert.match(err.message, /condition Resizing=True: waiting for the resizer/);
    assert.match(err.message, /Warning ProvisioningFailed: the backend is full/);
    assert.ok(
      err.message.indexOf('ProvisioningFailed') > err.message.indexOf('Normal Provisioning'),
      'events oldest first, the last one last',
    );
    assert.equal(err.last?.metadata.name, 'stuck');
  });

  it('says when the object does not exist', async () => {
    await assert.rejects(
      waitFor(cluster.client, persistentVolumeClaims, 'absent', (c) => c !== undefined, {
        namespace: 'default',
        timeoutMs: 50,
      }),
      (e: unknown) => e instanceof WaitTimeoutError && /does not exist/.test(e.message),
    );
  });
});
