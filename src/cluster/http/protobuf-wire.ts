// The protobuf wire format: varints and the fields of a message, shared by the hand-written decoders
// (protobuf.ts) and the schema-driven one (protobuf-schema.ts).

/** One decoded wire field. */
export interface Field {
  no: number;
  wire: number;
  /** varint value (wire 0) */
  num?: bigint;
  /** bytes (wire 2) */
  bytes?: Buffer;
}

/** A malformed protobuf body (answered 400 by the decoders). */
export class DecodeError extends Error {}

export function readVarint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new DecodeError('truncated varint');
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [result, pos];
    shift += 7n;
    if (shift > 63n) throw new DecodeError('varint too long');
  }
}

/** The position after the varint smallVarint read last. */
let afterSmall = 0;

/**
 * A varint of at most 4 bytes (below 2^28: every field key and length of a body under the size limit) as a
 * number, its end in afterSmall; -1 for any other, which readVarint reads (with its errors). A BigInt per byte
 * was most of the decode of a 3 MiB body's 700,000 keys and lengths.
 */
function smallVarint(buf: Buffer, pos: number): number {
  let result = 0;
  for (let i = 0; i < 4 && pos + i < buf.length; i++) {
    const b = buf[pos + i];
    result += (b & 0x7f) * 2 ** (7 * i);
    if (!(b & 0x80)) {
      afterSmall = pos + i + 1;
      return result;
    }
  }
  return -1;
}

/** The wire fields of a message, in order. @throws DecodeError (400 from decodeProtobufObject) */
export function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    let no: number;
    let wire: number;
    const small = smallVarint(buf, pos);
    if (small >= 0) {
      pos = afterSmall;
      no = small >>> 3;
      wire = small & 7;
    } else {
      const [key, p1] = readVarint(buf, pos);
      pos = p1;
      no = Number(key >> 3n);
      wire = Number(key & 7n);
    }
    if (wire === 0) {
      const [v, p2] = readVarint(buf, pos);
      pos = p2;
      out.push({ no, wire, num: v });
    } else if (wire === 2) {
      let len: number;
      let p2: number;
      const smallLen = smallVarint(buf, pos);
      if (smallLen >= 0) {
        len = smallLen;
        p2 = afterSmall;
      } else {
        const [big, p] = readVarint(buf, pos);
        len = Number(big);
        p2 = p;
      }
      const end = p2 + len;
      if (end > buf.length) throw new DecodeError('truncated field');
      out.push({ no, wire, bytes: buf.subarray(p2, end) });
      pos = end;
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new DecodeError(`unsupported wire type ${wire}`);
    }
  }
  if (pos !== buf.length) throw new DecodeError('truncated message');
  return out;
}
