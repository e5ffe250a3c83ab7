// Large bodies share the event loop (issue 20, "a concurrent GET is answered while the worst body runs"): one
// event loop serves every client, and a body of 300,000 keys costs about 200 ms per pass over it. A request whose
// body is LARGE_BODY_BYTES or more gives the loop a turn between its phases (decoding, checking, the store's
// write), so other clients are served in between. These tests count the turns (a count, not a time), check that
// small bodies never pay for one, and that a large patch stays correct when another write lands during its turn
// (it is applied again to the latest version, as kube-apiserver's GuaranteedUpdate retries).
// The per-key passes themselves were made cheaper; the boolean fast paths they use must agree exactly with the
// validators that build the messages. Under fieldValidation=Ignore no pass looks for repeated keys (the keys the
// loop counts, and those the YAML listener keeps, are counted), and the answers stay the same.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import { abandonedLargeBodies, LARGE_BODY_BYTES, loopTurnsForLargeBodies } from '../../src/cluster/http/http-io.ts';
import { jsonCheckWork, KEY_SLICE, largestKeySliceSince } from '../../src/cluster/common/json-safety.ts';
import { yamlKeysRemembered } from '../../src/cluster/schema/yaml-decode.ts';
import {
  isConfigMapKey,
  isQualifiedName,
  isValidConfigMapKey,
  isValidQualifiedName,
} from '../../src/cluster/common/identifier-validation.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { KubeObject } from '../../src/types/k8s.ts';
import { call, connectTls, type Endpoint } from './raw-http.ts';

const CMS = '/api/v1/namespaces/default/configmaps';

/** A ConfigMap body of at least `bytes` bytes (many small data keys, the shape that costs most per byte). */
function configMapBody(name: string, bytes: number): string {
  const data: Record<string, string> = {};
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    data[`k${i}`] = 'v';
    size += `"k${i}":"v",`.length;
  }
  return JSON.stringify({ metadata: { name }, data });
}

// One cluster for the HTTP cases of this file.
let c: EmbeddedCluster;
let e: Endpoint;
before(async () => {
  c = await startEmbeddedCluster({ controllers: false });
  e = { url: c.url, token: c.token, caPem: c.caPem };
});
after(() => c.stop());

describe('large bodies give the event loop turns between the phases of their request', () => {
  it('a small create, update and patch take no turn', async () => {
    const turns = loopTurnsForLargeBodies();
    const body = configMapBody('small', 1024);
    assert.equal((await call(e, 'POST', CMS, { body })).status, 201);
    assert.equal((await call(e, 'PUT', `${CMS}/small`, { body })).status, 200);
    const patch = JSON.stringify({ metadata: { labels: { a: 'b' } } });
    const r = await call(e, 'PATCH', `${CMS}/small`, {
      body: patch,
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(loopTurnsForLargeBodies() - turns, 0);
  });

  it('a large create takes turns after decoding, after checking and between validating and writing; an update the first two; a patch after decoding and between applying and writing', async () => {
    const body = configMapBody('large', LARGE_BODY_BYTES + 1024);
    let turns = loopTurnsForLargeBodies();
    assert.equal((await call(e, 'POST', CMS, { body })).status, 201);
    assert.equal(loopTurnsForLargeBodies() - turns, 3, 'create');
    turns = loopTurnsForLargeBodies();
    assert.equal((await call(e, 'PUT', `${CMS}/large`, { body })).status, 200);
    assert.equal(loopTurnsForLargeBodies() - turns, 2, 'update');
    const order = Array.from({ length: 6_000 }, (_, i) => `e.io/f${i}`);
    const patch = JSON.stringify({ metadata: { '$setElementOrder/finalizers': order, finalizers: order } });
    assert.ok(Buffer.byteLength(patch) >= LARGE_BODY_BYTES);
    turns = loopTurnsForLargeBodies();
    const r = await call(e, 'PATCH', `${CMS}/large`, {
      body: patch,
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(loopTurnsForLargeBodies() - turns, 2, 'patch');
    const got = JSON.parse((await call(e, 'GET', `${CMS}/large`)).text) as KubeObject;
    assert.deepEqual(got.metadata.finalizers, order);
    assert.equal(Object.keys(got.data as object).length, Object.keys(JSON.parse(body).data).length);
  });

  it(
    'a client that goes away while its large body is worked on gets nothing written',
    { timeout: 60_000 },
    async () => {
      // The client is in this process: it destroys its socket right after writing the body, long before the
      // 100 ms the fault holds the server's create, so the turn after that finds the connection gone.
      const rule = c.faults.add({ verb: 'create', resource: 'configmaps', name: 'gone', latencyMs: 100 });
      try {
        const abandoned = abandonedLargeBodies();
        const body = configMapBody('gone', LARGE_BODY_BYTES + 1024);
        const socket = await connectTls(e);
        const head =
          `POST ${CMS} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${e.token}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
        socket.write(head + body, () => socket.destroy());
        // Waits for the server to give the request up; one that finishes it instead fails here, not by hanging.
        const deadline = Date.now() + 20_000;
        while (abandonedLargeBodies() === abandoned) {
          if ((await call(e, 'GET', `${CMS}/gone`)).status === 200) assert.fail('the create was written');
          if (Date.now() > deadline) assert.fail('the server neither wrote nor gave up the request');
          await new Promise((r) => setTimeout(r, 10));
        }
        assert.equal((await call(e, 'GET', `${CMS}/gone`)).status, 404);
      } finally {
        c.faults.remove(rule);
      }
    },
  );

  it('a large JSON create with a repeated key takes one more turn, before the scan that names it', async () => {
    const body = configMapBody('repeats', LARGE_BODY_BYTES + 1024).replace('"data":{', '"data":{"k0":"first",');
    const turns = loopTurnsForLargeBodies();
    const r = await call(e, 'POST', `${CMS}?fieldValidation=Warn`, { body });
    assert.equal(r.status, 201, r.text.slice(0, 300));
    assert.equal(loopTurnsForLargeBodies() - turns, 4);
    assert.match(String(r.headers?.warning), /duplicate field \\"data\.k0\\"/);
  });
});

describe('a large YAML body: its value arrives from the worker thread in one turn, its checks in another', () => {
  it('a large YAML create takes a turn after its value arrives, after its checks and before its commit', async () => {
    const data = Array.from({ length: 12_000 }, (_, i) => `  k${i}: v\n`).join('');
    const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-turns\ndata:\n${data}`;
    assert.ok(Buffer.byteLength(body) >= LARGE_BODY_BYTES);
    const turns = loopTurnsForLargeBodies();
    const r = await call(e, 'POST', CMS, { body, contentType: 'application/yaml' });
    assert.equal(r.status, 201, r.text.slice(0, 300));
    // And one after each KEY_SLICE keys of its data map looked at (12,000 keys: one).
    assert.equal(loopTurnsForLargeBodies() - turns, 3 + Math.floor(12_000 / KEY_SLICE));
    const got = JSON.parse((await call(e, 'GET', `${CMS}/yaml-turns`)).text) as KubeObject;
    assert.equal(Object.keys(got.data as object).length, 12_000);
  });
});

describe('a YAML body under fieldValidation=Ignore is not searched for repeated keys', () => {
  it('small (on the loop) and large (in the worker): no key kept in a Set, the answers as before', async () => {
    for (const [name, count] of [
      ['yaml-ignore-small', 10],
      ['yaml-ignore-large', 12_000],
    ] as const) {
      const data = Array.from({ length: count }, (_, i) => `  k${i}: v\n`).join('');
      const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n  k0: first\n${data}`;
      const before = yamlKeysRemembered();
      const ignored = await call(e, 'POST', `${CMS}?fieldValidation=Ignore`, { body, contentType: 'application/yaml' });
      assert.equal(ignored.status, 201, ignored.text.slice(0, 300));
      assert.equal(ignored.headers?.warning, undefined);
      // The loop's count: the small body is decoded here (the worker's own count is yaml-decode.test.ts's).
      if (count === 10) assert.equal(yamlKeysRemembered() - before, 0, `${name}: keys kept on the loop`);
      const got = JSON.parse((await call(e, 'GET', `${CMS}/${name}`)).text) as KubeObject;
      assert.equal((got.data as Record<string, string>).k0, 'v', 'the last value');
      const warned = await call(e, 'POST', `${CMS}?fieldValidation=Warn&dryRun=All`, {
        body,
        contentType: 'application/yaml',
      });
      assert.match(String(warned.headers?.warning), /key \\"k0\\" already set in map/, name);
    }
  });
});

describe('a JSON body under fieldValidation=Ignore is not searched for repeated keys', () => {
  it('no count of its keys (a pass over a large body), no extra turn; under Warn the repeated key is named', async () => {
    const body = (name: string) =>
      configMapBody(name, 8 * LARGE_BODY_BYTES).replace('"data":{', '"data":{"k0":"first",');
    let before = jsonCheckWork();
    let turns = loopTurnsForLargeBodies();
    const ignored = await call(e, 'POST', `${CMS}?fieldValidation=Ignore`, { body: body('ignored') });
    assert.equal(ignored.status, 201, ignored.text.slice(0, 300));
    assert.equal(ignored.headers?.warning, undefined);
    assert.equal(jsonCheckWork().keysCounted - before.keysCounted, 0, 'keys counted');
    // 3 turns, and one after each KEY_SLICE keys of the data map looked at (not counted).
    const dataKeys = Object.keys((JSON.parse(body('x')) as KubeObject).data as object).length;
    assert.equal(loopTurnsForLargeBodies() - turns, 3 + Math.floor(dataKeys / KEY_SLICE), 'turns');
    before = jsonCheckWork();
    turns = loopTurnsForLargeBodies();
    const warned = await call(e, 'POST', `${CMS}?fieldValidation=Warn`, { body: body('warned') });
    assert.equal(warned.status, 201, warned.text.slice(0, 300));
    assert.match(String(warned.headers?.warning), /duplicate field \\"data\.k0\\"/);
    const keys = Object.keys((JSON.parse(body('x')) as KubeObject).data as object).length;
    assert.ok(jsonCheckWork().keysCounted - before.keysCounted >= keys, 'keys counted under Warn');
    // 4 turns, and one after each KEY_SLICE keys counted.
    const turned = loopTurnsForLargeBodies() - turns;
    assert.ok(
      turned >= 4 + Math.floor(keys / KEY_SLICE) && turned <= 4 + Math.ceil(keys / KEY_SLICE),
      `${turned} turns under Warn`,
    );
    // The object stored is the same either way: the last value of the repeated key.
    const got = JSON.parse((await call(e, 'GET', `${CMS}/ignored`)).text) as KubeObject;
    assert.equal((got.data as Record<string, string>).k0, 'v');
  });
});

describe('a large JSON map: its keys enumerated once per request, and handled in slices with turns between', () => {
  it('a create and an update under Warn enumerate the data map once; no slice holds more than KEY_SLICE keys', async () => {
    const body = configMapBody('one-pass', 8 * LARGE_BODY_BYTES);
    const keys = Object.keys((JSON.parse(body) as KubeObject).data as object).length;
    assert.ok(keys > 4 * KEY_SLICE, `${keys} keys`);
    for (const [method, path, status] of [
      ['POST', CMS, 201],
      ['PUT', `${CMS}/one-pass`, 200],
    ] as const) {
      const before = jsonCheckWork();
      const turns = loopTurnsForLargeBodies();
      largestKeySliceSince();
      const res = await call(e, method, path, { body });
      const largest = largestKeySliceSince();
      assert.equal(res.status, status, res.text.slice(0, 300));
      assert.equal(res.headers?.warning, undefined);
      const work = jsonCheckWork();
      // The count for repeated keys (Warn) and the data-key validation share one enumeration of the map.
      assert.equal(work.largeMapEnumerations - before.largeMapEnumerations, 1, `${method}: enumerations of the map`);
      assert.ok(work.keysCounted - before.keysCounted >= keys, `${method}: keys counted`);
      // Counted and its keys checked in slices, a turn of the event loop after each one; none left for validation.
      assert.ok(largest <= KEY_SLICE, `${method}: largest slice ${largest}`);
      assert.ok(work.keySlices - before.keySlices >= Math.ceil(keys / KEY_SLICE), `${method}: slices`);
      const turned = loopTurnsForLargeBodies() - turns;
      assert.ok(turned >= Math.floor(keys / KEY_SLICE), `${method}: ${turned} turns for ${keys} keys`);
    }
    const got = JSON.parse((await call(e, 'GET', `${CMS}/one-pass`)).text) as KubeObject;
    assert.equal(Object.keys(got.data as object).length, keys);
  });

  it('under Ignore (no count) and from YAML the data map is still enumerated once, its keys checked in slices', async () => {
    const json = configMapBody('ignored-pass', 8 * LARGE_BODY_BYTES);
    const data = (JSON.parse(json) as KubeObject).data as Record<string, string>;
    const keys = Object.keys(data).length;
    const yaml = `metadata:\n  name: yaml-pass\ndata:\n${Object.keys(data)
      .map((k) => `  ${k}: v\n`)
      .join('')}`;
    for (const [what, body, type] of [
      ['JSON under Ignore', json, 'application/json'],
      ['YAML', yaml, 'application/yaml'],
    ] as const) {
      const before = jsonCheckWork();
      largestKeySliceSince();
      const res = await call(e, 'POST', `${CMS}?fieldValidation=Ignore`, {
        body,
        contentType: type,
      });
      const largest = largestKeySliceSince();
      assert.equal(res.status, 201, res.text.slice(0, 300));
      const work = jsonCheckWork();
      assert.equal(work.keysCounted - before.keysCounted, 0, `${what}: keys counted`);
      assert.equal(work.largeMapEnumerations - before.largeMapEnumerations, 1, `${what}: enumerations of the map`);
      assert.ok(largest <= KEY_SLICE, `${what}: largest slice ${largest}`);
      assert.ok(work.keySlices - before.keySlices >= Math.ceil(keys / KEY_SLICE), `${what}: slices`);
    }
  });

  it('an invalid key among many is named as before, with the same message', async () => {
    const body = configMapBody('bad-key', 8 * LARGE_BODY_BYTES).replace('"k7":"v"', '"k 7":"v"');
    const res = await call(e, 'POST', CMS, { body });
    assert.equal(res.status, 422, res.text.slice(0, 300));
    const status = JSON.parse(res.text) as { details: { causes: Array<{ field: string; message: string }> } };
    assert.deepEqual(
      status.details.causes.map((c) => c.field),
      ['data[k 7]'],
    );
    assert.match(status.details.causes[0].message, /a valid config key must consist of alphanumeric characters/);
  });
});

function withDefaultNamespace(store: ClusterStore): ClusterStore {
  store.create('namespaces', { metadata: { name: 'default' } } as KubeObject);
  return store;
}

describe('merge patches of many keys: values shared, not cloned, with the same answers', () => {
  const mergePatch = (path: string, body: string) =>
    call(e, 'PATCH', path, { body, contentType: 'application/merge-patch+json' });

  it('`__proto__` and `constructor` stay plain data keys; scalars, lists and maps merge as RFC 7386 says', async () => {
    assert.equal((await call(e, 'POST', CMS, { body: '{"metadata":{"name":"mp"},"data":{"a":"1"}}' })).status, 201);
    const r = await mergePatch(`${CMS}/mp`, '{"data":{"__proto__":"x","constructor":"y","a":null,"b":"2"}}');
    assert.equal(r.status, 200, r.text);
    const data = (JSON.parse((await call(e, 'GET', `${CMS}/mp`)).text) as KubeObject).data as object;
    assert.deepEqual(Object.entries(data), [
      ['__proto__', 'x'],
      ['constructor', 'y'],
      ['b', '2'],
    ]);
    assert.equal(Object.getPrototypeOf(data), Object.prototype);
  });

  it('a repeated key in a patch is reported (Strict 422, Warn a warning); a patch without one is not', async () => {
    const strict = await mergePatch(`${CMS}/mp?fieldValidation=Strict`, '{"data":{"c":"1","c":"2"}}');
    assert.equal(strict.status, 422, strict.text); // kube answers a patch's strict error as Invalid
    assert.match(strict.text, /duplicate field \\"data\.c\\"/);
    const warn = await mergePatch(`${CMS}/mp?fieldValidation=Warn`, '{"data":{"c":"1","c":"2"}}');
    assert.equal(warn.status, 200, warn.text);
    assert.match(String(warn.headers?.warning), /duplicate field \\"data\.c\\"/);
    const clean = await mergePatch(`${CMS}/mp?fieldValidation=Strict`, '{"data":{"c":"3","d":{"x":1}}}');
    // data.d is not a string: the patch is refused by validation, not for a repeated field.
    assert.doesNotMatch(clean.text, /duplicate field/);
    const ok = await mergePatch(`${CMS}/mp?fieldValidation=Strict`, '{"data":{"c":"3"}}');
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers?.warning, undefined);
  });
});

describe('a patch applied before a turn is applied again when another write lands during the turn', () => {
  it('no lost update: the other write and the patch are both in the result', async () => {
    const store = withDefaultNamespace(new ClusterStore());
    store.create('configmaps', { metadata: { name: 'cm', namespace: 'default' }, data: { a: '1' } } as KubeObject);
    let applied = 0;
    // Field validation prunes what the schema does not know: it must see the object that is written, so it runs
    // again on the re-applied patch (kube-apiserver's warning recorder drops a repeated warning text).
    const inspect = (patched: KubeObject) => {
      applied++;
      delete patched.unknownField;
    };
    const entry = await store.patchEntryAfterTurn(
      'configmaps',
      'default',
      'cm',
      'merge',
      { data: { b: '2' }, unknownField: 'x' },
      { inspect },
      async () => {
        store.patch('configmaps', 'default', 'cm', 'merge', { data: { c: '3' } });
      },
    );
    assert.deepEqual(entry.obj.data, { a: '1', b: '2', c: '3' });
    assert.equal(entry.obj.unknownField, undefined, 'the re-applied patch was pruned');
    assert.equal(applied, 2, 'field validation saw the first and the re-applied result');
  });

  it('a patch that names a resourceVersion conflicts when another write lands during the turn', async () => {
    const store = withDefaultNamespace(new ClusterStore());
    const created = store.create('configmaps', { metadata: { name: 'cm', namespace: 'default' } } as KubeObject);
    await assert.rejects(
      store.patchEntryAfterTurn(
        'configmaps',
        'default',
        'cm',
        'merge',
        { metadata: { resourceVersion: created.metadata.resourceVersion }, data: { b: '2' } },
        {},
        async () => {
          store.patch('configmaps', 'default', 'cm', 'merge', { data: { c: '3' } });
        },
      ),
      (err: { status?: { code?: number } }) => err.status?.code === 409,
    );
  });
});

describe('a create validated before a turn is checked against the table after it', () => {
  it('another create of the same name during the turn: 409 AlreadyExists, the first object kept', async () => {
    const store = withDefaultNamespace(new ClusterStore());
    const cm = (data: Record<string, string>) =>
      ({ metadata: { name: 'cm', namespace: 'default' }, data }) as KubeObject;
    await assert.rejects(
      store.createEntryAfterTurn('configmaps', cm({ from: 'large' }), {}, async () => {
        store.create('configmaps', cm({ from: 'other' }));
      }),
      (err: { status?: { code?: number; reason?: string } }) =>
        err.status?.code === 409 && err.status.reason === 'AlreadyExists',
    );
    assert.deepEqual(store.get('configmaps', 'default', 'cm')?.data, { from: 'other' });
  });
});

describe('the validators fast paths agree with the ones that build messages', () => {
  const long = (n: number) => 'a'.repeat(n);
  const qualified = [
    'a',
    'A',
    'a.b-c_d',
    'kubernetes',
    'example.com/name',
    'example.com/Name_1.x',
    'Example.com/name',
    '/name',
    'example.com/',
    'a/b/c',
    '',
    '-a',
    'a-',
    '_a',
    'a b',
    long(63),
    long(64),
    `${long(63)}/${long(63)}`,
    `${'a.'.repeat(126)}a/x`,
    `${'a.'.repeat(127)}a/x`,
    'ex..ample.com/x',
    'e.io/f1',
    'кириллица',
    'a\n',
  ];
  it('isValidQualifiedName is isQualifiedName(...) = []', () => {
    for (const v of qualified)
      assert.equal(isValidQualifiedName(v), isQualifiedName(v).length === 0, JSON.stringify(v));
  });
  it('isValidConfigMapKey is isConfigMapKey(...) = []', () => {
    const keys = [...qualified, '.', '..', '...', '..a', 'a..', '.a', 'a.', 'a-b_c.d', long(253), long(254), 'a/b'];
    for (const v of keys) assert.equal(isValidConfigMapKey(v), isConfigMapKey(v).length === 0, JSON.stringify(v));
  });
});
