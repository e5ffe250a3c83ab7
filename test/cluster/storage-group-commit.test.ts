// Group commit of the SQLite store (store.ts durable(), persistence.ts begin/commit): the writes of one event loop
// turn are one transaction; no client is answered and no watcher told before the transaction holding the write
// has committed; a failed commit answers 500 to every write in it and leaves neither the database nor the
// in-memory store with any of them. A wrapper around the real SQLite backend counts transactions, holds a commit
// or makes one fail.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { startApiServer, type ApiServer } from '../../src/cluster/http/api-server.ts';
import { buildKubeconfig, ensureServingCertificates } from '../../src/cluster/http/tls.ts';
import { openSqliteBackend } from '../../src/cluster/storage/persistence.ts';
import type { StoreBackend } from '../../src/cluster/storage/store.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { KubeObject } from '../../src/types/k8s.ts';
import { raw } from './api-harness.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/**
 * The real SQLite backend, counting transactions; a commit can be held (`hold`) or made to fail (`failNext`). It
 * has no groupTurns: a transaction stays open for one loop turn.
 */
class WrappedBackend implements StoreBackend {
  transactions = 0;
  private open = false;
  hold: Promise<void> | undefined;
  /** Resolves when a commit is asked for. */
  commitAsked: PromiseWithResolversLike = resolvers();
  failNext = false;
  constructor(private readonly real: StoreBackend) {}
  /** Holds the next commits until the returned function is called. */
  holdCommits(): () => void {
    const gate = resolvers();
    this.hold = gate.promise;
    this.commitAsked = resolvers();
    return () => {
      this.hold = undefined;
      gate.resolve();
    };
  }
  load() {
    return this.real.load();
  }
  put(resource: string, key: string, rv: number, json: string) {
    if (!this.open) this.transactions++;
    this.real.put(resource, key, rv, json);
  }
  remove(resource: string, key: string, rv: number) {
    if (!this.open) this.transactions++;
    this.real.remove(resource, key, rv);
  }
  begin() {
    this.transactions++;
    this.open = true;
    this.real.begin?.();
  }
  commit(): void | Promise<void> {
    this.commitAsked.resolve();
    const finish = () => {
      this.open = false;
      if (this.failNext) {
        this.failNext = false;
        throw new Error('disk I/O error (injected)');
      }
      this.real.commit?.();
    };
    if (!this.hold) return finish();
    return this.hold.then(finish);
  }
  rollback() {
    this.open = false;
    this.real.rollback?.();
  }
  close() {
    this.real.close();
  }
}

interface PromiseWithResolversLike {
  promise: Promise<void>;
  resolve: () => void;
}
function resolvers(): PromiseWithResolversLike {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

async function sqliteStore(): Promise<{ dir: string; backend: WrappedBackend; store: ClusterStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'kp-group-commit-'));
  dirs.push(dir);
  const opened = openSqliteBackend(join(dir, 'cluster.db'));
  assert.ok(opened.backend, 'a SQLite driver is available');
  const backend = new WrappedBackend(opened.backend);
  const store = new ClusterStore({ backend });
  store.createEntry('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } });
  return { dir, backend, store };
}

/** The rows the database holds, read by a fresh connection. */
function rowsOnDisk(dir: string): string[] {
  const again = openSqliteBackend(join(dir, 'cluster.db')).backend!;
  try {
    return again
      .load()
      .objects.filter((o) => o.resource === 'configmaps')
      .map((o) => (JSON.parse(o.json) as KubeObject).metadata.name!)
      .sort();
  } finally {
    again.close();
  }
}

const cm = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'default' },
});

describe('group commit', () => {
  it('commits the writes of one turn in one transaction, and tells watchers only after it', async () => {
    const { dir, backend, store } = await sqliteStore();
    try {
      await new Promise((r) => setImmediate(r)); // the namespace's transaction commits
      const seen: string[] = [];
      const stop = store.watch('configmaps', { resourceVersion: String(store.resourceVersion) }, (ev) =>
        seen.push(ev.object.metadata.name!),
      );
      const before = backend.transactions;
      for (let i = 0; i < 5; i++) store.createEntry('configmaps', cm(`c${i}`));
      store.updateEntry('configmaps', { ...cm('c0'), data: { v: '1' } });
      store.deleteEntry('configmaps', 'default', 'c1');
      assert.deepEqual(seen, [], 'no watcher hears of a write before its commit');
      await store.durable();
      assert.equal(backend.transactions - before, 1, 'seven writes in one turn are one transaction');
      assert.deepEqual(seen, ['c0', 'c1', 'c2', 'c3', 'c4', 'c0', 'c1'], 'then every event, in commit order');
      assert.equal(store.durable(), undefined, 'nothing is pending after the commit');
      stop();
    } finally {
      store.close();
    }
    assert.deepEqual(rowsOnDisk(dir), ['c0', 'c2', 'c3', 'c4']);
  });

  it('gives a watch resumed while writes are pending every event after its resourceVersion, once', async () => {
    const { backend, store } = await sqliteStore();
    try {
      store.createEntry('configmaps', cm('before'));
      await new Promise((r) => setImmediate(r));
      const from = String(store.resourceVersion);
      const commits = backend.transactions;
      store.createEntry('configmaps', cm('pending'));
      const seen: string[] = [];
      const stop = store.watch('configmaps', { resourceVersion: from }, (ev) => seen.push(ev.object.metadata.name!));
      store.createEntry('configmaps', cm('later'));
      await new Promise((r) => setImmediate(r));
      assert.equal(backend.transactions - commits, 1, 'one transaction');
      assert.deepEqual(seen, ['pending', 'later'], 'the pending write is neither lost nor delivered twice');
      stop();
    } finally {
      store.close();
    }
  });

  describe('over HTTPS', () => {
    let server: ApiServer | undefined;
    let store: ClusterStore;
    let backend: WrappedBackend;
    let dir: string;
    let client: { url: string; token: string; kubeConfig: KubeConfig };
    const start = async () => {
      ({ dir, backend, store } = await sqliteStore());
      const tls = await ensureServingCertificates(undefined, ['127.0.0.1']);
      const token = 'group-commit-token';
      server = await startApiServer({ store, token, host: '127.0.0.1', port: 0, tls });
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromString(buildKubeconfig({ server: server.url, caPem: tls.caPem, token }));
      client = { url: server.url, token, kubeConfig };
    };
    const stop = async () => {
      await server?.close();
      store.close();
    };
    const create = (name: string) =>
      raw(client, 'POST', '/api/v1/namespaces/default/configmaps', { body: JSON.stringify(cm(name)) });

    it('answers a write only after the transaction holding it has committed', async () => {
      await start();
      try {
        const release = backend.holdCommits();
        let answered = false;
        const created = create('held').then((r) => ((answered = true), r));
        await Promise.race([backend.commitAsked.promise, created]);
        // Round trips on other connections while the commit is held: an answer sent before the commit would be
        // here by now.
        for (let i = 0; i < 3; i++) assert.equal((await raw(client, 'GET', '/api/v1/namespaces/default')).status, 200);
        assert.equal(answered, false, 'the create is not answered while its commit is held');
        release();
        const r = await created;
        assert.equal(r.status, 201, r.text);
        assert.deepEqual(rowsOnDisk(dir), ['held']);
      } finally {
        await stop();
      }
    });

    it('answers 500 to every write of a failed commit and keeps none of them', async () => {
      await start();
      try {
        const from = String(store.resourceVersion);
        const release = backend.holdCommits();
        const first = create('lost-1');
        await Promise.race([backend.commitAsked.promise, first]);
        // While the commit is held, a second create joins its transaction: both fail with it.
        const second = create('lost-2');
        for (let i = 0; i < 50 && !store.getEntry('configmaps', 'default', 'lost-2'); i++)
          await raw(client, 'GET', '/api/v1/namespaces/default');
        assert.ok(store.getEntry('configmaps', 'default', 'lost-2'), 'the second create joined the open transaction');
        backend.failNext = true;
        release();
        for (const r of [await first, await second]) {
          assert.equal(r.status, 500, r.text);
          assert.match(r.json<{ message: string }>().message, /storage: disk I\/O error \(injected\)/);
        }
        assert.equal(store.getEntry('configmaps', 'default', 'lost-1'), undefined, 'the store keeps neither write');
        assert.equal(store.getEntry('configmaps', 'default', 'lost-2'), undefined);
        assert.equal((await raw(client, 'GET', '/api/v1/namespaces/default/configmaps/lost-1')).status, 404);
        const list = (await raw(client, 'GET', '/api/v1/namespaces/default/configmaps')).json<{ items: unknown[] }>();
        assert.equal(list.items.length, 0);
        // The next write commits normally.
        assert.equal((await create('after')).status, 201);
        assert.deepEqual(rowsOnDisk(dir), ['after'], 'the database holds neither failed write');
        const replayed: string[] = [];
        store.watch('configmaps', { resourceVersion: from }, (ev) => replayed.push(ev.object.metadata.name!))();
        assert.deepEqual(replayed, ['after'], 'nor does the watch history');
      } finally {
        await stop();
      }
    });
  });
});
