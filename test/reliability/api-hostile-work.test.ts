// Request work linear in the body (issue 20, defect 8): strategic merge patch list handling ($setElementOrder,
// merge keys, primitive lists, $deleteFromPrimitiveList, $patch: delete) and YAML duplicate-key detection.
// - The strategic merge cases count operations, not time: every read of a list position (the lists are proxies)
//   and of an element's merge key (a counting getter), at 10 and at 1,000 entries. Linear work reads about 100
//   times more for 100 times the entries; the quadratic work this replaced read about 10,000 times more.
// - YAML parsing has no such hook, so its case compares CPU time (process.cpuUsage, which a busy machine's other
//   processes do not inflate) of a body 40 times larger with a small one: linear gives about 40, the re-scan of
//   the text per repeated key gave well over 1,000.
// - Over HTTP, the reported bodies are answered, a GET sent while one is being worked on is answered, and the
//   CPU time of the largest body is compared with one thirty times smaller.
// - A large YAML body is decoded in the worker thread: counted on the worker's side, and no step of the parse on
//   the event loop's (GETs sent meanwhile are answered and reported; how many fit before it is a speed).
import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import {
  applyStrategicMergePatch,
  applyStrategicMergePatchWithTurns,
  longestMergeRunSince,
  MERGE_SLICE,
  strategicMergeWork,
} from '../../src/cluster/patch/strategic-merge-patch.ts';
import { decodeBody } from '../../src/cluster/http/http-io.ts';
import { yamlDecodeCounts, yamlDecodeSteps, yamlDuplicateError } from '../../src/cluster/schema/yaml-decode.ts';
import { call, type Answer, type Endpoint } from './raw-http.ts';

/** CPU milliseconds (user and system) spent while `work` runs. */
async function cpuMs(work: () => unknown): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

/** Least CPU time of `tries` runs of `work`. */
async function leastCpuMs(work: () => unknown, tries: number): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < tries; i++) best = Math.min(best, await cpuMs(work));
  return best;
}

/** cpu(large) / cpu(small): the small body at its least of five runs, the large one at its least of two. */
async function cpuRatio(
  small: () => unknown,
  large: () => unknown,
): Promise<{ ratio: number; smallMs: number; largeMs: number }> {
  await small(); // warm-up: compile the code paths once
  const smallMs = await leastCpuMs(small, 5);
  const largeMs = await leastCpuMs(large, 2);
  return { ratio: largeMs / Math.max(smallMs, 0.1), smallMs, largeMs };
}

const names = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const half = <T>(list: T[]) => list.filter((_, i) => i % 2 === 0);

/** Counts reads of list positions and of elements' merge keys made while a patch is applied. */
class ReadCounter {
  reads = 0;
  /** `list` as a proxy that counts every read of a position. */
  list<T>(list: T[]): T[] {
    return new Proxy(list, {
      get: (target, prop, receiver) => {
        if (typeof prop === 'string' && prop.length > 0 && prop.charCodeAt(0) >= 48 && prop.charCodeAt(0) <= 57)
          this.reads++;
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
  }
  /** A list element `{name, ...rest}` whose `name` counts its reads. */
  named(name: string, rest: Record<string, unknown> = {}): Record<string, unknown> {
    const element: Record<string, unknown> = { ...rest };
    Object.defineProperty(element, 'name', { enumerable: true, configurable: true, get: () => (this.reads++, name) });
    return element;
  }
}

/** Strategic merge patches of n list entries, each with the document it applies to, built through a counter. */
const SMP_CASES: Record<string, (n: number, c: ReadCounter) => { doc: object; patch: object; model: string }> = {
  '$setElementOrder on finalizers (the reported body)': (n, c) => ({
    doc: { metadata: { name: 'x', finalizers: c.list(half(names(n, 'e.io/f'))) } },
    patch: {
      metadata: {
        '$setElementOrder/finalizers': c.list(names(n, 'e.io/f').reverse()),
        finalizers: c.list(names(n, 'e.io/f').filter((_, i) => i % 2 === 1)),
      },
    },
    model: 'V1ConfigMap',
  }),
  'a primitive merge list': (n, c) => ({
    doc: { metadata: { finalizers: c.list(names(n, 'e.io/a')) } },
    patch: { metadata: { finalizers: c.list([...half(names(n, 'e.io/a')), ...names(n / 2, 'e.io/b')]) } },
    model: 'V1ConfigMap',
  }),
  $deleteFromPrimitiveList: (n, c) => ({
    doc: { metadata: { finalizers: c.list(names(n, 'e.io/a')) } },
    patch: { metadata: { '$deleteFromPrimitiveList/finalizers': c.list(half(names(n, 'e.io/a'))) } },
    model: 'V1ConfigMap',
  }),
  'a merge-key list with $setElementOrder': (n, c) => ({
    doc: { spec: { containers: c.list(half(names(n, 'c')).map((name) => c.named(name, { image: 'a' }))) } },
    patch: {
      spec: {
        '$setElementOrder/containers': c.list(names(n, 'c').map((name) => c.named(name))),
        containers: c.list(names(n, 'c').map((name) => c.named(name, { image: 'b' }))),
      },
    },
    model: 'V1Pod',
  }),
  'a merge-key list without an order': (n, c) => ({
    doc: { spec: { containers: c.list(names(n, 'c').map((name) => c.named(name, { image: 'a' }))) } },
    patch: {
      spec: {
        containers: c.list(
          names(n, 'c')
            .reverse()
            .map((name) => c.named(name, { image: 'b' })),
        ),
      },
    },
    model: 'V1Pod',
  }),
  '$patch: delete elements': (n, c) => ({
    doc: { spec: { containers: c.list(names(n, 'c').map((name) => c.named(name, { image: 'a' }))) } },
    patch: { spec: { containers: c.list(half(names(n, 'c')).map((name) => c.named(name, { $patch: 'delete' }))) } },
    model: 'V1Pod',
  }),
};

/** Reads made applying the case at n entries. */
function readsAt(
  build: (n: number, c: ReadCounter) => { doc: object; patch: object; model: string },
  n: number,
): number {
  const counter = new ReadCounter();
  const { doc, patch, model } = build(n, counter);
  counter.reads = 0; // building the proxies read nothing, but be sure
  applyStrategicMergePatch(doc, patch, model);
  return counter.reads;
}

describe('strategic merge patch list work is linear (operation counts)', () => {
  for (const [what, build] of Object.entries(SMP_CASES)) {
    it(`${what}: 1,000 entries read at most 3 x 100 times what 10 entries read`, (t) => {
      const small = readsAt(build, 10);
      const large = readsAt(build, 1_000);
      t.diagnostic(`reads: 10 entries ${small}, 1,000 entries ${large}, ratio ${(large / small).toFixed(1)}`);
      assert.ok(small > 0, 'the counter sees the lists');
      assert.ok(
        large <= 300 * small,
        `1,000 entries read ${large} times, 10 entries ${small} (ratio ${(large / small).toFixed(0)}; quadratic work gives about 10,000)`,
      );
    });
  }

  it('the results are still the strategic merge results', () => {
    const c = new ReadCounter();
    const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;
    const { doc, patch, model } = SMP_CASES['$setElementOrder on finalizers (the reported body)']!(6, c);
    assert.deepEqual(applyStrategicMergePatch(doc, patch, model), {
      metadata: { name: 'x', finalizers: ['e.io/f5', 'e.io/f4', 'e.io/f3', 'e.io/f2', 'e.io/f1', 'e.io/f0'] },
    });
    const del = SMP_CASES['$deleteFromPrimitiveList']!(4, c);
    assert.deepEqual(applyStrategicMergePatch(del.doc, del.patch, del.model), {
      metadata: { finalizers: ['e.io/a1', 'e.io/a3'] },
    });
    const keyed = SMP_CASES['a merge-key list with $setElementOrder']!(4, c);
    assert.deepEqual(plain(applyStrategicMergePatch(keyed.doc, keyed.patch, keyed.model)), {
      spec: { containers: ['c0', 'c1', 'c2', 'c3'].map((name) => ({ name, image: 'b' })) },
    });
    const unordered = SMP_CASES['a merge-key list without an order']!(3, c);
    assert.deepEqual(plain(applyStrategicMergePatch(unordered.doc, unordered.patch, unordered.model)), {
      spec: { containers: ['c2', 'c1', 'c0'].map((name) => ({ name, image: 'b' })) },
    });
    const deleted = SMP_CASES['$patch: delete elements']!(4, c);
    assert.deepEqual(plain(applyStrategicMergePatch(deleted.doc, deleted.patch, deleted.model)), {
      spec: { containers: ['c1', 'c3'].map((name) => ({ name, image: 'a' })) },
    });
    // $retainKeys over many keys rebuilds the map instead of deleting from it.
    const labels = Object.fromEntries(names(6, 'l').map((k) => [k, 'v']));
    assert.deepEqual(
      applyStrategicMergePatch(
        { metadata: { labels } },
        { metadata: { labels: { $retainKeys: ['l0', 'l2', 'l4'], l0: 'w' } } },
        'V1ConfigMap',
      ),
      {
        metadata: { labels: { l0: 'w', l2: 'v', l4: 'v' } },
      },
    );
  });
});

describe('strategic merge patch with turns (a large patch request): the same result, no long run', () => {
  for (const [what, build] of Object.entries(SMP_CASES)) {
    it(`${what}: at 3 x MERGE_SLICE entries, the result of the merge without turns, a turn every MERGE_SLICE steps`, async () => {
      const n = 3 * MERGE_SLICE;
      const { doc, patch, model } = build(n, new ReadCounter());
      const inputs = JSON.stringify({ doc, patch });
      const through = applyStrategicMergePatch(doc, patch, model);
      const before = strategicMergeWork();
      longestMergeRunSince();
      let turns = 0;
      const turned = await applyStrategicMergePatchWithTurns(doc, patch, model, async () => {
        turns++;
      });
      const work = strategicMergeWork();
      assert.deepEqual(turned, through);
      assert.equal(JSON.stringify({ doc, patch }), inputs, 'the inputs are not changed');
      const steps = work.steps - before.steps;
      assert.ok(steps >= n, `${steps} steps`);
      assert.ok(longestMergeRunSince() <= MERGE_SLICE);
      assert.equal(turns, work.turns - before.turns);
      assert.ok(turns >= Math.floor(steps / MERGE_SLICE), `${turns} turns for ${steps} steps`);
    });
  }

  it('the result holds no map or list of the patch (the merge with turns does not clone its result)', async () => {
    /** Every map and list reachable from `v`. */
    const containers = (v: unknown, into = new Set<object>()): Set<object> => {
      if (v !== null && typeof v === 'object') {
        into.add(v);
        for (const x of Object.values(v)) containers(x, into);
      }
      return into;
    };
    const shapes: Array<{ doc: object; patch: object; model: string }> = Object.values(SMP_CASES).map((build) =>
      build(50, new ReadCounter()),
    );
    shapes.push(
      {
        doc: { metadata: { name: 'x', labels: { a: 'b' } }, spec: { x: 1, y: { z: [1] } } },
        patch: {
          metadata: { labels: { $patch: 'replace', c: 'd' }, annotations: { n: null, m: 'v' } },
          spec: { x: [{ a: 1, b: null, c: [{ d: null }] }], y: { z: [[2], { e: 3 }] }, fresh: { f: [{ g: 1 }] } },
          data: { k: 'v' },
        },
        model: 'V1ConfigMap',
      },
      {
        doc: { spec: { containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }] }] } },
        patch: {
          spec: {
            containers: [
              { name: 'a', env: [{ name: 'F', value: '2' }], ports: [{ containerPort: 80 }] },
              { name: 'b', image: 'y', env: [{ name: 'G', value: '3' }] },
            ],
            volumes: [{ $patch: 'replace' }, { name: 'v', emptyDir: {} }],
          },
        },
        model: 'V1Pod',
      },
    );
    for (const { doc, patch, model } of shapes) {
      const fromPatch = containers(patch);
      const copy = JSON.parse(JSON.stringify(doc)) as object;
      const result = await applyStrategicMergePatchWithTurns(copy, patch, model, async () => {});
      for (const c of containers(result))
        assert.ok(!fromPatch.has(c), `a container of the patch: ${JSON.stringify(c)}`);
      assert.deepEqual(result, applyStrategicMergePatch(doc, patch, model));
    }
  });

  it('a patch error is the same error with turns', async () => {
    const patch = { metadata: { finalizers: [...names(2 * MERGE_SLICE, 'e.io/f'), { a: 1 }] } };
    const doc = { metadata: { finalizers: ['e.io/x'] } };
    const err = (() => {
      try {
        applyStrategicMergePatch(doc, patch, 'V1ConfigMap');
      } catch (e) {
        return e as Error;
      }
      return undefined;
    })();
    assert.ok(err, 'the patch is refused');
    await assert.rejects(
      applyStrategicMergePatchWithTurns(doc, patch, 'V1ConfigMap', async () => {}),
      (e: Error) => e.message === err.message && e.constructor === err.constructor,
    );
  });
});

/** A ConfigMap in YAML whose `data` repeats one key n times. */
const repeatedKeyYaml = (name: string, n: number) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${'  k: v\n'.repeat(n)}`;

describe('YAML duplicate-key detection is linear', () => {
  it('40,000 repeated keys cost at most 5 x 40 times the CPU of 1,000', async (t) => {
    const small = Buffer.from(repeatedKeyYaml('y', 1_000));
    const large = Buffer.from(repeatedKeyYaml('y', 40_000));
    const m = await cpuRatio(
      () => yamlDuplicateError(small.toString('utf8')),
      () => yamlDuplicateError(large.toString('utf8')),
    );
    t.diagnostic(
      `CPU: 1k keys ${m.smallMs.toFixed(1)} ms, 40k keys ${m.largeMs.toFixed(1)} ms, ratio ${m.ratio.toFixed(1)}`,
    );
    assert.ok(
      m.ratio < 200,
      `ratio ${m.ratio.toFixed(1)} (1k: ${m.smallMs.toFixed(1)} ms, 40k: ${m.largeMs.toFixed(1)} ms; quadratic work gives over 1,000)`,
    );
    const lines = yamlDuplicateError(large.toString('utf8'))!.split('\n');
    assert.equal(lines.length, 40_000, 'one line per repeated key, plus the heading');
    assert.equal(lines[1], '  line 7: key "k" already set in map');
    assert.equal(lines[39_999], `  line ${40_005}: key "k" already set in map`);
    assert.deepEqual(decodeBody(small, 'application/yaml'), {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'y' },
      data: { k: 'v' },
    });
  });
});

/** Sends `body` and, once it has been written whole, a GET on another connection: both answers, and how long the GET took. */
async function withConcurrentGet(
  e: Endpoint,
  method: string,
  path: string,
  body: string,
  contentType: string,
): Promise<{ main: Answer; get: Answer; getMs: number }> {
  let getStarted = 0;
  let getMs = 0;
  let get: Promise<Answer> | undefined;
  const main = await new Promise<Answer>((resolve, reject) => {
    const req = https.request(
      new URL(path, e.url),
      {
        method,
        ca: e.caPem,
        agent: false,
        headers: {
          authorization: `Bearer ${e.token}`,
          'content-type': contentType,
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, text, json: <T>() => JSON.parse(text) as T });
        });
      },
    );
    req.on('error', reject);
    req.on('finish', () => {
      getStarted = performance.now();
      get = call(e, 'GET', '/api/v1/namespaces/default/configmaps?limit=1').then((a) => {
        getMs = performance.now() - getStarted;
        return a;
      });
    });
    req.end(body);
  });
  const answer = await get!;
  return { main, get: answer, getMs };
}

describe('the worst bodies over HTTP', () => {
  let c: EmbeddedCluster;
  let e: Endpoint;
  before(async () => {
    c = await startEmbeddedCluster({ controllers: false });
    e = { url: c.url, token: c.token, caPem: c.caPem };
  });
  after(() => c.stop());

  const CMS = '/api/v1/namespaces/default/configmaps';
  let seq = 0;
  const smpOnce = async (n: number) => {
    const name = `smp-${n}-${seq++}`;
    assert.equal((await call(e, 'POST', CMS, { body: JSON.stringify({ metadata: { name } }) })).status, 201);
    const order = names(n, 'e.io/f');
    const body = JSON.stringify({ metadata: { '$setElementOrder/finalizers': order, finalizers: order } });
    return withConcurrentGet(e, 'PATCH', `${CMS}/${name}`, body, 'application/strategic-merge-patch+json');
  };

  it('$setElementOrder/finalizers with 90,000 entries (1.7 MiB): answered, a GET meanwhile, at most 100 x the CPU of 3,000 (30 x the entries)', async (t) => {
    const time = (n: number) => async () => {
      const r = await smpOnce(n);
      assert.equal(r.main.status, 200, r.main.text.slice(0, 300));
      assert.equal(r.get.status, 200, 'the GET sent while the patch was worked on');
      t.diagnostic(`n=${n}: concurrent GET answered after ${r.getMs.toFixed(0)} ms`);
    };
    const m = await cpuRatio(time(3_000), time(90_000));
    t.diagnostic(`CPU: 3k ${m.smallMs.toFixed(0)} ms, 90k ${m.largeMs.toFixed(0)} ms, ratio ${m.ratio.toFixed(1)}`);
    assert.ok(m.ratio < 100, `ratio ${m.ratio.toFixed(1)} (quadratic work gives several hundred)`);
  });

  it('a YAML body repeating one key 40,000 times: created, a GET meanwhile, at most 200 x the CPU of 1,000 (40 x the keys)', async (t) => {
    const time = (n: number) => async () => {
      const r = await withConcurrentGet(
        e,
        'POST',
        `${CMS}?fieldValidation=Ignore`,
        repeatedKeyYaml(`yaml-${n}-${seq++}`, n),
        'application/yaml',
      );
      assert.equal(r.main.status, 201, r.main.text.slice(0, 300));
      assert.equal(r.get.status, 200, 'the GET sent while the body was worked on');
      t.diagnostic(`n=${n}: concurrent GET answered after ${r.getMs.toFixed(0)} ms`);
    };
    const m = await cpuRatio(time(1_000), time(40_000));
    t.diagnostic(`CPU: 1k ${m.smallMs.toFixed(0)} ms, 40k ${m.largeMs.toFixed(0)} ms, ratio ${m.ratio.toFixed(1)}`);
    assert.ok(m.ratio < 200, `ratio ${m.ratio.toFixed(1)} (quadratic work gives over 1,000)`);
  });

  it('a large YAML body is decoded off the event loop: 10 GETs, one after another, are answered while it is worked on, and the decode went to the worker', async (t) => {
    // About 1 MiB of one repeated key. What is checked is where the parse ran, by counts, not how many GETs fit
    // before the answer: that was the check while the `yaml` library took about a second for this body, and
    // js-yaml takes about 0.1 s, so on a loaded machine fewer than ten sequential GETs (each a new TLS connection)
    // fit before it (a fresh clone's CI failed with 7 of 10). The GETs are sent and answered still, and reported.
    const before = yamlDecodeCounts();
    const stepsBefore = yamlDecodeSteps();
    const body = repeatedKeyYaml(`yaml-off-loop-${seq++}`, 150_000);
    const started = performance.now();
    let answered = false;
    const getsBefore: number[] = [];
    let gets: Promise<void> = Promise.resolve();
    const post = new Promise<Answer>((resolve, reject) => {
      const req = https.request(
        new URL(`${CMS}?fieldValidation=Ignore`, e.url),
        {
          method: 'POST',
          ca: e.caPem,
          agent: false,
          headers: {
            authorization: `Bearer ${e.token}`,
            'content-type': 'application/yaml',
            'content-length': String(Buffer.byteLength(body)),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            answered = true;
            const text = Buffer.concat(chunks).toString('utf8');
            resolve({ status: res.statusCode ?? 0, text, json: <T>() => JSON.parse(text) as T });
          });
        },
      );
      req.on('error', reject);
      req.on('finish', () => {
        gets = (async () => {
          for (let i = 0; i < 10 && !answered; i++) {
            const g = await call(e, 'GET', `${CMS}?limit=1`);
            assert.equal(g.status, 200);
            if (!answered) getsBefore.push(performance.now() - started);
          }
        })();
      });
      req.end(body);
    });
    const r = await post;
    const postMs = performance.now() - started;
    await gets;
    t.diagnostic(
      `${(Buffer.byteLength(body) / 1024).toFixed(0)} KiB: POST answered after ${postMs.toFixed(0)} ms; GETs answered before it: ${getsBefore.length} (at ${getsBefore.map((ms) => ms.toFixed(0)).join(', ')} ms)`,
    );
    assert.equal(r.status, 201, r.text.slice(0, 300));
    assert.equal(yamlDecodeCounts().offThread - before.offThread, 1, 'the body went to the worker thread');
    assert.equal(yamlDecodeCounts().inThread - before.inThread, 0, 'no YAML body was decoded on the event loop');
    // The listener's steps on this thread (one per node event): none, so the loop parsed no part of it.
    assert.equal(yamlDecodeSteps() - stepsBefore, 0, 'the event loop ran no step of the YAML parse');
  });
});
