// Fault injection (library API and /admin/faults) and the audit counter, observed through client-node.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiException, CoreV1Api, type V1PersistentVolume } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { pvBody, raw } from './api-harness.ts';
import { waitFor } from '../support/wait.ts';

let c: TestCluster;
let core: CoreV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
});
after(() => c.stop());

async function codeOf(p: Promise<unknown>): Promise<number> {
  try {
    await p;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

describe('faults', () => {
  it('fails matching requests by count through the admin endpoint, with Retry-After on 429', async () => {
    const add = await raw(c, 'POST', '/admin/faults', {
      body: JSON.stringify({
        verb: 'create',
        resource: 'persistentvolumes',
        status: 429,
        retryAfterSeconds: 3,
        count: 1,
      }),
    });
    assert.equal(add.status, 200);
    const failed = await raw(c, 'POST', '/api/v1/persistentvolumes', { body: JSON.stringify(pvBody('f1')) });
    assert.equal(failed.status, 429);
    assert.equal(failed.headers['retry-after'], '3');
    assert.equal(failed.json<{ reason: string }>().reason, 'TooManyRequests');
    assert.equal(await codeOf(core.createPersistentVolume({ body: pvBody('f1') as V1PersistentVolume })), 200);
    assert.equal((await raw(c, 'GET', '/admin/faults')).json<{ items: unknown[] }>().items.length, 0);
  });

  it('fails by probability through the library API until cleared, scoped to the named object', async () => {
    c.faults.add({ verb: 'get', resource: 'persistentvolumes', name: 'f1', status: 500, probability: 1 });
    c.faults.add({ verb: 'list', resource: 'persistentvolumes', status: 504 });
    assert.equal(await codeOf(core.readPersistentVolume({ name: 'f1' })), 500);
    assert.equal(await codeOf(core.readPersistentVolume({ name: 'other' })), 404);
    assert.equal(await codeOf(core.listPersistentVolume()), 504);
    const del = await raw(c, 'DELETE', '/admin/faults');
    assert.equal(del.status, 200);
    assert.equal(await codeOf(core.readPersistentVolume({ name: 'f1' })), 200);
  });

  it('rejects a malformed rule with 400', async () => {
    const res = await raw(c, 'POST', '/admin/faults', { body: JSON.stringify({ status: 'boom' }) });
    assert.equal(res.status, 400);
  });
});

describe('audit', () => {
  it('counts requests by client, verb, resource and status code', async () => {
    c.audit.reset();
    await raw(c, 'GET', '/api/v1/persistentvolumes', { headers: { 'user-agent': 'audit-test/1.0' } });
    await raw(c, 'GET', '/api/v1/persistentvolumes/nope', { headers: { 'user-agent': 'audit-test/1.0' } });
    await raw(c, 'GET', '/api/v1/persistentvolumes/nope', { headers: { 'x-client-name': 'named-client' } });
    assert.equal(c.audit.count({ client: 'audit-test', verb: 'list', resource: 'persistentvolumes', code: 200 }), 1);
    assert.equal(c.audit.count({ client: 'audit-test', verb: 'get', code: 404 }), 1);
    assert.equal(c.audit.count({ client: 'named-client' }), 1);
    const viaHttp = (await raw(c, 'GET', '/admin/audit')).json<{
      items: Array<{ client: string; verb: string; count: number }>;
    }>();
    assert.ok(viaHttp.items.some((r) => r.client === 'audit-test/1.0' && r.verb === 'list' && r.count === 1));
  });
});

describe('event expiry', () => {
  it('deletes events once their TTL has passed', async () => {
    const short = await startCluster({ controllers: false, eventTtlMs: 2000 });
    try {
      const api = short.kubeConfig.makeApiClient(CoreV1Api);
      await api.createNamespacedEvent({
        namespace: 'default',
        body: {
          metadata: { name: 'old' },
          involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
          reason: 'R',
          message: 'm',
        },
      });
      assert.equal((await api.listNamespacedEvent({ namespace: 'default' })).items.length, 1);
      await waitFor('the expired event collected', () => short.store.list('events').items.length === 0, 10_000);
    } finally {
      await short.stop();
    }
  });
});
