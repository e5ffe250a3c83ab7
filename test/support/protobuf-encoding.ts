// Protobuf encoding for tests and benchmarks: varints, length-delimited fields and the `k8s\0` envelope
// (runtime.Unknown) kubectl's typed clients send. Encoding only: what the server decodes is what is tested.

/** A varint: a negative number as its 64-bit two's complement, as protobuf writes an int64. */
export function varint(n: number | bigint): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, BigInt(n));
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

/** A length-delimited field (wire type 2) holding `parts`. */
export function msg(no: number, ...parts: Buffer[]): Buffer {
  const payload = Buffer.concat(parts);
  return Buffer.concat([varint((no << 3) | 2), varint(payload.length), payload]);
}

/** A string field. */
export function str(no: number, s: string): Buffer {
  return msg(no, Buffer.from(s));
}

/** A varint field (wire type 0). */
export function num(no: number, n: number): Buffer {
  return Buffer.concat([varint(no << 3), varint(n)]);
}

/** The body of a request: the envelope, its type meta and the object's message. */
export function envelope(apiVersion: string, kind: string, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x6b, 0x38, 0x73, 0x00]), msg(1, str(1, apiVersion), str(2, kind)), msg(2, body)]);
}
