// Query parameters decoded as apimachinery converts them (booleans true unless absent/0/false, Go integers)
// and consistent paginated lists: continue pages are a snapshot at the first page's resourceVersion, rebuilt
// from the watch cache; compacted history gives the inconsistent-continue 410; tokens are checked.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { pvcBody, raw } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;
const NS = 'snap';
const PVCS = `/api/v1/namespaces/${NS}/persistentvolumeclaims`;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
  for (let i = 1; i <= 6; i++) {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody(`c${i}`) as V1PersistentVolumeClaim,
    });
  }
});
after(() => c.stop());

const token = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

describe('query parameters as apimachinery converts them', () => {
  it('treats watch=True, watch=yes and an empty watch= as a watch, watch=FALSE and watch=0 as a list', async () => {
    for (const v of ['False', 'FALSE', '0']) {
      const res = await raw(c, 'GET', `${PVCS}?watch=${v}`);
      assert.equal(res.status, 200);
      assert.equal(res.json().kind, 'PersistentVolumeClaimList', `watch=${v}`);
    }
    for (const v of ['True', 'yes', '']) {
      // timeoutSeconds ends the stream, so the raw request completes with the initial ADDED events.
      const res = await raw(c, 'GET', `${PVCS}?watch=${v}&timeoutSeconds=1`);
      assert.equal(res.status, 200);
      const frames = res.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string });
      assert.equal(frames.length, 6, `watch=${v}`);
      assert.ok(frames.every((f) => f.type === 'ADDED'));
    }
  });

  it('honours allowWatchBookmarks=True and sendInitialEvents=True', async () => {
    const res = await raw(
      c,
      'GET',
      `${PVCS}?watch=1&allowWatchBookmarks=True&sendInitialEvents=True&resourceVersionMatch=NotOlderThan&timeoutSeconds=1`,
    );
    const frames = res.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { annotations?: Record<string, string> } } });
    assert.equal(frames.filter((f) => f.type === 'ADDED').length, 6);
    const bookmark = frames.find((f) => f.type === 'BOOKMARK');
    assert.equal(bookmark?.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
  });

  it('rejects sendInitialEvents=False on a list as present (a *bool), and accepts sendInitialEvents absent', async () => {
    const res = await raw(c, 'GET', `${PVCS}?sendInitialEvents=False`);
    assert.equal(res.status, 422);
    assert.match(res.json<{ message: string }>().message, /sendInitialEvents is forbidden for list/);
  });

  it('parses integers with strconv.ParseInt and answers 400 with its message', async () => {
    const bad = await raw(c, 'GET', `${PVCS}?limit=ten`);
    assert.equal(bad.status, 400);
    assert.equal(bad.json<{ message: string }>().message, 'strconv.ParseInt: parsing "ten": invalid syntax');
    const range = await raw(c, 'GET', `${PVCS}?timeoutSeconds=99999999999999999999`);
    assert.equal(range.status, 400);
    assert.equal(
      range.json<{ message: string }>().message,
      'strconv.ParseInt: parsing "99999999999999999999": value out of range',
    );
    const signed = await raw(c, 'GET', `${PVCS}?limit=%2B2`);
    assert.equal(signed.json<{ items: unknown[] }>().items.length, 2);
    const grace = await raw(c, 'DELETE', `${PVCS}/c1?gracePeriodSeconds=soon`);
    assert.equal(grace.status, 400);
    assert.ok(await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'c1' }));
  });

  it('forbids force on a non-apply patch, parsed as a boolean', async () => {
    const res = await raw(c, 'PATCH', `${PVCS}/c1?force=False`, {
      body: '{}',
      contentType: 'application/merge-patch+json',
    });
    assert.equal(res.status, 422);
    assert.match(res.json<{ message: string }>().message, /force: Forbidden: may not be specified for non-apply patch/);
  });

  it('validates resourceVersionMatch combinations with kube-apiserver messages', async () => {
    const exactZero = await raw(c, 'GET', `${PVCS}?resourceVersion=0&resourceVersionMatch=Exact`);
    assert.equal(exactZero.status, 422);
    assert.match(
      exactZero.json<{ message: string }>().message,
      /resourceVersionMatch "exact" is forbidden for resourceVersion "0"/,
    );
    const bogus = await raw(c, 'GET', `${PVCS}?resourceVersion=1&resourceVersionMatch=Newest`);
    assert.match(
      bogus.json<{ message: string }>().message,
      /Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""/,
    );
    const watchMatch = await raw(c, 'GET', `${PVCS}?watch=True&resourceVersionMatch=NotOlderThan`);
    assert.equal(watchMatch.status, 422);
    assert.match(
      watchMatch.json<{ message: string }>().message,
      /resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided/,
    );
  });
});

describe('list snapshots', () => {
  it('serves continue pages as of the first page resourceVersion', async () => {
    const first = await core.listNamespacedPersistentVolumeClaim({ namespace: NS, limit: 2 });
    assert.deepEqual(
      first.items.map((p) => p.metadata!.name),
      ['c1', 'c2'],
    );
    const c3Before = (await core.readNamespacedPersistentVolumeClaim({ namespace: NS, name: 'c3' })).metadata!
      .resourceVersion;
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: NS, name: 'c5' });
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvcBody('c9') as V1PersistentVolumeClaim });
    await core.patchNamespacedPersistentVolumeClaim({
      namespace: NS,
      name: 'c3',
      body: [{ op: 'add', path: '/metadata/labels', value: { patched: 'yes' } }],
    });
    const names: string[] = [];
    let cont = first.metadata!._continue;
    let c3Seen: V1PersistentVolumeClaim | undefined;
    while (cont) {
      const page = await core.listNamespacedPersistentVolumeClaim({ namespace: NS, limit: 2, _continue: cont });
      assert.equal(page.metadata!.resourceVersion, first.metadata!.resourceVersion);
      names.push(...page.items.map((p) => p.metadata!.name!));
      c3Seen ??= page.items.find((p) => p.metadata!.name === 'c3');
      cont = page.metadata!._continue;
    }
    assert.deepEqual(names, ['c3', 'c4', 'c5', 'c6']);
    assert.equal(c3Seen!.metadata!.resourceVersion, c3Before);
    assert.equal(c3Seen!.metadata!.labels, undefined);
    const now = await core.listNamespacedPersistentVolumeClaim({ namespace: NS });
    assert.deepEqual(
      now.items.map((p) => p.metadata!.name),
      ['c1', 'c2', 'c3', 'c4', 'c6', 'c9'],
    );
  });

  it('serves resourceVersionMatch=Exact from history', async () => {
    const before = await core.listNamespacedPersistentVolumeClaim({ namespace: NS });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody('c10') as V1PersistentVolumeClaim,
    });
    const exact = await raw(
      c,
      'GET',
      `${PVCS}?resourceVersion=${before.metadata!.resourceVersion}&resourceVersionMatch=Exact`,
    );
    assert.equal(exact.status, 200);
    const names = exact.json<{ items: Array<{ metadata: { name: string } }> }>().items.map((i) => i.metadata.name);
    assert.deepEqual(
      names,
      before.items.map((p) => p.metadata!.name),
    );
  });

  it('answers 410 Expired with an inconsistent-continue token once history is compacted, and that token lists the rest', async () => {
    const first = await core.listNamespacedPersistentVolumeClaim({ namespace: NS, limit: 2 });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody('c11') as V1PersistentVolumeClaim,
    });
    assert.equal((await raw(c, 'POST', '/admin/compact')).status, 200);
    const res = await raw(c, 'GET', `${PVCS}?limit=2&continue=${first.metadata!._continue}`);
    assert.equal(res.status, 410);
    const status = res.json<{ reason: string; message: string; metadata: { continue: string } }>();
    assert.equal(status.reason, 'Expired');
    assert.match(status.message, /^The provided continue parameter is too old to display a consistent list result\./);
    const decoded = JSON.parse(Buffer.from(status.metadata.continue, 'base64url').toString()) as {
      v: string;
      rv: number;
      start: string;
    };
    assert.equal(decoded.rv, -1);
    assert.equal(decoded.v, 'meta.k8s.io/v1');
    const rest = await core.listNamespacedPersistentVolumeClaim({ namespace: NS, _continue: status.metadata.continue });
    assert.ok(rest.items.some((p) => p.metadata!.name === 'c11'));
    assert.ok(!rest.items.some((p) => p.metadata!.name === 'c1'));
  });

  it('answers a compacted Exact list with 410 "too old"', async () => {
    const before = await core.listNamespacedPersistentVolumeClaim({ namespace: NS });
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: pvcBody('c12') as V1PersistentVolumeClaim,
    });
    await raw(c, 'POST', '/admin/compact');
    const res = await raw(
      c,
      'GET',
      `${PVCS}?resourceVersion=${before.metadata!.resourceVersion}&resourceVersionMatch=Exact`,
    );
    assert.equal(res.status, 410);
    assert.equal(res.json<{ message: string }>().message, 'The resourceVersion for the provided list is too old.');
  });

  it('checks continue tokens like storage.DecodeContinue', async () => {
    const cases: Array<[string, RegExp]> = [
      ['not*base64', /^invalid continue token: continue key is not valid: illegal base64 data at input byte 3$/],
      [
        token({ v: 'meta.k8s.io/v2', rv: 5, start: 'a\u0000' }),
        /server does not recognize this encoded version meta.k8s.io\/v2/,
      ],
      [token({ v: 'meta.k8s.io/v1', rv: 0, start: 'a\u0000' }), /incorrect encoded start resourceVersion/],
      [token({ v: 'meta.k8s.io/v1', rv: 5, start: '' }), /encoded start key empty/],
      [
        token({ v: 'meta.k8s.io/v1', rv: 5, start: '../../secrets/x\u0000' }),
        /continue key is not valid: \.\.\/\.\.\/secrets/,
      ],
    ];
    for (const [t, message] of cases) {
      const res = await raw(c, 'GET', `${PVCS}?limit=2&continue=${t}`);
      assert.equal(res.status, 400, t);
      assert.match(res.json<{ message: string }>().message, message);
    }
    const withRv = await raw(
      c,
      'GET',
      `${PVCS}?resourceVersion=5&continue=${token({ v: 'meta.k8s.io/v1', rv: 5, start: 'a\u0000' })}`,
    );
    assert.equal(
      withRv.json<{ message: string }>().message,
      'specifying resource version is not allowed when using continue',
    );
  });
});

describe('list snapshots keep no history beyond the watch cache', () => {
  it('a continue token outliving the bounded event ring gets 410, whatever the number of writes', async () => {
    const small = await startCluster({ controllers: false, watchCacheSize: 5 });
    try {
      const api = small.kubeConfig.makeApiClient(CoreV1Api);
      for (let i = 0; i < 3; i++)
        await api.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `cm${i}` } } });
      const first = await api.listNamespacedConfigMap({ namespace: 'default', limit: 1 });
      // Within the ring (5 events per resource) the page is still served as a snapshot...
      for (let i = 0; i < 4; i++)
        await api.patchNamespacedConfigMap({
          namespace: 'default',
          name: 'cm1',
          body: [{ op: 'add', path: '/data', value: { n: String(i) } }],
        });
      const page = await api.listNamespacedConfigMap({ namespace: 'default', _continue: first.metadata!._continue });
      assert.equal(page.items.find((m) => m.metadata!.name === 'cm1')!.data, undefined);
      // ...and once more writes than the ring holds happened, the answer is 410, not an ever-growing history.
      for (let i = 0; i < 5; i++)
        await api.patchNamespacedConfigMap({
          namespace: 'default',
          name: 'cm2',
          body: [{ op: 'add', path: '/data', value: { n: String(i) } }],
        });
      const res = await raw(
        small,
        'GET',
        `/api/v1/namespaces/default/configmaps?continue=${first.metadata!._continue}`,
      );
      assert.equal(res.status, 410);
    } finally {
      await small.stop();
    }
  });
});

describe("the project's KubeClient over a consistent list", () => {
  it('pages through a snapshot while objects change; listAll gives the current list', async () => {
    const client = new KubeClient({ kubeConfig: c.kubeConfig, qps: 0 });
    const ns = 'snap-client';
    await core.createNamespace({ body: { metadata: { name: ns } } });
    for (let i = 1; i <= 4; i++)
      await core.createNamespacedPersistentVolumeClaim({
        namespace: ns,
        body: pvcBody(`k${i}`) as V1PersistentVolumeClaim,
      });
    const first = await client.list<PersistentVolumeClaim>(persistentVolumeClaims, { namespace: ns, limit: 2 });
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: 'k4' });
    const second = await client.list<PersistentVolumeClaim>(persistentVolumeClaims, {
      namespace: ns,
      limit: 2,
      continue: first.metadata.continue,
    });
    assert.deepEqual(
      second.items.map((p) => p.metadata.name),
      ['k3', 'k4'],
    );
    assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);
    const all = await client.listAll<PersistentVolumeClaim>(persistentVolumeClaims, { namespace: ns, limit: 1 });
    assert.deepEqual(
      all.items.map((p) => p.metadata.name),
      ['k1', 'k2', 'k3'],
    );
  });
});
