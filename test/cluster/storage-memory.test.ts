// What the store keeps per object (issue 21: `dev` at 10,000 claims held 30,000 Events at ~3 KB each, a parsed
// copy next to the JSON text). Measured as retained heap after a full GC, in bytes per object against the object's
// own JSON length: a count of bytes, not a timing. The store keeps each committed object once, as text; the
// parsed form lives only while its write is committed and delivered. The watch history is bounded by the bytes
// of the superseded versions it keeps, not only by its count of events.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterApiError } from '../../src/cluster/common/api-errors.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { KubeObject } from '../../src/types/k8s.ts';
import { heapAfterGc } from '../support/heap.ts';

const component = 'hostpath.kube-provisioner.io_3f1c2a9e-1b7d-4c55-9f5c-0d1e2f3a4b5c';
function event(i: number): KubeObject {
  const t = new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)).toISOString().replace(/\.\d+Z$/, 'Z');
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `claim-${i}.18ed0623180${(71000 + i).toString(16)}`, namespace: 'default' },
    involvedObject: {
      kind: 'PersistentVolumeClaim',
      namespace: 'default',
      name: `claim-${i}`,
      uid: `0f786132-86f0-4dfb-b82a-${String(i).padStart(12, '0')}`,
      apiVersion: 'v1',
      resourceVersion: String(i),
    },
    reason: 'ProvisioningSucceeded',
    message: `Successfully provisioned volume pvc-0f786132-86f0-4dfb-b82a-${String(i).padStart(12, '0')}`,
    type: 'Normal',
    count: 1,
    firstTimestamp: t,
    lastTimestamp: t,
    source: { component, host: 'node-1' },
    reportingComponent: component,
    reportingInstance: 'node-1',
  };
}

describe('cluster storage memory', () => {
  it('keeps each stored Event once, as its JSON text (heap per Event <= 1.6x its JSON)', () => {
    const store = new ClusterStore({ watchCacheSize: 100 });
    store.create('namespaces', { metadata: { name: 'default' } });
    const n = 5000;
    const before = heapAfterGc();
    for (let i = 0; i < n; i++) store.createEntry('events', event(i));
    const perObject = (heapAfterGc() - before) / n;
    const jsonBytes = store.getEntry('events', 'default', event(n - 1).metadata.name!)!.json.length;
    // Text (~800 bytes, one byte per character) + its entry, map slot and key; a parsed copy would add ~1.3 KB.
    assert.ok(
      perObject <= 1.6 * jsonBytes,
      `${perObject.toFixed(0)} bytes of heap per stored Event, JSON ${jsonBytes} bytes`,
    );
    // Still readable as objects: reads parse the text again.
    const got = store.get('events', 'default', event(7).metadata.name!);
    assert.equal(got?.reason, 'ProvisioningSucceeded');
    assert.equal(store.list('events').items.length, n);
  });

  it('bounds the watch history by the bytes of superseded versions: resumes inside it replay the same events', () => {
    const store = new ClusterStore({ watchCacheBytes: 20_000 });
    store.create('namespaces', { metadata: { name: 'default' } });
    const big = 'x'.repeat(4_000);
    const first = store.create('configmaps', { metadata: { name: 'c', namespace: 'default' }, data: { v: big } });
    const rvs = [first.metadata.resourceVersion!];
    for (let i = 0; i < 20; i++) {
      const o = store.patch('configmaps', 'default', 'c', 'merge', { data: { v: `${i}${big}` } });
      rvs.push(o.metadata.resourceVersion!);
    }
    const ring = store.table('configmaps').ring;
    assert.ok(ring.retainedBytes <= 20_000, `${ring.retainedBytes} characters retained`);
    assert.ok(ring.length >= 4 && ring.length < 21, `${ring.length} events retained`);
    // The oldest resumes are gone (410), the newest replay exactly the events after them.
    assert.throws(
      () => store.watch('configmaps', { resourceVersion: rvs[0] }, () => {}),
      (err: unknown) => err instanceof ClusterApiError && err.code === 410,
    );
    const from = rvs[rvs.length - 4];
    const seen: string[] = [];
    const stop = store.watch('configmaps', { resourceVersion: from }, (ev) =>
      seen.push(ev.object.metadata.resourceVersion!),
    );
    stop();
    assert.deepEqual(seen, rvs.slice(-3));
  });
});
