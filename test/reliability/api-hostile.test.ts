// The API server attacked as a hostile client would: token-less floods with huge User-Agents, amplifying JSON
// patches, `__proto__` keys, deep nesting, unparsable request targets, overflowing watch timeouts and
// out-of-range protobuf times. Each case checks the answer, that nothing was stored or half-stored, that the
// retained state stays bounded (counts, not times), and that the server logged no internal error.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { Audit } from '../../src/cluster/http/audit.ts';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import { MAX_TIMER_MS, setLongTimeout, watchTimeoutMs } from '../../src/cluster/common/long-timeout.ts';
import { applyJsonPatch } from '../../src/cluster/patch/patch.ts';
import { PatchError } from '../../src/cluster/patch/patch-error.ts';
import { answerSafely } from '../../src/cluster/http/api-server.ts';
import { waitFor } from '../support/wait.ts';
import { call, connectTls, keepAliveAgent, rawStatus, statusOf, type Endpoint } from './raw-http.ts';

const CMS = '/api/v1/namespaces/default/configmaps';
let c: EmbeddedCluster;
let e: Endpoint;
const internalErrors: unknown[] = [];

before(async () => {
  c = await startEmbeddedCluster({
    controllers: false,
    onError: (err) => internalErrors.push(err),
    limits: { maxAuditClients: 20, maxClientNameLength: 64 },
  });
  e = { url: c.url, token: c.token, caPem: c.caPem };
});
after(() => c.stop());

const cm = (name: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, ...extra });
const patch = (name: string, type: string, body: unknown) =>
  call(e, 'PATCH', `${CMS}/${name}`, { body: JSON.stringify(body), contentType: `application/${type}-patch+json` });

describe('unauthenticated requests keep nothing', () => {
  it('token-less requests with huge distinct User-Agents add no audit entry', async () => {
    const agent = keepAliveAgent(e);
    try {
      for (let i = 0; i < 300; i += 10) {
        const batch = Array.from({ length: 10 }, (_, j) =>
          statusOf(e, agent, 'GET', CMS, { 'user-agent': `flood-${i + j}-${'u'.repeat(8192)}` }),
        );
        assert.deepEqual(await Promise.all(batch), Array(10).fill(401));
      }
    } finally {
      agent.destroy();
    }
    assert.equal(c.audit.records().filter((r) => r.client.startsWith('flood-')).length, 0);
    assert.equal(c.audit.count({ code: 401 }), 0);
  });

  it('authenticated clients: names truncated, past the limit counted as "other"', async () => {
    for (let i = 0; i < 60; i++)
      assert.equal(
        (await call(e, 'GET', CMS, { headers: { 'x-client-name': `client-${i}-${'n'.repeat(4000)}` } })).status,
        200,
      );
    const clients = new Set(c.audit.records().map((r) => r.client));
    assert.ok(clients.size <= 21, `${clients.size} distinct clients retained`);
    assert.ok(clients.has('other'));
    for (const name of clients) assert.ok(name.length <= 64, `client name of ${name.length} characters`);
    assert.equal(c.audit.count({ verb: 'list', resource: 'configmaps' }) >= 60, true);
  });

  it('the Audit class bounds its own cardinality', () => {
    const audit = new Audit({ maxClients: 3, maxClientNameLength: 10 });
    for (let i = 0; i < 50; i++) audit.record(`c${i}-some-long-client-name`, 'get', 'pods', 200);
    const names = new Set(audit.records().map((r) => r.client));
    assert.deepEqual([...names].sort(), ['c0-some-lo', 'c1-some-lo', 'c2-some-lo', 'other']);
    assert.equal(audit.count(), 50);
  });
});

describe('JSON patch amplification', () => {
  const selfCopies = (n: number) => [
    { op: 'add', path: '/x', value: Array.from({ length: 100 }, (_, i) => `element-${i}-${'v'.repeat(20)}`) },
    ...Array.from({ length: n }, () => ({ op: 'copy', from: '/x', path: '/x/-' })),
  ];

  it('an accumulated copy size over the body limit is refused (422) and nothing changes', async () => {
    assert.equal((await call(e, 'POST', CMS, { body: cm('amp') })).status, 201);
    const before = (await call(e, 'GET', `${CMS}/amp`)).json<{ metadata: { resourceVersion: string } }>();
    for (const n of [12, 24]) {
      const res = await patch('amp', 'json', selfCopies(n));
      // kube-apiserver answers a failed JSON patch with a generic 422 that does not repeat the patch error.
      assert.equal(res.status, 422, res.text.slice(0, 300));
    }
    const after = (await call(e, 'GET', `${CMS}/amp`)).json<{ metadata: { resourceVersion: string } }>();
    assert.equal(after.metadata.resourceVersion, before.metadata.resourceVersion);
  });

  it('the copy budget is what stops the amplification', () => {
    assert.throws(
      () => applyJsonPatch({}, selfCopies(24)),
      (err: unknown) => err instanceof PatchError && err.code === 422 && /accumulated size/.test(err.message),
    );
    assert.throws(
      () => applyJsonPatch({}, selfCopies(4), 10 * 1024),
      (err: unknown) => err instanceof PatchError && err.code === 422,
    );
    const small = applyJsonPatch({} as { x?: unknown[] }, selfCopies(4));
    assert.equal(small.x?.length, 104);
  });

  it('an exception while writing a response destroys that connection instead of escaping', () => {
    const calls: string[] = [];
    const res = { destroy: () => calls.push('destroy') } as unknown as ServerResponse;
    answerSafely(
      res,
      () => {
        throw new RangeError('Invalid string length');
      },
      (err) => calls.push(`onError ${(err as Error).message}`),
    );
    assert.deepEqual(calls, ['onError Invalid string length', 'destroy']);
  });

  it('more than 10,000 operations are refused with 413', async () => {
    const ops = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/metadata/name', value: 'amp' }));
    assert.equal((await patch('amp', 'json', ops)).status, 413);
  });

  it('a patch result over the object limit is refused (413) before it is serialized', async () => {
    const ops = [0, 1].map((i) => ({ op: 'add', path: `/w${i}`, value: { big: 'x'.repeat(900 * 1024) } }));
    const res = await patch('amp', 'json', ops);
    assert.equal(res.status, 413, res.text.slice(0, 300));
  });
});

describe('__proto__, constructor and prototype are plain data', () => {
  // Raw JSON text: an object literal's `__proto__` would set a prototype instead of a key.
  const protoMerge = '{"metadata":{"__proto__":{"finalizers":["example.com/x"]}}}';
  for (const [type, body] of [
    ['merge', protoMerge],
    ['strategic-merge', protoMerge],
    ['json', '[{"op":"add","path":"/metadata/__proto__","value":{"finalizers":["example.com/x"]}}]'],
    ['merge', '{"metadata":{"constructor":{"prototype":{"finalizers":["example.com/x"]}}}}'],
  ] as const) {
    it(`${type} patch ${body.slice(0, 40)}: no hidden finalizer, DELETE removes the object`, async () => {
      const name = `proto-${type}-${body.length}`;
      assert.equal((await call(e, 'POST', CMS, { body: cm(name) })).status, 201);
      const res = await call(e, 'PATCH', `${CMS}/${name}`, { body, contentType: `application/${type}-patch+json` });
      assert.ok(res.status === 200 || res.status === 422, res.text);
      const del = await call(e, 'DELETE', `${CMS}/${name}`);
      assert.equal(del.status, 200, del.text);
      assert.equal(
        (await call(e, 'GET', `${CMS}/${name}`)).status,
        404,
        'the object must be gone, not waiting on a hidden finalizer',
      );
    });
  }

  it('a created object with __proto__ and constructor keys is plain data', async () => {
    const body =
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"proto-create","__proto__":{"finalizers":["example.com/x"]},"constructor":{"prototype":{"finalizers":["y"]}}}}';
    assert.equal((await call(e, 'POST', CMS, { body })).status, 201);
    assert.equal((await call(e, 'DELETE', `${CMS}/proto-create`)).status, 200);
    assert.equal((await call(e, 'GET', `${CMS}/proto-create`)).status, 404);
    assert.equal(({} as Record<string, unknown>).finalizers, undefined, 'Object.prototype untouched');
  });

  it('a label selector on "constructor" matches only objects with that label', async () => {
    const list = (await call(e, 'GET', `${CMS}?labelSelector=constructor`)).json<{ items: unknown[] }>();
    assert.equal(list.items.length, 0);
  });
});

describe('deep nesting', () => {
  const deepObject = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  const deepArray = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  const listOk = async () => {
    const res = await call(e, 'GET', CMS);
    assert.equal(res.status, 200, res.text.slice(0, 300));
    return res.json<{ items: Array<{ metadata: { name: string } }> }>().items.map((i) => i.metadata.name);
  };

  for (const [what, value] of [
    ['100k objects', deepObject(100_000)],
    ['1M arrays', deepArray(1_000_000)],
    ['10,001 arrays', deepArray(10_001)],
    ['5,000 objects (below the decoding limit)', deepObject(5_000)],
  ] as const) {
    it(`${what} deep: 4xx, nothing stored, LIST still answers`, async () => {
      const name = `deep-${what.split(' ')[0].replace(/\W/g, '')}`;
      const res = await call(e, 'POST', CMS, {
        body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}"},"x":${value}}`,
      });
      if (res.status === 201) {
        // Below the decoding limit the body decodes, and `x` is an unknown field: pruned (with a Warning), as
        // kube-apiserver does, so nothing deep is stored.
        assert.ok(what.includes('below the decoding limit'), `${res.status} ${res.text.slice(0, 200)}`);
        const stored = JSON.parse((await call(e, 'GET', `${CMS}/${name}`)).text) as Record<string, unknown>;
        assert.equal(stored.x, undefined);
        assert.ok((await listOk()).includes(name));
        return;
      }
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
      assert.ok(!(await listOk()).includes(name));
      assert.equal((await call(e, 'GET', `${CMS}/${name}`)).status, 404);
    });
  }

  it('the decoding limit answers 400 before parsing', async () => {
    const res = await call(e, 'POST', CMS, { body: `{"x":${deepArray(10_001)}}` });
    assert.equal(res.status, 400);
    assert.match(res.text, /exceeded max depth/);
  });

  it('a JSON patch that nests a value into itself past the limits fails and stores nothing', async () => {
    assert.equal((await call(e, 'POST', CMS, { body: cm('deep-patch') })).status, 201);
    const path = `/x${'/a'.repeat(3000)}`;
    const ops = [
      { op: 'add', path: '/x', value: JSON.parse(deepObject(3000)) as unknown },
      { op: 'copy', from: '/x', path },
      { op: 'copy', from: '/x', path: `${path}/a`.replace(/\/a$/, '/b') },
    ];
    const res = await patch('deep-patch', 'json', ops);
    assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
    await listOk();
  });

  it('the in-memory store refuses a deep object without keeping it', () => {
    let v: unknown = 1;
    for (let i = 0; i < 20_000; i++) v = { a: v };
    assert.throws(() =>
      c.store.create('configmaps', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'deep-store', namespace: 'default' },
        x: v,
      }),
    );
    assert.equal(c.store.get('configmaps', 'default', 'deep-store'), undefined);
    assert.ok(c.store.list('configmaps').items.length > 0);
  });
});

describe('unparsable request targets', () => {
  for (const target of ['//[', 'http://[']) {
    it(`GET ${target}: 400 without a token, nothing logged`, async () => {
      const before = internalErrors.length;
      assert.equal(await rawStatus(e, `GET ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`), 400);
      assert.equal(
        await rawStatus(e, `GET ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${e.token}\r\n\r\n`),
        400,
      );
      assert.equal(internalErrors.length, before, String(internalErrors.at(-1)));
    });
  }
});

describe('long watch timeouts', () => {
  it('a timer past 2^31-1 ms is chained, not fired at once', () => {
    const pending: Array<{ fn: () => void; ms: number }> = [];
    const timers = {
      setTimeout: (fn: () => void, ms: number) => (pending.push({ fn, ms }), {}),
      clearTimeout: () => {},
    };
    let fired = false;
    setLongTimeout(() => (fired = true), 1e12 * 1000, timers);
    let elapsed = 0;
    for (let steps = 0; !fired && steps < 1e6; steps++) {
      const t = pending.shift()!;
      assert.ok(t.ms <= MAX_TIMER_MS && t.ms >= 0);
      elapsed += t.ms;
      t.fn();
    }
    assert.ok(fired);
    assert.equal(elapsed, 1e15);
    assert.equal(watchTimeoutMs('2147484', Math.random), 2_147_484_000);
    assert.equal(watchTimeoutMs('1000000000000', Math.random), 1e15);
    assert.ok(watchTimeoutMs(null, () => 0) === 1_800_000 && watchTimeoutMs('-5', () => 1) === 3_600_000);
  });

  // Integers as apimachinery decodes them (strconv.ParseInt): 1e12 and values past int64 are a 400, not a watch.
  for (const seconds of ['1e12', '99999999999999999999']) {
    it(`timeoutSeconds=${seconds} is a 400 (not an int64), never a short watch`, async () => {
      const res = await call(e, 'GET', `${CMS}?watch=true&timeoutSeconds=${seconds}`);
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, /strconv\.ParseInt/);
    });
  }

  for (const seconds of ['2147484', '1000000000000', '9223372036854775807']) {
    it(`timeoutSeconds=${seconds} is a long watch`, async () => {
      const name = `long-${seconds.length}`;
      const s = await connectTls(e);
      let text = '';
      let ended = false;
      s.on('data', (d: Buffer) => (text += d.toString()));
      s.on('end', () => (ended = true));
      s.on('close', () => (ended = true));
      s.write(
        `GET ${CMS}?watch=true&resourceVersion=${c.store.resourceVersion}&timeoutSeconds=${seconds} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${e.token}\r\n\r\n`,
      );
      await waitFor('the watch to start', () => text.startsWith('HTTP/1.1 200'));
      assert.equal((await call(e, 'POST', CMS, { body: cm(name) })).status, 201);
      await waitFor('the ADDED event', () => text.includes(`"name":"${name}"`) || ended);
      assert.equal(ended, false, 'the watch ended early');
      assert.ok(text.includes(`"name":"${name}"`));
      s.destroy();
    });
  }
});

describe('protobuf times', () => {
  const ld = (no: number, payload: Buffer) =>
    Buffer.concat([Buffer.from([(no << 3) | 2]), varint(BigInt(payload.length)), payload]);
  function varint(v: bigint): Buffer {
    const out: number[] = [];
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v > 0n) b |= 0x80;
      out.push(b);
    } while (v > 0n);
    return Buffer.from(out);
  }
  const configMap = (name: string, seconds: bigint) => {
    const s = (v: string) => Buffer.from(v);
    const typeMeta = ld(1, Buffer.concat([ld(1, s('v1')), ld(2, s('ConfigMap'))]));
    const time = ld(8, Buffer.concat([Buffer.from([0x08]), varint(seconds)]));
    const meta = ld(1, Buffer.concat([ld(1, s(name)), time]));
    return Buffer.concat([Buffer.from('k8s\0'), typeMeta, ld(2, meta)]);
  };

  for (const [what, seconds] of [
    ['2^62 s', 2n ** 62n],
    ['year 10000', 253402300800n],
  ] as const) {
    it(`creationTimestamp ${what}: 400`, async () => {
      const res = await call(e, 'POST', CMS, {
        body: configMap('pb-time', seconds),
        contentType: 'application/vnd.kubernetes.protobuf',
      });
      assert.equal(res.status, 400, res.text);
    });
  }

  it('an in-range time still decodes', async () => {
    const res = await call(e, 'POST', CMS, {
      body: configMap('pb-time-ok', 1_700_000_000n),
      contentType: 'application/vnd.kubernetes.protobuf',
    });
    assert.equal(res.status, 201, res.text);
  });
});

describe('after everything', () => {
  it('no internal error was logged and the server still serves', async () => {
    assert.equal((await call(e, 'GET', CMS)).status, 200);
    assert.deepEqual(internalErrors.map(String), []);
  });
});
