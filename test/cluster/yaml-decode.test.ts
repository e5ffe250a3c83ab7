// YAML request bodies decoded in the worker thread answer exactly as on the event loop: the same value (prototypes,
// -0, NaN, aliases shared by reference included), the same 400 text with its line and column, the same
// strict-decoding error for repeated keys. Also: the size that picks the path, the bounded queue (429), and a
// process whose only large YAML body is done exits without waiting for the worker.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ClusterApiError } from '../../src/cluster/common/api-errors.ts';
import { decodeObjectBody, decodeRequestBody } from '../../src/cluster/http/http-io.ts';
import { LARGE_MAP_KEYS } from '../../src/cluster/common/json-safety.ts';
import {
  decodeYamlText,
  sendsAsJson,
  yamlDecodeCounts,
  yamlKeysRemembered,
  type YamlDecoded,
} from '../../src/cluster/schema/yaml-decode.ts';
import {
  decodeYamlOffThread,
  decodeYamlWire,
  YAML_WORKER_MAX_QUEUED,
  YAML_WORKER_MIN_BYTES,
} from '../../src/cluster/http/decode-worker-pool.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const head = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n';

/** Bodies covering what the yaml library does differently by type, version and failure. */
const BODIES: Record<string, string> = {
  plain: `${head}data:\n  a: b\n`,
  'repeated keys, nested and in lists': `${head}data:\n  a: 1\n  a: 2\nlist:\n- {n: 1, n: 2}\n- m: 1\n  m: 2\n`,
  'scalars of the core schema': `${head}v: [-0, 0x1F, 0o17, 1e400, -.inf, .nan, 12345678901234567890, ~, null, true, False, "q\\u00e9\\n", 'it''s']\n`,
  '__proto__ as a key': `${head}__proto__: {polluted: true}\ndata:\n  __proto__: x\n`,
  'block scalars and comments': `${head}# c\ndata:\n  a: |\n    one\n    two\n  b: >-\n    folded\n    text\n`,
  'anchors, aliases and <<': `${head}base: &b {x: 1}\nuse: *b\nmerge:\n  <<: *b\n  y: 2\n`,
  'tags and complex keys': `${head}a: !!str 1\nb: !custom v\n? [k1, k2]\n: v\n1: int key\ntrue: bool key\n"1": string key\n`,
  'YAML 1.1: binary, timestamp, set, omap': `%YAML 1.1\n---\n${head}bin: !!binary aGVsbG8=\nlist: [!!binary d29ybGQ=]\nwhen: 2001-12-14\nset: !!set {a, b}\nomap: !!omap [a: 1]\n`,
  'a document end marker': `${head}data: {}\n...\n`,
  'CRLF and a BOM': `\ufeff${head.replaceAll('\n', '\r\n')}data:\r\n  a: b\r\n`,
  'an empty body': '',
  'a scalar only': 'just a string\n',
  'syntax error: bad indentation': `${head}data:\n  a: b\n   c: d\n`,
  'syntax error: unclosed quote': `${head}data:\n  a: "open\n`,
  'syntax error: tab indentation': `${head}data:\n\ta: b\n`,
  'two documents': `${head}---\n${head}`,
  'an unknown alias': `${head}data: *nowhere\n`,
  'alias expansion over the limit': `a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n`,
  'nesting over the depth limit': `${head}data: {a: {b: {c: {d: {e: {f: 1}}}}}}\n`,
};

/** Values compared as assert.deepStrictEqual does (prototypes, -0), the 400 text compared as text. */
function assertSame(offThread: YamlDecoded, inThread: YamlDecoded, what: string): void {
  assert.deepStrictEqual(offThread, inThread, what);
  if (inThread.ok && offThread.ok) assert.equal(JSON.stringify(offThread.value), JSON.stringify(inThread.value), what);
}

describe('YAML bodies decoded in the worker thread', () => {
  it('give what the event loop gives: values, 400 texts with line and column, repeated-key errors', async () => {
    for (const [what, text] of Object.entries(BODIES)) {
      for (const depthLimit of [10_000, 5]) {
        const inThread = decodeYamlText(text, depthLimit);
        const offThread = await decodeYamlOffThread(text, depthLimit);
        assertSame(offThread, inThread, `${what} (depth limit ${depthLimit})`);
      }
    }
    // Spot checks that the set covers what it names. YAML 1.1 tags keep the text as written (no Buffer, no Date).
    const v11 = await decodeYamlOffThread(BODIES['YAML 1.1: binary, timestamp, set, omap'], 10_000);
    assert.ok(v11.ok, JSON.stringify(v11));
    assert.deepEqual(
      [(v11.value as { bin: unknown }).bin, (v11.value as { when: unknown }).when],
      ['aGVsbG8=', '2001-12-14'],
    );
    const bad = decodeYamlText(BODIES['syntax error: bad indentation'], 10_000);
    assert.ok(!bad.ok && /at line \d+, column \d+/.test(bad.message), !bad.ok ? bad.message : '');
    const dup = decodeYamlText(BODIES['repeated keys, nested and in lists'], 10_000);
    assert.ok(dup.ok && dup.duplicateError?.includes('line 7: key "a" already set in map'), JSON.stringify(dup));
    const proto = await decodeYamlOffThread(BODIES['__proto__ as a key'], 10_000);
    assert.ok(proto.ok && Object.hasOwn(proto.value as object, '__proto__'), 'an own __proto__ key');
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
  });

  it('a value with a large map (sent as JSON text) is the same when JSON could not write it exactly', async () => {
    // The worker sends a value with a large map as JSON without walking it when the decode saw no alias and no
    // number JSON cannot write: each of these must still come back as the loop decodes it.
    const large = Array.from({ length: 5_000 }, (_, i) => `  k${i}: v\n`).join('');
    const tails: Record<string, string> = {
      '-0': 'z: -0\n',
      '-0.0 in a list': 'z: [1, -0.0]\n',
      '.inf': 'z: .inf\n',
      '-.inf': 'z: -.inf\n',
      '.nan': 'z: .nan\n',
      '1e400': 'z: 1e400\n',
      'an alias to a scalar': 'a: &s text\nz: *s\n',
      'an alias to a map': 'a: &m {x: 1}\nz: *m\n',
      'nothing inexact': 'z: [1, 2.5, true, null, "s"]\n',
    };
    for (const [what, tail] of Object.entries(tails)) {
      const text = `${head}data:\n${large}${tail}`;
      const inThread = decodeYamlText(text, 10_000);
      const offThread = await settleAsync(() => decodeRequestBody(Buffer.from(text), 'application/yaml'));
      assert.ok(inThread.ok, what);
      assert.deepStrictEqual(offThread, { value: { value: inThread.value, yamlDuplicateError: undefined } }, what);
    }
  });

  it('a value is sent as JSON text exactly where sendsAsJson would send it, known from the parse alone', async () => {
    // The parse counts each map's keys, in place of a walk of the value.
    const block = (indent: string) => Array.from({ length: LARGE_MAP_KEYS }, (_, i) => `${indent}k${i}: v\n`).join('');
    const flow = `{${Array.from({ length: LARGE_MAP_KEYS }, (_, i) => `k${i}: v`).join(', ')}}`;
    const shapes: Record<string, string> = {
      'a child': `${head}data:\n${block('  ')}`,
      'a child, one key short': `${head}data:\n${block('  ').replace('  k0: v\n', '')}x: ${'y'.repeat(40_000)}\n`,
      'a child in flow style': `${head}data: ${flow}\n`,
      'a child with an anchor and a tag': `${head}data: &d !!map\n${block('  ')}`,
      'a grandchild': `${head}spec:\n  data:\n${block('    ')}`,
      'a grandchild in flow style': `${head}spec: {data: ${flow}}\n`,
      'three levels down': `${head}spec:\n  inner:\n    data:\n${block('      ')}`,
      'under a list': `${head}items:\n- ${block('  ').slice(2)}`,
      'under a list in flow style': `${head}items: [${flow}]\n`,
      'the top level itself': `${block('')}`,
      'not exact (NaN)': `${head}x: .nan\ndata:\n${block('  ')}`,
    };
    for (const [what, text] of Object.entries(shapes)) {
      const decoded = decodeYamlText(text, 10_000);
      assert.ok(decoded.ok, `${what}: ${JSON.stringify(decoded).slice(0, 200)}`);
      const wire = await decodeYamlWire(text, 10_000);
      assert.equal('json' in wire, sendsAsJson(decoded.value, Infinity), what);
    }
  });

  it('a value nested 6,000 deep through aliases beside a large map: the worker answers as the loop does (review of H5)', async () => {
    // Each anchor wraps the one before in 100 lists: 60 of them nest the value 6,000 deep from a shallow text.
    const lines = [`a0: &a0 ${'['.repeat(100)}x${']'.repeat(100)}`];
    for (let i = 1; i < 60; i++) lines.push(`a${i}: &a${i} ${'['.repeat(100)}*a${i - 1}${']'.repeat(100)}`);
    const text = `${head}${lines.join('\n')}\ndata:\n${Array.from({ length: LARGE_MAP_KEYS }, (_, i) => `  k${i}: v\n`).join('')}`;
    const inThread = decodeObjectBody(Buffer.from(text), 'application/yaml');
    // JSON.stringify of the value overflowed the worker's stack (a 500); the structured clone copies it.
    const offThread = await decodeRequestBody(Buffer.from(text), 'application/yaml');
    const depth = (v: unknown, key: string) => {
      let d = 0;
      let a = (v as Record<string, unknown>)[key];
      for (; Array.isArray(a); a = a[0] as unknown) d++;
      return `${d} ${String(a)}`;
    };
    for (let i = 0; i < 60; i++) assert.equal(depth(offThread.value, `a${i}`), `${100 * (i + 1)} x`);
    assert.equal(depth(inThread.value, 'a59'), '6000 x');
    assert.deepStrictEqual((offThread.value as { data: unknown }).data, (inThread.value as { data: unknown }).data);
  });

  it('a request body takes the worker from YAML_WORKER_MIN_BYTES on, and the answer or the 400 is the same', async () => {
    const padding = (n: number) => `# ${'p'.repeat(n)}\n`;
    for (const [what, text] of Object.entries(BODIES)) {
      // A comment at the end pads the body over the threshold without moving any line.
      const large = Buffer.from(text + padding(YAML_WORKER_MIN_BYTES));
      const before = yamlDecodeCounts();
      const inThread = settle(() => decodeObjectBody(large, 'application/yaml'));
      const offThread = await settleAsync(() => decodeRequestBody(large, 'application/yaml'));
      assert.deepStrictEqual(offThread, inThread, what);
      assert.equal(yamlDecodeCounts().offThread - before.offThread, 1, `${what}: decoded in the worker`);
    }
    const small = Buffer.from(`${head}${padding(YAML_WORKER_MIN_BYTES - head.length - 20)}`);
    const before = yamlDecodeCounts();
    await decodeRequestBody(small, 'application/yaml; charset=utf-8');
    assert.equal(yamlDecodeCounts().inThread - before.inThread, 1, 'a body under the threshold stays on the loop');
  });

  it(`at most ${YAML_WORKER_MAX_QUEUED} bodies wait for the worker; one more is answered 429`, async () => {
    const text = `${head}data:\n${'  k: v\n'.repeat(YAML_WORKER_MIN_BYTES / 7)}`;
    const queued = Array.from({ length: YAML_WORKER_MAX_QUEUED }, () => decodeYamlOffThread(text, 10_000));
    await assert.rejects(decodeYamlOffThread(text, 10_000), (err: unknown) => {
      assert.ok(err instanceof ClusterApiError);
      assert.equal(err.status.code, 429);
      return true;
    });
    for (const r of await Promise.all(queued)) assert.ok(r.ok);
    assert.ok((await decodeYamlOffThread(text, 10_000)).ok, 'taken again once the queue has room');
  });

  it('holds the process only while a body is decoded: a script that decoded a large body exits by itself', () => {
    const script = `
      import { decodeYamlOffThread } from './src/cluster/http/decode-worker-pool.ts';
      const held = () => JSON.stringify(process.getActiveResourcesInfo().filter((r) => r !== 'PipeWrap'));
      const pending = decodeYamlOffThread('a: b\\n'.repeat(5000), 100);
      const during = held();
      const r = await pending;
      console.log(r.ok ? 'decoded' : r.message, during, held());`;
    const run = spawnSync(
      process.execPath,
      ['--conditions=kube-provisioner:source', '--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(run.signal, null, `still running after 120 s: ${run.stderr}`);
    assert.equal(run.status, 0, run.stderr);
    // Held while the body is decoded (by the worker's port), by nothing after (stdout and stderr left out).
    assert.equal(run.stdout.trim(), 'decoded ["MessagePort"] []');
  });
});

type Settled = { value: unknown } | { status: unknown; message: string };

function settle(f: () => unknown): Settled {
  try {
    return { value: f() };
  } catch (err) {
    return failure(err);
  }
}

async function settleAsync(f: () => Promise<unknown>): Promise<Settled> {
  try {
    return { value: await f() };
  } catch (err) {
    return failure(err);
  }
}

function failure(err: unknown): Settled {
  if (err instanceof ClusterApiError) return { status: err.status, message: err.message };
  throw err;
}

describe("repeated YAML keys: Go's strict error", () => {
  it('names every repeated key in the order of the text, whichever map closes first', () => {
    const text = [
      'a:', //                  line 1
      '  x: 1',
      '  x: 2', //              line 3: repeated in a, before a's inner map
      '  b:',
      '    y: 1',
      '    y: 2', //            line 6: repeated in b, which closes before a
      '  x: 3', //              line 7
      'c: {1: a, "1": b}', //   line 8: 1 and "1" are one key
      'd: [{q: 1, q: 2}]', //   line 9
      'a: again', //            line 10: repeated at the top, which closes last
      '',
    ].join('\n');
    const decoded = decodeYamlText(text, 10_000);
    assert.ok(decoded.ok);
    assert.equal(
      decoded.duplicateError,
      [
        'yaml: unmarshal errors:',
        'line 3: key "x" already set in map',
        'line 6: key "y" already set in map',
        'line 7: key "x" already set in map',
        'line 8: key "1" already set in map',
        'line 9: key "q" already set in map',
        'line 10: key "a" already set in map',
      ].join('\n  '),
    );
    assert.deepStrictEqual(decoded.value, { a: 'again', c: { 1: 'b' }, d: [{ q: 2 }] });
  });
});

describe('repeated YAML keys are looked for only when field validation reports them', () => {
  it('decodeYamlText without the search keeps no key and gives no repeated-key error; the value is the same', () => {
    const text = `${head}data:\n${Array.from({ length: 1_000 }, (_, i) => `  k${i % 500}: v${i}\n`).join('')}`;
    let before = yamlKeysRemembered();
    const searched = decodeYamlText(text, 10_000);
    assert.ok(yamlKeysRemembered() - before >= 500, 'keys kept with the search');
    assert.ok(searched.ok && searched.duplicateError?.includes('line 506: key "k0" already set in map'));
    before = yamlKeysRemembered();
    const plain = decodeYamlText(text, 10_000, false);
    assert.equal(yamlKeysRemembered() - before, 0, 'keys kept without the search');
    assert.deepStrictEqual(plain, { ...searched, duplicateError: undefined });
  });
});
