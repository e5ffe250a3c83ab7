// Secret writes as kube-apiserver decodes them: `stringData` merged into `data` (base64) on create, update and
// patch and never stored; `data` values decoded as Go decodes []byte (a bad value is a 400 naming its byte
// offset, a patch that produces one a 422); an `immutable` Secret refuses data changes, through stringData too.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { base64ErrorOffset } from '../../src/cluster/common/go-base64.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { raw } from './api-harness.ts';

const NS = 'secret-data';
let cluster: TestCluster;
let core: CoreV1Api;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const path = (name = '') => `/api/v1/namespaces/${NS}/secrets${name ? `/${name}` : ''}`;

before(async () => {
  cluster = await startCluster();
  core = cluster.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});
after(async () => {
  await cluster?.stop();
});

describe('Secret stringData', () => {
  it('is merged into data on create, overwriting the same key, and not stored', async () => {
    const created = await core.createNamespacedSecret({
      namespace: NS,
      body: {
        metadata: { name: 'creds' },
        data: { user: b64('old'), token: b64('t0k') },
        stringData: { user: 'admin', 'pass.txt': 'p@ss' },
      },
    });
    assert.deepEqual(created.data, { user: b64('admin'), token: b64('t0k'), 'pass.txt': b64('p@ss') });
    assert.equal(created.stringData, undefined);
    const read = await raw(cluster, 'GET', path('creds'));
    assert.equal(read.json<Record<string, unknown>>().stringData, undefined, read.text);
    assert.deepEqual(read.json<{ data: Record<string, string> }>().data.user, b64('admin'));
  });

  it('is merged on update and on patch, keeping the other keys', async () => {
    const current = await core.readNamespacedSecret({ name: 'creds', namespace: NS });
    const updated = await core.replaceNamespacedSecret({
      name: 'creds',
      namespace: NS,
      body: { ...current, stringData: { token: 'new' } },
    });
    assert.equal(updated.data?.token, b64('new'));
    assert.equal(updated.data?.user, b64('admin'));
    const patched = await raw(cluster, 'PATCH', path('creds'), {
      body: JSON.stringify({ stringData: { extra: 'x' } }),
      contentType: 'application/merge-patch+json',
    });
    assert.equal(patched.status, 200, patched.text);
    const body = patched.json<{ data: Record<string, string>; stringData?: unknown }>();
    assert.deepEqual(Object.keys(body.data).sort(), ['extra', 'pass.txt', 'token', 'user']);
    assert.equal(body.stringData, undefined);
  });

  it('validates its keys as data keys, and counts toward the 1 MiB limit', async () => {
    const res = await raw(cluster, 'POST', path(), {
      body: JSON.stringify({ metadata: { name: 'bad-key' }, stringData: { 'a/b': 'x' } }),
    });
    assert.equal(res.status, 422, res.text);
    assert.match(res.json<{ message: string }>().message, /data\[a\/b\]: Invalid value: "a\/b"/);
    const big = await raw(cluster, 'POST', path(), {
      body: JSON.stringify({ metadata: { name: 'big' }, stringData: { big: 'x'.repeat(1024 * 1024 + 1) } }),
    });
    assert.equal(big.status, 422, big.text);
    assert.match(big.json<{ message: string }>().message, /data: Too long/);
  });

  it('cannot change the data of an immutable Secret', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'frozen' }, immutable: true, stringData: { a: '1' } },
    });
    const res = await raw(cluster, 'PATCH', path('frozen'), {
      body: JSON.stringify({ stringData: { a: '2' } }),
      contentType: 'application/merge-patch+json',
    });
    assert.equal(res.status, 422, res.text);
    assert.match(
      res.json<{ message: string }>().message,
      /data: Forbidden: field is immutable when `immutable` is set/,
    );
    const same = await raw(cluster, 'PATCH', path('frozen'), {
      body: JSON.stringify({ stringData: { a: '1' } }),
      contentType: 'application/merge-patch+json',
    });
    assert.equal(same.status, 200, same.text);
  });
});

describe('Secret data decoding', () => {
  it('refuses a value that is not base64 with the 400 and byte offset kube-apiserver gives', async () => {
    const res = await raw(cluster, 'POST', path(), {
      body: JSON.stringify({ metadata: { name: 'not-b64' }, data: { token: 'c2Vj!mV0' } }),
    });
    assert.equal(res.status, 400, res.text);
    assert.equal(
      res.json<{ message: string }>().message,
      'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 4',
    );
    const unpadded = await raw(cluster, 'POST', path(), {
      body: JSON.stringify({ metadata: { name: 'unpadded' }, data: { token: 'YWJj ZA' } }),
    });
    assert.equal(unpadded.status, 400, unpadded.text);
  });

  it('answers a patch that produces a bad value with 422 on the patch', async () => {
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: 'patch-me' }, data: { a: b64('1') } },
    });
    const res = await raw(cluster, 'PATCH', path('patch-me'), {
      body: JSON.stringify({ data: { a: '***' } }),
      contentType: 'application/merge-patch+json',
    });
    assert.equal(res.status, 422, res.text);
    assert.match(
      res.json<{ message: string }>().message,
      /^ "" is invalid: patch: Invalid value: ".*": illegal base64 data at input byte 0$/,
    );
  });

  it('follows Go base64.StdEncoding: padding, newlines, offsets', () => {
    const cases: Array<[string, number | undefined]> = [
      ['', undefined],
      ['YQ==', undefined],
      ['YWI=', undefined],
      ['YWJj', undefined],
      ['YW\nJj\r\n', undefined],
      ['YQ', 0],
      ['YWJjZ', 4],
      ['Y===', 1],
      ['YQ=', 3],
      ['YQ=x', 2],
      ['YQ==YQ==', 4],
      ['YW!j', 2],
      ['YWI=\n\nx', 6],
    ];
    for (const [input, want] of cases) assert.equal(base64ErrorOffset(input), want, JSON.stringify(input));
  });
});
