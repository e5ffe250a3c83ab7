// completeVolume: the PV the controller publishes from what provision() returned.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { completeVolume } from '../../src/controller/claim/claim-provision.ts';
import { decideClaim } from '../../src/controller/claim/decide-claim.ts';
import { resolveOptions } from '../../src/controller/options/controller-options.ts';
import { ANN_DYNAMICALLY_PROVISIONED, FINALIZER_EXTERNAL_PROVISIONER } from '../../src/types/annotations.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { newClaim, newStorageClass } from './fixtures.ts';

describe('completeVolume', () => {
  const cls = newStorageClass('class-1', 'foo.bar/baz', { reclaimPolicy: 'Retain' });
  const claim = newClaim('claim-1', 'uid-1', 'class-1', 'foo.bar/baz', '');
  const decision = decideClaim({
    claim,
    provisionerName: 'foo.bar/baz',
    options: resolveOptions({}, {}),
    getStorageClass: () => cls,
    getVolume: () => undefined,
    provisioner: {},
    now: 0,
  });
  const returned: PersistentVolume = {
    metadata: { name: 'whatever', uid: 'x', resourceVersion: '3', labels: { a: 'b' } },
    spec: { capacity: { storage: '1Mi' }, hostPath: { path: '/x' } },
  };
  const shared = (addFinalizer: boolean) => ({
    options: resolveOptions({ addFinalizer }, {}),
    provisionerName: 'foo.bar/baz',
  });

  it('fills in what the controller owns', () => {
    const v = completeVolume(shared(false), claim, decision, returned);
    assert.equal(v.metadata.name, 'pvc-uid-1');
    assert.equal(v.metadata.uid, undefined);
    assert.equal(v.metadata.resourceVersion, undefined);
    assert.deepEqual(v.metadata.labels, { a: 'b' });
    assert.equal(v.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED], 'foo.bar/baz');
    assert.deepEqual(v.spec.claimRef, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: 'default',
      name: 'claim-1',
      uid: 'uid-1',
      resourceVersion: '0',
    });
    assert.equal(v.spec.storageClassName, 'class-1');
    assert.equal(v.spec.persistentVolumeReclaimPolicy, 'Retain', 'reclaim policy from the class when unset');
    assert.equal(v.metadata.finalizers, undefined);
    assert.equal(returned.metadata.name, 'whatever', 'the provisioner object is not mutated');
  });

  it('adds the finalizer in finalizer mode for Delete volumes only', () => {
    const del = completeVolume(shared(true), claim, decision, {
      ...returned,
      spec: { ...returned.spec, persistentVolumeReclaimPolicy: 'Delete' },
    });
    assert.deepEqual(del.metadata.finalizers, [FINALIZER_EXTERNAL_PROVISIONER]);
    const retain = completeVolume(shared(true), claim, decision, returned);
    assert.equal(retain.metadata.finalizers, undefined);
  });
});
