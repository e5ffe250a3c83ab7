// The health/metrics server over real HTTP on port 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Counter } from 'prom-client';
import { createMetricsRegistry } from '../../src/runtime/metrics.ts';
import { InvalidAddressError, parseListenAddress, startHealthServer } from '../../src/runtime/health-server.ts';

async function fetchText(
  url: string,
  init?: RequestInit,
): Promise<{ status: number; body: string; type: string | null }> {
  const res = await fetch(url, init);
  return { status: res.status, body: await res.text(), type: res.headers.get('content-type') };
}

test('healthz/readyz: ok, failing checks named, verbose, exclude, per-check paths', async () => {
  let synced = false;
  let leader: boolean | string = 'renewal late by 12s';
  const server = await startHealthServer({
    address: '127.0.0.1:0',
    checks: {
      healthz: { ping: () => true, leader: () => leader },
      readyz: {
        informers: () => synced,
        asyncCheck: async () => true,
        broken: () => {
          throw new Error('boom');
        },
      },
    },
  });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    let r = await fetchText(`${server.url}/healthz`);
    assert.equal(r.status, 500);
    assert.equal(r.body, '[+]ping ok\n[-]leader failed: renewal late by 12s\nhealthz check failed\n');
    leader = true;
    r = await fetchText(`${server.url}/healthz`);
    assert.deepEqual([r.status, r.body], [200, 'ok']);
    r = await fetchText(`${server.url}/healthz?verbose`);
    assert.deepEqual([r.status, r.body], [200, '[+]ping ok\n[+]leader ok\nhealthz check passed\n']);
    leader = false;
    r = await fetchText(`${server.url}/healthz/ping`);
    assert.deepEqual([r.status, r.body], [200, 'ok']);
    r = await fetchText(`${server.url}/healthz/leader`);
    assert.equal(r.status, 500);
    r = await fetchText(`${server.url}/healthz/nope`);
    assert.equal(r.status, 404);

    r = await fetchText(`${server.url}/readyz`);
    assert.equal(r.status, 500);
    assert.equal(
      r.body,
      '[-]informers failed: reason withheld\n[+]asyncCheck ok\n[-]broken failed: boom\nreadyz check failed\n',
    );
    synced = true;
    r = await fetchText(`${server.url}/readyz?exclude=broken`);
    assert.deepEqual([r.status, r.body], [200, 'ok']);
    r = await fetchText(`${server.url}/readyz?exclude=broken&verbose`);
    assert.equal(r.body, '[+]informers ok\n[+]asyncCheck ok\n[+]broken excluded: ok\nreadyz check passed\n');

    r = await fetchText(`${server.url}/metrics`);
    assert.equal(r.status, 404, 'no registry, no metrics');
    r = await fetchText(`${server.url}/healthz`, { method: 'POST' });
    assert.equal(r.status, 405);
  } finally {
    await server.stop();
  }
});

test('/metrics serves the caller registry with its content type; stop closes keep-alive sockets', async () => {
  const registry = createMetricsRegistry();
  const counter = new Counter({ name: 'test_things_total', help: 'things', registers: [registry] });
  counter.inc(3);
  const server = await startHealthServer({ address: 'localhost:0', registry });
  const r = await fetchText(`${server.url}/metrics`);
  assert.equal(r.status, 200);
  assert.equal(r.type, registry.contentType);
  assert.match(r.body, /^test_things_total 3$/m);
  await server.stop();
  await server.stop(); // idempotent
  await assert.rejects(fetch(`${server.url}/healthz`));
});

test('an aborted signal stops the server', async () => {
  const ac = new AbortController();
  const server = await startHealthServer({ address: '127.0.0.1:0', signal: ac.signal });
  assert.equal((await fetchText(`${server.url}/healthz`)).body, 'ok', 'no checks means healthy');
  ac.abort();
  await server.stop();
  await assert.rejects(fetch(`${server.url}/healthz`));
});

test('listen addresses', () => {
  assert.deepEqual(parseListenAddress('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseListenAddress(':9090'), { host: '', port: 9090 });
  assert.deepEqual(parseListenAddress('[::1]:0'), { host: '::1', port: 0 });
  for (const bad of ['8080', 'host:', 'host:99999', '::1:80', 'a:b'])
    assert.throws(() => parseListenAddress(bad), InvalidAddressError, bad);
});
