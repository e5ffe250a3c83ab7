// Bad input never breaks the server: each malformed request gets the Status kube-apiserver would answer
// (400/401/404/405/409/413/422/500) and the next request is served normally, with nothing lost.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { Status } from '../../src/types/k8s.ts';
import { pvcBody, raw } from './api-harness.ts';

let c: TestCluster;
const PVCS = '/api/v1/namespaces/default/persistentvolumeclaims';

before(async () => {
  c = await startCluster({ controllers: false });
  const res = await raw(c, 'POST', PVCS, { body: JSON.stringify(pvcBody('keep')) });
  assert.equal(res.status, 201);
});
after(() => c.stop());

async function expectStatus(
  res: Promise<{ status: number; json<T>(): T }>,
  code: number,
  reason?: string,
): Promise<Status> {
  const r = await res;
  assert.equal(r.status, code);
  const body = r.json<Status>();
  assert.equal(body.kind, 'Status');
  assert.equal(body.code, code);
  if (reason !== undefined) assert.equal(body.reason, reason);
  return body;
}

describe('bad input', () => {
  it('401 without a token or with a wrong one', async () => {
    await expectStatus(raw(c, 'GET', PVCS, { token: null }), 401, 'Unauthorized');
    await expectStatus(raw(c, 'GET', PVCS, { token: 'wrong' }), 401, 'Unauthorized');
    await expectStatus(raw(c, 'GET', '/admin/audit', { token: null }), 401, 'Unauthorized');
  });

  it('400 for malformed JSON and YAML', async () => {
    const s = await expectStatus(raw(c, 'POST', PVCS, { body: '{"metadata": {' }), 400, 'BadRequest');
    assert.match(s.message!, /json parse error/);
    await expectStatus(
      raw(c, 'POST', PVCS, { body: 'metadata: [unclosed', contentType: 'application/yaml' }),
      400,
      'BadRequest',
    );
    const yamlOk = await raw(c, 'POST', PVCS, {
      contentType: 'application/yaml',
      body: 'apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: from-yaml\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n',
    });
    assert.equal(yamlOk.status, 201);
    await expectStatus(raw(c, 'POST', PVCS, { body: '[1,2]' }), 400, 'BadRequest');
  });

  it('400 when kind or apiVersion do not match the URL, or name/namespace differ', async () => {
    const kind = await expectStatus(
      raw(c, 'POST', PVCS, { body: JSON.stringify({ ...pvcBody('k'), kind: 'PersistentVolume' }) }),
      400,
      'BadRequest',
    );
    assert.match(kind.message!, /PersistentVolume/);
    const version = await expectStatus(
      raw(c, 'POST', PVCS, { body: JSON.stringify({ ...pvcBody('k'), apiVersion: 'storage.k8s.io/v1' }) }),
      400,
      'BadRequest',
    );
    assert.equal(
      version.message,
      'the API version in the data (storage.k8s.io/v1) does not match the expected API version (v1)',
    );
    const ns = await expectStatus(
      raw(c, 'POST', PVCS, { body: JSON.stringify(pvcBody('k', { metadata: { name: 'k', namespace: 'other' } })) }),
      400,
      'BadRequest',
    );
    assert.equal(ns.message, 'the namespace of the provided object does not match the namespace sent on the request');
    const name = await expectStatus(
      raw(c, 'PUT', `${PVCS}/keep`, { body: JSON.stringify(pvcBody('other')) }),
      400,
      'BadRequest',
    );
    assert.equal(name.message, 'the name of the object (other) does not match the name on the URL (keep)');
  });

  it('404 for unknown resources, 405 for unsupported methods', async () => {
    // An unknown resource inside a served group is a mux miss in kube-apiserver: Go's plain-text 404.
    const unknown = await raw(c, 'GET', '/api/v1/widgets');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.text, '404 page not found\n');
    assert.equal(unknown.headers['content-type'], 'text/plain; charset=utf-8');
    const plain = await raw(c, 'GET', '/apis/nope.example.com/v1/things');
    assert.equal(plain.status, 404);
    await expectStatus(raw(c, 'GET', `${PVCS}/missing`), 404, 'NotFound');
    // No route for the method: go-restful's generic 405 (NewGenericServerResponse), same for every case.
    for (const [method, path] of [
      ['POST', `${PVCS}/keep`],
      ['POST', '/api/v1/persistentvolumeclaims'],
      ['DELETE', '/api/v1/namespaces'],
    ]) {
      const s = await expectStatus(raw(c, method, path, { body: '{}' }), 405, 'MethodNotAllowed');
      assert.equal(s.message, 'the server does not allow this method on the requested resource', `${method} ${path}`);
      assert.deepEqual(s.details, {});
    }
  });

  it('422 for an unknown dryRun or fieldValidation value, naming the options kind', async () => {
    const created = await expectStatus(
      raw(c, 'POST', `${PVCS}?fieldValidation=Loose`, { body: JSON.stringify(pvcBody('fv')) }),
      422,
      'Invalid',
    );
    assert.equal(
      created.message,
      'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"',
    );
    const patched = await expectStatus(
      raw(c, 'PATCH', `${PVCS}/keep?dryRun=Some`, { body: '{}', contentType: 'application/merge-patch+json' }),
      422,
      'Invalid',
    );
    assert.equal(
      patched.message,
      'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"',
    );
    assert.equal((await raw(c, 'GET', `${PVCS}/fv`)).status, 404, 'nothing was created');
    for (const v of ['Strict', 'Warn', 'Ignore']) {
      const ok = await raw(c, 'PATCH', `${PVCS}/keep?fieldValidation=${v}`, {
        body: '{}',
        contentType: 'application/merge-patch+json',
      });
      assert.equal(ok.status, 200, v);
    }
  });

  it('422 without causes when a JSON patch operation fails', async () => {
    const body = JSON.stringify([{ op: 'test', path: '/metadata/name', value: 'other' }]);
    const s = await expectStatus(
      raw(c, 'PATCH', `${PVCS}/keep`, { body, contentType: 'application/json-patch+json' }),
      422,
      'Invalid',
    );
    assert.equal(s.message, 'the server rejected our request due to an error in our request');
    assert.deepEqual(s.details, {});
  });

  it('413 for a body over 3 MiB, and the server keeps serving', async () => {
    const big = JSON.stringify({
      ...pvcBody('big'),
      metadata: { name: 'big', annotations: { blob: 'x'.repeat(3 * 1024 * 1024 + 10) } },
    });
    await expectStatus(raw(c, 'POST', PVCS, { body: big }), 413, 'RequestEntityTooLarge');
    assert.equal((await raw(c, 'GET', `${PVCS}/keep`)).status, 200);
  });

  it('422 for invalid names, with field causes', async () => {
    const s = await expectStatus(raw(c, 'POST', PVCS, { body: JSON.stringify(pvcBody('Not_Valid')) }), 422, 'Invalid');
    assert.equal(s.details!.kind, 'PersistentVolumeClaim');
    assert.ok(s.details!.causes!.some((cause) => cause.field === 'metadata.name'));
    await expectStatus(
      raw(c, 'POST', PVCS, { body: JSON.stringify({ ...pvcBody(''), metadata: {} }) }),
      422,
      'Invalid',
    );
  });

  it('garbage and stale resourceVersions', async () => {
    // The storage layer's InvalidError reaches the client unconverted: a plain 500 without reason.
    for (const path of [`${PVCS}?resourceVersion=abc`, `${PVCS}/keep?resourceVersion=abc`]) {
      const s = await expectStatus(raw(c, 'GET', path), 500);
      assert.equal(s.reason, undefined);
      assert.equal(
        s.message,
        'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
      );
    }
    await expectStatus(raw(c, 'GET', `${PVCS}?watch=true&resourceVersion=abc`), 422, 'Invalid');
    const current = (await raw(c, 'GET', `${PVCS}/keep`)).json<{ metadata: { resourceVersion: string } }>();
    const body = JSON.stringify({ ...pvcBody('keep'), metadata: { name: 'keep', resourceVersion: 'abc' } });
    await expectStatus(raw(c, 'PUT', `${PVCS}/keep`, { body }), 400, 'BadRequest');
    const stale = JSON.stringify({
      ...pvcBody('keep'),
      metadata: { name: 'keep', resourceVersion: '1', labels: { a: 'b' } },
    });
    await expectStatus(raw(c, 'PUT', `${PVCS}/keep`, { body: stale }), 409, 'Conflict');
    const future = Number(current.metadata.resourceVersion) + 1000;
    await expectStatus(raw(c, 'GET', `${PVCS}?resourceVersion=${future}`), 504, 'Timeout');
    await expectStatus(raw(c, 'GET', `${PVCS}?resourceVersionMatch=NotOlderThan`), 422, 'Invalid');
    const exact0 = await expectStatus(
      raw(c, 'GET', `${PVCS}?resourceVersion=0&resourceVersionMatch=Exact`),
      422,
      'Invalid',
    );
    assert.equal(
      exact0.message,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
    );
    const withContinue = await expectStatus(
      raw(c, 'GET', `${PVCS}?resourceVersion=1&resourceVersionMatch=NotOlderThan&continue=abc`),
      422,
      'Invalid',
    );
    assert.equal(
      withContinue.message,
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided',
    );
    const unsupported = await expectStatus(
      raw(c, 'GET', `${PVCS}?resourceVersion=1&resourceVersionMatch=Newest`),
      422,
      'Invalid',
    );
    assert.equal(
      unsupported.details?.causes?.[0]?.message,
      'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""',
    );
    const withRv = JSON.stringify({ ...pvcBody('rv-set'), metadata: { name: 'rv-set', resourceVersion: '5' } });
    const s = await expectStatus(raw(c, 'POST', PVCS, { body: withRv }), 500);
    assert.equal(s.message, 'resourceVersion should not be set on objects to be created');
  });

  it('400 for broken selectors on list and watch', async () => {
    await expectStatus(raw(c, 'GET', `${PVCS}?labelSelector=${encodeURIComponent('a in (b')}`), 400, 'BadRequest');
    await expectStatus(
      raw(c, 'GET', `${PVCS}?watch=true&fieldSelector=${encodeURIComponent('spec.foo=bar')}`),
      400,
      'BadRequest',
    );
  });

  it('400 for a MicroTime without six fractional digits', async () => {
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l' },
      spec: { renewTime: new Date(0).toISOString() },
    };
    const s = await expectStatus(
      raw(c, 'POST', '/apis/coordination.k8s.io/v1/namespaces/default/leases', { body: JSON.stringify(lease) }),
      400,
      'BadRequest',
    );
    assert.match(s.message!, /cannot parse "\.000Z" as "\.000000"/);
  });

  it('still has every object after all of the above', async () => {
    const list = (await raw(c, 'GET', PVCS)).json<{ items: Array<{ metadata: { name: string } }> }>();
    assert.deepEqual(list.items.map((i) => i.metadata.name).sort(), ['from-yaml', 'keep']);
  });
});
