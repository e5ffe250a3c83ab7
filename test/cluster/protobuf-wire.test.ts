// The wire reader's fast path for short varints (field keys and lengths as numbers) reads what the BigInt reader
// reads, and fails where it fails, with the same error: compared on random and edge-case messages.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeProtobufObject } from '../../src/cluster/http/protobuf.ts';
import { DecodeError, fields, readVarint, type Field } from '../../src/cluster/http/protobuf-wire.ts';
import { envelope, msg, str, varint } from '../support/protobuf-encoding.ts';
import { decodeProtobufOffThread } from '../../src/cluster/http/decode-worker-pool.ts';
import { parseLargeJsonText } from '../../src/cluster/common/json-safety.ts';

/** The reader as it was before the fast path: every key and length through readVarint (BigInt). */
function reference(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [key, p1] = readVarint(buf, pos);
    pos = p1;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, p2] = readVarint(buf, pos);
      pos = p2;
      out.push({ no, wire, num: v });
    } else if (wire === 2) {
      const [len, p2] = readVarint(buf, pos);
      const end = p2 + Number(len);
      if (end > buf.length) throw new DecodeError('truncated field');
      out.push({ no, wire, bytes: buf.subarray(p2, end) });
      pos = end;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new DecodeError(`unsupported wire type ${wire}`);
  }
  if (pos !== buf.length) throw new DecodeError('truncated message');
  return out;
}

function outcome(read: (b: Buffer) => Field[], buf: Buffer): unknown {
  try {
    return read(buf).map((f) => ({ ...f, bytes: f.bytes && [...f.bytes] }));
  } catch (err) {
    assert.ok(err instanceof DecodeError, String(err));
    return `DecodeError: ${err.message}`;
  }
}

describe('protobuf wire fields', () => {
  it('short and long varints, truncations and every wire type read as the BigInt reader reads them', () => {
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const cases: number[][] = [
      [],
      [0x0a, 0x00],
      [0x0a, 0x80, 0x80, 0x80, 0x80, 0x01], // a 5-byte length: the BigInt path
      [0x8a, 0x80, 0x80, 0x80, 0x00, 0x00], // a 5-byte key
      [0x0a, 0xff, 0xff, 0xff], // a length truncated after 3 bytes
      [0x0a, 0xff, 0xff, 0xff, 0xff], // after 4
      [0x08, ...Array(10).fill(0xff), 0x01], // a varint too long
      [0x0a, ...varint(2n ** 28n - 1n)], // the longest 4-byte length, past the end
      [0x0a, ...varint(2n ** 60n)], // a length past 2^53
      [...varint((2n ** 29n - 1n) << 3n), 0x00], // the largest field number, wire 0
      [...varint(2n ** 32n + 2n), 0x00], // a 5-byte key past 32 bits (wire 2, an empty field)
      [0x0a, ...varint(2n ** 32n), 0x00], // a 5-byte length past 32 bits
      [0x0b], // wire 3
      [0x09, 1, 2, 3, 4, 5, 6, 7, 8], // wire 1
      [0x0d, 1, 2, 3], // wire 5, truncated
    ];
    for (let i = 0; i < 3000; i++) {
      const parts: number[] = [];
      for (let f = Math.floor(rand() * 4); f >= 0; f--) {
        const key = BigInt(Math.floor(rand() * 2 ** (rand() < 0.9 ? 8 : 40))) * 8n + BigInt(Math.floor(rand() * 8));
        parts.push(...varint(key));
        const len = Math.floor(rand() * 20);
        if (rand() < 0.8) parts.push(...varint(BigInt(len)), ...Array.from({ length: len }, () => (rand() * 256) | 0));
        else parts.push(...Array.from({ length: len }, () => (rand() * 256) | 0));
      }
      cases.push(parts);
    }
    let failures = 0;
    for (const bytes of cases) {
      const buf = Buffer.from(bytes);
      const expected = outcome(reference, buf);
      if (typeof expected === 'string') failures++;
      assert.deepStrictEqual(outcome(fields, buf), expected, JSON.stringify(bytes));
    }
    assert.ok(failures > 100 && failures < cases.length - 100, `${failures} of ${cases.length} fail: both kinds met`);
  });
});

describe('protobuf map entries', () => {
  it('ConfigMap data and binaryData entries decode as a reading of every field gives them, odd ones included', () => {
    let seed = 777;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    // Any bytes: a key's bytes may look like a field header, and invalid UTF-8 decodes alike either way.
    const bytesOf = (n: number) => Buffer.from(Array.from({ length: n }, () => (rand() * 256) | 0));
    const lengths = [0, 1, 126, 127, 128, 200];
    for (let round = 0; round < 200; round++) {
      const entries: Buffer[] = [];
      for (let i = 0; i < 20; i++) {
        const key = bytesOf(lengths[(rand() * lengths.length) | 0]);
        const value = bytesOf(lengths[(rand() * lengths.length) | 0]);
        // The usual entry; value first; a key only; an extra unknown field; a varint field; a key or a value
        // given twice; a length of 128 whose second byte reads as the value's header.
        const odd: Buffer[][] = [
          [msg(2, value), msg(1, key)],
          [msg(1, key)],
          [msg(1, key), msg(2, value), msg(3, bytesOf(2))],
          [msg(1, key), Buffer.from([0x18, 0x05]), msg(2, value)],
          [msg(1, bytesOf(3)), msg(1, key), msg(2, value)],
          [msg(1, key), msg(2, value), msg(2, bytesOf(3))],
          // A 128-byte key (a 2-byte length) ending in 0x12, then a 17-byte value: read with a 1-byte length, the
          // key's last byte and the value's header would look like a whole entry.
          [msg(1, Buffer.concat([bytesOf(127), Buffer.from([0x12])])), msg(2, bytesOf(17))],
        ];
        const parts = rand() < 0.5 ? [msg(1, key), msg(2, value)] : odd[(rand() * odd.length) | 0];
        entries.push(msg(rand() < 0.8 ? 2 : 3, Buffer.concat(parts)));
      }
      const body = Buffer.concat([
        Buffer.from([0x6b, 0x38, 0x73, 0x00]),
        msg(1, Buffer.concat([msg(1, Buffer.from('v1')), msg(2, Buffer.from('ConfigMap'))])),
        msg(2, Buffer.concat([msg(1, msg(1, Buffer.from('cm'))), ...entries])),
      ]);
      // The reference: every field of each entry read, the last key and value kept.
      const expected: Record<string, Record<string, string>> = {};
      for (const e of entries) {
        const outer = fields(e)[0];
        let k = '';
        let v = '';
        for (const f of fields(outer.bytes!)) {
          if (f.no === 1) k = f.bytes!.toString('utf8');
          else if (f.no === 2) v = f.bytes!.toString(outer.no === 3 ? 'base64' : 'utf8');
        }
        (expected[outer.no === 2 ? 'data' : 'binaryData'] ??= {})[k] = v;
      }
      const got = decodeProtobufObject(body) as unknown as Record<string, unknown>;
      assert.deepStrictEqual(
        { data: got.data, binaryData: got.binaryData },
        { data: expected.data, binaryData: expected.binaryData },
        `round ${round}`,
      );
    }
  });
});

describe('protobuf ConfigMaps and Secrets decoded in the worker', () => {
  it('give, once their JSON is parsed, what the loop decodes: order, repeated keys, __proto__, index keys, bytes', async () => {
    let seed = 4242;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const KEYS = ['a', 'b', '__proto__', 'constructor', '0', '42', '4294967295', 'é', '日本', 'x"y', 'tab\t', ''];
    const pick = () => (rand() < 0.5 ? KEYS[(rand() * KEYS.length) | 0] : `k${(rand() * 50) | 0}`);
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => (rand() * 256) | 0));
    const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
    for (let round = 0; round < 60; round++) {
      const kind = round % 2 ? 'Secret' : 'ConfigMap';
      const entries: Buffer[] = [];
      // Enough entries now and then for the JSON to be parsed in slices.
      const count = round % 10 === 9 ? 12_000 : 40;
      for (let i = 0; i < count; i++) {
        const value = rand() < 0.3 ? bytes((rand() * 8) | 0) : Buffer.from(`v${i}é`);
        // ConfigMap: data (2) or binaryData (3); Secret: data (2) or stringData (4).
        const no = rand() < 0.7 ? 2 : kind === 'ConfigMap' ? 3 : 4;
        entries.push(msg(no, str(1, pick()), msg(2, value)));
      }
      if (kind === 'Secret') entries.push(str(3, 'Opaque'));
      const body = envelope(
        'v1',
        kind,
        Buffer.concat([msg(1, str(1, `r${round}`), msg(11, str(1, 'app'), str(2, 'x'))), ...entries]),
      );
      const onLoop = decodeProtobufObject(body);
      const wire = await decodeProtobufOffThread(body);
      assert.ok(wire.ok && 'json' in wire, `round ${round}: sent as JSON`);
      const { value } = await parseLargeJsonText(wire.json, turn);
      assert.deepStrictEqual(value, onLoop, `round ${round}`);
      assert.equal(JSON.stringify(value), JSON.stringify(onLoop), `round ${round}: key order`);
    }
  });
});
