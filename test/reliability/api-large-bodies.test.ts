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
import {
  checkJsonTextDepth,
  checkJsonValue,
  countObjectKeys,
  countObjectKeysInSlices,
  jsonCheckWork,
  KEY_SLICE,
  LARGE_MAP_KEYS,
  LARGE_SPAN_CHARS,
  largeMapSeen,
  largestKeySliceSince,
  largestParseSince,
  parseLargeJsonText,
  serializedJsonOf,
  SLICE_MEMBERS,
} from '../../src/cluster/common/json-safety.ts';
import {
  isJsonExact,
  sendsAsJson,
  yamlDecodeCounts,
  yamlKeysRemembered,
} from '../../src/cluster/schema/yaml-decode.ts';
import { decodeYamlOffThread } from '../../src/cluster/http/decode-worker-pool.ts';
import { msg, str } from '../support/protobuf-encoding.ts';
import {
  isConfigMapKey,
  isQualifiedName,
  isValidConfigMapKey,
  isValidQualifiedName,
} from '../../src/cluster/common/identifier-validation.ts';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import {
  longestMergeRunSince,
  MERGE_SLICE,
  strategicMergeWork,
} from '../../src/cluster/patch/strategic-merge-patch.ts';
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

  it('a large create takes turns after decoding, after checking and between validating and writing; an update the first two; a patch after decoding, inside a strategic merge, between applying and checking, and before writing', async () => {
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
    const merge = strategicMergeWork();
    const r = await call(e, 'PATCH', `${CMS}/large`, {
      body: patch,
      contentType: 'application/strategic-merge-patch+json',
    });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    const mergeTurns = strategicMergeWork().turns - merge.turns;
    assert.ok(mergeTurns >= 1, 'turns inside the merge');
    assert.equal(loopTurnsForLargeBodies() - turns, 3 + mergeTurns, 'patch');
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
    // And one before each slice of SLICE_MEMBERS members of its data map, parsed from the worker's JSON text.
    assert.equal(loopTurnsForLargeBodies() - turns, 3 + Math.ceil(12_000 / SLICE_MEMBERS));
    const got = JSON.parse((await call(e, 'GET', `${CMS}/yaml-turns`)).text) as KubeObject;
    assert.equal(Object.keys(got.data as object).length, 12_000);
  });
});

describe("a large YAML body's unknown fields are pruned in the worker thread, in document order", () => {
  it("the loop gets only the known fields (no slice of 12,000 unknown ones to parse or prune); the answers are the JSON body's", async () => {
    // 12,000 unknown top-level fields, an unknown field in metadata among them, and a known map after them: the
    // strict decoder reports them in document order. Pruned on the loop, the fields came back as JSON text to
    // parse in slices and were pruned in slices there, a turn per slice (watched to fail: 3 + 9 turns).
    const unknown = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `u${from + i}`);
    const fields = (names: string[]) => names.map((n) => `${n}: v\n`).join('');
    const yaml = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\n${fields(unknown(0, 100))}metadata:\n  name: ${name}\n  bogus: 1\n` +
      `${fields(unknown(100, 12_000))}data:\n  a: b\n`;
    const json = (name: string) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        ...Object.fromEntries(unknown(0, 100).map((n) => [n, 'v'])),
        metadata: { name, bogus: 1 },
        ...Object.fromEntries(unknown(100, 12_000).map((n) => [n, 'v'])),
        data: { a: 'b' },
      });
    assert.ok(Buffer.byteLength(yaml('x')) >= LARGE_BODY_BYTES);
    const turns = loopTurnsForLargeBodies();
    const created = await call(e, 'POST', `${CMS}?fieldValidation=Ignore`, {
      body: yaml('yaml-unknown'),
      contentType: 'application/yaml',
    });
    assert.equal(created.status, 201, created.text.slice(0, 300));
    assert.equal(loopTurnsForLargeBodies() - turns, 3, 'turns');
    const got = JSON.parse(created.text) as KubeObject;
    assert.deepEqual(Object.keys(got).sort(), ['apiVersion', 'data', 'kind', 'metadata']);
    assert.deepEqual(got.data, { a: 'b' });
    assert.equal((got.metadata as Record<string, unknown>).bogus, undefined);
    // The same message as the JSON body's, an index key at the top level first (as Object.keys orders it).
    const strict = await Promise.all(
      [
        [yaml('strict').replace('kind: ConfigMap\n', 'kind: ConfigMap\n7: v\n'), 'application/yaml'],
        [json('strict').replace('{', '{"7":"v",'), 'application/json'],
      ].map(([body, contentType]) => call(e, 'POST', `${CMS}?fieldValidation=Strict`, { body, contentType })),
    );
    assert.deepEqual(
      strict.map((r) => r.status),
      [400, 400],
    );
    const [fromYaml, fromJson] = strict.map((r) => r.json<{ message: string }>().message);
    assert.equal(fromYaml, fromJson);
    assert.match(fromYaml, /strict decoding error: unknown field "7", unknown field "u0", /);
    assert.match(fromYaml, /unknown field "u99", unknown field "metadata.bogus", unknown field "u100", /);
    assert.equal(fromYaml.split('unknown field').length - 1, 12_002);
    const warned = await Promise.all(
      [
        [yaml('warned'), 'application/yaml'],
        [json('warned'), 'application/json'],
      ].map(([body, contentType]) => call(e, 'POST', `${CMS}?fieldValidation=Warn&dryRun=All`, { body, contentType })),
    );
    assert.equal(warned[0].status, 201);
    assert.equal(warned[0].headers?.warning, warned[1].headers?.warning, 'the same warnings as JSON');
  });

  it('under Ignore (keys as the text gives them, repeated ones again): the same object as pruned on the loop', async () => {
    // The top-level keys come from the parse in the text's order, `data` and an unknown field repeated, an index key
    // among them: the last value of each field is kept, the unknown ones dropped.
    const fields = Array.from({ length: 12_000 }, (_, i) => `u${i}: v\n`).join('');
    const body = (name: string) =>
      `apiVersion: v1\nkind: ConfigMap\ndata:\n  a: first\nu0: v\n9: v\nmetadata:\n  name: ${name}\n  x: 1\n` +
      `${fields}data:\n  a: last\nu0: again\nimmutable: true\n`;
    assert.ok(Buffer.byteLength(body('x')) >= LARGE_BODY_BYTES);
    const r = await call(e, 'POST', `${CMS}?fieldValidation=Ignore`, {
      body: body('yaml-ignore-copy'),
      contentType: 'application/yaml',
    });
    assert.equal(r.status, 201, r.text.slice(0, 300));
    const got = JSON.parse(r.text) as KubeObject;
    assert.deepEqual(Object.keys(got).sort(), ['apiVersion', 'data', 'immutable', 'kind', 'metadata']);
    assert.deepEqual(got.data, { a: 'last' });
    assert.equal(got.immutable, true);
    assert.equal((got.metadata as Record<string, unknown>).x, undefined);
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
    // 3 turns, and one before each slice of SLICE_MEMBERS members of the data map parsed (its keys looked at
    // there, not counted). The text's members: the keys and the repeated one.
    const dataKeys = Object.keys((JSON.parse(body('x')) as KubeObject).data as object).length;
    const slices = Math.ceil((dataKeys + 1) / SLICE_MEMBERS);
    assert.equal(loopTurnsForLargeBodies() - turns, 3 + slices, 'turns');
    before = jsonCheckWork();
    turns = loopTurnsForLargeBodies();
    const warned = await call(e, 'POST', `${CMS}?fieldValidation=Warn`, { body: body('warned') });
    assert.equal(warned.status, 201, warned.text.slice(0, 300));
    assert.match(String(warned.headers?.warning), /duplicate field \\"data\.k0\\"/);
    const keys = Object.keys((JSON.parse(body('x')) as KubeObject).data as object).length;
    assert.ok(jsonCheckWork().keysCounted - before.keysCounted >= keys, 'keys counted under Warn');
    // 4 turns, and the slices': the map's keys were counted as it was parsed.
    assert.equal(loopTurnsForLargeBodies() - turns, 4 + slices, 'turns under Warn');
    // The object stored is the same either way: the last value of the repeated key.
    const got = JSON.parse((await call(e, 'GET', `${CMS}/ignored`)).text) as KubeObject;
    assert.equal((got.data as Record<string, string>).k0, 'v');
  });
});

describe('a large JSON map: its keys enumerated once per request, and handled in slices with turns between', () => {
  it('a create and an update under Warn never enumerate the data map whole; no slice holds more than KEY_SLICE keys', async () => {
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
      // The map is parsed in slices (parseLargeJsonText): the count for repeated keys (Warn) and the data-key
      // validation take the keys each slice gave, so no pass enumerates the whole map.
      assert.equal(work.largeMapEnumerations - before.largeMapEnumerations, 0, `${method}: enumerations of the map`);
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

  it('under Ignore (no count) the data map of JSON and of YAML (the worker sends JSON text) is parsed in slices, its keys checked in slices', async () => {
    const json = configMapBody('ignored-pass', 8 * LARGE_BODY_BYTES);
    const data = (JSON.parse(json) as KubeObject).data as Record<string, string>;
    const keys = Object.keys(data).length;
    const yaml = `metadata:\n  name: yaml-pass\ndata:\n${Object.keys(data)
      .map((k) => `  ${k}: v\n`)
      .join('')}`;
    for (const [what, body, type, enumerations] of [
      ['JSON under Ignore', json, 'application/json', 0],
      ['YAML', yaml, 'application/yaml', 0],
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
      assert.equal(
        work.largeMapEnumerations - before.largeMapEnumerations,
        enumerations,
        `${what}: enumerations of the map`,
      );
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

/** A strategic merge patch request on the ConfigMap `name`; its answer and the merge's counts meanwhile. */
async function strategicPatch(name: string, patch: object) {
  const body = JSON.stringify(patch);
  assert.ok(Buffer.byteLength(body) >= LARGE_BODY_BYTES);
  const before = strategicMergeWork();
  const turns = loopTurnsForLargeBodies();
  longestMergeRunSince();
  const r = await call(e, 'PATCH', `${CMS}/${name}`, { body, contentType: 'application/strategic-merge-patch+json' });
  const longest = longestMergeRunSince();
  const work = strategicMergeWork();
  return {
    r,
    longest,
    steps: work.steps - before.steps,
    mergeTurns: work.turns - before.turns,
    turns: loopTurnsForLargeBodies() - turns,
  };
}

describe('a large strategic merge patch gives the loop turns inside the merge (issue 20 #8)', () => {
  const N = 30_000;
  const R = 10_000;
  const fin = (i: number) => `e.io/f${i}`;
  const names = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
  const ownerRef = (i: number) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: `o${i}`, uid: `u-${i}` });
  const cases: Record<string, { server: object; patch: object; expect: (got: KubeObject) => void }> = {
    '$setElementOrder on finalizers (the reported body)': {
      server: {},
      patch: { metadata: { '$setElementOrder/finalizers': names(N, fin), finalizers: names(N, fin) } },
      expect: (got) => assert.deepEqual(got.metadata.finalizers, names(N, fin)),
    },
    '$setElementOrder reversed, half of it on the server': {
      server: { finalizers: names(N, fin).filter((_, i) => i % 2 === 0) },
      patch: {
        metadata: {
          '$setElementOrder/finalizers': names(N, fin).reverse(),
          finalizers: names(N, fin).filter((_, i) => i % 2 === 1),
        },
      },
      expect: (got) => assert.deepEqual(got.metadata.finalizers, names(N, fin).reverse()),
    },
    $deleteFromPrimitiveList: {
      server: { finalizers: names(N, fin) },
      patch: { metadata: { '$deleteFromPrimitiveList/finalizers': names(N, fin).filter((_, i) => i % 3 !== 0) } },
      expect: (got) =>
        assert.deepEqual(
          got.metadata.finalizers,
          names(N, fin).filter((_, i) => i % 3 === 0),
        ),
    },
    // Fewer: an owner reference is about 80 bytes of the object's 1.5 MiB.
    'a merge-key list (ownerReferences by uid) with $setElementOrder': {
      server: { ownerReferences: names(R / 2, ownerRef) },
      patch: {
        metadata: {
          '$setElementOrder/ownerReferences': names(R, (i) => ({ uid: `u-${R - 1 - i}` })),
          ownerReferences: names(R, ownerRef).filter((_, i) => i >= R / 2),
        },
      },
      expect: (got) =>
        assert.deepEqual(
          got.metadata.ownerReferences,
          names(R, (i) => ownerRef(R - 1 - i)),
        ),
    },
  };
  let seq = 0;
  for (const [what, { server, patch, expect }] of Object.entries(cases)) {
    it(`${what}: no run of more than MERGE_SLICE items without a turn, the same result`, async (t) => {
      const name = `smp-turns-${seq++}`;
      const created = await call(e, 'POST', CMS, { body: JSON.stringify({ metadata: { name, ...server } }) });
      assert.equal(created.status, 201, created.text.slice(0, 300));
      const m = await strategicPatch(name, patch);
      t.diagnostic(`${m.steps} steps, longest run ${m.longest}, ${m.mergeTurns} turns in the merge, ${m.turns} in all`);
      assert.equal(m.r.status, 200, m.r.text.slice(0, 300));
      assert.ok(m.steps >= N, `${m.steps} steps`);
      assert.ok(m.longest <= MERGE_SLICE, `a run of ${m.longest} items without a turn`);
      assert.ok(m.mergeTurns >= Math.floor(m.steps / MERGE_SLICE), `${m.mergeTurns} turns for ${m.steps} steps`);
      assert.equal(m.turns, 3 + m.mergeTurns);
      expect(JSON.parse((await call(e, 'GET', `${CMS}/${name}`)).text) as KubeObject);
    });
  }

  it('a large patch that fails gets the answer a small one gets (400 for a bad list, 404 for no object)', async () => {
    const name = `smp-turns-${seq++}`;
    assert.equal((await call(e, 'POST', CMS, { body: JSON.stringify({ metadata: { name } }) })).status, 201);
    const answer = async (path: string, n: number) => {
      const body = JSON.stringify({ metadata: { finalizers: [...names(n, fin), { not: 'a name' }] } });
      const r = await call(e, 'PATCH', path, { body, contentType: 'application/strategic-merge-patch+json' });
      return { status: r.status, message: (JSON.parse(r.text) as { message: string }).message };
    };
    const before = strategicMergeWork();
    const small = await answer(`${CMS}/${name}`, 10);
    const large = await answer(`${CMS}/${name}`, 3 * MERGE_SLICE);
    assert.ok(strategicMergeWork().turns - before.turns >= 2, 'the large one failed after turns inside the merge');
    assert.deepEqual(large, small);
    assert.equal(small.status, 400);
    assert.deepEqual(await answer(`${CMS}/missing`, 3 * MERGE_SLICE), await answer(`${CMS}/missing`, 10));
    assert.equal((await answer(`${CMS}/missing`, 10)).status, 404);
  });

  it('a small strategic merge patch takes no turn', async () => {
    const name = `smp-turns-${seq++}`;
    assert.equal((await call(e, 'POST', CMS, { body: JSON.stringify({ metadata: { name } }) })).status, 201);
    const before = strategicMergeWork();
    const turns = loopTurnsForLargeBodies();
    const body = JSON.stringify({ metadata: { finalizers: names(100, fin) } });
    const r = await call(e, 'PATCH', `${CMS}/${name}`, { body, contentType: 'application/strategic-merge-patch+json' });
    assert.equal(r.status, 200, r.text.slice(0, 300));
    assert.equal(strategicMergeWork().turns - before.turns, 0);
    assert.equal(loopTurnsForLargeBodies() - turns, 0);
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

  it('a strategic merge patch: a write that lands during a turn inside the merge is kept, the patch applied again', async () => {
    const store = withDefaultNamespace(new ClusterStore());
    store.create('configmaps', { metadata: { name: 'cm', namespace: 'default' }, data: { a: '1' } } as KubeObject);
    const order = Array.from({ length: 3 * MERGE_SLICE }, (_, i) => `e.io/f${i}`);
    const before = strategicMergeWork();
    let turns = 0;
    const entry = await store.patchEntryAfterTurn(
      'configmaps',
      'default',
      'cm',
      'strategic',
      { metadata: { '$setElementOrder/finalizers': order, finalizers: order }, data: { b: '2' } },
      {},
      async () => {
        // The first turn is inside the merge: another client's write lands there.
        if (turns++ === 0) store.patch('configmaps', 'default', 'cm', 'merge', { data: { c: '3' } });
      },
    );
    assert.ok(strategicMergeWork().turns - before.turns >= 2, 'turns inside the merge');
    assert.equal(
      turns,
      strategicMergeWork().turns - before.turns + 2,
      'then one before the checks, one before the write',
    );
    assert.deepEqual(entry.obj.data, { a: '1', b: '2', c: '3' });
    assert.deepEqual(entry.obj.metadata.finalizers, order);
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

/** Runs `f` with JSON.parse and JSON.stringify watched: the longest text either was given or gave. */
async function watchJson<T>(f: () => Promise<T>): Promise<{ result: T; parse: number; stringify: number }> {
  const { parse, stringify } = JSON;
  let longestParse = 0;
  let longestStringify = 0;
  JSON.parse = (text: string, reviver?: Parameters<typeof parse>[1]) => {
    longestParse = Math.max(longestParse, String(text).length);
    return parse(text, reviver) as unknown;
  };
  JSON.stringify = ((value: unknown, replacer?: never, space?: never) => {
    const json = stringify(value, replacer, space);
    if (typeof json === 'string') longestStringify = Math.max(longestStringify, json.length);
    return json;
  }) as typeof stringify;
  try {
    return { result: await f(), parse: longestParse, stringify: longestStringify };
  } finally {
    JSON.parse = parse;
    JSON.stringify = stringify;
  }
}

describe('a large JSON map is parsed in slices, with turns between, and its size known without serializing it', () => {
  // The bound of one JSON.parse or JSON.stringify of a large body's text: a slice, with its braces.
  const SLICE_BOUND = 80 * 1024;

  it('a 1 MiB ConfigMap: no JSON.parse of more than a slice, and the data map is never enumerated whole', async () => {
    const body = configMapBody('sliced', 1024 * 1024);
    const keys = Object.keys((JSON.parse(body) as KubeObject).data as object).length;
    for (const fieldValidation of ['Warn', 'Ignore']) {
      const name = `sliced-${fieldValidation.toLowerCase()}`;
      const text = body.replace('"name":"sliced"', `"name":"${name}"`);
      const before = jsonCheckWork();
      const turns = loopTurnsForLargeBodies();
      const { result: r, parse } = await watchJson(() =>
        call(e, 'POST', `${CMS}?fieldValidation=${fieldValidation}`, { body: text }),
      );
      assert.equal(r.status, 201, r.text.slice(0, 300));
      assert.ok(parse <= SLICE_BOUND, `${fieldValidation}: a JSON.parse of ${parse} characters`);
      const work = jsonCheckWork();
      assert.equal(work.largeMapEnumerations - before.largeMapEnumerations, 0, `${fieldValidation}: enumerations`);
      const turned = loopTurnsForLargeBodies() - turns;
      assert.ok(turned >= Math.ceil(text.length / SLICE_BOUND), `${fieldValidation}: ${turned} turns`);
      const got = JSON.parse((await call(e, 'GET', `${CMS}/${name}`)).text) as KubeObject;
      assert.equal(Object.keys(got.data as object).length, keys);
      assert.deepEqual(got.data, (JSON.parse(body) as KubeObject).data);
    }
  });

  it('20,000 unknown top-level fields: parsed and pruned in slices, never enumerated whole, and dropped', async () => {
    const count = 20_000;
    const unknown = Array.from({ length: count }, (_, i) => `"u${i}":"v"`).join(',');
    for (const fieldValidation of ['Ignore', 'Warn']) {
      const name = `top-${fieldValidation.toLowerCase()}`;
      const text = `{"metadata":{"name":"${name}"},${unknown},"data":{"k":"v"}}`;
      let longestKeys = 0;
      const keys = Object.keys;
      Object.keys = ((o: object) => {
        const k = keys(o);
        if (k.length > longestKeys) longestKeys = k.length;
        return k;
      }) as typeof Object.keys;
      const turns = loopTurnsForLargeBodies();
      let r: Awaited<ReturnType<typeof call>>;
      let parse: number;
      try {
        ({ result: r, parse } = await watchJson(() =>
          call(e, 'POST', `${CMS}?fieldValidation=${fieldValidation}`, { body: text }),
        ));
      } finally {
        Object.keys = keys;
      }
      assert.equal(r.status, 201, r.text.slice(0, 300));
      assert.ok(parse <= SLICE_BOUND, `${fieldValidation}: a JSON.parse of ${parse} characters`);
      // Before: the top level was parsed whole and pruned in one pass over its keys (Object.keys of 20,003).
      assert.ok(longestKeys < KEY_SLICE, `${fieldValidation}: Object.keys of ${longestKeys} keys`);
      const turned = loopTurnsForLargeBodies() - turns;
      const least = Math.ceil(count / SLICE_MEMBERS) + Math.floor(count / KEY_SLICE);
      assert.ok(turned >= least, `${fieldValidation}: ${turned} turns, at least ${least}`);
      if (fieldValidation === 'Warn') assert.match(String(r.headers?.warning), /unknown field \\"u0\\"/);
      const got = JSON.parse((await call(e, 'GET', `${CMS}/${name}`)).text) as KubeObject;
      assert.deepEqual(Object.keys(got).sort(), ['apiVersion', 'data', 'kind', 'metadata']);
    }
  });

  it('a 1 MiB ConfigMap created and replaced: its JSON written for the store without a JSON.stringify of its data map', async () => {
    const body = configMapBody('written', 1024 * 1024);
    for (const [method, path, status] of [
      ['POST', CMS, 201],
      ['PUT', `${CMS}/written`, 200],
    ] as const) {
      const { result: r, stringify } = await watchJson(() => call(e, method, path, { body }));
      assert.equal(r.status, status, r.text.slice(0, 300));
      assert.ok(stringify <= SLICE_BOUND, `${method}: a JSON.stringify of ${stringify} characters`);
      // What is stored and served is the object's compact JSON, as JSON.stringify writes it.
      const got = (await call(e, 'GET', `${CMS}/written`)).text;
      assert.equal(got, `${JSON.stringify(JSON.parse(got))}\n`);
      assert.equal(r.text, got, `${method}: the answer`);
      assert.deepEqual((JSON.parse(got) as KubeObject).data, (JSON.parse(body) as KubeObject).data);
    }
  });

  it('a 1 MiB YAML ConfigMap: its value comes from the worker as JSON text, parsed in slices and stored without a JSON.stringify of its data map', async () => {
    const data = (JSON.parse(configMapBody('x', 1024 * 1024)) as KubeObject).data as Record<string, string>;
    const keys = Object.keys(data);
    const body = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yaml-sliced\ndata:\n${keys.map((k) => `  ${k}: v\n`).join('')}`;
    // A create's 3 turns and an update's 2 (see above), and one before each slice of the data map.
    for (const [method, path, status, phases] of [
      ['POST', CMS, 201, 3],
      ['PUT', `${CMS}/yaml-sliced`, 200, 2],
    ] as const) {
      const before = jsonCheckWork();
      const turns = loopTurnsForLargeBodies();
      const { result: r, stringify } = await watchJson(() =>
        call(e, method, `${path}?fieldValidation=Ignore`, { body, contentType: 'application/yaml' }),
      );
      assert.equal(r.status, status, r.text.slice(0, 300));
      const work = jsonCheckWork();
      assert.equal(work.largeMapEnumerations - before.largeMapEnumerations, 0, `${method}: enumerations`);
      assert.ok(stringify <= SLICE_BOUND, `${method}: a JSON.stringify of ${stringify} characters`);
      const turned = loopTurnsForLargeBodies() - turns;
      assert.equal(turned, phases + Math.ceil(keys.length / SLICE_MEMBERS), `${method}: turns`);
    }
    const got = JSON.parse((await call(e, 'GET', `${CMS}/yaml-sliced`)).text) as KubeObject;
    assert.deepEqual(got.data, data);
  });

  it('a key repeated slices apart: Warn names it and keeps the last value in the first place, Strict refuses it', async () => {
    const body = configMapBody('far-repeat', 1024 * 1024).replace('"data":{', '"data":{"k80000":"first",');
    assert.ok(body.includes('"k80000":"v"'));
    const warned = await call(e, 'POST', `${CMS}?fieldValidation=Warn`, { body });
    assert.equal(warned.status, 201, warned.text.slice(0, 300));
    assert.match(String(warned.headers?.warning), /duplicate field \\"data\.k80000\\"/);
    const data = (JSON.parse(warned.text) as KubeObject).data as Record<string, string>;
    assert.equal(data.k80000, 'v');
    assert.equal(Object.keys(data)[0], 'k80000');
    assert.deepEqual(data, (JSON.parse(body) as KubeObject).data);
    const strict = await call(e, 'POST', `${CMS}?fieldValidation=Strict`, {
      body: body.replace('"far-repeat"', '"far-repeat-strict"'),
    });
    assert.equal(strict.status, 400, strict.text.slice(0, 300));
    assert.match(strict.text, /strict decoding error: duplicate field \\"data\.k80000\\"/);
  });

  it('a large body JSON.parse refuses: 400 with JSON.parse message', async () => {
    const body = configMapBody('bad-json', 1024 * 1024).replace('"k9":"v",', '"k9":"v",,');
    let expected = '';
    try {
      JSON.parse(body);
    } catch (err) {
      expected = (err as Error).message;
    }
    const r = await call(e, 'POST', CMS, { body });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    const status = JSON.parse(r.text) as { message: string };
    assert.equal(status.message, `couldn't get version/kind; json parse error: ${expected}`);
  });

  it('a data map with an array-index key, or a key repeated slices apart: written, or refused with 413, without a JSON.stringify of the map (review of H5)', async () => {
    // Each kept the map's JSON from being known slice by slice: the store wrote the whole map in one
    // JSON.stringify (a 3 MiB map's 413 held the loop 90-110 ms in bench:bodies' method at load 7).
    const shapes = {
      index: (body: string) => body.replace('"data":{', '"data":{"k5":"first","7":"seven","42":"x",'),
      repeat: (body: string) => body.replace('"data":{', '"data":{"k80000":"first",'),
    };
    for (const [shape, change] of Object.entries(shapes)) {
      for (const [size, status] of [
        [1024 * 1024, 201],
        [1.6 * 1024 * 1024, 413],
      ] as const) {
        const name = `unsized-${shape}-${status}`;
        const body = change(configMapBody(name, size));
        const { result: r, stringify } = await watchJson(() =>
          call(e, 'POST', `${CMS}?fieldValidation=Ignore`, { body }),
        );
        assert.equal(r.status, status, r.text.slice(0, 300));
        assert.ok(stringify <= SLICE_BOUND, `${shape} ${status}: a JSON.stringify of ${stringify} characters`);
        if (status === 413) {
          const bytes = Number(/the object is (\d+) bytes/.exec(r.text)?.[1]);
          const object = JSON.parse(body) as KubeObject;
          // The size JSON.stringify gives: the body's object with what the store adds.
          const stored = { ...object, kind: 'ConfigMap', apiVersion: 'v1' };
          const least = Buffer.byteLength(JSON.stringify(stored));
          assert.ok(bytes >= least && bytes <= least + 200, `${shape}: ${bytes} bytes, the map's ${least}`);
          continue;
        }
        const got = (await call(e, 'GET', `${CMS}/${name}`)).text;
        assert.equal(got, `${JSON.stringify(JSON.parse(got))}\n`);
        assert.deepEqual((JSON.parse(got) as KubeObject).data, (JSON.parse(body) as KubeObject).data);
        assert.deepEqual(
          Object.keys((JSON.parse(got) as KubeObject).data as object).slice(0, 3),
          shape === 'index' ? ['7', '42', 'k5'] : ['k80000', 'k0', 'k1'],
        );
      }
    }
  });

  it('a ConfigMap over the store limit: 413 with the same size, and no JSON.stringify of its data map', async () => {
    const body = configMapBody('too-large', 1.6 * 1024 * 1024);
    for (const fieldValidation of ['Warn', 'Ignore']) {
      const {
        result: r,
        parse,
        stringify,
      } = await watchJson(() => call(e, 'POST', `${CMS}?fieldValidation=${fieldValidation}`, { body }));
      assert.equal(r.status, 413, r.text.slice(0, 300));
      // The object's size: the body's compact JSON and what the store adds (kind, apiVersion, metadata).
      const size = Number(/the object is (\d+) bytes/.exec(r.text)?.[1]);
      const added = '"kind":"ConfigMap","apiVersion":"v1",'.length + ',"namespace":"default"'.length;
      const stamps =
        ',"uid":"00000000-0000-0000-0000-000000000000","resourceVersion":"1","creationTimestamp":"2026-01-01T00:00:00Z"';
      assert.ok(
        size >= body.length + added + stamps.length - 1 && size <= body.length + added + stamps.length + 20,
        `${size}`,
      );
      assert.ok(parse <= SLICE_BOUND, `${fieldValidation}: a JSON.parse of ${parse} characters`);
      assert.ok(stringify <= SLICE_BOUND, `${fieldValidation}: a JSON.stringify of ${stringify} characters`);
    }
  });
});

describe('a large map with a key repeated, or an index key: its size known without serializing it', () => {
  it('a 413 of the exact size, with no JSON.stringify of the map', async () => {
    const values = ['v', 'é', '日本', '😀', 'a"b', 'tab\tnew\nline', '\u0001', '\\'];
    const entries: Array<[string, string]> = [];
    for (let i = 0, size = 0; size < 1.7 * 1024 * 1024; i++) {
      const entry: [string, string] = [`k${i}`, values[i % values.length]];
      entries.push(entry);
      size += JSON.stringify(entry).length;
    }
    const plain = JSON.stringify(Object.fromEntries(entries));
    const [firstKey, firstValue] = entries[0].map((t) => JSON.stringify(t));
    const index = '"7":"seven",';
    // Names of one length: the objects differ in their data only.
    const bodies: Record<string, string> = {
      // Written as JSON.stringify writes it: the size added up from the slices' texts (exact before too).
      plain,
      // An index key (V8 puts it first) and the first key given another value first, repeated at the end.
      'odd-x': `{${index}${firstKey}:"first",${plain.slice(1, -1)},${firstKey}:${firstValue}}`,
    };
    const sizes: Record<string, number> = {};
    for (const [name, data] of Object.entries(bodies)) {
      const body = `{"metadata":{"name":"${name}"},"data":${data}}`;
      const { result: r, stringify } = await watchJson(() =>
        call(e, 'POST', `${CMS}?fieldValidation=Ignore`, { body }),
      );
      assert.equal(r.status, 413, r.text.slice(0, 300));
      sizes[name] = Number(/the object is (\d+) bytes/.exec(r.text)?.[1]);
      // Before: the store's JSON.stringify of the whole object (about 1.8 million characters) decided the 413.
      assert.ok(stringify <= 80 * 1024, `${name}: a JSON.stringify of ${stringify} characters`);
    }
    // The same map but for the index key: the same object, 12 bytes longer.
    assert.equal(sizes['odd-x'] - sizes.plain, Buffer.byteLength(index));
  });
});

describe('a large protobuf body is answered as a small one (review of H5)', () => {
  /** A Pod: `labels` labels, and a managedFields entry whose fieldsV1 (raw JSON) is `fieldsV1`. */
  function pod(name: string, labels: number, fieldsV1: string): Buffer {
    const meta = [str(1, name)];
    for (let i = 0; i < labels; i++) meta.push(msg(11, str(1, `k${i}`), str(2, 'v')));
    meta.push(msg(17, str(1, 'm'), str(2, 'Update'), str(3, 'v1'), str(6, 'FieldsV1'), msg(7, str(1, fieldsV1))));
    const spec = msg(2, msg(2, str(1, 'c'), str(2, 'img')));
    const raw = Buffer.concat([msg(1, ...meta), spec]);
    return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), msg(1, str(1, 'v1'), str(2, 'Pod')), msg(2, raw)]);
  }

  it('a managedFields entry nested 9,999 deep: the worker cannot hand it over, the loop decodes it (not a 500)', async () => {
    const deep = `${'['.repeat(9_999)}${']'.repeat(9_999)}`;
    const statuses: number[] = [];
    for (const labels of [10, 6_000]) {
      const body = pod(`deep-${labels}`, labels, deep);
      assert.equal(body.length >= LARGE_BODY_BYTES, labels > 10);
      const before = yamlDecodeCounts().protobufOffThread;
      const r = await call(e, 'POST', '/api/v1/namespaces/default/pods?dryRun=All', {
        body,
        contentType: 'application/vnd.kubernetes.protobuf',
      });
      assert.equal(yamlDecodeCounts().protobufOffThread - before, labels > 10 ? 1 : 0, 'sent to the worker');
      statuses.push(r.status);
      assert.notEqual(r.status, 500, r.text.slice(0, 300));
    }
    assert.deepEqual(statuses, [201, 201]);
  });
});

describe('parseLargeJsonText gives what JSON.parse gives', () => {
  /** A deterministic pseudo-random generator (mulberry32), so a failure can be replayed. */
  function random(seed: number): () => number {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const PIECES = [
    'a',
    'Z',
    '0',
    '.',
    '-',
    '_',
    '\\"',
    '\\\\',
    '\\/',
    '\\n',
    '\\u00e9',
    'é',
    '日',
    '😀',
    '\\ud83d\\ude00',
    '\\ud800',
    ' ',
    '\\t',
  ];
  const ws = (r: () => number) => [' ', '', '', '\n  ', '\t'][Math.floor(r() * 5)];

  /** JSON text of a string of random pieces (escapes, unicode, surrogates), without the quotes. */
  function str(r: () => number, max = 6): string {
    let s = '';
    for (let i = Math.floor(r() * max); i >= 0; i--) s += PIECES[Math.floor(r() * PIECES.length)];
    return s;
  }
  function scalar(r: () => number): string {
    const x = r();
    if (x < 0.6) return `"${str(r)}"`;
    if (x < 0.7) return String(Math.floor(r() * 1e6) - 5e5);
    if (x < 0.75) return '1.5e3';
    if (x < 0.8) return ['true', 'false', 'null'][Math.floor(r() * 3)];
    if (x < 0.9) return `{"${str(r)}":${ws(r)}"${str(r)}", "n":[1,{"x":"y"}]}`;
    return `[${ws(r)}"${str(r)}",${ws(r)}2]`;
  }
  /** A large map's text: `keys` members, some keys repeated (nearby or far), `__proto__` among them. */
  function map(
    r: () => number,
    keys: number,
    opts: { strings?: boolean; indexKey?: boolean; unique?: boolean },
  ): string {
    const members: string[] = [];
    // Key i: k, i, a bar, and two pieces (escapes and unicode): the bar keeps two numbers' keys apart.
    const keyOf = (i: number) => `k${i}|${PIECES[i % PIECES.length]}${PIECES[(i * 7) % PIECES.length]}`;
    for (let i = 0; i < keys; i++) {
      const x = r();
      let key = keyOf(i);
      if (opts.unique) key = i === 100 ? '__proto__' : key;
      else if (x < 0.01)
        key = keyOf(Math.floor(r() * i)); // a repeat, most often in an earlier slice
      else if (x < 0.012) key = '__proto__';
      else if (x < 0.014) key = 'constructor';
      else if (x < 0.02) key = keyOf(Math.max(0, i - 1 - Math.floor(r() * 10))); // a repeat in the same slice
      members.push(`"${key}"${ws(r)}:${ws(r)}${opts.strings ? `"${str(r)}"` : scalar(r)}`);
    }
    if (opts.indexKey) members.splice(Math.floor(members.length / 2), 0, '"42":"v"');
    return `{${ws(r)}${members.join(`,${ws(r)}`)}${ws(r)}}`;
  }
  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

  /** parseLargeJsonText refuses `text` with the SyntaxError JSON.parse gives. */
  async function assertJsonParseError(text: string): Promise<void> {
    let expected = '';
    try {
      JSON.parse(text);
    } catch (err) {
      expected = (err as Error).message;
    }
    assert.notEqual(expected, '');
    await assert.rejects(
      parseLargeJsonText(text, turn),
      (err: Error) => err instanceof SyntaxError && err.message === expected,
    );
  }

  it('the same value, key order, prototype, key count and size, on random bodies', async () => {
    let sized = 0;
    for (let seed = 1; seed <= 24; seed++) {
      const r = random(seed);
      const strings = seed % 3 === 0;
      // A map of strings without a repeated key has its JSON kept as it is parsed (serializedJsonOf).
      const unique = strings && seed % 2 === 1;
      const big = () => map(r, 12_000 + Math.floor(r() * 8_000), { strings, unique, indexKey: seed % 8 === 7 });
      const labels = seed % 4 === 1 ? big() : '{"app":"x"}';
      let text = `{"metadata":{"name":"m${seed}","labels":${labels}},"kind":"ConfigMap","data":${big()}`;
      if (seed % 5 === 0) text += `,"spec":{"small":1,"inner":${big()}}`;
      // Large lists: under the top level, and in an object under it.
      const list = () => `[${ws(r)}${Array.from({ length: 15_000 }, () => scalar(r)).join(`,${ws(r)}`)}${ws(r)}]`;
      if (seed % 7 === 3) text += `,"list":${list()}`;
      if (seed % 7 === 4) text += `,"nest":{"a":1,"items":${list()},"b":2}`;
      if (seed % 6 === 0) text += ',"data":{"replaced":"yes"}'; // the large map's key repeated in its parent
      text += '}';
      largestParseSince();
      const { value, keysInText } = await parseLargeJsonText(text, turn);
      const sliced = largestParseSince() < text.length;
      const expected = JSON.parse(text) as Record<string, unknown>;
      assert.deepStrictEqual(value, expected, `seed ${seed}`);
      assert.equal(JSON.stringify(value), JSON.stringify(expected), `seed ${seed}: key order`);
      assert.equal(keysInText, checkJsonTextDepth(text), `seed ${seed}: keys in the text`);
      // Every body is sliced: a large map whose key is repeated in its parent too (parsed, then left out, as
      // JSON.parse leaves it), and a map with an array-index key (V8 puts those first, as JSON.parse does): review
      // of H1, one key "0" gave the loop one whole parse.
      assert.equal(sliced, true, `seed ${seed}: parsed in slices`);
      if (seed % 6 !== 0) {
        const v = value as Record<string, unknown>;
        assert.equal(countObjectKeys(v), countObjectKeys(expected), `seed ${seed}: keys in the value`);
        assert.equal(await countObjectKeysInSlices(v, turn), countObjectKeys(expected), `seed ${seed}: sliced count`);
        // The keys kept for validation are the map's own, in its order (index keys first).
        assert.deepEqual(largeMapSeen(v.data as object)?.keys, Object.keys(v.data as object), `seed ${seed}: keys`);
        const json = serializedJsonOf(v);
        // With an index key or a key repeated slices apart the map's JSON is written again in slices (review of H5).
        const known = strings ? JSON.stringify(expected) : undefined;
        assert.equal(json?.json(), known, `seed ${seed}: JSON`);
        assert.equal(json?.bytes, known && Buffer.byteLength(known), `seed ${seed}: size`);
        if (json !== undefined) sized++;
      }
    }
    assert.equal(sized, 4, 'bodies whose size was added up (seeds 3, 9, 15, 21)');
  });

  it('large maps and lists at any depth, the top level, inside lists, beside each other: what JSON.parse gives, in slices', async () => {
    for (let seed = 101; seed <= 116; seed++) {
      const r = random(seed);
      const big = () => map(r, 9_000 + Math.floor(r() * 6_000), { strings: seed % 2 === 0 });
      const list = () => `[${Array.from({ length: 12_000 }, () => scalar(r)).join(`,${ws(r)}`)}]`;
      const small = () => scalar(r);
      // Wraps a value in 1 to 4 levels of maps and lists, with small members around it.
      const deep = (v: string): string => {
        let out = v;
        for (let d = Math.floor(r() * 4); d >= 0; d--) {
          out =
            r() < 0.5
              ? `{"a":${small()},${ws(r)}"w${d}":${out},"b":${small()}}`
              : `[${small()},${ws(r)}${out},${ws(r)}${small()}]`;
        }
        return out;
      };
      const shapes = [
        // a large map three to six levels down, through maps and lists
        () => `{"metadata":{"name":"d"},"x":${deep(big())}}`,
        // many top-level members: the top level is the large map
        () => `{"metadata":{"name":"t"},${big().slice(1)}`,
        // a large map holding a large map among many small members, and a large list among them
        () => `{"metadata":{"name":"b"},"x":${big().slice(0, -1)},"inner":${big()},"l":${list()},"z":1}}`,
        // a top-level list of large maps and lists
        () => `[${deep(big())},${list()},${small()}]`,
        // a deep large map whose key is named again later in its map (same slice, and far), so JSON.parse drops it
        () => `{"x":{"y":${big()},"y":1},"p":{"q":${big()},${big().slice(1, -1)},"q":2}}`,
        // a large map repeated in a large list, and a key repeated across the slices of the top level
        () => `{"l":[${big()},${big()}],${big().slice(1, -1)},"l":[${list()}]}`,
      ];
      const text = shapes[seed % shapes.length]();
      largestParseSince();
      const { value, keysInText } = await parseLargeJsonText(text, turn);
      const expected = JSON.parse(text) as unknown;
      assert.ok(largestParseSince() < LARGE_SPAN_CHARS, `seed ${seed}: no JSON.parse of a large container whole`);
      assert.deepStrictEqual(value, expected, `seed ${seed}`);
      assert.equal(JSON.stringify(value), JSON.stringify(expected), `seed ${seed}: key order`);
      assert.equal(keysInText, checkJsonTextDepth(text), `seed ${seed}: keys in the text`);
      assert.equal(await countObjectKeysInSlices(value, turn), countObjectKeys(expected), `seed ${seed}: sliced count`);
    }
  });

  it('checkJsonValue: the size JSON.stringify writes, for keys and strings with escapes, unicode and surrogates', () => {
    const r = random(31);
    for (let i = 0; i < 200; i++) {
      const value = JSON.parse(map(r, 50, {})) as unknown;
      assert.equal(checkJsonValue(value, {}), JSON.stringify(value).length, `value ${i}`);
    }
    const odd = { '\u0000': ['\ud800', '\udc00x', '😀', '"\\', '\u001f', 'é'], 'a"b': { '\ud83d\ude00': null } };
    assert.equal(checkJsonValue(odd, {}), JSON.stringify(odd).length);
  });

  it('a syntax error inside a deep large container, or one JSON.parse drops, is JSON.parse error', async () => {
    const r = random(7);
    const good = map(r, 12_000, {});
    const cut = good.lastIndexOf(',', good.length / 2);
    const broken = `${good.slice(0, cut)},,${good.slice(cut + 1)}`;
    for (const text of [
      `{"a":[1,{"b":{"c":${broken}}}]}`,
      `{"a":{"b":${broken},"b":1}}`, // left out of the value, but still not JSON
      `{"a":{"b":${good}}} x`, // text after the top level
      `{"a":{"b":${good}}}}`,
      `[${good},${good}`, // never closed
    ]) {
      await assertJsonParseError(text);
    }
  });

  it('a compact map of strings (raw unicode, some whitespace, a key repeated in a slice): its size as JSON.stringify writes it', async () => {
    const raw = ['v', 'é', '日本', '😀', 'a b'];
    const members = Array.from({ length: 30_000 }, (_, i) => `"k${i}${raw[i % 5]}":"${raw[(i * 3) % 5]}"`);
    members[20_001] = '"k20000":"again"'; // repeated in its slice: the slice's text is longer than its JSON
    members[25_000] = ` ${members[25_000]} `;
    for (const map of [members.slice(0, 20_000), members]) {
      const text = `{"kind":"ConfigMap","metadata":{"name":"c"},"data":{${map.join(',')}}}`;
      largestParseSince();
      const { value } = await parseLargeJsonText(text, turn);
      assert.ok(largestParseSince() < text.length / 2, 'parsed in slices');
      assert.deepStrictEqual(value, JSON.parse(text));
      const json = serializedJsonOf(value as Record<string, unknown>);
      assert.equal(json?.json(), JSON.stringify(value));
      assert.equal(json?.bytes, Buffer.byteLength(JSON.stringify(value)));
    }
  });

  it('a large list under the top level is parsed in slices too', async () => {
    const items = Array.from({ length: 30_000 }, (_, i) => (i % 3 ? `"f${i}"` : `{"n":${i},"k":["é\\n"]}`));
    const text = `{"metadata":{"name":"l"},"list":[${items.join(',')}],"z":1}`;
    largestParseSince();
    const { value } = await parseLargeJsonText(text, turn);
    assert.ok(largestParseSince() < text.length / 4, 'parsed in slices');
    assert.deepStrictEqual(value, JSON.parse(text));
  });

  it('a large container closed by the other bracket, or written where a key goes, is JSON.parse error (review of H5)', async () => {
    const r = random(5);
    const good = map(r, 12_000, {});
    const list = `[${Array.from({ length: 30_000 }, (_, i) => i).join(',')}]`;
    for (const text of [
      `${list.slice(0, -1)}}`, // the top-level list closed by a brace
      `${good.slice(0, -1)}]`, // the top-level map closed by a bracket
      `{"a":${list.slice(0, -1)}},"b":2}`, // a large list inside a map closed by a brace
      `[1,${good.slice(0, -1)}]]`, // a large map inside a list closed by a bracket
      `{${good}:1,"b":2}`, // a large map where a key goes
      `{"a":1,${list}:2}`, // a large list where a key goes
    ]) {
      await assertJsonParseError(text);
    }
  });

  it('the scan cuts its stacks back only when a container closes over a cut or a large child (review of H5)', async () => {
    // Setting an array's length on every close cost more than the scan itself: 250,000 tiny containers made the
    // scan (one pass, no turn) as long as a JSON.parse of the whole text, 110-130 ms for 3 MiB of `[]`.
    const tiny = 250_000;
    const text = `{"metadata":{"name":"t"},"x":[${'[],'.repeat(tiny)}{"a":{}}],"y":1}`;
    const before = jsonCheckWork().scanCutBacks;
    const { value } = await parseLargeJsonText(text, turn);
    const cutBacks = jsonCheckWork().scanCutBacks - before;
    assert.deepStrictEqual(value, JSON.parse(text));
    // The large list's cuts (one per SLICE_MEMBERS items) and the top level's large child.
    assert.ok(cutBacks <= Math.ceil(tiny / SLICE_MEMBERS) + 4, `${cutBacks} cut-backs for ${tiny} containers`);
  });

  it('a map of many array-index keys: its keys put in order in runs with turns between (review of H5)', async () => {
    // The keys' conversion to numbers and back, for the sort, was one run: 60-100 ms for 270,000 keys.
    const keys = 40_000;
    const members = Array.from({ length: keys }, (_, i) => `"${4_000_000_000 - i * 7}":"v"`);
    const text = `{"kind":"ConfigMap","metadata":{"name":"i"},"data":{"k":"v",${members.join(',')}}}`;
    largestKeySliceSince();
    const { value } = await parseLargeJsonText(text, turn);
    const largest = largestKeySliceSince();
    assert.ok(largest <= KEY_SLICE, `a run of ${largest} keys`);
    const expected = JSON.parse(text) as Record<string, object>;
    assert.equal(JSON.stringify(value), JSON.stringify(expected));
    const data = (value as Record<string, object>).data;
    assert.deepEqual(largeMapSeen(data)?.keys, Object.keys(expected.data));
    assert.equal(serializedJsonOf(value as Record<string, unknown>)?.json(), JSON.stringify(expected));
  });

  it('a syntax error after a large map: JSON.parse error found off the loop, the whole text never parsed here (review of H5)', async () => {
    // One JSON.parse of the whole text built the map before failing after it: 150-170 ms for 3 MiB.
    const map = `{${Array.from({ length: 30_000 }, (_, i) => `"k${i}":"v"`).join(',')}}`;
    for (const text of [`{"data":${map},"y":x}`, `${map} x`, `{"data":${map}`, `{"data":${map.slice(0, -1)}]}`]) {
      largestParseSince();
      const before = yamlDecodeCounts().jsonOffThread;
      await assertJsonParseError(text);
      const largest = largestParseSince();
      assert.ok(largest < LARGE_SPAN_CHARS, `a JSON.parse of ${largest} characters on the loop`);
      assert.equal(yamlDecodeCounts().jsonOffThread - before, 1, 'parsed in the worker');
    }
  });

  it('a body JSON.parse refuses gets JSON.parse error', async () => {
    const r = random(99);
    const good = map(r, 15_000, {});
    const cut = good.lastIndexOf(',', good.length / 2);
    const list = `[${Array.from({ length: 20_000 }, (_, i) => `"i${i}"`).join(',')}]`;
    for (const bad of [
      `{"a":1,"list":${list.slice(0, -1)},]}`, // a trailing comma in a large list
      `{"a":1,"list":${list.replace('"i9000",', '"i9000",,')}}`, // two commas in a large list
      `${good.slice(0, -1)},}`, // a trailing comma
      `${good.slice(0, cut)},,${good.slice(cut + 1)}`, // two commas
      `${good.slice(0, cut)}${good.slice(cut + 1)}`, // none
      `${good.slice(0, cut)},"k":}${good.slice(cut + 1)}`, // a value missing
      `{,${good.slice(1)}`, // a comma first
    ]) {
      const text = `{"metadata":{"name":"bad"},"data":${bad}}`;
      await assertJsonParseError(text);
    }
  });
});

describe('a YAML value goes back from the worker as JSON text only when JSON gives it back exactly', () => {
  it('a value with a large map comes as JSON (an alias a copy, as Go decodes it); without one, or amplified 4 times by aliases, as a shared value', async () => {
    const data = `data:\n${Array.from({ length: 5000 }, (_, i) => `  k${i}: v\n`).join('')}`;
    const alias = 'a: &a {x: [1, 2]}\nb: *a\n';
    type Aliased = { value: { a: object; b: object | object[] } };
    const json = (await decodeYamlOffThread(alias + data, 100)) as Aliased;
    assert.deepEqual(json.value.b, json.value.a);
    assert.notEqual(json.value.b, json.value.a, 'a copy: it came as JSON');
    const small = (await decodeYamlOffThread(alias, 100)) as Aliased;
    assert.equal(small.value.b, small.value.a, 'no large map: it came as a value');
    const list = Array.from({ length: 1000 }, (_, i) => i).join(', ');
    const amplified = `a: &a {x: [${list}]}\nb: [${Array(80).fill('*a').join(', ')}]\n${data}`;
    const large = (await decodeYamlOffThread(amplified, 100)) as Aliased;
    assert.equal((large.value.b as object[])[79], large.value.a, 'amplified: it came as a value');
  });

  it('isJsonExact: plain objects, arrays, strings, booleans, null and finite numbers; not -0, NaN, a Buffer, a hole', () => {
    const holey = [1, 2];
    delete holey[0]; // a hole
    const proto = JSON.parse('{"__proto__":{"a":[1,"x",null,true,{"b":-1.5}]}}') as unknown;
    assert.equal(isJsonExact(proto), true);
    for (const v of [-0, NaN, Infinity, Buffer.from('x'), new Date(0), holey, { a: undefined }, Object.create(null)])
      assert.equal(isJsonExact({ k: [v] }), false, Object.prototype.toString.call(v));
  });

  it('sendsAsJson: a large map anywhere (the top level, under lists), and exact JSON', () => {
    const big = () => Object.fromEntries(Array.from({ length: LARGE_MAP_KEYS }, (_, i) => [`k${i}`, 'v']));
    const small = { a: 'b' };
    assert.equal(sendsAsJson({ data: big() }, Infinity), true, 'a child');
    assert.equal(sendsAsJson({ spec: { data: big() } }, Infinity), true, 'a grandchild');
    assert.equal(sendsAsJson({ spec: { inner: { data: big() } } }, Infinity), true, 'three levels down');
    assert.equal(sendsAsJson({ items: [big()] }, Infinity), true, 'under a list');
    assert.equal(sendsAsJson(big(), Infinity), true, 'the top level itself');
    assert.equal(sendsAsJson({ data: small }, Infinity), false, 'no large map');
    assert.equal(sendsAsJson({ data: big(), x: NaN }, Infinity), false, 'not exact');
    assert.equal(sendsAsJson({ data: big() }, 1000), false, 'past the bound');
  });

  it('a value whose strings, aliased, outgrow the JSON bound is not written as JSON (review of H1: a 500 "Invalid string length")', () => {
    // A 1 MiB scalar under an anchor and 600 aliases to it: go-yaml's alias ratio counts each alias as one node,
    // whatever its length, so the value is legal; its JSON would be 600 MiB, past V8's longest string. The worker
    // asks isJsonExact with the bound before it writes any JSON (watched to fail: the bound was not looked at).
    const long = 'x'.repeat(1 << 20);
    const data: Record<string, string> = {};
    for (let i = 0; i < 600; i++) data[`x${i}`] = long;
    const bound = 4 * 1_100_000 + 1024;
    assert.equal(isJsonExact({ metadata: { annotations: { a: long } }, data }, bound), false);
    assert.equal(isJsonExact({ data: { a: long } }, bound), true, 'under the bound');
    assert.equal(isJsonExact({ data: { [long]: 'v' } }, 1000), false, 'keys count too');
  });
});

describe("a ConfigMap's data value that is not a string fails decoding, as Go's map[string]string does", () => {
  it('400 naming the first such value, before validation builds a cause per key (a 1 MiB body of small maps)', async () => {
    const data: Record<string, unknown> = {};
    for (let i = 0; i < 60_000; i++) data[`k${i}`] = { a: 1, b: [1, 2] };
    const body = JSON.stringify({ metadata: { name: 'flow-maps' }, data });
    assert.ok(body.length > 1_000_000);
    const r = await call(e, 'POST', CMS, { body });
    assert.equal(r.status, 400, r.text.slice(0, 300));
    assert.ok(r.text.length < 1024, `an answer of ${r.text.length} characters`);
    const prefix = 'ConfigMap in version \\"v1\\" cannot be handled as a ConfigMap: json: cannot unmarshal';
    assert.match(
      r.text,
      new RegExp(`${prefix.replace(/[\\"]/g, '.')} object into Go struct field ConfigMap.data of type string`),
    );
    for (const [value, type] of [
      ['1', 'number'],
      ['[1]', 'array'],
      ['true', 'bool'],
    ] as const) {
      const small = await call(e, 'POST', CMS, { body: `{"metadata":{"name":"t"},"data":{"a":"x","b":${value}}}` });
      assert.equal(small.status, 400, small.text);
      assert.match(
        small.text,
        new RegExp(`cannot unmarshal ${type} into Go struct field ConfigMap.data of type string`),
      );
    }
    // null is Go's zero value for the string, not a decoding error: validation answers it as before.
    const nul = await call(e, 'POST', CMS, { body: '{"metadata":{"name":"t"},"data":{"a":null}}' });
    assert.equal(nul.status, 422, nul.text);
  });
});
