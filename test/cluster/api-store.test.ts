// The in-process ClusterStore API the cluster's own controllers use: admission hooks, watch delivery order when
// a watcher writes from its callback, 410 on a compacted resume, copies in and out, dry runs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import { ClusterApiError } from '../../src/cluster/common/api-errors.ts';
import type { KubeObject, WatchEvent } from '../../src/types/k8s.ts';

function storeWithDefault(opts: ConstructorParameters<typeof ClusterStore>[0] = {}): ClusterStore {
  const s = new ClusterStore(opts);
  s.create('namespaces', { metadata: { name: 'default' } });
  return s;
}

const cm = (name: string, data: Record<string, string> = {}): KubeObject => ({
  metadata: { name, namespace: 'default' },
  data,
});

describe('ClusterStore', () => {
  it('runs admission plugins before validation; a throwing plugin rejects the write', () => {
    const s = storeWithDefault();
    s.addAdmission('configmaps', (op, obj) => {
      if (op === 'create') obj.metadata.labels = { ...obj.metadata.labels, admitted: 'yes' };
      if (obj.metadata.name === 'forbidden')
        throw new ClusterApiError({
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          reason: 'Forbidden',
          code: 403,
        });
    });
    assert.deepEqual(s.create('configmaps', cm('a')).metadata.labels, { admitted: 'yes' });
    assert.throws(
      () => s.create('configmaps', cm('forbidden')),
      (err: unknown) => err instanceof ClusterApiError && err.code === 403,
    );
    assert.equal(s.get('configmaps', 'default', 'forbidden'), undefined);
  });

  it('delivers events in commit order even when a watcher writes from its callback', () => {
    const s = storeWithDefault();
    const seenByA: string[] = [];
    const seenByB: string[] = [];
    s.watch('configmaps', { resourceVersion: String(s.resourceVersion) }, (ev: WatchEvent) => {
      seenByA.push(`${ev.type} ${ev.object.metadata.name} ${ev.object.metadata.resourceVersion}`);
      if (ev.object.metadata.name === 'first') s.create('configmaps', cm('second'));
    });
    s.watch('configmaps', { resourceVersion: String(s.resourceVersion) }, (ev: WatchEvent) => {
      seenByB.push(`${ev.type} ${ev.object.metadata.name} ${ev.object.metadata.resourceVersion}`);
    });
    s.create('configmaps', cm('first'));
    assert.equal(seenByA.length, 2);
    assert.deepEqual(seenByB, seenByA);
    assert.ok(seenByB[0].includes('first'));
  });

  it('throws 410 Expired for a resume older than the retained history, and copies objects in and out', () => {
    const s = storeWithDefault({ watchCacheSize: 2 });
    const input = cm('c', { v: '1' });
    const created = s.create('configmaps', input);
    input.data = { v: 'mutated' };
    created.data = { v: 'mutated too' };
    assert.deepEqual(s.get('configmaps', 'default', 'c')!.data, { v: '1' });
    const rv = created.metadata.resourceVersion!;
    for (let i = 0; i < 3; i++) s.patch('configmaps', 'default', 'c', 'merge', { data: { v: String(i + 2) } });
    assert.throws(
      () => s.watch('configmaps', { resourceVersion: rv }, () => {}),
      (err: unknown) => err instanceof ClusterApiError && err.code === 410 && err.reason === 'Expired',
    );
  });

  it('commits nothing and notifies nobody on a dry run', () => {
    const s = storeWithDefault();
    const events: string[] = [];
    s.watch('configmaps', {}, (ev) => events.push(ev.type));
    const before = s.resourceVersion;
    s.createEntry('configmaps', cm('dry'), { dryRun: true });
    assert.equal(s.resourceVersion, before);
    assert.equal(s.get('configmaps', 'default', 'dry'), undefined);
    assert.deepEqual(events, []);
  });
});
