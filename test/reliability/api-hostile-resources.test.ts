// The API server's resources under hostile clients and hostile disks: data-at-rest permissions, stalled
// watchers (per-watch and server-wide buffer bounds, memory returned once they are gone), unreadable store rows
// at start-up, idle and slow connections that never authenticate, and the fault injector's lost responses and
// seeded draws. Limits are configured small through server options so every case stays fast.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import { Faults } from '../../src/cluster/http/faults.ts';
import { StoreLoadError } from '../../src/cluster/storage/persistence.ts';
import { waitFor } from '../support/wait.ts';
import { call, closedFlag, connectTcp, connectTls, type Endpoint } from './raw-http.ts';

const CMS = '/api/v1/namespaces/default/configmaps';
const cm = (name: string, data: Record<string, string> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
const endpoint = (c: EmbeddedCluster): Endpoint => ({ url: c.url, token: c.token, caPem: c.caPem });
let tmp: string;

before(async () => {
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-hostile-'));
});
after(() => fsp.rm(tmp, { recursive: true, force: true }));

const mode = async (p: string) => (await fsp.stat(p)).mode & 0o777;

describe('data at rest', () => {
  it('the data dir is 0700 and the database files 0600, also on a dir an older version created', async () => {
    const dir = path.join(tmp, 'old-data');
    await fsp.mkdir(dir, { mode: 0o755 });
    await fsp.chmod(dir, 0o755);
    const first = await startEmbeddedCluster({ dataDir: dir, controllers: false });
    assert.equal((await call(endpoint(first), 'POST', CMS, { body: cm('secretish') })).status, 201);
    await first.stop();
    for (const f of ['cluster.db', 'cluster.db-wal', 'cluster.db-shm'])
      await fsp.chmod(path.join(dir, f), 0o644).catch(() => {});
    await fsp.chmod(dir, 0o755);
    const again = await startEmbeddedCluster({ dataDir: dir, controllers: false });
    try {
      assert.equal((await call(endpoint(again), 'POST', CMS, { body: cm('more') })).status, 201);
      assert.equal((await mode(dir)).toString(8), '700');
      for (const f of await fsp.readdir(dir)) {
        if (f.startsWith('cluster.db')) assert.equal((await mode(path.join(dir, f))).toString(8), '600', f);
      }
    } finally {
      await again.stop();
    }
  });
});

describe('unreadable store rows', () => {
  it('start-up names the file, the resource and key, and what to do', async () => {
    const dir = path.join(tmp, 'corrupt');
    const first = await startEmbeddedCluster({ dataDir: dir, controllers: false });
    assert.equal((await call(endpoint(first), 'POST', CMS, { body: cm('broken') })).status, 201);
    await first.stop();
    const file = path.join(dir, 'cluster.db');
    const db = new Database(file);
    db.prepare(
      "UPDATE objects SET json = '{\"metadata\": {' WHERE resource = 'configmaps' AND key = 'default/broken'",
    ).run();
    db.close();
    await assert.rejects(startEmbeddedCluster({ dataDir: dir, controllers: false }), (err: unknown) => {
      assert.ok(err instanceof StoreLoadError, String(err));
      assert.match(err.message, new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      assert.match(err.message, /configmaps/);
      assert.match(err.message, /default\/broken/);
      assert.match(err.message, /restore|DELETE FROM objects/);
      return true;
    });
  });
});

describe('stalled watchers', () => {
  let c: EmbeddedCluster;
  before(async () => {
    c = await startEmbeddedCluster({
      controllers: false,
      limits: { maxWatchBufferBytes: 256 * 1024, maxTotalWatchBufferBytes: 512 * 1024 },
    });
  });
  after(() => c.stop());

  it('watches that never read are cut at their bound, the server-wide total stays bounded, memory returns', async () => {
    const e = endpoint(c);
    const baseline = c.server.stats().connections;
    const stalled = await Promise.all(Array.from({ length: 4 }, () => connectTls(e)));
    const closed = stalled.map(closedFlag);
    for (const s of stalled) {
      s.pause();
      s.write(
        `GET ${CMS}?watch=true&resourceVersion=${c.store.resourceVersion} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${e.token}\r\n\r\n`,
      );
    }
    await waitFor('4 watches', () => c.server.watches.size === 4);
    assert.equal((await call(e, 'POST', CMS, { body: cm('big') })).status, 201);
    let peak = 0;
    const value = 'v'.repeat(500 * 1024);
    for (let i = 0; i < 60 && c.server.watches.size > 0; i++) {
      const res = await call(e, 'PUT', `${CMS}/big`, { body: cm('big', { k: `${i}${value}` }) });
      assert.equal(res.status, 200);
      peak = Math.max(peak, c.server.stats().watchBufferedBytes);
    }
    await waitFor('every stalled watch to be cut', () => c.server.watches.size === 0);
    await waitFor('their connections to be destroyed', () => c.server.stats().connections <= baseline);
    assert.equal(c.server.stats().watchBufferedBytes, 0);
    // One event may land before the bound is checked.
    assert.ok(peak <= 512 * 1024 + 600 * 1024, `peak buffered ${peak}`);
    for (const s of stalled) s.destroy();
    await waitFor('client sockets closed', () => closed.every((f) => f()));
  });
});

describe('connections that never authenticate', () => {
  let c: EmbeddedCluster;
  before(async () => {
    c = await startEmbeddedCluster({
      controllers: false,
      limits: { headersTimeoutMs: 400, maxUnauthenticatedConnections: 5 },
    });
  });
  after(() => c.stop());

  it('no handshake, slow headers: capped, then timed out; authenticated clients still served', async () => {
    const e = endpoint(c);
    const idle = await Promise.all(Array.from({ length: 12 }, () => connectTcp(e)));
    const idleClosed = idle.map(closedFlag);
    await waitFor(
      'the unauthenticated cap to hold',
      () => c.server.stats().unauthenticatedConnections <= 5 && idleClosed.filter((f) => f()).length >= 7,
    );
    await waitFor('every idle connection to time out', () => idleClosed.every((f) => f()));
    const slow = await connectTls(e);
    const slowClosed = closedFlag(slow);
    slow.write('GET /api/v1/namespaces HTTP/1.1\r\nHost: local');
    await waitFor('the slow-header connection to time out', slowClosed);
    const slowBody = await connectTls(e);
    const bodyClosed = closedFlag(slowBody);
    slowBody.write(
      `POST ${CMS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"a":`,
    );
    await waitFor('the token-less slow body to be cut', bodyClosed);
    assert.equal((await call(e, 'GET', CMS)).status, 200);
    assert.equal(c.server.stats().unauthenticatedConnections, 0);
  });
});

describe('lost responses and seeded faults', () => {
  let c: EmbeddedCluster;
  before(async () => {
    c = await startEmbeddedCluster({ controllers: false });
  });
  after(() => c.stop());

  it('a lost response applies the write and answers 504', async () => {
    const e = endpoint(c);
    c.faults.add({ verb: 'create', resource: 'configmaps', lostResponse: 'timeout', count: 1 });
    const res = await call(e, 'POST', CMS, { body: cm('lost-504') });
    assert.equal(res.status, 504);
    assert.equal((await call(e, 'GET', `${CMS}/lost-504`)).status, 200, 'the write was applied');
  });

  it('a lost response applies the write and resets the connection', async () => {
    const e = endpoint(c);
    c.faults.add({ verb: 'delete', resource: 'configmaps', lostResponse: 'reset', count: 1 });
    await assert.rejects(call(e, 'DELETE', `${CMS}/lost-504`), /socket hang up|ECONNRESET/);
    assert.equal((await call(e, 'GET', `${CMS}/lost-504`)).status, 404, 'the delete was applied');
    await waitFor(
      'the audit entry of the reset',
      () => c.audit.count({ verb: 'delete', resource: 'configmaps', code: 0 }) === 1,
    );
  });

  it('the admin endpoint takes lost-response rules and a seed; equal seeds draw equal faults', async () => {
    const e = endpoint(c);
    const rules = { seed: 42, rules: [{ verb: 'get', resource: 'configmaps', status: 500, probability: 0.5 }] };
    const draws = async () => {
      assert.equal((await call(e, 'POST', '/admin/faults', { body: JSON.stringify(rules) })).status, 200);
      const codes: number[] = [];
      for (let i = 0; i < 30; i++) codes.push((await call(e, 'GET', `${CMS}/none`)).status);
      await call(e, 'DELETE', '/admin/faults');
      return codes;
    };
    const first = await draws();
    assert.deepEqual(await draws(), first);
    assert.ok(first.includes(500) && first.includes(404), first.join(','));
    const bad = await call(e, 'POST', '/admin/faults', { body: JSON.stringify({ lostResponse: 'sometimes' }) });
    assert.equal(bad.status, 400);
    const a = new Faults({ seed: 7 });
    const b = new Faults({ seed: 7 });
    for (const f of [a, b]) f.add({ status: 500, probability: 0.3 });
    const seq = (f: Faults) =>
      Array.from({ length: 50 }, () => (f.decide({ verb: 'get', resource: 'pods' }) ? 1 : 0)).join('');
    assert.equal(seq(a), seq(b));
  });
});
