// The protobuf wire format, as much of it as CSI's messages use: varints (int32, int64, bool, enums), length-
// delimited fields (strings, bytes, messages, map entries), and skipping the fixed-width types a newer plugin may
// send. A writer that grows one buffer, and a reader that walks fields without copying.

/** A malformed protobuf message (a truncated field, a varint over 10 bytes, an unknown wire type). */
export class WireDecodeError extends Error {
  override name = 'WireDecodeError';
}

/** Wire types (the low 3 bits of a field key). */
export const WIRE = Object.freeze({ varint: 0, fixed64: 1, lengthDelimited: 2, fixed32: 5 });

/** Appends protobuf fields to a growing buffer. */
export class WireWriter {
  private buf = Buffer.allocUnsafe(64);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** An unsigned varint; a negative value is written as its 64-bit two's complement (10 bytes), as int32/int64 are. */
  varint(value: bigint | number): this {
    let v = BigInt.asUintN(64, BigInt(value));
    this.reserve(10);
    while (v > 0x7fn) {
      this.buf[this.len++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.len++] = Number(v);
    return this;
  }

  /** A field key: field number and wire type. */
  key(fieldNumber: number, wireType: number): this {
    return this.varint((fieldNumber << 3) | wireType);
  }

  /** A length-delimited payload (its length, then the bytes). */
  bytes(data: Uint8Array): this {
    this.varint(data.length);
    this.reserve(data.length);
    this.buf.set(data, this.len);
    this.len += data.length;
    return this;
  }

  /** What was written so far (a copy, so the writer may be reused). */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

/** One field as read from the wire: its number and either a varint value or a length-delimited payload. */
export type WireField =
  { no: number; wire: 0; value: bigint } | { no: number; wire: 2; bytes: Buffer } | { no: number; wire: 1 | 5 };

function readVarint(buf: Buffer, start: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  let pos = start;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new WireDecodeError('truncated varint');
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [BigInt.asUintN(64, result), pos];
    shift += 7n;
  }
  throw new WireDecodeError('varint longer than 10 bytes');
}

/** The fields of one message, in wire order. Fixed-width fields are skipped over (CSI defines none). */
export function* readFields(buf: Buffer): Generator<WireField> {
  let pos = 0;
  while (pos < buf.length) {
    const [key, afterKey] = readVarint(buf, pos);
    pos = afterKey;
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (no === 0) throw new WireDecodeError('field number 0');
    if (wire === WIRE.varint) {
      const [value, next] = readVarint(buf, pos);
      pos = next;
      yield { no, wire: 0, value };
    } else if (wire === WIRE.lengthDelimited) {
      const [length, next] = readVarint(buf, pos);
      const end = next + Number(length);
      if (length > BigInt(buf.length) || end > buf.length)
        throw new WireDecodeError('truncated length-delimited field');
      pos = end;
      yield { no, wire: 2, bytes: buf.subarray(next, end) };
    } else if (wire === WIRE.fixed64 || wire === WIRE.fixed32) {
      pos += wire === WIRE.fixed64 ? 8 : 4;
      if (pos > buf.length) throw new WireDecodeError('truncated fixed-width field');
      yield { no, wire };
    } else {
      throw new WireDecodeError(`unsupported wire type ${wire}`);
    }
  }
}
