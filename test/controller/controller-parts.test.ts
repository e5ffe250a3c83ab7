// Unit tests of the controller's pure helpers: the per-claim lock record (seed format), the lock-only update
// filter, the leak comparison, the PV completed by the controller, metrics registration and explain formatting.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { ClaimLock, formatTime, isOnlyLockUpdate, parseLockRecord } from '../../src/controller/claim-lock.ts';
import { completeVolume } from '../../src/controller/claim-sync.ts';
import type { ControllerShared } from '../../src/controller/controller-state.ts';
import { decideClaim } from '../../src/controller/decide-claim.ts';
import { explainDecision, formatExplanation } from '../../src/controller/explain.ts';
import { findLeakedVolumes } from '../../src/controller/leak-inventory.ts';
import { createControllerMetrics, METRIC_NAMES } from '../../src/controller/metrics.ts';
import { resolveOptions } from '../../src/controller/options.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { ANN_CONTROL_PLANE_LEADER, ANN_DYNAMICALLY_PROVISIONED, FINALIZER_EXTERNAL_PROVISIONER } from '../../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { newClaim, newStorageClass } from './fixtures.ts';

function withLock(claim: PersistentVolumeClaim, record: object): PersistentVolumeClaim {
  return { ...claim, metadata: { ...claim.metadata, annotations: { ...claim.metadata.annotations, [ANN_CONTROL_PLANE_LEADER]: JSON.stringify(record) } } };
}

describe('claim lock record', () => {
  it('parses the seed format', () => {
    const rec = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2017-01-01T00:00:00Z', renewTime: '2017-01-01T00:00:05Z', leaderTransitions: 2 };
    assert.deepEqual(parseLockRecord(withLock(newClaim('c', 'u', 'x', '', ''), rec)), rec);
    assert.equal(parseLockRecord(newClaim('c', 'u', 'x', '', '')), undefined);
    const broken = newClaim('c', 'u', 'x', '', '', { [ANN_CONTROL_PLANE_LEADER]: 'not json' });
    assert.equal(parseLockRecord(broken), undefined);
  });

  it('formats metav1.Time with second precision', () => {
    assert.equal(formatTime(Date.UTC(2026, 0, 2, 3, 4, 5, 678)), '2026-01-02T03:04:05Z');
  });

  it('judges expiry by local observation time, not by the record timestamps', async () => {
    const clock = new TestClock();
    const lock = new ClaimLock({ client: {} as KubeClient, identity: 'me', leaseDurationMs: 15_000, clock, logger: silentLogger });
    // renewTime far in the past: a skewed clock must not make it look expired on first sight.
    const held = withLock(newClaim('c', 'u1', 'x', '', ''), { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: '2000-01-01T00:00:00Z', renewTime: '2000-01-01T00:00:00Z', leaderTransitions: 0 });
    const first = lock.inspect(held);
    assert.equal(first.state, 'held');
    await clock.advance(14_000);
    assert.equal(lock.inspect(held).state, 'held');
    await clock.advance(1_000);
    assert.equal(lock.inspect(held).state, 'expired');
    // A renewal (changed record) restarts the count.
    const renewed = withLock(held, { holderIdentity: 'other', leaseDurationSeconds: 15, acquireTime: '2000-01-01T00:00:00Z', renewTime: '2000-01-01T00:00:10Z', leaderTransitions: 0 });
    assert.equal(lock.inspect(renewed).state, 'held');
    assert.equal(lock.inspect(withLock(held, { holderIdentity: 'me', leaseDurationSeconds: 15, acquireTime: '', renewTime: '', leaderTransitions: 0 })).state, 'ours');
    assert.equal(lock.inspect(withLock(held, { holderIdentity: '', leaseDurationSeconds: 15, acquireTime: '', renewTime: '', leaderTransitions: 0 })).state, 'free');
  });

  it('filters updates that only touched the lock annotation', () => {
    const a = newClaim('c', 'u', 'x', 'p', '');
    const b = { ...withLock(a, { holderIdentity: 'x' }), metadata: { ...withLock(a, { holderIdentity: 'x' }).metadata, resourceVersion: '7' } };
    assert.equal(isOnlyLockUpdate(a, b), true);
    const c = { ...b, spec: { ...b.spec, volumeName: 'pv' } };
    assert.equal(isOnlyLockUpdate(a, c), false);
    assert.equal(isOnlyLockUpdate(a, a), false, 'a resync is never filtered');
  });
});

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
    assert.deepEqual(findLeakedVolumes({ ...args, now: now + 3600_000 }), ['pvc-no-date', 'pvc-old-orphan', 'pvc-young-orphan']);
    assert.deepEqual(findLeakedVolumes({ ...args, backend: [], now: now + 3600_000 }), []);
    assert.equal(firstSeen.size, 0, 'volumes gone from the backend are forgotten');
  });
});

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
  const returned: PersistentVolume = { metadata: { name: 'whatever', uid: 'x', resourceVersion: '3', labels: { a: 'b' } }, spec: { capacity: { storage: '1Mi' }, hostPath: { path: '/x' } } };
  const shared = (addFinalizer: boolean) => ({ options: resolveOptions({ addFinalizer }, {}), provisionerName: 'foo.bar/baz' }) as ControllerShared;

  it('fills in what the controller owns', () => {
    const v = completeVolume(shared(false), claim, decision, returned);
    assert.equal(v.metadata.name, 'pvc-uid-1');
    assert.equal(v.metadata.uid, undefined);
    assert.equal(v.metadata.resourceVersion, undefined);
    assert.deepEqual(v.metadata.labels, { a: 'b' });
    assert.equal(v.metadata.annotations?.[ANN_DYNAMICALLY_PROVISIONED], 'foo.bar/baz');
    assert.deepEqual(v.spec.claimRef, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'claim-1', uid: 'uid-1', resourceVersion: '0' });
    assert.equal(v.spec.storageClassName, 'class-1');
    assert.equal(v.spec.persistentVolumeReclaimPolicy, 'Retain', 'reclaim policy from the class when unset');
    assert.equal(v.metadata.finalizers, undefined);
    assert.equal(returned.metadata.name, 'whatever', 'the provisioner object is not mutated');
  });

  it('adds the finalizer in finalizer mode for Delete volumes only', () => {
    const del = completeVolume(shared(true), claim, decision, { ...returned, spec: { ...returned.spec, persistentVolumeReclaimPolicy: 'Delete' } });
    assert.deepEqual(del.metadata.finalizers, [FINALIZER_EXTERNAL_PROVISIONER]);
    const retain = completeVolume(shared(true), claim, decision, returned);
    assert.equal(retain.metadata.finalizers, undefined);
  });
});

describe('metrics', () => {
  it('registers the Go names once; a second controller on the same registry reuses them', async () => {
    const registry = new Registry();
    const a = createControllerMetrics(registry);
    const b = createControllerMetrics(registry);
    a.provisionTotal.inc({ class: 'c', source: '' });
    b.provisionTotal.inc({ class: 'c', source: '' });
    const text = await registry.metrics();
    assert.match(text, /controller_persistentvolumeclaim_provision_total\{class="c",source=""\} 2/);
    for (const name of Object.values(METRIC_NAMES)) assert.ok(registry.getSingleMetric(name), name);
  });
});

describe('explain', () => {
  it('formats a decision with its facts', () => {
    const claim = newClaim('claim-1', 'uid-1', 'missing', 'foo.bar/baz', '');
    const decision = decideClaim({ claim, provisionerName: 'foo.bar/baz', options: resolveOptions({}, {}), getStorageClass: () => undefined, getVolume: () => undefined, provisioner: {}, now: 0 });
    const text = formatExplanation(explainDecision({ claim, provisionerName: 'foo.bar/baz', decision }));
    assert.match(text, /Decision: wait \(StorageClassNotFound\)/);
    assert.match(text, /storage class: missing \(not found\)/);
    assert.match(text, /volume name: pvc-uid-1 \(does not exist\)/);
  });
});
