// Deep YAML must not kill the process (issue 20). The `yaml` library's composer, `toJS` and `visit` recurse once
// per level of nesting; past about 800 levels the stack runs out, and when that happens inside V8's regexp
// compiler the process aborts ("FATAL ERROR: RegExpCompiler Allocation failed"), which no try/catch can stop.
// - The hostile bodies go to a cluster in a child process, so a crash fails this test instead of the suite: every
//   shape (flow `[` and `{a:`, indented block maps, block sequences on one line and on indented lines, a mix of
//   all, nested complex keys) at 500, 2,000 and 10,001 levels (and complex keys at 30, which go-yaml refuses as
//   `invalid map key` and the yaml library stringified with escapes doubling per level), under and over YAML_WORKER_MIN_BYTES (the event
//   loop and the worker), over HTTPS and through both decode functions. The child must exit 0, and every body
//   must get the same 400 naming the limit on both paths.
// - In process: the limit itself (MAX_YAML_DEPTH levels decode, one more is refused, on both paths), and the
//   checks' work counted in steps, not timed: 100 times the items take about 100 times the steps, and a body
//   nested past the limit is refused after about MAX_YAML_DEPTH steps whatever its size.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { decodeYamlText, MAX_YAML_DEPTH, yamlDecodeSteps } from '../../src/cluster/schema/yaml-decode.ts';
import { decodeYamlOffThread } from '../../src/cluster/http/decode-worker-pool.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The child: POSTs every shape at every depth, and decodes each on both paths; prints one JSON line of answers. */
const CHILD = `
import { startEmbeddedCluster } from './src/cluster/embedded-cluster.ts';
import { decodeYamlText } from './src/cluster/schema/yaml-decode.ts';
import { decodeYamlOffThread, YAML_WORKER_MIN_BYTES } from './src/cluster/http/decode-worker-pool.ts';
import { call } from './test/reliability/raw-http.ts';

const head = 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: deep\\n';
const lines = (d, line) => Array.from({ length: d }, (_, i) => ' '.repeat(i + 1) + line(i) + '\\n').join('');
const shapes = {
  'flow [': (d) => 'x: ' + '['.repeat(d) + ']'.repeat(d) + '\\n',
  'flow {a:': (d) => 'x: ' + '{a: '.repeat(d) + '1' + '}'.repeat(d) + '\\n',
  'block maps (indentation)': (d) => 'x:\\n' + lines(d, () => 'a:'),
  'block sequences on one line': (d) => 'x:\\n' + '- '.repeat(d) + 'v\\n',
  'block sequences on indented lines': (d) => 'x:\\n' + lines(d, () => '-') + ' '.repeat(d + 1) + 'v\\n',
  'mixed: maps, sequences, then flow': (d) =>
    'x:\\n' + lines(d / 2, (i) => (i % 2 ? '-' : 'a:')) + ' '.repeat(d / 2 + 1) + '[{a: '.repeat(d / 4) + '1' + '}]'.repeat(d / 4) + '\\n',
  'complex keys (? ? ? v)': (d) => 'x:\\n  ' + '? '.repeat(d) + 'v\\n',
};
const MAX_BYTES = 3 * 1024 * 1024;
const c = await startEmbeddedCluster({ controllers: false });
const e = { url: c.url, token: c.token, caPem: c.caPem };
const results = [];
try {
  for (const [shape, make] of Object.entries(shapes)) {
    // Complex keys also under the limit: 30 levels of them made a key string of about 2^30 escapes.
    for (const depth of shape.startsWith('complex') ? [30, 500, 2000, 10_001] : [500, 2000, 10_001]) {
      const text = head + make(depth);
      if (Buffer.byteLength(text) > MAX_BYTES) continue; // indentation at 10,001 levels is 50 MB
      // The same body under and over the worker's threshold: a comment at the end moves no line.
      const bodies = Buffer.byteLength(text) < YAML_WORKER_MIN_BYTES
        ? { small: text, large: text + '# ' + 'p'.repeat(YAML_WORKER_MIN_BYTES) + '\\n' }
        : { large: text };
      for (const [size, body] of Object.entries(bodies)) {
        const res = await call(e, 'POST', '/api/v1/namespaces/default/configmaps?dryRun=All', {
          body,
          contentType: 'application/yaml',
        });
        const inThread = decodeYamlText(body, 10_000);
        const offThread = await decodeYamlOffThread(body, 10_000);
        results.push({
          shape, depth, size, bytes: Buffer.byteLength(body), status: res.status,
          message: res.status === 400 ? JSON.parse(res.text).message : res.text.slice(0, 300),
          inThread: inThread.ok ? 'decoded' : inThread.message,
          offThread: offThread.ok ? 'decoded' : offThread.message,
        });
      }
    }
  }
} finally {
  await c.stop();
}
console.log(JSON.stringify(results));
`;

describe('YAML nesting (issue 20): a deep body is a 400, never a dead process', () => {
  it('every deep shape, on the event loop and in the worker, over HTTPS: the process lives, each answer is the 400 naming the limit', () => {
    const run = spawnSync(
      process.execPath,
      ['--conditions=kube-provisioner:source', '--import', 'tsx', '--input-type=module', '-e', CHILD],
      { cwd: ROOT, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 * 1024 * 1024 },
    );
    assert.equal(run.signal, null, `killed by ${run.signal}: ${run.stderr.slice(-2000)}`);
    assert.equal(run.status, 0, `the child died: ${run.stderr.slice(-2000)}`);
    const results = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Array<{
      shape: string;
      depth: number;
      size: string;
      status: number;
      message: string;
      inThread: string;
      offThread: string;
    }>;
    assert.equal(new Set(results.map((r) => r.shape)).size, 7, 'every shape was sent');
    assert.ok(results.some((r) => r.size === 'small') && results.some((r) => r.size === 'large'), 'both paths');
    const byBody = new Map<string, string>();
    for (const r of results) {
      const what = `${r.shape} at ${r.depth} levels (${r.size})`;
      assert.equal(r.status, 400, `${what}: ${r.message}`);
      const expected =
        r.depth < MAX_YAML_DEPTH
          ? /invalid map key: a map at line 6, column 5$/
          : new RegExp(`exceeded max depth of ${MAX_YAML_DEPTH}$`);
      assert.match(r.message, expected, what);
      assert.equal(
        r.message,
        `couldn't get version/kind; yaml parse error: ${r.inThread.split('yaml parse error: ')[1]}`,
      );
      assert.equal(r.offThread, r.inThread, `${what}: the worker answers as the loop does`);
      // Under and over the threshold, the same body gets the same text.
      const key = `${r.shape}/${r.depth}`;
      if (byBody.has(key)) assert.equal(r.message, byBody.get(key), `${what}: the same 400 on both paths`);
      byBody.set(key, r.message);
    }
  });

  it(`decodes ${MAX_YAML_DEPTH} levels and refuses one more, with go-yaml's text and the line and column, on both paths`, async () => {
    const flow = (d: number) => '['.repeat(d) + ']'.repeat(d) + '\n';
    const block = (d: number) => `${'- '.repeat(d)}v\n`;
    for (const [make, level, column] of [
      [flow, 'flow', MAX_YAML_DEPTH + 1],
      [block, 'indent', 2 * MAX_YAML_DEPTH + 1],
    ] as const) {
      const ok = decodeYamlText(make(MAX_YAML_DEPTH), 10_000);
      assert.ok(ok.ok, `${level}: ${MAX_YAML_DEPTH} levels decode`);
      assert.deepStrictEqual(await decodeYamlOffThread(make(MAX_YAML_DEPTH), 10_000), ok);
      const refused = decodeYamlText(make(MAX_YAML_DEPTH + 1), 10_000);
      assert.deepStrictEqual(refused, {
        ok: false,
        message: `couldn't get version/kind; yaml parse error: while increasing ${level} level at line 1, column ${column}: exceeded max depth of ${MAX_YAML_DEPTH}`,
      });
      assert.deepStrictEqual(await decodeYamlOffThread(make(MAX_YAML_DEPTH + 1), 10_000), refused);
    }
    // A lower JSON limit is the YAML limit too, checked before the composer as well.
    const low = decodeYamlText('a: {b: {c: 1}}\n', 2);
    assert.ok(!low.ok && low.message.endsWith('exceeded max depth of 2'), JSON.stringify(low));
  });

  it('the checks are linear: 100 times the items, about 100 times the steps; a deep body stops after the limit', () => {
    const steps = (text: string) => {
      const before = yamlDecodeSteps();
      decodeYamlText(text, 10_000);
      return yamlDecodeSteps() - before;
    };
    const items = (n: number) =>
      `items:\n${Array.from({ length: n }, (_, i) => `- name: i${i}\n  spec: {a: [1, {b: [2, 3]}], c: {d: e}}\n`).join('')}`;
    const ratio = steps(items(1000)) / steps(items(10));
    assert.ok(ratio > 80 && ratio < 110, `1,000 items took ${ratio.toFixed(1)} times the steps of 10`);
    for (const d of [2000, 10_001, 1_000_000]) {
      const n = steps('['.repeat(d));
      assert.ok(n < 10 * MAX_YAML_DEPTH, `${d} levels: ${n} steps`);
    }
  });
});
