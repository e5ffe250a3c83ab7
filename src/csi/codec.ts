// Encodes and decodes CSI messages from their descriptors (descriptors.ts) with the wire primitives (wire.ts).
// Encoding follows proto3 as Go's protobuf writes it: fields in number order, scalars at their default value left
// out, a present sub-message written even when empty, each map entry with both its key and its value. Decoding
// skips unknown fields (a newer plugin's), keeps the last value of a repeated-by-mistake scalar, and decodes an
// enum number it does not know as UNKNOWN.
import type { FieldSpec, MessageDescriptor, MessageOf } from './descriptors.ts';
import { readFields, WIRE, WireDecodeError, WireWriter } from './wire.ts';

type Fields = ReadonlyArray<readonly [string, FieldSpec]>;

const byNumber = new WeakMap<MessageDescriptor, Fields>();
const byNo = new WeakMap<MessageDescriptor, ReadonlyMap<number, readonly [string, FieldSpec]>>();
const enumNames = new WeakMap<object, ReadonlyMap<number, string>>();

function sortedFields(d: MessageDescriptor): Fields {
  let fields = byNumber.get(d);
  if (!fields) {
    fields = Object.entries(d.fields).sort(([, a], [, b]) => a.no - b.no);
    byNumber.set(d, fields);
  }
  return fields;
}

function fieldIndex(d: MessageDescriptor): ReadonlyMap<number, readonly [string, FieldSpec]> {
  let index = byNo.get(d);
  if (!index) {
    index = new Map(sortedFields(d).map((f) => [f[1].no, f]));
    byNo.set(d, index);
  }
  return index;
}

function enumName(values: Readonly<Record<string, number>>, n: number): string {
  let names = enumNames.get(values);
  if (!names) {
    names = new Map(Object.entries(values).map(([k, v]) => [v, k]));
    enumNames.set(values, names);
  }
  return names.get(n) ?? 'UNKNOWN';
}

/** A value of the wrong type for its field (a programming error in the caller). */
export class MessageEncodeError extends Error {
  override name = 'MessageEncodeError';
}

function writeMessage(w: WireWriter, d: MessageDescriptor, value: Readonly<Record<string, unknown>>): void {
  for (const [name, spec] of sortedFields(d)) {
    const v = value[name];
    if (v === undefined || v === null) continue;
    const where = `${d.name}.${name}`;
    switch (spec.kind) {
      case 'string':
        for (const s of spec.repeated ? asArray(v, where) : [v]) {
          if (typeof s !== 'string') throw new MessageEncodeError(`${where}: expected a string`);
          if (s === '' && !spec.repeated) continue;
          w.key(spec.no, WIRE.lengthDelimited).bytes(Buffer.from(s, 'utf8'));
        }
        break;
      case 'bool':
        if (typeof v !== 'boolean') throw new MessageEncodeError(`${where}: expected a boolean`);
        if (v) w.key(spec.no, WIRE.varint).varint(1);
        break;
      case 'int32':
      case 'int64': {
        if (typeof v !== 'bigint' && !(typeof v === 'number' && Number.isInteger(v)))
          throw new MessageEncodeError(`${where}: expected an integer`);
        if (BigInt(v) !== 0n)
          w.key(spec.no, WIRE.varint).varint(
            spec.kind === 'int32' ? BigInt.asIntN(32, BigInt(v)) : BigInt.asIntN(64, BigInt(v)),
          );
        break;
      }
      case 'enum': {
        const n = typeof v === 'string' ? spec.values[v] : undefined;
        if (n === undefined)
          throw new MessageEncodeError(`${where}: ${String(v)} is not one of ${Object.keys(spec.values).join(', ')}`);
        if (n !== 0) w.key(spec.no, WIRE.varint).varint(n);
        break;
      }
      case 'message':
        for (const m of spec.repeated ? asArray(v, where) : [v]) {
          if (typeof m !== 'object' || m === null) throw new MessageEncodeError(`${where}: expected a message`);
          w.key(spec.no, WIRE.lengthDelimited).bytes(encodeMessage(spec.message, m as Record<string, unknown>));
        }
        break;
      case 'map':
        if (typeof v !== 'object') throw new MessageEncodeError(`${where}: expected a string map`);
        for (const [k, s] of Object.entries(v as Record<string, unknown>)) {
          if (typeof s !== 'string') throw new MessageEncodeError(`${where}[${k}]: expected a string`);
          const entry = new WireWriter();
          entry.key(1, WIRE.lengthDelimited).bytes(Buffer.from(k, 'utf8'));
          entry.key(2, WIRE.lengthDelimited).bytes(Buffer.from(s, 'utf8'));
          w.key(spec.no, WIRE.lengthDelimited).bytes(entry.finish());
        }
        break;
    }
  }
}

function asArray(v: unknown, where: string): unknown[] {
  if (!Array.isArray(v)) throw new MessageEncodeError(`${where}: expected an array`);
  return v;
}

/** The wire bytes of `value` as a `d` message. */
export function encodeMessage<D extends MessageDescriptor>(
  d: D,
  value: MessageOf<D> | Readonly<Record<string, unknown>>,
): Buffer {
  const w = new WireWriter();
  writeMessage(w, d, value as Readonly<Record<string, unknown>>);
  return w.finish();
}

function expectWire(d: MessageDescriptor, name: string, wire: number, want: number): void {
  if (wire !== want) throw new WireDecodeError(`${d.name}.${name}: wire type ${wire}, expected ${want}`);
}

/** Decodes wire bytes as a `d` message. @throws WireDecodeError on malformed input. */
export function decodeMessage<D extends MessageDescriptor>(d: D, buf: Buffer): MessageOf<D> {
  const out: Record<string, unknown> = {};
  const index = fieldIndex(d);
  for (const f of readFields(buf)) {
    const known = index.get(f.no);
    if (!known) continue;
    const [name, spec] = known;
    if (spec.kind === 'string' || spec.kind === 'message' || spec.kind === 'map') {
      expectWire(d, name, f.wire, WIRE.lengthDelimited);
      const bytes = (f as { bytes: Buffer }).bytes;
      if (spec.kind === 'string') {
        const s = bytes.toString('utf8');
        if (spec.repeated) ((out[name] ??= []) as string[]).push(s);
        else out[name] = s;
      } else if (spec.kind === 'message') {
        const m = decodeMessage(spec.message, bytes);
        if (spec.repeated) ((out[name] ??= []) as unknown[]).push(m);
        else out[name] = m;
      } else {
        let key = '';
        let value = '';
        for (const e of readFields(bytes)) {
          if (e.wire !== WIRE.lengthDelimited) continue;
          if (e.no === 1) key = e.bytes.toString('utf8');
          else if (e.no === 2) value = e.bytes.toString('utf8');
        }
        ((out[name] ??= {}) as Record<string, string>)[key] = value;
      }
      continue;
    }
    expectWire(d, name, f.wire, WIRE.varint);
    const v = (f as { value: bigint }).value;
    if (spec.kind === 'bool') out[name] = v !== 0n;
    else if (spec.kind === 'int32') out[name] = Number(BigInt.asIntN(32, v));
    else if (spec.kind === 'int64') out[name] = BigInt.asIntN(64, v);
    else if (spec.kind === 'enum') out[name] = enumName(spec.values, Number(BigInt.asIntN(32, v)));
  }
  return out as MessageOf<D>;
}
