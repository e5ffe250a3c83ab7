// Watch semantics through client-node's Watch over HTTPS: initial ADDED events, replay from a
// resourceVersion, 410 Expired after compaction, bookmarks, timeoutSeconds, selector transitions, no events for
// no-op writes, MODIFIED on deletionTimestamp and DELETED with the last state.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CoreV1Api,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { collectWatch, pvBody, pvcBody, raw } from './api-harness.ts';
import { request } from 'node:https';
import { waitFor } from '../support/wait.ts';

let c: TestCluster;
let core: CoreV1Api;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

before(async () => {
  c = await startCluster({ controllers: false, bookmarkIntervalMs: 50 });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
});
after(() => c.stop());

const PVCS = '/api/v1/namespaces/default/persistentvolumeclaims';

function createPvc(name: string, extra: Record<string, unknown> = {}): Promise<V1PersistentVolumeClaim> {
  return core.createNamespacedPersistentVolumeClaim({
    namespace: 'default',
    body: pvcBody(name, extra) as V1PersistentVolumeClaim,
  });
}

describe('watch', () => {
  it('starts with ADDED for existing objects, then streams changes; deletion is MODIFIED then DELETED with the last state', async () => {
    await createPvc('w-existing');
    const w = await collectWatch(c.kubeConfig, PVCS, { fieldSelector: 'metadata.name=w-existing' });
    try {
      await w.until((e) => e.length === 1);
      assert.equal(w.events[0].type, 'ADDED');
      await core.patchNamespacedPersistentVolumeClaim(
        { name: 'w-existing', namespace: 'default', body: { metadata: { finalizers: ['example.com/f'] } } },
        merge,
      );
      await core.deleteNamespacedPersistentVolumeClaim({ name: 'w-existing', namespace: 'default' });
      await core.patchNamespacedPersistentVolumeClaim(
        { name: 'w-existing', namespace: 'default', body: { metadata: { finalizers: null } } },
        merge,
      );
      await w.until((e) => e.length === 4);
      assert.deepEqual(
        w.events.map((e) => e.type),
        ['ADDED', 'MODIFIED', 'MODIFIED', 'DELETED'],
      );
      const marked = w.events[2].object;
      const deleted = w.events[3].object;
      assert.ok(marked.metadata.deletionTimestamp);
      assert.deepEqual(deleted.metadata.finalizers, ['example.com/f'], 'DELETED carries the last stored state');
      assert.ok(Number(deleted.metadata.resourceVersion) > Number(marked.metadata.resourceVersion));
    } finally {
      w.stop();
    }
  });

  it('replays only the events after the requested resourceVersion, and sends nothing for no-op writes', async () => {
    const a = await createPvc('w-replay-a');
    const rv = a.metadata!.resourceVersion!;
    await createPvc('w-replay-b');
    const w = await collectWatch(c.kubeConfig, PVCS, { resourceVersion: rv, labelSelector: '!ignored' });
    try {
      await w.until((e) => e.some((x) => x.object.metadata.name === 'w-replay-b'));
      assert.ok(!w.events.some((e) => e.object.metadata.name === 'w-replay-a'));
      const current = await core.readNamespacedPersistentVolumeClaim({ name: 'w-replay-b', namespace: 'default' });
      await core.replaceNamespacedPersistentVolumeClaim({ name: 'w-replay-b', namespace: 'default', body: current });
      await core.patchNamespacedPersistentVolumeClaim(
        { name: 'w-replay-b', namespace: 'default', body: { metadata: { labels: { step: '1' } } } },
        merge,
      );
      await w.until((e) => e.some((x) => x.object.metadata.labels?.step === '1'));
      const forB = w.events.filter((e) => e.object.metadata.name === 'w-replay-b').map((e) => e.type);
      assert.deepEqual(forB, ['ADDED', 'MODIFIED']);
    } finally {
      w.stop();
    }
  });

  it('sends a 410 Expired ERROR event when the resourceVersion predates the retained history', async () => {
    const pvc = await createPvc('w-old');
    await core.patchNamespacedPersistentVolumeClaim(
      { name: 'w-old', namespace: 'default', body: { metadata: { labels: { v: '2' } } } },
      merge,
    );
    const compact = await raw(c, 'POST', '/admin/compact');
    assert.equal(compact.status, 200);
    const w = await collectWatch(c.kubeConfig, PVCS, { resourceVersion: pvc.metadata!.resourceVersion });
    await w.done;
    assert.equal(w.events.length, 1);
    assert.equal(w.events[0].type, 'ERROR');
    const status = w.events[0].object;
    assert.equal(status.kind, 'Status');
    assert.equal(status.code, 410);
    assert.equal(status.reason, 'Expired');
    assert.match(status.message, new RegExp(`^too old resource version: ${pvc.metadata!.resourceVersion} \\(\\d+\\)$`));
  });

  it('fails a watch from a resourceVersion the server never issued with a 504 Timeout ERROR event', async () => {
    // e.g. an informer that outlived an in-memory cluster: silently skipping events up to that version would
    // hide every change until the counter caught up.
    const future = String(Number((await createPvc('w-future')).metadata!.resourceVersion) + 1000);
    const w = await collectWatch(c.kubeConfig, PVCS, { resourceVersion: future });
    await w.done;
    assert.equal(w.events.length, 1);
    assert.equal(w.events[0].type, 'ERROR');
    const status = w.events[0].object;
    assert.equal(status.code, 504);
    assert.equal(status.reason, 'Timeout');
    assert.match(status.message, new RegExp(`^Timeout: Too large resource version: ${future}, current: \\d+$`));
    assert.equal(status.details.causes[0].reason, 'ResourceVersionTooLarge');
  });

  it('sends BOOKMARK events only when allowed', async () => {
    const without = await collectWatch(c.kubeConfig, PVCS, { fieldSelector: 'metadata.name=w-no-bookmarks' });
    const with_ = await collectWatch(c.kubeConfig, '/api/v1/persistentvolumes', { allowWatchBookmarks: true });
    try {
      // Three bookmark intervals on the other watch, counted rather than slept through.
      await with_.until((e) => e.filter((x) => x.type === 'BOOKMARK').length >= 3);
      const bm = with_.events.find((e) => e.type === 'BOOKMARK')!.object;
      assert.equal(bm.kind, 'PersistentVolume');
      assert.match(bm.metadata.resourceVersion, /^\d+$/);
      // A write the bookmark-less watch must deliver: a bookmark sent to it in the meantime would come before it.
      await createPvc('w-no-bookmarks');
      await without.until((e) => e.length >= 1);
      assert.deepEqual(
        without.events.map((e) => e.type),
        ['ADDED'],
      );
    } finally {
      with_.stop();
      without.stop();
    }
  });

  it('ends the initial events with an annotated BOOKMARK for sendInitialEvents', async () => {
    await createPvc('w-initial');
    const w = await collectWatch(c.kubeConfig, PVCS, {
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
      fieldSelector: 'metadata.name=w-initial',
    });
    try {
      await w.until((e) => e.some((x) => x.type === 'BOOKMARK'));
      assert.equal(w.events[0].type, 'ADDED');
      assert.equal(w.events[1].type, 'BOOKMARK');
      assert.equal(w.events[1].object.metadata.annotations['k8s.io/initial-events-end'], 'true');
    } finally {
      w.stop();
    }
    // A legacy watch from "" is defaulted to sendInitialEvents=true (WatchList, 1.32): same marker; from "N" none.
    const legacy = await collectWatch(c.kubeConfig, PVCS, {
      allowWatchBookmarks: true,
      fieldSelector: 'metadata.name=w-initial',
    });
    let fromRv: Awaited<ReturnType<typeof collectWatch>> | undefined;
    try {
      await legacy.until((e) => e.some((x) => x.type === 'BOOKMARK'));
      assert.deepEqual(
        legacy.events.slice(0, 2).map((e) => e.type),
        ['ADDED', 'BOOKMARK'],
      );
      assert.equal(legacy.events[1].object.metadata.annotations['k8s.io/initial-events-end'], 'true');
      fromRv = await collectWatch(c.kubeConfig, PVCS, {
        allowWatchBookmarks: true,
        resourceVersion: legacy.events[0].object.metadata.resourceVersion,
      });
      await fromRv.until((e) => e.some((x) => x.type === 'BOOKMARK'));
      assert.ok(
        fromRv.events.every((e) => e.object.metadata?.annotations?.['k8s.io/initial-events-end'] === undefined),
      );
    } finally {
      legacy.stop();
      fromRv?.stop();
    }
    const refused = await raw(c, 'GET', `${PVCS}?watch=true&sendInitialEvents=true`);
    assert.equal(refused.status, 422);
    // validateWatchOptions: resourceVersionMatch on a watch only comes with sendInitialEvents, and only NotOlderThan.
    const matchOnly = await raw(c, 'GET', `${PVCS}?watch=true&resourceVersion=1&resourceVersionMatch=NotOlderThan`);
    assert.equal(matchOnly.status, 422);
    assert.equal(
      matchOnly.json<{ message: string }>().message,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
    const exact = await raw(c, 'GET', `${PVCS}?watch=true&sendInitialEvents=true&resourceVersionMatch=Exact`);
    assert.equal(
      exact.json<{ message: string }>().message,
      'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan, ' +
        'resourceVersionMatch: Unsupported value: "Exact": supported values: "NotOlderThan"]',
    );
  });

  it('ends the stream after timeoutSeconds', async () => {
    const w = await collectWatch(c.kubeConfig, '/api/v1/configmaps', { timeoutSeconds: 1 });
    const err = await w.done;
    assert.equal(err, null);
  });

  it('turns selector transitions into ADDED and DELETED', async () => {
    await core.createPersistentVolume({ body: pvBody('w-sel', { tier: 'gold' }) as V1PersistentVolume });
    const w = await collectWatch(c.kubeConfig, '/api/v1/persistentvolumes', { labelSelector: 'tier=gold' });
    try {
      await w.until((e) => e.length === 1);
      await core.patchPersistentVolume({ name: 'w-sel', body: { metadata: { labels: { tier: 'silver' } } } }, merge);
      await core.patchPersistentVolume({ name: 'w-sel', body: { metadata: { labels: { tier: 'gold' } } } }, merge);
      await w.until((e) => e.length === 3);
      assert.deepEqual(
        w.events.map((e) => e.type),
        ['ADDED', 'DELETED', 'ADDED'],
      );
      assert.equal(w.events[1].object.metadata.labels.tier, 'gold', 'DELETED carries the previous (matching) state');
    } finally {
      w.stop();
    }
  });

  it('sends the events committed in one turn of the event loop as one chunk of the stream, in order', async () => {
    // Node's parser hands every chunk of a chunked response to 'data' on its own, so the chunks are countable.
    const cluster = c.kubeConfig.getCurrentCluster()!;
    const from = c.store.resourceVersion;
    const chunks: string[] = [];
    const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const req = request(
        new URL(`${PVCS}?watch=true&resourceVersion=${from}`, c.url),
        { headers: { authorization: `Bearer ${c.token}` }, ca: Buffer.from(cluster.caData!, 'base64'), agent: false },
        resolve,
      );
      req.on('error', reject);
      req.end();
    });
    try {
      res.on('data', (d: Buffer) => chunks.push(d.toString('utf8')));
      const burst = ['w-burst-a', 'w-burst-b', 'w-burst-c'];
      // The response headers leave after the watch is subscribed (serveWatch does both in one call).
      for (const name of burst)
        c.store.create('persistentvolumeclaims', {
          ...pvcBody(name),
          metadata: { name, namespace: 'default' },
        } as never);
      await waitFor('the three events', () => chunks.join('').split('\n').length > 3);
      const lines = chunks.join('').split('\n').filter(Boolean);
      assert.deepEqual(
        lines.map((l) => JSON.parse(l).object.metadata.name),
        burst,
      );
      assert.equal(chunks.length, 1, `one chunk for the burst, got ${chunks.length}`);
    } finally {
      res.destroy();
    }
  });

  it('is closed by the admin endpoint, and the client can resume from its last resourceVersion', async () => {
    const w = await collectWatch(c.kubeConfig, '/api/v1/secrets', {});
    const res = await raw(c, 'POST', '/admin/close-watches');
    assert.equal(res.status, 200);
    assert.ok(res.json<{ closed: number }>().closed >= 1);
    assert.equal(await w.done, null);
  });
});

describe('client-node informer', () => {
  it('lists, watches and follows adds, updates and deletes', async () => {
    const informer = makeInformer(c.kubeConfig, '/api/v1/namespaces/default/configmaps', () =>
      core.listNamespacedConfigMap({ namespace: 'default' }),
    );
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata!.name}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata!.name}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata!.name}`));
    await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 'inf-a' }, data: { k: 'v' } },
    });
    await informer.start();
    try {
      await waitFor('informer add of inf-a', () => seen.includes('add inf-a'));
      await core.patchNamespacedConfigMap({ name: 'inf-a', namespace: 'default', body: { data: { k: 'w' } } }, merge);
      await core.deleteNamespacedConfigMap({ name: 'inf-a', namespace: 'default' });
      await waitFor('informer delete of inf-a', () => seen.includes('delete inf-a'));
      assert.deepEqual(seen, ['add inf-a', 'update inf-a', 'delete inf-a']);
      assert.equal(informer.list().length, 0);
    } finally {
      await informer.stop();
    }
  });
});
