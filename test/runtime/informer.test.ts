// ObjectStore, Reflector and Informer: unit behaviour against a small in-test API (exact control over
// watch closes, compaction and faults), then the same failure modes against the embedded cluster.
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient, type WatchOptions } from '../../src/runtime/client.ts';
import type { ApiResource } from '../../src/runtime/resources.ts';
import type { WatchStream } from '../../src/runtime/watch-stream.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { Informer, InformerStoppedError, waitForCacheSync } from '../../src/runtime/informer.ts';
import { ObjectStore } from '../../src/runtime/object-store.ts';
import { Backoff } from '../../src/runtime/reflector.ts';
import { persistentVolumes } from '../../src/runtime/resources.ts';
import type { KubeObject, PersistentVolume } from '../../src/types/k8s.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { startFakeApi, type FakeApi } from './fake-api.ts';
import { waitFor } from '../support/wait.ts';

const pv = (name: string, sc = 'fast', extra: Record<string, unknown> = {}): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: { storageClassName: sc, capacity: { storage: '1Gi' }, ...extra },
});

/** Polls until `cond` holds (bounded): the shared waitFor with this file's argument order. */
const until = async (cond: () => boolean, what: string, ms = 10_000): Promise<void> => {
  await waitFor(what, cond, ms, 5);
};

interface Recorded {
  events: string[];
  informer: Informer<PersistentVolume>;
}

function recordingInformer(
  client: KubeClient,
  extra: Partial<ConstructorParameters<typeof Informer<PersistentVolume>>[0]> = {},
): Recorded {
  const events: string[] = [];
  const informer = new Informer<PersistentVolume>({
    client,
    resource: persistentVolumes,
    backoff: { initialMs: 10, maxMs: 50 },
    ...extra,
    handlers: {
      onAdd: (o) => events.push(`add:${o.metadata.name}`),
      onUpdate: (old, o) => events.push(`update:${o.metadata.name}:${old === o ? 'resync' : o.spec.storageClassName}`),
      onDelete: (o, info) => events.push(`delete:${o.metadata.name}${info.finalStateUnknown ? ':tombstone' : ''}`),
    },
  });
  return { events, informer };
}

async function withFake(fn: (fake: FakeApi, client: KubeClient) => Promise<void>): Promise<void> {
  const fake = await startFakeApi();
  const client = new KubeClient({ kubeConfig: fake.kubeConfig, qps: 0, retryBaseDelayMs: 1 });
  try {
    await fn(fake, client);
  } finally {
    client.close();
    await fake.close();
  }
}

test('ObjectStore: keys, uid lookup, indexes follow updates and deletes, objects are frozen', () => {
  const store = new ObjectStore<KubeObject>();
  store.addIndex('class', (o) => [String((o.spec as { storageClassName?: string }).storageClassName)]);
  store.upsert({ metadata: { name: 'a', uid: 'u-a' }, spec: { storageClassName: 'fast' } });
  store.upsert({ metadata: { name: 'b', namespace: 'ns', uid: 'u-b' }, spec: { storageClassName: 'fast' } });
  assert.equal(store.get('ns/b')?.metadata.uid, 'u-b');
  assert.equal(store.get('ns', 'b')?.metadata.uid, 'u-b');
  assert.equal(store.getByUid('u-a')?.metadata.name, 'a');
  assert.deepEqual(store.indexKeys('class', 'fast').sort(), ['a', 'ns/b']);
  store.upsert({ metadata: { name: 'a', uid: 'u-a' }, spec: { storageClassName: 'slow' } });
  assert.deepEqual(store.indexKeys('class', 'fast'), ['ns/b']);
  assert.deepEqual(
    store.byIndex('class', 'slow').map((o) => o.metadata.name),
    ['a'],
  );
  store.remove('ns/b');
  assert.deepEqual(store.indexKeys('class', 'fast'), []);
  assert.equal(store.getByUid('u-b'), undefined);
  const a = store.get('a') as KubeObject;
  assert.throws(() => {
    (a.metadata as { name: string }).name = 'x';
  }, TypeError);
  assert.throws(() => store.byIndex('nope', 'x'), /no index/);
});

test('Backoff: 800 ms doubling to 30 s with jitter, reset after 2 min quiet', async () => {
  const clock = new TestClock();
  const b = new Backoff({}, clock, () => 0);
  assert.deepEqual([b.next(), b.next(), b.next()], [800, 1600, 3200]);
  for (let i = 0; i < 10; i++) b.next();
  assert.equal(b.next(), 30_000);
  const jittered = new Backoff({}, clock, () => 0.5);
  assert.equal(jittered.next(), 1200);
  await clock.advance(120_001);
  assert.equal(b.next(), 800);
});

test('informer: adds before synced, then watch updates/deletes with last state; late handlers get replayed adds', () =>
  withFake(async (fake, client) => {
    fake.put('persistentvolumes', pv('a'));
    fake.put('persistentvolumes', pv('b'));
    const { events, informer } = recordingInformer(client, { pageSize: 1 });
    assert.equal(informer.hasSynced(), false);
    informer.start();
    await informer.synced;
    assert.equal(informer.hasSynced(), true);
    assert.deepEqual(events.sort(), ['add:a', 'add:b']);
    assert.ok(fake.requests.filter((r) => r === 'GET /api/v1/persistentvolumes').length >= 2, 'paginated list');
    events.length = 0;
    await until(() => fake.openWatches() === 1, 'watch open');
    fake.put('persistentvolumes', pv('a', 'slow'));
    fake.put('persistentvolumes', pv('c'));
    fake.remove('persistentvolumes', undefined, 'b');
    await until(() => events.length === 3, 'three events');
    assert.deepEqual(events, ['update:a:slow', 'add:c', 'delete:b']);
    assert.equal(informer.store.get('a')?.spec.storageClassName, 'slow');
    assert.equal(informer.store.get('b'), undefined);
    const late: string[] = [];
    const off = informer.addEventHandler({ onAdd: (o) => late.push(o.metadata.name ?? '') });
    assert.deepEqual(late.sort(), ['a', 'c']);
    off();
    await informer.stop();
    assert.equal(fake.openWatches(), 0);
  }));

test('informer: closed watch reconnects with backoff from the last RV, nothing lost or duplicated', () =>
  withFake(async (fake, client) => {
    fake.put('persistentvolumes', pv('a'));
    const { events, informer } = recordingInformer(client);
    informer.start();
    await informer.synced;
    for (let round = 0; round < 3; round++) {
      await until(() => fake.openWatches() === 1, 'watch open');
      fake.closeWatches();
      fake.put('persistentvolumes', pv(`n${round}`)); // written while no watch is open
    }
    await until(() => informer.store.size === 4, 'all objects');
    const watches = fake.requests.filter((r) => r.endsWith('?watch')).length;
    assert.ok(watches >= 4, `re-watched (${watches})`);
    assert.equal(fake.requests.filter((r) => r === 'GET /api/v1/persistentvolumes').length, 1, 'no relist needed');
    assert.deepEqual(events, ['add:a', 'add:n0', 'add:n1', 'add:n2']);
    await informer.stop();
  }));

/** A client that counts the watches it opens, to observe reconnects without timing. */
class CountingClient extends KubeClient {
  watches = 0;
  override async watch<T extends KubeObject = KubeObject>(
    r: ApiResource<T>,
    opts?: WatchOptions,
  ): Promise<WatchStream<T>> {
    this.watches++;
    return super.watch<T>(r, opts);
  }
}

test('informer: a very short watch (closed at once, no event) is re-opened only after the backoff delay, which doubles', () =>
  withFake(async (fake) => {
    // Counted at the client: a re-watch is a call of watch(), made in the microtasks after the backoff timer fires,
    // so the count is exact right after clock.advance() (no HTTP round trip to wait for).
    const client = new CountingClient({ kubeConfig: fake.kubeConfig, qps: 0, retryBaseDelayMs: 1 });
    const clock = new TestClock();
    const { informer } = recordingInformer(client, {
      clock,
      random: () => 0,
      backoff: { initialMs: 1_000, maxMs: 8_000 },
    });
    informer.start();
    await informer.synced;
    // Each watch delivers nothing and, with the TestClock standing still, lasts no time: a "very short watch".
    // Delays: 1 s, doubling each time, capped at maxMs.
    for (const [i, delay] of [1_000, 2_000, 4_000, 8_000, 8_000].entries()) {
      const n = i + 1;
      await until(() => client.watches === n && fake.openWatches() === 1, `watch ${n} open`);
      fake.closeWatches();
      await until(() => clock.pending === 1, `backoff ${n} scheduled`);
      await clock.advance(delay - 1);
      assert.equal(client.watches, n, `no re-watch ${delay - 1} ms after very short watch ${n}`);
      await clock.advance(1);
      assert.equal(client.watches, n + 1, `re-watch ${delay} ms after very short watch ${n}`);
    }
    await informer.stop();
    client.close();
  }));

test('informer: compacted history -> 410 -> relist; gap deletions become tombstones, store converges', () =>
  withFake(async (fake, client) => {
    for (const n of ['a', 'b', 'c']) fake.put('persistentvolumes', pv(n));
    const { events, informer } = recordingInformer(client);
    informer.start();
    await informer.synced;
    await until(() => fake.openWatches() === 1, 'watch open');
    fake.closeWatches();
    fake.remove('persistentvolumes', undefined, 'b');
    fake.put('persistentvolumes', pv('c', 'slow'));
    fake.put('persistentvolumes', pv('d'));
    fake.compact();
    await until(
      () => informer.store.size === 3 && informer.store.get('c')?.spec.storageClassName === 'slow',
      'converged',
    );
    assert.deepEqual(informer.store.keys().sort(), ['a', 'c', 'd']);
    assert.deepEqual(events.slice(3).sort(), ['add:d', 'delete:b:tombstone', 'update:c:slow']);
    assert.equal(fake.requests.filter((r) => r === 'GET /api/v1/persistentvolumes').length, 2, 'relisted once');
    await informer.stop();
  }));

test('informer: list failures (500s) are retried until it syncs', () =>
  withFake(async (fake, client) => {
    fake.put('persistentvolumes', pv('a'));
    let failures = 0;
    fake.fault = (method, path) =>
      method === 'GET' && path === '/api/v1/persistentvolumes' && failures++ < 8 ? 500 : undefined;
    const { informer } = recordingInformer(client);
    informer.start();
    await informer.synced;
    assert.ok(failures >= 8);
    assert.equal(informer.store.size, 1);
    await informer.stop();
  }));

test('informer: periodic resync re-delivers every object as an update (TestClock)', () =>
  withFake(async (fake, client) => {
    fake.put('persistentvolumes', pv('a'));
    fake.put('persistentvolumes', pv('b'));
    const clock = new TestClock();
    const { events, informer } = recordingInformer(client, { resyncMs: 60_000, clock });
    informer.start();
    await informer.synced;
    events.length = 0;
    await clock.advance(59_000);
    assert.deepEqual(events, []);
    await clock.advance(1_000);
    assert.deepEqual(events.sort(), ['update:a:resync', 'update:b:resync']);
    await clock.advance(60_000);
    assert.equal(events.length, 4);
    await informer.stop();
    assert.equal(clock.pending, 0, 'no timer left behind');
  }));

test('informer: stop before the first list rejects synced; a throwing handler does not break delivery', () =>
  withFake(async (fake, client) => {
    fake.fault = () => 500;
    const { informer } = recordingInformer(client);
    informer.start();
    await informer.stop();
    await assert.rejects(informer.synced, InformerStoppedError);

    fake.fault = undefined;
    fake.put('persistentvolumes', pv('a'));
    fake.put('persistentvolumes', pv('b'));
    const seen: string[] = [];
    const second = new Informer<PersistentVolume>({ client, resource: persistentVolumes });
    second.addEventHandler({
      onAdd: () => {
        throw new Error('boom');
      },
    });
    second.addEventHandler({ onAdd: (o) => seen.push(o.metadata.name ?? '') });
    second.start();
    await second.synced;
    assert.deepEqual(seen.sort(), ['a', 'b']);
    await second.stop();
  }));

test('waitForCacheSync waits for every informer and honours abort', () =>
  withFake(async (fake, client) => {
    fake.put('persistentvolumes', pv('a'));
    const a = new Informer<PersistentVolume>({ client, resource: persistentVolumes });
    const b = new Informer<PersistentVolume>({ client, resource: persistentVolumes });
    a.start();
    b.start();
    await waitForCacheSync(AbortSignal.timeout(10_000), a, b);
    assert.ok(a.hasSynced() && b.hasSynced());
    const never = new Informer<PersistentVolume>({ client, resource: persistentVolumes });
    const ac = new AbortController();
    const waiting = waitForCacheSync(ac.signal, never);
    ac.abort(new Error('gave up'));
    await assert.rejects(waiting, /gave up/);
    await Promise.all([a.stop(), b.stop()]);
  }));

// ---- against the embedded cluster (real HTTPS, real watch cache, fault injection) ----

const hostPathPv = (name: string, size = '1Gi'): PersistentVolume => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec: {
    capacity: { storage: size },
    accessModes: ['ReadWriteOnce'],
    hostPath: { path: `/tmp/${name}` },
    storageClassName: 'fast',
  },
});

describe('informer against the embedded cluster', () => {
  let cluster: TestCluster;
  let writer: KubeClient;
  let sentinels = 0;
  /** Proves the informer's watch is registered server-side (so closeWatches() hits it): write, wait to see it. */
  async function watchEstablished(informer: Informer<PersistentVolume>): Promise<void> {
    const name = `sentinel-${sentinels++}`;
    await writer.create(persistentVolumes, hostPathPv(name));
    await until(() => informer.store.get(name) !== undefined, `${name} seen through the watch`);
  }
  before(async () => {
    cluster = await startCluster({ controllers: false });
    writer = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'writer' });
  });
  after(async () => {
    writer.close();
    await cluster.stop();
  });
  afterEach(async () => {
    cluster.faults.clear();
    for (const o of (await writer.list(persistentVolumes)).items)
      await writer.delete(persistentVolumes, o.metadata.name ?? '');
  });

  test('a watch that delivered events and is then cut is re-opened at once, without backoff (client-go)', async () => {
    const clock = new TestClock();
    const client = new CountingClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'informer-healthy-close' });
    const { informer } = recordingInformer(client, {
      clock,
      random: () => 0,
      backoff: { initialMs: 1_000, maxMs: 30_000 },
    });
    informer.start();
    await informer.synced;
    await watchEstablished(informer);
    for (let round = 1; round <= 3; round++) {
      await writer.create(persistentVolumes, hostPathPv(`live-${round}`));
      await until(() => informer.store.get(`live-${round}`) !== undefined, `live-${round} delivered by the watch`);
      assert.equal(client.watches, round);
      cluster.faults.closeWatches();
      // The TestClock never advances: a backoff sleep would block forever, so a reconnect proves there was none.
      await until(() => client.watches === round + 1, `re-watch ${round} without waiting for a backoff`);
    }
    await informer.stop();
    client.close();
  });

  test('watches closed repeatedly under writes: final state matches the server, nothing delivered twice', async () => {
    const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'informer-close' });
    const delivered = new Set<string>();
    let duplicates = 0;
    const informer = new Informer<PersistentVolume>({
      client,
      resource: persistentVolumes,
      backoff: { initialMs: 20, maxMs: 100 },
      handlers: {
        onAdd: (o) => {
          const k = `${o.metadata.name}@${o.metadata.resourceVersion}`;
          if (delivered.has(k)) duplicates++;
          delivered.add(k);
        },
        onUpdate: (_old, o) => {
          const k = `${o.metadata.name}@${o.metadata.resourceVersion}`;
          if (delivered.has(k)) duplicates++;
          delivered.add(k);
        },
      },
    });
    informer.start();
    await informer.synced;
    await watchEstablished(informer);
    for (let i = 0; i < 60; i++) {
      await writer.create(persistentVolumes, hostPathPv(`w-${i}`));
      if (i % 3 === 0 && i > 0)
        await writer.patch(persistentVolumes, `w-${i - 1}`, { metadata: { labels: { round: String(i) } } });
      if (i % 10 === 5) await writer.delete(persistentVolumes, `w-${i - 5}`);
      if (i % 12 === 0) cluster.faults.closeWatches();
    }
    const server = await writer.list(persistentVolumes);
    const expected = new Map(server.items.map((o) => [o.metadata.name, o.metadata.resourceVersion]));
    await until(
      () =>
        informer.store.size === expected.size &&
        informer.store.list().every((o) => expected.get(o.metadata.name) === o.metadata.resourceVersion),
      'store equals server',
    );
    assert.equal(duplicates, 0);
    await informer.stop();
    client.close();
  });

  test('compacted watch cache: resume gets 410, the informer relists and converges with tombstones', async () => {
    for (const n of ['a', 'b', 'c']) await writer.create(persistentVolumes, hostPathPv(n));
    const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'informer-410' });
    // A fixed 1 s reconnect delay: the writes and the compaction below happen while no watch is open.
    const { events, informer } = recordingInformer(client, {
      random: () => 0,
      backoff: { initialMs: 1_000, maxMs: 1_000 },
    });
    informer.start();
    await informer.synced;
    await watchEstablished(informer);
    const rvBefore = informer.lastSyncResourceVersion;
    // Keep the informer from re-watching while the writes and the compaction happen, so its resume gets 410.
    const refuse = cluster.faults.add({ verb: 'watch', resource: 'persistentvolumes', status: 500 });
    cluster.faults.closeWatches();
    await writer.delete(persistentVolumes, 'b');
    await writer.patch(persistentVolumes, 'c', { spec: { storageClassName: 'slow' } });
    await writer.create(persistentVolumes, hostPathPv('d'));
    cluster.faults.compact();
    cluster.faults.remove(refuse);
    await until(
      () => informer.store.size === 4 && informer.store.get('c')?.spec.storageClassName === 'slow',
      'converged',
    );
    assert.deepEqual(
      informer.store
        .keys()
        .filter((k) => !k.startsWith('sentinel'))
        .sort(),
      ['a', 'c', 'd'],
    );
    assert.ok(events.includes('delete:b:tombstone'), events.join());
    assert.ok(Number(informer.lastSyncResourceVersion) > Number(rvBefore));
    assert.ok(
      cluster.audit.count({ client: 'informer-410', verb: 'list', resource: 'persistentvolumes', code: 200 }) >= 2,
      'relisted',
    );
    await informer.stop();
    client.close();
  });

  test('500 and 429 bursts on list and watch are retried until the informer syncs and follows', async () => {
    await writer.create(persistentVolumes, hostPathPv('x'));
    cluster.faults.add({ verb: 'list', resource: 'persistentvolumes', status: 500, count: 7 });
    const client = new KubeClient({
      kubeConfig: cluster.kubeConfig,
      qps: 0,
      userAgent: 'informer-faults',
      retryBaseDelayMs: 5,
    });
    const { informer } = recordingInformer(client, { backoff: { initialMs: 20, maxMs: 100 } });
    informer.start();
    await informer.synced;
    assert.equal(cluster.audit.count({ client: 'informer-faults', verb: 'list', code: 500 }), 7);
    await watchEstablished(informer);
    cluster.faults.add({ verb: 'watch', resource: 'persistentvolumes', status: 429, retryAfterSeconds: 0, count: 3 });
    cluster.faults.closeWatches();
    await writer.create(persistentVolumes, hostPathPv('y'));
    await until(() => informer.store.get('y') !== undefined, 'follows after 429s');
    await until(
      () => cluster.audit.count({ client: 'informer-faults', verb: 'watch', code: 429 }) === 3,
      'three 429s served',
    );
    await informer.stop();
    client.close();
  });
});
