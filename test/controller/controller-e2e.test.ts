// End to end with the embedded cluster's own controllers (PV binder, protection finalizers, scheduler stand-in):
// a plain claim becomes Bound to the volume we provision; deleting it releases the PV and the backend volume and
// the PV disappear. WaitForFirstConsumer: a pod's scheduling selects the node we provision on. Also the leak
// inventory and explainClaim through the API.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { explainClaim } from '../../src/controller/claim/explain-claim.ts';
import { persistentVolumeClaims, pods } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';
import { createClaim, getPV, getPVC, PROVISIONER, reasons, storageClass, useController, waitFor } from './harness.ts';

/** A claim as a user writes it: no annotations (the binder hands it to us). */
function plainClaim(name: string, className: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, storageClassName: className },
  };
}

describe('ProvisionController with the cluster controllers', () => {
  const f = useController({
    env: { controllers: true },
    options: {
      addFinalizer: true,
      nodeCache: true,
      leakInventory: { enabled: true, intervalMs: 60_000, gracePeriodMs: 0 },
    },
    classes: [storageClass('std'), storageClass('local', { volumeBindingMode: 'WaitForFirstConsumer' })],
  });

  it('claim -> Bound -> deleted -> backend volume and PV gone', async () => {
    const created = await createClaim(f.env, plainClaim('app-data', 'std'));
    const pvName = `pvc-${created.metadata.uid}`;
    await waitFor('claim Bound', () => getPVC(f.env, 'default', 'app-data')?.status?.phase === 'Bound', 15_000);
    assert.equal(getPVC(f.env, 'default', 'app-data')?.spec.volumeName, pvName);
    await waitFor('PV Bound', () => getPV(f.env, pvName)?.status?.phase === 'Bound');
    await waitFor('success event', () => reasons(f.env, 'app-data').includes('ProvisioningSucceeded'));
    assert.ok(f.backend.volumes.has(pvName));
    await f.env.client.delete(persistentVolumeClaims, 'app-data', { namespace: 'default' });
    await waitFor('PV gone', () => !getPV(f.env, pvName), 15_000);
    assert.equal(f.backend.volumes.has(pvName), false);
    assert.equal(f.backend.deleteCalls.filter((n) => n === pvName).length, 1);
  });

  it('WaitForFirstConsumer: provisions on the node the pod was scheduled to', async () => {
    const created = await createClaim(f.env, plainClaim('local-data', 'local'));
    const explained = await waitFor('explanation', () => f.ctrl.explain('default', 'local-data'));
    assert.equal(
      explained.decision.action === 'wait' || explained.decision.action === 'ignore',
      true,
      explained.decision.reason,
    );
    const pod: Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'consumer', namespace: 'default' },
      spec: {
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'local-data' } }],
      },
    };
    await f.env.client.create(pods, pod, { namespace: 'default' });
    await waitFor('claim Bound', () => getPVC(f.env, 'default', 'local-data')?.status?.phase === 'Bound', 15_000);
    const node = getPVC(f.env, 'default', 'local-data')?.metadata.annotations?.[ANN_SELECTED_NODE];
    assert.ok(node, 'the scheduler selected a node');
    const pv = getPV(f.env, `pvc-${created.metadata.uid}`);
    assert.equal(pv?.spec.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.values?.[0], node);
    const call = f.backend.provisionCalls.lastIndexOf(`pvc-${created.metadata.uid}`);
    assert.equal(f.backend.selectedNodeObjects[call], node, 'nodeCache: the Node object is passed to provision()');
  });

  it('explainClaim (through the API) says why a claim is pending', async () => {
    await createClaim(f.env, plainClaim('no-class', 'missing-class'));
    const e = await explainClaim(f.env.client, 'default', 'no-class', { provisionerName: PROVISIONER });
    assert.equal(e.claim, 'default/no-class');
    assert.notEqual(e.decision.action, 'provision');
    assert.ok(e.facts.some((fact) => fact.includes('missing-class')));
  });

  it('leak inventory reports backend volumes without a PV', async () => {
    f.backend.volumes.set('pvc-leaked-1', { claimUid: 'gone', createdAt: new Date(Date.now() - 3_600_000) });
    const report = await f.ctrl.takeLeakInventory();
    assert.deepEqual(report?.leaked, ['pvc-leaked-1']);
    await waitFor('leak event', () => reasons(f.env, 'pvc-leaked-1').includes('VolumeLeaked'));
    assert.ok(f.backend.volumes.has('pvc-leaked-1'), 'not deleted without deleteLeaked');
  });
});
