// The cluster controllers' event recorder: a repeated event about the same object raises the count of one Event
// (client-go's correlator), for as many objects as a dev session keeps pending at once, so a burst of pending
// claims does not turn every re-sync into a new Event object.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import { ClusterEventRecorder } from '../../src/cluster/controllers/cluster-event-recorder.ts';
import type { CoreEvent, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { silentLogger } from '../../src/types/logger.ts';

const claim = (i: number): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: `c${i}`, namespace: 'default', uid: `uid-${i}` },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
});

for (const pending of [10, 10_000]) {
  test(`${pending} pending claims synced 3 times each: one Event per claim, counted 3`, () => {
    const store = new ClusterStore();
    if (!store.get('namespaces', undefined, 'default'))
      store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
    const recorder = new ClusterEventRecorder(store, 'persistentvolume-controller', { logger: silentLogger });
    for (let round = 0; round < 3; round++)
      for (let i = 0; i < pending; i++)
        recorder.record(claim(i), 'Normal', 'ExternalProvisioning', 'Waiting for a volume to be created');
    const events = store.list('events', { namespace: 'default' }).items as CoreEvent[];
    assert.equal(events.length, pending, 'Event objects');
    assert.ok(
      events.every((e) => e.count === 3),
      'every Event counted 3',
    );
  });
}

test('forget(object) drops what the correlator remembers of it: a later repeat is a new Event', () => {
  const store = new ClusterStore();
  store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  const recorder = new ClusterEventRecorder(store, 'persistentvolume-controller', { logger: silentLogger });
  for (let i = 0; i < 3; i++) {
    recorder.record(claim(i), 'Normal', 'ExternalProvisioning', 'Waiting for a volume to be created');
    recorder.record(claim(i), 'Warning', 'ProvisioningFailed', 'no');
  }
  assert.equal(recorder.remembered, 3);
  recorder.forget(claim(1));
  assert.equal(recorder.remembered, 2);
  recorder.record(claim(1), 'Normal', 'ExternalProvisioning', 'Waiting for a volume to be created');
  recorder.record(claim(0), 'Normal', 'ExternalProvisioning', 'Waiting for a volume to be created');
  const counts = (store.list('events', { namespace: 'default' }).items as CoreEvent[])
    .filter((e) => e.reason === 'ExternalProvisioning')
    .map((e) => `${e.involvedObject.name}:${e.count}`)
    .sort();
  assert.deepEqual(counts, ['c0:2', 'c1:1', 'c1:1', 'c2:1']);
});
