import { test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { buildKubeconfig, ensureServingCertificates, randomToken } from '../../src/cluster/http/tls.ts';

async function withServer(
  certs: { certPem: string; keyPem: string },
  token: string,
  fn: (port: number, seen: string[]) => Promise<void>,
) {
  const seen: string[] = [];
  const server: Server = createServer({ cert: certs.certPem, key: certs.keyPem }, (req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    if (req.headers.authorization !== `Bearer ${token}`) {
      res
        .writeHead(401, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 401, reason: 'Unauthorized' }),
        );
      return;
    }
    if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        kind: 'NamespaceList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '7' },
        items: [{ metadata: { name: 'default' } }, { metadata: { name: 'kube-system' } }],
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await fn((server.address() as { port: number }).port, seen);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function get(
  url: string,
  opts: { ca?: string; servername?: string; token?: string },
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: opts.ca,
        servername: opts.servername,
        agent: false,
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('certificates: CA signs a serving certificate for the default and given hosts', async () => {
  const c = await ensureServingCertificates(undefined, ['api.example.test', '10.1.2.3', 'fd00::7']);
  const ca = new X509Certificate(c.caPem);
  const leaf = new X509Certificate(c.certPem);
  assert.equal(ca.ca, true);
  assert.equal(leaf.ca, false);
  assert.equal(leaf.verify(ca.publicKey), true, 'signed by the CA');
  assert.equal(ca.verify(ca.publicKey), true, 'CA self-signed');
  for (const host of ['localhost', 'api.example.test']) assert.equal(leaf.checkHost(host), host);
  for (const ip of ['127.0.0.1', '::1', '10.1.2.3', 'fd00::7']) assert.ok(leaf.checkIP(ip), ip);
  assert.equal(leaf.checkHost('evil.example'), undefined);
  assert.equal(leaf.checkIP('10.9.9.9'), undefined);
  assert.ok(Date.parse(leaf.validTo) > Date.now() + 300 * 24 * 3600 * 1000);
  assert.ok(Date.parse(leaf.validFrom) <= Date.now());
});

test('https server with the certificate is trusted by a client that trusts only the CA', async () => {
  const token = randomToken();
  const c = await ensureServingCertificates(undefined, []);
  await withServer(c, token, async (port) => {
    assert.equal((await get(`https://127.0.0.1:${port}/healthz`, { ca: c.caPem, token })).body, 'ok');
    assert.equal((await get(`https://localhost:${port}/healthz`, { ca: c.caPem, token })).status, 200);
    await assert.rejects(
      get(`https://127.0.0.1:${port}/healthz`, { token }),
      /self-signed|unable to verify|self signed/i,
    );
    const otherCA = await ensureServingCertificates(undefined, []);
    await assert.rejects(get(`https://127.0.0.1:${port}/healthz`, { ca: otherCA.caPem, token }), /certificate|verify/i);
    await assert.rejects(
      get(`https://127.0.0.1:${port}/healthz`, { ca: c.caPem, servername: 'evil.example', token }),
      /altnames|Hostname/i,
    );
  });
});

test('client-node KubeConfig loaded from buildKubeconfig talks to the server with the bearer token', async () => {
  const token = randomToken();
  const c = await ensureServingCertificates(undefined, []);
  await withServer(c, token, async (port, seen) => {
    const kc = new KubeConfig();
    kc.loadFromString(buildKubeconfig({ server: `https://127.0.0.1:${port}`, caPem: c.caPem, token }));
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    assert.deepEqual(
      list.items.map((n) => n.metadata?.name),
      ['default', 'kube-system'],
    );
    assert.ok(
      seen.some((s) => s.startsWith('GET /api/v1/namespaces') && s.endsWith(`Bearer ${token}`)),
      seen.join('\n'),
    );

    const wrong = new KubeConfig();
    wrong.loadFromString(buildKubeconfig({ server: `https://127.0.0.1:${port}`, caPem: c.caPem, token: 'nope' }));
    await assert.rejects(
      wrong.makeApiClient(CoreV1Api).listNamespace(),
      (e: unknown) => (e as { code?: number }).code === 401,
    );
  });
});

test('kubectl (Go TLS) accepts the certificate via the kubeconfig, when kubectl is installed', async (t) => {
  const kubectl = await promisify(execFile)('kubectl', ['version', '--client'], { timeout: 10_000 }).then(
    () => true,
    () => false,
  );
  if (!kubectl) {
    t.skip('kubectl not installed');
    return;
  }
  const token = randomToken();
  const c = await ensureServingCertificates(undefined, []);
  const dir = await mkdtemp(join(tmpdir(), 'kp-tls-'));
  try {
    await withServer(c, token, async (port) => {
      const kubeconfig = join(dir, 'kubeconfig');
      await writeFile(kubeconfig, buildKubeconfig({ server: `https://127.0.0.1:${port}`, caPem: c.caPem, token }), {
        mode: 0o600,
      });
      // execFile (async) so the in-process server can answer while kubectl runs.
      const { stdout } = await promisify(execFile)(
        'kubectl',
        ['--kubeconfig', kubeconfig, 'get', '--raw', '/healthz'],
        { timeout: 15_000 },
      );
      assert.equal(stdout.trim(), 'ok');
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('certificates in a directory: written with safe modes, reused, reissued under the same CA when hosts change', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kp-tls-'));
  try {
    const first = await ensureServingCertificates(join(dir, 'pki'), ['node-a']);
    for (const f of ['tls.key', 'ca.key']) assert.equal((await stat(join(dir, 'pki', f))).mode & 0o777, 0o600, f);
    assert.equal(await readFile(join(dir, 'pki', 'ca.crt'), 'utf8'), first.caPem);
    assert.equal(await readFile(join(dir, 'pki', 'tls.crt'), 'utf8'), first.certPem);

    const again = await ensureServingCertificates(join(dir, 'pki'), ['node-a']);
    assert.deepEqual(again, first, 'valid files are reused as they are');

    const moreHosts = await ensureServingCertificates(join(dir, 'pki'), ['node-a', '192.168.7.7']);
    assert.equal(moreHosts.caPem, first.caPem, 'same CA, so old kubeconfigs keep working');
    assert.notEqual(moreHosts.certPem, first.certPem);
    assert.ok(new X509Certificate(moreHosts.certPem).checkIP('192.168.7.7'));

    await writeFile(join(dir, 'pki', 'tls.crt'), 'garbage');
    const repaired = await ensureServingCertificates(join(dir, 'pki'), ['node-a']);
    assert.equal(repaired.caPem, first.caPem);
    assert.ok(new X509Certificate(repaired.certPem).verify(new X509Certificate(first.caPem).publicKey));

    await rm(join(dir, 'pki', 'ca.key'));
    const newCA = await ensureServingCertificates(join(dir, 'pki'), ['node-a']);
    assert.notEqual(newCA.caPem, first.caPem, 'without the CA key a new CA is made');
    assert.ok(new X509Certificate(newCA.certPem).verify(new X509Certificate(newCA.caPem).publicKey));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('buildKubeconfig shape and randomToken', () => {
  const ca = '-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n';
  const doc = parse(
    buildKubeconfig({ server: 'https://127.0.0.1:6443', caPem: ca, token: 't0k', name: 'dev', namespace: 'team' }),
  );
  assert.equal(doc['current-context'], 'dev');
  assert.equal(doc.clusters[0].cluster.server, 'https://127.0.0.1:6443');
  assert.equal(Buffer.from(doc.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), ca);
  assert.deepEqual(doc.users, [{ name: 'dev', user: { token: 't0k' } }]);
  assert.deepEqual(doc.contexts, [{ name: 'dev', context: { cluster: 'dev', user: 'dev', namespace: 'team' } }]);
  const insecure = parse(buildKubeconfig({ server: 'http://127.0.0.1:8080', caPem: ca, token: 't', insecure: true }));
  assert.equal(insecure.clusters[0].cluster['insecure-skip-tls-verify'], true);
  assert.equal(
    insecure.clusters[0].cluster['certificate-authority-data'],
    undefined,
    'kubectl rejects CA data with insecure',
  );
  assert.equal(insecure['current-context'], 'kube-provisioner');
  const tokens = new Set(Array.from({ length: 100 }, () => randomToken()));
  assert.equal(tokens.size, 100);
  for (const t of tokens) assert.match(t, /^[A-Za-z0-9_-]{43}$/);
});

// Property: random host lists (DNS names, IPv4, IPv6 incl. compressed and v4-mapped forms) all end up covered.
test('property: every requested host is covered by the serving certificate', async () => {
  let seed = 5;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const hex = () => rnd(0x10000).toString(16);
  for (let i = 0; i < 15; i++) {
    const hosts: string[] = [];
    for (let j = 0; j < 1 + rnd(5); j++) {
      switch (rnd(4)) {
        case 0:
          hosts.push(`h${rnd(1000)}.example${rnd(10)}.test`);
          break;
        case 1:
          hosts.push(`${rnd(256)}.${rnd(256)}.${rnd(256)}.${1 + rnd(254)}`);
          break;
        case 2:
          hosts.push(`fd00:${hex()}::${hex()}`);
          break;
        default:
          hosts.push(`::ffff:10.0.${rnd(256)}.${rnd(256)}`);
      }
    }
    const c = await ensureServingCertificates(undefined, hosts);
    const leaf = new X509Certificate(c.certPem);
    for (const h of hosts) {
      const ok = isIP(h) ? leaf.checkIP(h) : leaf.checkHost(h);
      assert.ok(ok, `${h} in ${leaf.subjectAltName}`);
    }
  }
});
