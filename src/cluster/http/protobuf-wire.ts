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

/** The wire fields of a message, in order. @throws DecodeError (400 from decodeProtobufObject) */
export function fields(buf: Buffer): Field[] {
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
