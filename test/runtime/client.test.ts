// KubeClient against a tiny in-test node:http server: error classes, retry policy per verb, timeouts,
// pagination, watch framing, content types, user agent, the QPS bucket, and kubeconfig loading.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  AlreadyExistsError,
  ConflictError,
  GoneError,
  InvalidError,
  NetworkError,
  NotFoundError,
  ServerError,
  TimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
} from '../../src/runtime/status-errors.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { KubeConfigError } from '../../src/runtime/rest-config.ts';
import { persistentVolumes, persistentVolumeClaims, type ApiResource } from '../../src/runtime/resources.ts';

/** PersistentVolumes addressed without the object type, for bodies the fake server never checks. */
const untypedPvs: ApiResource = persistentVolumes;
import { TokenBucket } from '../../src/runtime/token-bucket.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import type { KubeObject, PersistentVolume } from '../../src/types/k8s.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';

type Handler = (req: http.IncomingMessage, body: string, res: http.ServerResponse) => void;

interface Fake {
  url: string;
  requests: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;
  handle: Handler;
  close(): Promise<void>;
}

async function fakeServer(): Promise<Fake> {
  const fake: Fake = {
    url: '',
    requests: [],
    handle: (_req, _body, res) => res.end('{}'),
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      fake.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      fake.handle(req, body, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}

function kubeConfigFor(url: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  return kc;
}

function status(res: http.ServerResponse, code: number, reason: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'Content-Type': 'application/json', ...headers });
  res.end(
    JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      reason,
      code,
      message: `${reason}!`,
    }),
  );
}

async function withFake(
  fn: (fake: Fake, client: KubeClient) => Promise<void>,
  opts: { retryBaseDelayMs?: number; timeoutMs?: number } = {},
): Promise<void> {
  const fake = await fakeServer();
  const client = new KubeClient({
    kubeConfig: kubeConfigFor(fake.url),
    userAgent: 'test-agent/1',
    qps: 0,
    retryBaseDelayMs: 1,
    ...opts,
  });
  try {
    await fn(fake, client);
  } finally {
    client.close();
    await fake.close();
  }
}

test('get sends auth, user agent and accept headers, returns plain JSON', () =>
  withFake(async (fake, client) => {
    fake.handle = (_req, _b, res) =>
      res.end(
        JSON.stringify({
          kind: 'PersistentVolume',
          metadata: { name: 'pv1', creationTimestamp: '2026-01-01T00:00:00Z' },
        }),
      );
    const pv = await client.get(persistentVolumes, 'pv1');
    assert.equal(pv.metadata.creationTimestamp, '2026-01-01T00:00:00Z');
    const req = fake.requests[0];
    assert.equal(req.url, '/api/v1/persistentvolumes/pv1');
    assert.equal(req.headers.authorization, 'Bearer secret-token');
    assert.equal(req.headers['user-agent'], 'test-agent/1');
    assert.equal(req.headers.accept, 'application/json');
  }));

test('errors map to typed classes with reason and code', () =>
  withFake(async (fake, client) => {
    const cases: Array<[number, string, new (...a: never[]) => Error]> = [
      [404, 'NotFound', NotFoundError],
      [409, 'AlreadyExists', AlreadyExistsError],
      [409, 'Conflict', ConflictError],
      [410, 'Expired', GoneError],
      [422, 'Invalid', InvalidError],
      [401, 'Unauthorized', UnauthorizedError],
    ];
    for (const [code, reason, cls] of cases) {
      fake.handle = (_r, _b, res) => status(res, code, reason);
      await assert.rejects(
        client.create(untypedPvs, { metadata: { name: 'x' } }),
        (err: Error & { code?: number; reason?: string }) => {
          assert.ok(err instanceof cls, `${code} ${reason} -> ${err.name}`);
          assert.equal(err.code, code);
          assert.equal(err.reason, reason);
          return true;
        },
      );
    }
    fake.handle = (_r, _b, res) => {
      res.writeHead(404);
      res.end('404 page not found');
    };
    await assert.rejects(client.get(persistentVolumes, 'x'), NotFoundError);
  }));

test('reads retry 5xx and 429 (honouring Retry-After); writes retry only 429', () =>
  withFake(async (fake, client) => {
    let n = 0;
    fake.handle = (_r, _b, res) =>
      ++n <= 2 ? status(res, 500, 'InternalError') : res.end('{"metadata":{"name":"a"}}');
    assert.equal((await client.get(persistentVolumes, 'a')).metadata.name, 'a');
    assert.equal(n, 3);

    n = 0;
    fake.handle = (_r, _b, res) => {
      n++;
      status(res, 500, 'InternalError');
    };
    await assert.rejects(client.create(untypedPvs, { metadata: { name: 'a' } }), ServerError);
    assert.equal(n, 1, 'a write is not retried on 500');

    n = 0;
    fake.handle = (_r, _b, res) =>
      ++n === 1 ? status(res, 429, 'TooManyRequests', { 'Retry-After': '0' }) : res.end('{"metadata":{"name":"a"}}');
    await client.create(untypedPvs, { metadata: { name: 'a' } });
    assert.equal(n, 2, 'a write is retried on 429');

    n = 0;
    fake.handle = (_r, _b, res) => {
      n++;
      status(res, 429, 'TooManyRequests', { 'Retry-After': '0' });
    };
    await assert.rejects(client.get(persistentVolumes, 'a'), TooManyRequestsError);
    assert.equal(n, 6, 'one try plus five retries');
  }));

test('connection refused is retried even for writes, then surfaces as NetworkError', async () => {
  const fake = await fakeServer();
  const url = fake.url;
  await fake.close();
  const client = new KubeClient({ kubeConfig: kubeConfigFor(url), qps: 0, retryBaseDelayMs: 1, maxRetries: 2 });
  await assert.rejects(client.create(untypedPvs, { metadata: { name: 'a' } }), (err: NetworkError) => {
    assert.ok(err instanceof NetworkError);
    assert.equal(err.errno, 'ECONNREFUSED');
    assert.equal(err.sent, false);
    return true;
  });
  client.close();
});

test('per-request timeout gives TimeoutError; caller abort gives the abort reason', () =>
  withFake(async (fake, client) => {
    fake.handle = () => {}; // never answers
    await assert.rejects(client.create(untypedPvs, { metadata: { name: 'a' } }, { timeoutMs: 50 }), TimeoutError);
    const ac = new AbortController();
    const p = client.create(untypedPvs, { metadata: { name: 'a' } }, { signal: ac.signal, timeoutMs: 0 });
    setTimeout(() => ac.abort(new Error('caller gave up')), 20);
    await assert.rejects(p, (err: Error) => err.name === 'AbortError' || err.message === 'caller gave up');
  }));

test('listAll follows continue tokens and fills kind/apiVersion', () =>
  withFake(async (fake, client) => {
    fake.handle = (req, _b, res) => {
      const u = new URL(req.url ?? '', 'http://x');
      assert.equal(u.searchParams.get('limit'), '2');
      const page = u.searchParams.get('continue') ?? '0';
      const next = String(Number(page) + 1);
      res.end(
        JSON.stringify({
          kind: 'PersistentVolumeClaimList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '42', continue: page === '2' ? undefined : next },
          items: [
            { metadata: { name: `p${page}a`, namespace: 'ns' } },
            { metadata: { name: `p${page}b`, namespace: 'ns' } },
          ],
        }),
      );
    };
    const { items, resourceVersion } = await client.listAll(persistentVolumeClaims, { namespace: 'ns', limit: 2 });
    assert.equal(resourceVersion, '42');
    assert.deepEqual(
      items.map((i) => i.metadata.name),
      ['p0a', 'p0b', 'p1a', 'p1b', 'p2a', 'p2b'],
    );
    assert.equal(items[0].kind, 'PersistentVolumeClaim');
    assert.equal(items[0].apiVersion, 'v1');
    assert.equal(fake.requests[0].url.split('?')[0], '/api/v1/namespaces/ns/persistentvolumeclaims');
  }));

test('patch defaults to merge-patch; delete sends preconditions', () =>
  withFake(async (fake, client) => {
    fake.handle = (_r, _b, res) => res.end('{"metadata":{"name":"a"}}');
    await client.patch(persistentVolumes, 'a', { metadata: { labels: { x: 'y' } } });
    await client.patch(persistentVolumes, 'a', [{ op: 'test', path: '/metadata/resourceVersion', value: '1' }], {
      type: 'json',
    });
    await client.patch(persistentVolumes, 'a', {}, { type: 'strategic', subresource: 'status' });
    await client.delete(persistentVolumes, 'a', { preconditions: { uid: 'u1', resourceVersion: '7' } });
    assert.equal(fake.requests[0].headers['content-type'], 'application/merge-patch+json');
    assert.equal(fake.requests[1].headers['content-type'], 'application/json-patch+json');
    assert.equal(fake.requests[2].headers['content-type'], 'application/strategic-merge-patch+json');
    assert.equal(fake.requests[2].url, '/api/v1/persistentvolumes/a/status');
    assert.equal(fake.requests[3].method, 'DELETE');
    assert.deepEqual(JSON.parse(fake.requests[3].body).preconditions, { uid: 'u1', resourceVersion: '7' });
  }));

test('watch parses events split across chunks and turns in-stream 410 into GoneError', () =>
  withFake(async (fake, client) => {
    fake.handle = (req, _b, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const ev1 = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '5' } } });
      const ev2 = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '6' } } });
      const err = JSON.stringify({
        type: 'ERROR',
        object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason: 'Expired', code: 410 },
      });
      res.write(ev1.slice(0, 10));
      setTimeout(() => {
        res.write(ev1.slice(10) + '\n' + ev2 + '\n');
        setTimeout(() => res.end(err + '\n'), 10);
      }, 10);
      assert.match(req.url ?? '', /watch=true/);
      assert.match(req.url ?? '', /allowWatchBookmarks=true/);
    };
    const stream = await client.watch(persistentVolumes, {
      resourceVersion: '4',
      allowWatchBookmarks: true,
      timeoutSeconds: 10,
    });
    const seen: string[] = [];
    await assert.rejects(async () => {
      for await (const ev of stream) seen.push(`${ev.type}:${ev.object.metadata.resourceVersion}`);
    }, GoneError);
    assert.deepEqual(seen, ['ADDED:5', 'BOOKMARK:6']);
  }));

test('watch: HTTP 410 rejects at open; idle timeout fails the stream; close() ends it quietly', () =>
  withFake(async (fake, client) => {
    fake.handle = (_r, _b, res) => status(res, 410, 'Expired');
    await assert.rejects(client.watch(persistentVolumes, { resourceVersion: '1' }), GoneError);

    fake.handle = (_r, _b, res) => {
      res.writeHead(200);
      res.write('');
    };
    const idle = await client.watch(persistentVolumes, { idleTimeoutMs: 50 });
    await assert.rejects(async () => {
      for await (const _ of idle) {
        /* none */
      }
    }, TimeoutError);

    const quiet = await client.watch(persistentVolumes, {});
    setTimeout(() => quiet.close(), 20);
    let count = 0;
    for await (const _ of quiet) count++;
    assert.equal(count, 0);
  }));

test('requests wait for the QPS bucket; withOptions can give a separate budget', async () => {
  const fake = await fakeServer();
  fake.handle = (_r, _b, res) => res.end('{"metadata":{}}');
  const clock = new TestClock();
  const bucket = new TokenBucket(1, 2, clock);
  const client = new KubeClient({ kubeConfig: kubeConfigFor(fake.url), bucket, clock });
  const dedicated = client.withOptions({ qps: 0, userAgent: 'elector' });
  try {
    await client.get(persistentVolumes, 'a');
    await client.get(persistentVolumes, 'a');
    let third = false;
    const p = client.get(persistentVolumes, 'a').then(() => {
      third = true;
    });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(third, false, 'third request waits for a token');
    await dedicated.get(persistentVolumes, 'b'); // not blocked by the exhausted shared bucket
    assert.equal(fake.requests.at(-1)?.headers['user-agent'], 'elector');
    await clock.advance(1000);
    await p;
    assert.equal(third, true);
  } finally {
    client.close();
    await fake.close();
  }
});

test('loadKubeConfig: explicit path, KUBECONFIG, home, and a clear error when nothing exists', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kubeconfig-'));
  try {
    const yaml = (server: string) =>
      `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ${server}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n`;
    await writeFile(join(dir, 'a'), yaml('https://a.example:6443'));
    await writeFile(join(dir, 'b'), yaml('https://b.example:6443'));
    await mkdir(join(dir, 'home', '.kube'), { recursive: true });
    await writeFile(join(dir, 'home', '.kube', 'config'), yaml('https://home.example:6443'));
    const server = (r: ReturnType<typeof loadKubeConfig>) => r.kubeConfig.getCurrentCluster()?.server;
    assert.equal(
      server(loadKubeConfig({ path: join(dir, 'a'), env: { KUBECONFIG: join(dir, 'b') } })),
      'https://a.example:6443',
    );
    const fromEnv = loadKubeConfig({ env: { KUBECONFIG: join(dir, 'b') }, home: join(dir, 'home') });
    assert.equal(fromEnv.source, 'KUBECONFIG');
    assert.equal(server(fromEnv), 'https://b.example:6443');
    assert.equal(server(loadKubeConfig({ env: {}, home: join(dir, 'home') })), 'https://home.example:6443');
    assert.throws(
      () => loadKubeConfig({ env: {}, home: join(dir, 'nowhere'), inClusterPathPrefix: join(dir, 'nosa') }),
      KubeConfigError,
    );
    assert.throws(() => loadKubeConfig({ path: join(dir, 'missing') }), KubeConfigError);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe('client against the embedded cluster (HTTPS)', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster({ controllers: false });
  });
  after(async () => {
    await cluster.stop();
  });

  const pvBody = (name: string): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` } },
  });

  test('real Status errors map to typed classes (NotFound, AlreadyExists, Conflict, Invalid with causes, Gone)', async () => {
    const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'client-errors' });
    try {
      await assert.rejects(client.get(persistentVolumes, 'nope'), NotFoundError);
      const created = await client.create<KubeObject>(persistentVolumes, pvBody('e1'));
      await assert.rejects(client.create(untypedPvs, pvBody('e1')), AlreadyExistsError);
      await client.patch(persistentVolumes, 'e1', { metadata: { labels: { a: 'b' } } });
      await assert.rejects(client.update(persistentVolumes, created), ConflictError, 'stale resourceVersion');
      await assert.rejects(
        client.create(persistentVolumes, { metadata: { name: 'Bad_Name' }, spec: {} }),
        (err: InvalidError) => {
          assert.ok(err instanceof InvalidError);
          assert.equal(err.code, 422);
          assert.ok(err.causes.length > 0);
          return true;
        },
      );
      await assert.rejects(client.delete(persistentVolumes, 'e1', { preconditions: { uid: 'wrong' } }), ConflictError);
      cluster.faults.compact();
      const stream = await client
        .watch(persistentVolumes, { resourceVersion: created.metadata.resourceVersion })
        .catch((e: unknown) => e);
      if (stream instanceof Error) assert.ok(stream instanceof GoneError, stream.name);
      else
        await assert.rejects(async () => {
          for await (const _ of stream as AsyncIterable<unknown>) {
            /* none */
          }
        }, GoneError);
    } finally {
      client.close();
    }
  });

  test('429 and 500 bursts: reads retry both, writes retry only 429 (audit shows every attempt)', async () => {
    const client = new KubeClient({
      kubeConfig: cluster.kubeConfig,
      qps: 0,
      userAgent: 'client-bursts',
      retryBaseDelayMs: 5,
    });
    try {
      await client.create(persistentVolumes, pvBody('b1'));
      cluster.faults.add({ verb: 'get', resource: 'persistentvolumes', status: 500, count: 3 });
      cluster.faults.add({ verb: 'list', resource: 'persistentvolumes', status: 429, retryAfterSeconds: 0, count: 2 });
      assert.equal((await client.get(persistentVolumes, 'b1')).metadata.name, 'b1');
      assert.ok((await client.list(persistentVolumes)).items.length >= 1);
      cluster.faults.add({
        verb: 'create',
        resource: 'persistentvolumes',
        status: 429,
        retryAfterSeconds: 0,
        count: 2,
      });
      await client.create(persistentVolumes, pvBody('b2'));
      cluster.faults.add({ verb: 'patch', resource: 'persistentvolumes', status: 500, count: 1 });
      await assert.rejects(client.patch(persistentVolumes, 'b2', { metadata: { labels: { x: 'y' } } }), ServerError);
      cluster.faults.add({ verb: 'get', resource: 'persistentvolumes', status: 504, count: 1 });
      await client.get(persistentVolumes, 'b2');
      const n = (f: { verb: string; code: number }) =>
        cluster.audit.count({ client: 'client-bursts', resource: 'persistentvolumes', ...f });
      assert.equal(n({ verb: 'get', code: 500 }), 3);
      assert.equal(n({ verb: 'get', code: 200 }), 2);
      assert.equal(n({ verb: 'get', code: 504 }), 1);
      assert.equal(n({ verb: 'list', code: 429 }), 2);
      assert.equal(n({ verb: 'create', code: 429 }), 2);
      assert.equal(n({ verb: 'create', code: 201 }), 2);
      assert.equal(n({ verb: 'patch', code: 500 }), 1, 'a failed write is not repeated');
    } finally {
      cluster.faults.clear();
      client.close();
    }
  });
});
