import { test } from 'node:test';
import assert from 'node:assert/strict';
import { applyJsonPatch, applyMergePatch } from '../../src/cluster/patch/patch.ts';
import { applyStrategicMergePatch } from '../../src/cluster/patch/strategic-merge-patch.ts';
import { PatchError } from '../../src/cluster/patch/patch-error.ts';

const isPatchError = (code: number, re?: RegExp) => (e: unknown) =>
  e instanceof PatchError && e.code === code && (re === undefined || re.test(e.message));

test('JSON patch: RFC 6902 appendix A operations', () => {
  const cases: Array<[unknown, unknown[], unknown]> = [
    [{ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }], { foo: 'bar', baz: 'qux' }],
    [{ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }], { foo: ['bar', 'qux', 'baz'] }],
    [{ baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }], { foo: 'bar' }],
    [{ foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }], { foo: ['bar', 'baz'] }],
    [{ baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }], { baz: 'boo', foo: 'bar' }],
    [
      { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
      [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
      { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
    ],
    [
      { foo: ['all', 'grass', 'cows', 'eat'] },
      [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
      { foo: ['all', 'cows', 'eat', 'grass'] },
    ],
    [
      { baz: 'qux', foo: ['a', 2, 'c'] },
      [
        { op: 'test', path: '/baz', value: 'qux' },
        { op: 'test', path: '/foo/1', value: 2 },
      ],
      { baz: 'qux', foo: ['a', 2, 'c'] },
    ],
    [
      { foo: 'bar' },
      [{ op: 'add', path: '/child', value: { grandchild: {} } }],
      { foo: 'bar', child: { grandchild: {} } },
    ],
    [{ foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }], { foo: ['bar', ['abc', 'def']] }],
    [
      { 'a/b': 1, 'm~n': 2 },
      [
        { op: 'replace', path: '/a~1b', value: 3 },
        { op: 'remove', path: '/m~0n' },
      ],
      { 'a/b': 3 },
    ],
    [
      { a: { b: 1 } },
      [
        { op: 'copy', from: '/a', path: '/c' },
        { op: 'replace', path: '/c/b', value: 2 },
      ],
      { a: { b: 1 }, c: { b: 2 } },
    ],
    [{ a: 1 }, [{ op: 'replace', path: '', value: { b: 2 } }], { b: 2 }],
    [
      { a: { x: 1, y: [1, { z: 2 }] } },
      [{ op: 'test', path: '/a', value: { y: [1, { z: 2 }], x: 1 } }],
      { a: { x: 1, y: [1, { z: 2 }] } },
    ],
    [{ a: 1 }, [{ op: 'test', path: '/missing', value: null }], { a: 1 }],
    [
      { metadata: { finalizers: ['x', 'y'] } },
      [{ op: 'remove', path: '/metadata/finalizers/0' }],
      { metadata: { finalizers: ['y'] } },
    ],
  ];
  for (const [doc, ops, want] of cases) {
    const before = structuredClone(doc);
    assert.deepEqual(applyJsonPatch(doc, ops), want, JSON.stringify(ops));
    assert.deepEqual(doc, before, 'input not mutated');
  }
});

test('JSON patch: failures map to kube status codes', () => {
  const cases: Array<[unknown, unknown, number, RegExp]> = [
    [{ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }], 422, /^testing value \/baz failed: test failed$/],
    [{ a: 1 }, [{ op: 'test', path: '/a', value: '1' }], 422, /test failed/],
    [
      { foo: 'bar' },
      [{ op: 'add', path: '/baz/bat', value: 'qux' }],
      422,
      /add operation does not apply: doc is missing path/,
    ],
    [{ a: 1 }, [{ op: 'remove', path: '/b' }], 422, /Unable to remove nonexistent key: b/],
    [{ a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], 422, /replace operation does not apply/],
    [{ a: [1] }, [{ op: 'add', path: '/a/5', value: 1 }], 422, /invalid index/],
    [{ a: [1] }, [{ op: 'add', path: '/a/01', value: 1 }], 422, /invalid index/],
    [{ a: [1] }, [{ op: 'remove', path: '/a/1' }], 422, /invalid index/],
    [{ a: 1 }, [{ op: 'frob', path: '/a' }], 422, /^Unexpected kind: frob$/],
    [{ a: 1 }, [{ op: 'add', path: '/b' }], 422, /missing value/],
    [{ a: 1 }, [{ op: 'move', from: '/x', path: '/b' }], 422, /missing from path/],
    [{ a: { b: 1 } }, [{ op: 'move', from: '/a', path: '/a/b/c' }], 422, /own child/],
    [{ a: 1 }, [{ op: 'add', path: 'a', value: 1 }], 422, /invalid JSON pointer/],
    [{ a: 1 }, { op: 'add', path: '/a', value: 1 }, 400, /array/],
    [{ a: 1 }, ['add'], 400, /object/],
    [{ a: 1 }, Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/a', value: 1 })), 413, /10000, got 10001/],
  ];
  for (const [doc, ops, code, re] of cases) {
    assert.throws(() => applyJsonPatch(doc, ops), isPatchError(code, re), JSON.stringify(ops).slice(0, 100));
  }
  const doc = { a: 1, b: 2 };
  assert.throws(
    () =>
      applyJsonPatch(doc, [
        { op: 'remove', path: '/a' },
        { op: 'test', path: '/b', value: 3 },
      ]),
    PatchError,
  );
  assert.deepEqual(doc, { a: 1, b: 2 }, 'a failed patch leaves the input untouched');
});

test('merge patch: RFC 7386 appendix A', () => {
  const cases: Array<[unknown, unknown, unknown]> = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    [
      { metadata: { finalizers: ['a', 'b'] } },
      { metadata: { finalizers: ['c'] } },
      { metadata: { finalizers: ['c'] } },
    ],
  ];
  for (const [doc, patch, want] of cases) {
    const before = structuredClone(doc);
    assert.deepEqual(applyMergePatch(doc, patch), want, JSON.stringify(patch));
    assert.deepEqual(doc, before);
  }
  for (const p of [null, ['a'], 'x', 1]) assert.throws(() => applyMergePatch({}, p), isPatchError(400));
});

test('strategic merge patch: merge lists, directives and ordering', () => {
  const cases: Array<[string, unknown, unknown, unknown]> = [
    [
      'finalizer added before server-only items',
      { metadata: { finalizers: ['a', 'b'] } },
      { metadata: { finalizers: ['c'] } },
      { metadata: { finalizers: ['c', 'a', 'b'] } },
    ],
    [
      'finalizer set dedups and keeps relative order',
      { metadata: { finalizers: ['a', 'b'] } },
      { metadata: { finalizers: ['b', 'c'] } },
      { metadata: { finalizers: ['a', 'b', 'c'] } },
    ],
    [
      '$deleteFromPrimitiveList',
      { metadata: { finalizers: ['a', 'b', 'c'] } },
      { metadata: { '$deleteFromPrimitiveList/finalizers': ['b'] } },
      { metadata: { finalizers: ['a', 'c'] } },
    ],
    [
      '$deleteFromPrimitiveList on a missing list',
      { metadata: {} },
      { metadata: { '$deleteFromPrimitiveList/finalizers': ['b'] } },
      { metadata: {} },
    ],
    [
      'finalizers null deletes',
      { metadata: { finalizers: ['a'] } },
      { metadata: { finalizers: null } },
      { metadata: {} },
    ],
    [
      'ownerReferences merged by uid',
      {
        metadata: {
          ownerReferences: [
            { uid: '1', name: 'a' },
            { uid: '2', name: 'b' },
          ],
        },
      },
      {
        metadata: {
          ownerReferences: [
            { uid: '2', name: 'B', controller: true },
            { uid: '3', name: 'c' },
          ],
        },
      },
      {
        metadata: {
          ownerReferences: [
            { uid: '1', name: 'a' },
            { uid: '2', name: 'B', controller: true },
            { uid: '3', name: 'c' },
          ],
        },
      },
    ],
    [
      'ownerReferences $patch delete',
      { metadata: { ownerReferences: [{ uid: '1' }, { uid: '2' }] } },
      { metadata: { ownerReferences: [{ uid: '1', $patch: 'delete' }] } },
      { metadata: { ownerReferences: [{ uid: '2' }] } },
    ],
    [
      'conditions merged by type, nested null deletes',
      { status: { phase: 'Pending', conditions: [{ type: 'Resizing', status: 'True', reason: 'x' }] } },
      {
        status: {
          conditions: [
            { type: 'Resizing', status: 'False', reason: null },
            { type: 'FileSystemResizePending', status: 'True' },
          ],
        },
      },
      {
        status: {
          phase: 'Pending',
          conditions: [
            { type: 'Resizing', status: 'False' },
            { type: 'FileSystemResizePending', status: 'True' },
          ],
        },
      },
    ],
    [
      'list $patch replace',
      { status: { conditions: [{ type: 'A' }, { type: 'B' }] } },
      { status: { conditions: [{ $patch: 'replace' }, { type: 'C' }] } },
      { status: { conditions: [{ type: 'C' }] } },
    ],
    [
      'non-merge lists replace',
      { spec: { accessModes: ['ReadWriteOnce'], mountOptions: ['a'] } },
      { spec: { accessModes: ['ReadOnlyMany'] } },
      { spec: { accessModes: ['ReadOnlyMany'], mountOptions: ['a'] } },
    ],
    [
      'maps merge, null deletes labels',
      { metadata: { labels: { a: '1', b: '2' } } },
      { metadata: { labels: { a: null, c: '3' } } },
      { metadata: { labels: { b: '2', c: '3' } } },
    ],
    ['unmatched nulls are ignored', { a: 1 }, { b: null, c: { d: null, e: 1 } }, { a: 1, c: { e: 1 } }],
    [
      'map $patch replace',
      { spec: { capacity: { storage: '1Gi', x: '1' } } },
      { spec: { capacity: { $patch: 'replace', storage: '2Gi' } } },
      { spec: { capacity: { storage: '2Gi' } } },
    ],
    ['map $patch delete', { spec: { a: 1 }, b: 2 }, { spec: { $patch: 'delete' } }, { spec: {}, b: 2 }],
    [
      '$retainKeys',
      { spec: { volumes: [{ name: 'v', hostPath: { path: '/a' }, emptyDir: {} }] } },
      { spec: { volumes: [{ name: 'v', $retainKeys: ['name', 'hostPath'], hostPath: { path: '/b' } }] } },
      { spec: { volumes: [{ name: 'v', hostPath: { path: '/b' } }] } },
    ],
    [
      'pod containers, env and ports merge',
      {
        spec: {
          containers: [{ name: 'a', image: 'x', env: [{ name: 'E', value: '1' }], ports: [{ containerPort: 80 }] }],
        },
      },
      {
        spec: {
          containers: [
            { name: 'a', image: 'y', env: [{ name: 'F', value: '2' }], ports: [{ containerPort: 80, name: 'http' }] },
          ],
        },
      },
      {
        spec: {
          containers: [
            {
              name: 'a',
              image: 'y',
              env: [
                { name: 'F', value: '2' },
                { name: 'E', value: '1' },
              ],
              ports: [{ containerPort: 80, name: 'http' }],
            },
          ],
        },
      },
    ],
    [
      '$setElementOrder reorders merge list',
      {
        status: {
          conditions: [
            { type: 'A', s: '1' },
            { type: 'B', s: '1' },
          ],
        },
      },
      {
        status: { '$setElementOrder/conditions': [{ type: 'B' }, { type: 'A' }], conditions: [{ type: 'A', s: '2' }] },
      },
      {
        status: {
          conditions: [
            { type: 'B', s: '1' },
            { type: 'A', s: '2' },
          ],
        },
      },
    ],
    [
      '$setElementOrder on primitives',
      { metadata: { finalizers: ['a', 'b'] } },
      { metadata: { '$setElementOrder/finalizers': ['b', 'a'] } },
      { metadata: { finalizers: ['b', 'a'] } },
    ],
    [
      'new map carrying directives',
      {},
      { metadata: { '$setElementOrder/finalizers': ['a'], finalizers: ['a'], labels: { x: null, y: 'z' } } },
      { metadata: { finalizers: ['a'], labels: { y: 'z' } } },
    ],
    [
      'event recorder patch',
      { count: 1, message: 'm', lastTimestamp: 't1', reason: 'R' },
      { count: 2, lastTimestamp: 't2', message: 'm2' },
      { count: 2, message: 'm2', lastTimestamp: 't2', reason: 'R' },
    ],
    ['type change replaces', { spec: { a: [1] } }, { spec: { a: { b: 1 } } }, { spec: { a: { b: 1 } } }],
  ];
  for (const [name, doc, patch, want] of cases) {
    const before = structuredClone(doc);
    const patchBefore = structuredClone(patch);
    const model = /pod|retainKeys/.test(name)
      ? 'V1Pod'
      : name === 'event recorder patch'
        ? 'CoreV1Event'
        : 'V1PersistentVolumeClaim';
    assert.deepEqual(applyStrategicMergePatch(doc, patch, model), want, name);
    assert.deepEqual(doc, before, `${name}: doc not mutated`);
    assert.deepEqual(patch, patchBefore, `${name}: patch not mutated`);
  }
});

test('strategic merge patch: malformed patches are 400', () => {
  const cases: Array<[unknown, unknown, number]> = [
    [{}, ['x'], 400],
    [{}, null, 400],
    [{ spec: {} }, { spec: { $patch: 'merge' } }, 400],
    [{ metadata: { ownerReferences: [{ uid: '1' }] } }, { metadata: { ownerReferences: [{ name: 'no-uid' }] } }, 400],
    [{ metadata: { ownerReferences: [{ uid: '1' }] } }, { metadata: { ownerReferences: [{ $patch: 'delete' }] } }, 400],
    [{ status: { conditions: [{ type: 'A' }] } }, { status: { conditions: [{ $patch: 'merge' }] } }, 400],
    [{ status: { conditions: [{ type: 'A' }] } }, { status: { conditions: ['A'] } }, 400],
    [{ a: 1 }, { $retainKeys: ['a'], b: 1 }, 400],
    [{ metadata: { finalizers: [['a']] } }, { metadata: { finalizers: ['b'] } }, 422],
  ];
  for (const [doc, patch, code] of cases) {
    assert.throws(
      () => applyStrategicMergePatch(doc, patch, 'V1PersistentVolumeClaim'),
      isPatchError(code),
      JSON.stringify(patch),
    );
  }
});

// ---------------------------------------------------------------------------------------------------- properties

function rng(seed: number) {
  return (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
}

const KEYS = ['a', 'b', 'c/d', 'e~f', 'g'];

function randomValue(rnd: (n: number) => number, depth: number): unknown {
  switch (rnd(depth > 2 ? 3 : 5)) {
    case 0:
      return rnd(100);
    case 1:
      return ['x', 'y', 'z'][rnd(3)];
    case 2:
      return rnd(2) === 1;
    case 3:
      return Array.from({ length: rnd(3) }, () => randomValue(rnd, depth + 1));
    default:
      return randomObject(rnd, depth + 1);
  }
}

function randomObject(rnd: (n: number) => number, depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const k of KEYS) if (rnd(2)) o[k] = randomValue(rnd, depth);
  return o;
}

const escape = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** Builds a JSON patch turning a into b (objects recurse; everything else is replaced). */
function diffToJsonPatch(a: Record<string, unknown>, b: Record<string, unknown>, base = ''): unknown[] {
  const ops: unknown[] = [];
  for (const k of Object.keys(a)) if (!(k in b)) ops.push({ op: 'remove', path: `${base}/${escape(k)}` });
  for (const [k, v] of Object.entries(b)) {
    const p = `${base}/${escape(k)}`;
    const av = a[k];
    if (!(k in a)) ops.push({ op: 'add', path: p, value: v });
    else if (typeof av === 'object' && av && !Array.isArray(av) && typeof v === 'object' && v && !Array.isArray(v)) {
      ops.push(...diffToJsonPatch(av as Record<string, unknown>, v as Record<string, unknown>, p));
    } else ops.push({ op: 'replace', path: p, value: v });
  }
  return ops;
}

/** Builds an RFC 7386 merge patch turning a into b (b has no nulls). */
function diffToMergePatch(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const p: Record<string, unknown> = {};
  for (const k of Object.keys(a)) if (!(k in b)) p[k] = null;
  for (const [k, v] of Object.entries(b)) {
    const av = a[k];
    if (typeof av === 'object' && av && !Array.isArray(av) && typeof v === 'object' && v && !Array.isArray(v)) {
      p[k] = diffToMergePatch(av as Record<string, unknown>, v as Record<string, unknown>);
    } else p[k] = v;
  }
  return p;
}

test('property: diff-generated JSON, merge and strategic patches turn a into b without touching a', () => {
  const rnd = rng(42);
  for (let i = 0; i < 400; i++) {
    const a = randomObject(rnd, 0);
    const b = randomObject(rnd, 0);
    const aCopy = structuredClone(a);
    const jsonOps = diffToJsonPatch(a, b);
    assert.deepEqual(applyJsonPatch(a, jsonOps), b, JSON.stringify({ a, b, jsonOps }));
    const mp = diffToMergePatch(a, b);
    assert.deepEqual(applyMergePatch(a, mp), b);
    // With no merge-list paths involved, a strategic merge patch is a merge patch.
    assert.deepEqual(applyStrategicMergePatch(a, mp, 'V1PersistentVolumeClaim'), b);
    assert.deepEqual(a, aCopy);
    // A test op against the patched result always passes; against a changed value it fails with 422.
    const patched = applyJsonPatch(a, jsonOps);
    assert.deepEqual(applyJsonPatch(patched, [{ op: 'test', path: '', value: b }]), b);
  }
});

test('property: finalizer SMP equals set union with patch items first when new', () => {
  const rnd = rng(7);
  const names = ['a', 'b', 'c', 'd', 'e'];
  for (let i = 0; i < 300; i++) {
    const server = names.filter(() => rnd(2));
    const patch = names.filter(() => rnd(3) === 0);
    const out = applyStrategicMergePatch(
      { metadata: { finalizers: server } },
      { metadata: { finalizers: patch } },
      'V1PersistentVolumeClaim',
    ) as {
      metadata: { finalizers: string[] };
    };
    const got = out.metadata.finalizers;
    assert.deepEqual([...got].sort(), [...new Set([...server, ...patch])].sort(), 'set union');
    assert.equal(new Set(got).size, got.length, 'no duplicates');
    const inPatch = got.filter((f) => patch.includes(f));
    assert.deepEqual(inPatch, patch, 'patch items keep patch order');
    const serverOnly = got.filter((f) => !patch.includes(f));
    assert.deepEqual(
      serverOnly,
      server.filter((f) => !patch.includes(f)),
      'server-only items keep server order',
    );
    const removed = applyStrategicMergePatch(
      out,
      { metadata: { [`$deleteFromPrimitiveList/finalizers`]: patch } },
      'V1PersistentVolumeClaim',
    ) as typeof out;
    assert.deepEqual(removed.metadata.finalizers, serverOnly);
  }
});
