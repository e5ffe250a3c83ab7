// The serialised form of a committed object version, shared by everything that sends it: the write's own answer,
// GET, every watcher's event frame, the watch cache's history and list snapshots all use the same UTF-8 bytes,
// encoded once at commit. The bytes are the object WITH kind/apiVersion first (as GETs, write answers and watch
// events carry it); list items, which kube-apiserver serves without them, are the same bytes with that header cut
// out while they are copied into the list body. A version that is no longer current keeps only its bytes: its
// parsed object is dropped and parsed again only if something still asks for it (a selector over old history).
import type { KubeObject } from '../../types/k8s.ts';

const encoder = new TextEncoder();

/** UTF-8 bytes in their own ArrayBuffer (never a slice of Node's shared pool, which one entry would pin). */
function ownBytes(text: string): Buffer {
  const u8 = encoder.encode(text);
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

/** `{"kind":K,"apiVersion":A,` when the object's JSON starts with its kind and apiVersion, else undefined. */
function typeHeader(obj: KubeObject): string | undefined {
  if (typeof obj.kind !== 'string' || typeof obj.apiVersion !== 'string') return undefined;
  return `{"kind":${JSON.stringify(obj.kind)},"apiVersion":${JSON.stringify(obj.apiVersion)},`;
}

/** One committed version of an object. Its `obj` is never mutated after commit; its bytes are computed once. */
export class StoredEntry {
  readonly rv: number;
  #obj: KubeObject | undefined;
  /** UTF-8 of the object's JSON followed by a newline (apimachinery's encoder ends every body with one). */
  #bytes: Buffer | undefined;
  /** Byte length of the `{"kind":…,"apiVersion":…,` header in #bytes; 0 when the JSON does not start with it. */
  #headerBytes = 0;

  /** `json`, when given, is the object's JSON (the commit has just produced it); it is encoded, not kept. */
  constructor(obj: KubeObject, rv: number, json?: string) {
    this.#obj = obj;
    this.rv = rv;
    if (json !== undefined) this.#encode(json);
  }

  #encode(json: string): Buffer {
    const header = typeHeader(this.#obj!);
    // The header is ASCII except for exotic kinds; its byte length is then its length.
    if (header !== undefined && json.startsWith(header)) this.#headerBytes = Buffer.byteLength(header);
    this.#bytes = ownBytes(`${json}\n`);
    return this.#bytes;
  }

  /** The object (parsed again from the bytes if it was released). Never mutate it. */
  get obj(): KubeObject {
    return (this.#obj ??= JSON.parse(this.#bytes!.toString('utf8')) as KubeObject);
  }

  /** The JSON body with kind/apiVersion, newline-terminated: what GET, writes and watch events send. */
  get bytes(): Buffer {
    return this.#bytes ?? this.#encode(JSON.stringify(this.#obj));
  }

  /** The JSON text (a fresh decode of the bytes, without the newline), for in-process copies. */
  get json(): string {
    const b = this.bytes;
    return b.toString('utf8', 0, b.length - 1);
  }

  /** Size of the list item form: the JSON without kind/apiVersion and without the newline. */
  get itemLength(): number {
    const b = this.bytes;
    return this.#headerBytes ? b.length - this.#headerBytes : this.#itemFallback().length;
  }

  /** Copies the list item form into `out` at `at`; returns the position after it. */
  writeItem(out: Buffer, at: number): number {
    const b = this.bytes;
    if (!this.#headerBytes) return at + this.#itemFallback().copy(out, at);
    out[at] = 0x7b; // '{'
    return at + 1 + b.copy(out, at + 1, this.#headerBytes, b.length - 1);
  }

  /** An object whose JSON does not start with its kind/apiVersion (never written by the write rules). */
  #itemFallback(): Buffer {
    const { kind: _k, apiVersion: _a, ...rest } = this.obj;
    return Buffer.from(JSON.stringify(rest));
  }

  /** Drops the parsed object once this version is no longer current: the bytes are all the history needs. */
  release(): void {
    if (this.#bytes) this.#obj = undefined;
  }
}

/** A list body: `head` + the item forms of `entries` separated by commas + `tail`, in one buffer. */
export function encodeList(head: string, entries: readonly StoredEntry[], tail: string): Buffer {
  let size = Buffer.byteLength(head) + Buffer.byteLength(tail) + Math.max(0, entries.length - 1);
  for (const e of entries) size += e.itemLength;
  const out = Buffer.allocUnsafe(size);
  let at = out.write(head, 0);
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ','
    at = entries[i].writeItem(out, at);
  }
  out.write(tail, at);
  return out;
}

/** A list body from already serialised items (views that convert each object, e.g. events.k8s.io). */
export function encodeListOfJson(head: string, items: readonly string[], tail: string): Buffer {
  return Buffer.from(`${head}${items.join(',')}${tail}`);
}

const FRAME_OPEN: Readonly<Record<string, Buffer>> = Object.freeze({
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
});

/** The newline-terminated watch frame `{"type":T,"object":<bytes>}` of an entry, in one buffer. */
export function watchFrame(type: 'ADDED' | 'MODIFIED' | 'DELETED', entry: StoredEntry): Buffer {
  const open = FRAME_OPEN[type];
  const b = entry.bytes;
  const out = Buffer.allocUnsafe(open.length + b.length + 1);
  open.copy(out, 0);
  b.copy(out, open.length, 0, b.length - 1);
  out[out.length - 2] = 0x7d; // '}'
  out[out.length - 1] = 0x0a; // '\n'
  return out;
}

/** A watch frame around already serialised JSON (Tables, views, errors, bookmarks). */
export function watchLine(type: string, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}
