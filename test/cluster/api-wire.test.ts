// The API as a non-JavaScript client sees it: exact request bytes over a TLS socket (capitalised booleans as
// Python's client sends them, exact query strings) and byte-level checks of the answers (trailing newline of
// JSON bodies, Warning headers, plain-text 404s). Also the small fidelity points: time re-encoding, the
// server-side-apply 415, $deleteFromPrimitiveList given a map, and the default ServiceAccount of namespaces.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:tls';
import { CoreV1Api, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';
import { pvcBody } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;
const NS = 'wire';

before(async () => {
  c = await startCluster({ controllers: true });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: NS } } });
});
after(() => c.stop());

interface WireResponse {
  statusLine: string;
  /** Header lines exactly as received, in order. */
  headers: string[];
  body: Buffer;
}

/** Sends one HTTP/1.1 request as raw bytes on a fresh TLS connection and reads until the server closes it. */
function wire(method: string, target: string, body?: string, contentType = 'application/json'): Promise<WireResponse> {
  const url = new URL(c.url);
  const ca = Buffer.from(c.kubeConfig.getCurrentCluster()!.caData!, 'base64');
  const lines = [
    `${method} ${target} HTTP/1.1`,
    `Host: ${url.host}`,
    `Authorization: Bearer ${c.token}`,
    'Accept: application/json',
    'Connection: close',
  ];
  if (body !== undefined) lines.push(`Content-Type: ${contentType}`, `Content-Length: ${Buffer.byteLength(body)}`);
  const request = `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), ca, servername: url.hostname }, () =>
      socket.end(request),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const all = Buffer.concat(chunks);
      const split = all.indexOf('\r\n\r\n');
      const [statusLine, ...headers] = all.subarray(0, split).toString('latin1').split('\r\n');
      let payload: Buffer = all.subarray(split + 4);
      if (headers.some((h) => /^transfer-encoding: chunked$/i.test(h))) payload = dechunk(payload);
      resolve({ statusLine, headers, body: payload });
    });
  });
}

function dechunk(buf: Buffer): Buffer {
  const out: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', pos);
    const size = parseInt(buf.subarray(pos, eol).toString('latin1'), 16);
    if (!size) return Buffer.concat(out);
    out.push(buf.subarray(eol + 2, eol + 2 + size));
    pos = eol + 2 + size + 2;
  }
}

const header = (r: WireResponse, name: string) =>
  r.headers.filter((h) => h.toLowerCase().startsWith(`${name.toLowerCase()}:`));

describe('raw HTTP as a non-JavaScript client', () => {
  it('watch=True streams events like a watch (Python client booleans)', async () => {
    await core.createNamespacedPersistentVolumeClaim({ namespace: NS, body: pvcBody('w1') as V1PersistentVolumeClaim });
    const r = await wire(
      'GET',
      `/api/v1/namespaces/${NS}/persistentvolumeclaims?watch=True&allowWatchBookmarks=True&timeoutSeconds=1`,
    );
    assert.equal(r.statusLine, 'HTTP/1.1 200 OK');
    const text = r.body.toString('utf8');
    assert.ok(text.endsWith('\n'));
    const frames = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name?: string } } });
    assert.equal(frames[0].type, 'ADDED');
    assert.equal(frames[0].object.metadata.name, 'w1');
  });

  it('JSON bodies end with exactly one newline, Status errors too', async () => {
    const ok = await wire('GET', `/api/v1/namespaces/${NS}`);
    assert.equal(ok.body[ok.body.length - 1], 0x0a);
    assert.notEqual(ok.body[ok.body.length - 2], 0x0a);
    assert.deepEqual(header(ok, 'content-length'), [`Content-Length: ${ok.body.length}`]);
    const missing = await wire('GET', `/api/v1/namespaces/${NS}/persistentvolumeclaims/nope`);
    assert.equal(missing.statusLine, 'HTTP/1.1 404 Not Found');
    assert.ok(missing.body.toString().endsWith('"code":404}\n'));
  });

  it('answers an unknown field with the exact Warning header bytes', async () => {
    const body = JSON.stringify({
      ...pvcBody('w2'),
      spec: { ...(pvcBody('w2').spec as object), storageClasName: 'fast' },
    });
    const r = await wire('POST', `/api/v1/namespaces/${NS}/persistentvolumeclaims`, body);
    assert.equal(r.statusLine, 'HTTP/1.1 201 Created');
    assert.deepEqual(header(r, 'warning'), ['Warning: 299 - "unknown field \\"spec.storageClasName\\""']);
  });

  it('an unknown resource in a served group is the plain-text 404 page', async () => {
    const r = await wire('GET', '/api/v1/widgets');
    assert.equal(r.statusLine, 'HTTP/1.1 404 Not Found');
    assert.equal(r.body.toString('latin1'), '404 page not found\n');
    assert.deepEqual(header(r, 'content-type'), ['Content-Type: text/plain; charset=utf-8']);
  });

  it('refuses server-side apply with a 415 that does not offer apply-patch+yaml', async () => {
    const r = await wire(
      'PATCH',
      `/api/v1/namespaces/${NS}/persistentvolumeclaims/w1?fieldManager=py`,
      '{}',
      'application/apply-patch+yaml',
    );
    assert.equal(r.statusLine, 'HTTP/1.1 415 Unsupported Media Type');
    const status = JSON.parse(r.body.toString()) as { message: string };
    assert.equal(
      status.message,
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json',
    );
  });

  it('rejects $deleteFromPrimitiveList given a map, as apimachinery does', async () => {
    const r = await wire(
      'PATCH',
      `/api/v1/namespaces/${NS}/persistentvolumeclaims/w1`,
      '{"metadata":{"$deleteFromPrimitiveList/finalizers":{"a":"b"}}}',
      'application/strategic-merge-patch+json',
    );
    assert.equal(r.statusLine, 'HTTP/1.1 400 Bad Request');
    assert.equal(
      (JSON.parse(r.body.toString()) as { message: string }).message,
      'invalid patch format of primitive list',
    );
  });
});

describe('time fields re-encoded as kube-apiserver stores them', () => {
  it('MicroTime: six digits in UTC; metav1.Time: whole seconds in UTC', async () => {
    const lease = JSON.stringify({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'l1' },
      spec: {
        holderIdentity: 'a',
        renewTime: '2025-01-02T03:04:05.123456+02:00',
        acquireTime: '2025-01-02T03:04:05.123456+00:00',
      },
    });
    const r = await wire('POST', `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`, lease);
    assert.equal(r.statusLine, 'HTTP/1.1 201 Created');
    const spec = (JSON.parse(r.body.toString()) as { spec: Record<string, string> }).spec;
    assert.equal(spec.renewTime, '2025-01-02T01:04:05.123456Z');
    assert.equal(spec.acquireTime, '2025-01-02T03:04:05.123456Z');
    const event = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'e1' },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: NS, name: 'w1' },
      reason: 'R',
      message: 'm',
      firstTimestamp: '2025-01-02T03:04:05.999+01:00',
      lastTimestamp: '2025-01-02T03:04:05Z',
    });
    const e = await wire('POST', `/api/v1/namespaces/${NS}/events`, event);
    assert.equal(e.statusLine, 'HTTP/1.1 201 Created');
    const stored = JSON.parse(e.body.toString()) as Record<string, string>;
    assert.equal(stored.firstTimestamp, '2025-01-02T02:04:05Z');
    assert.equal(stored.lastTimestamp, '2025-01-02T03:04:05Z');
    const patched = await wire(
      'PATCH',
      `/api/v1/namespaces/${NS}/events/e1`,
      '{"lastTimestamp":"2025-01-02T05:00:00.5-01:30"}',
      'application/strategic-merge-patch+json',
    );
    assert.equal((JSON.parse(patched.body.toString()) as Record<string, string>).lastTimestamp, '2025-01-02T06:30:00Z');
  });
});

describe('default ServiceAccount', () => {
  it('exists in every namespace and comes back when deleted', async () => {
    await core.createNamespace({ body: { metadata: { name: 'sa-ns' } } });
    await waitFor('default service account', () =>
      core.readNamespacedServiceAccount({ namespace: 'sa-ns', name: 'default' }).catch(() => undefined),
    );
    await waitFor('default account in default', () =>
      core.readNamespacedServiceAccount({ namespace: 'default', name: 'default' }).catch(() => undefined),
    );
    const before = await core.readNamespacedServiceAccount({ namespace: 'sa-ns', name: 'default' });
    await core.deleteNamespacedServiceAccount({ namespace: 'sa-ns', name: 'default' });
    const again = await waitFor('re-created service account', async () => {
      const sa = await core
        .readNamespacedServiceAccount({ namespace: 'sa-ns', name: 'default' })
        .catch(() => undefined);
      return sa && sa.metadata!.uid !== before.metadata!.uid ? sa : undefined;
    });
    assert.equal(again.metadata!.name, 'default');
  });
});
