// Warning headers bounded as kube-apiserver's warning recorder bounds them (issue 20, defect 9):
// k8s.io/apiserver pkg/endpoints/filters/warning.go dedups the texts, writes them whole while their total stays
// within 4,096 runes, and past that replays every warning cut to 256 runes and adds more only while the total is
// under 4,096. Before, 60,000 unknown fields under the default fieldValidation=Warn gave 60,000 headers and the
// Node client failed with "Header overflow" although the object had been created.
import assert from 'node:assert/strict';
import https from 'node:https';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';

interface Reply {
  status: number;
  text: string;
  /** The texts of the `Warning: 299 - "..."` headers, unquoted. */
  warnings: string[];
  /** Bytes of all the Warning header lines as sent. */
  warningBytes: number;
}

const CMS = '/api/v1/namespaces/default/configmaps';
const runes = (s: string) => [...s].length;

describe('Warning headers are bounded as kube-apiserver bounds them', () => {
  let c: EmbeddedCluster;
  before(async () => {
    c = await startEmbeddedCluster({ controllers: false });
  });
  after(() => c.stop());

  /** One request through Node's own HTTP client with its default header size limit (16 KiB), as client-node uses. */
  const send = (method: string, path: string, body: string, contentType = 'application/json') =>
    new Promise<Reply>((resolve, reject) => {
      const req = https.request(
        new URL(path, c.url),
        {
          method,
          ca: c.caPem,
          agent: false,
          headers: {
            authorization: `Bearer ${c.token}`,
            'content-type': contentType,
            'content-length': String(Buffer.byteLength(body)),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () => {
            const lines: string[] = [];
            for (let i = 0; i < res.rawHeaders.length; i += 2)
              if (res.rawHeaders[i]!.toLowerCase() === 'warning') lines.push(res.rawHeaders[i + 1]!);
            const warnings = lines.map((line) => {
              const m = /^299 - "(.*)"$/s.exec(line);
              assert.ok(m, `a well-formed warning: ${line.slice(0, 80)}`);
              return m[1]!.replace(/\\(["\\])/g, '$1');
            });
            resolve({
              status: res.statusCode ?? 0,
              text: Buffer.concat(chunks).toString('utf8'),
              warnings,
              warningBytes: lines.reduce((n, l) => n + 'Warning: '.length + l.length + 2, 0),
            });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  /** A ConfigMap whose metadata carries `fields` (unknown to the schema). */
  const withUnknown = (name: string, fields: Record<string, unknown>) =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...fields } });

  it('60,000 unknown fields: created, the warnings within 4,096 + 256 runes and the headers within 16 KiB', async (t) => {
    const fields = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`u${i}`, 1]));
    const r = await send('POST', CMS, withUnknown('many-unknown', fields));
    assert.equal(r.status, 201, r.text.slice(0, 300));
    const total = r.warnings.reduce((n, w) => n + runes(w), 0);
    t.diagnostic(`${r.warnings.length} warnings, ${total} runes, ${r.warningBytes} header bytes`);
    assert.ok(total <= 4096 + 256, `${total} runes of warnings`);
    assert.ok(r.warningBytes < 16 * 1024, `${r.warningBytes} bytes of Warning headers`);
    assert.equal(r.warnings[0], 'unknown field "metadata.u0"');
    assert.equal(new Set(r.warnings).size, r.warnings.length, 'no text twice');
  });

  it('a YAML body repeating one key 40,000 times under Warn: created, its warnings bounded', async (t) => {
    const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many-dup-yaml\ndata:\n${'  k: v\n'.repeat(40_000)}`;
    const r = await send('POST', CMS, yaml, 'application/yaml');
    assert.equal(r.status, 201, r.text.slice(0, 300));
    const total = r.warnings.reduce((n, w) => n + runes(w), 0);
    t.diagnostic(`${r.warnings.length} warnings, ${total} runes, ${r.warningBytes} header bytes`);
    assert.ok(total <= 4096 + 256);
    assert.ok(r.warningBytes < 16 * 1024);
    assert.equal(r.warnings[0], 'line 7: key "k" already set in map');
  });

  it('past 4,096 runes every warning is cut to 256 runes, and no more are added once the total is reached', async () => {
    // 20 unknown fields of 300 characters: each warning is 325 runes. Twelve fit (3,900); the 13th starts the
    // truncation, the 13 are replayed at 256 runes (3,328), three more fit (4,096), the rest are dropped.
    const long = (i: number) => `${String.fromCharCode(97 + i)}${'x'.repeat(299)}`;
    const fields = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [long(i), 1]));
    const r = await send('POST', CMS, withUnknown('long-unknown', fields));
    assert.equal(r.status, 201, r.text.slice(0, 300));
    assert.deepEqual(
      r.warnings,
      Array.from({ length: 16 }, (_, i) => `unknown field "metadata.${long(i)}"`.slice(0, 256)),
    );
  });

  it('a text is warned once however often it is recorded', async () => {
    const body =
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dups"},"data":{"k":"1","k":"2","k":"3","k":"4"}}';
    const r = await send('POST', CMS, body);
    assert.equal(r.status, 201, r.text.slice(0, 300));
    assert.deepEqual(r.warnings, ['duplicate field "data.k"']);
  });

  it('field names outside ASCII or with control characters give well-formed headers (ASCII only, newlines as spaces)', async () => {
    const r = await send('POST', CMS, withUnknown('odd-names', { 日本: 1, 'a\nb': 1, 'q"\\': 1 }));
    assert.equal(r.status, 201, r.text.slice(0, 300));
    assert.deepEqual(r.warnings, [
      'unknown field "metadata.??"',
      'unknown field "metadata.a b"',
      'unknown field "metadata.q"\\"',
    ]);
  });

  it('client-node reads the answer to a patch that leaves 60,000 unknown fields', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(c.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'patched-unknown' } } });
    const fields = Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`p${i}`, 1]));
    const patched = await core.patchNamespacedConfigMap(
      { name: 'patched-unknown', namespace: 'default', body: { metadata: fields, data: { ok: 'yes' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.deepEqual(patched.data, { ok: 'yes' });
  });
});
