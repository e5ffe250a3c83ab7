// The serialised form of a committed object version, shared by everything that sends it: the write's own answer,
// GET, every watcher's event frame, the watch cache's history and list snapshots all use the same JSON text,
// produced once at commit. The text is the object WITH kind/apiVersion first (as GETs, write answers and watch
// events carry it); list items, which kube-apiserver serves without them, are the same text with that header cut
// out while it is encoded into the list body. A version that is no longer current keeps only its text: its parsed
// object is dropped and parsed again only if something still asks for it (a selector over old history).
// The text stays a JS string (one byte per character for ASCII, no allocation of its own): a Buffer per version
// would cost an ArrayBuffer each, or pin a shared pool slab for as long as the version lives.
import type { KubeObject } from '../../types/k8s.ts';

/** `{"kind":K,"apiVersion":A,` for the object's kind and apiVersion, or undefined when it lacks them. */
function typeHeader(obj: KubeObject): string | undefined {
  if (typeof obj.kind !== 'string' || typeof obj.apiVersion !== 'string') return undefined;
  return `{"kind":${JSON.stringify(obj.kind)},"apiVersion":${JSON.stringify(obj.apiVersion)},`;
}

/** One committed version of an object. Its `obj` is never mutated after commit; its JSON is computed once. */
export class StoredEntry {
  readonly rv: number;
  #obj: KubeObject | undefined;
  #json: string | undefined;
  /** UTF-8 size of #json, once asked for. */
  #bytes = -1;
  /** Length of the `{"kind":…,"apiVersion":…,` header #json starts with (characters = bytes: it is ASCII); 0 if none. */
  #header = -1;

  /** `json`, when given, is the object's JSON (the commit has just produced it). */
  constructor(obj: KubeObject, rv: number, json?: string) {
    this.#obj = obj;
    this.rv = rv;
    this.#json = json;
  }

  /** The object (parsed again from the JSON if it was released). Never mutate it. */
  get obj(): KubeObject {
    return (this.#obj ??= JSON.parse(this.#json!) as KubeObject);
  }

  /** The JSON with kind/apiVersion: what GET, writes and watch events send. */
  get json(): string {
    return (this.#json ??= JSON.stringify(this.#obj));
  }

  /** UTF-8 byte length of `json`. */
  get byteLength(): number {
    if (this.#bytes < 0) this.#bytes = Buffer.byteLength(this.json);
    return this.#bytes;
  }

  #headerLength(): number {
    if (this.#header < 0) {
      // Computed while the object is still parsed (release() asks first).
      const header = typeHeader(this.obj);
      this.#header =
        header !== undefined && /^[\x20-\x7e]*$/.test(header) && this.json.startsWith(header) ? header.length : 0;
    }
    return this.#header;
  }

  /** UTF-8 size of the list item form: the JSON without kind/apiVersion. */
  get itemByteLength(): number {
    const h = this.#headerLength();
    return h ? this.byteLength - h + 1 : Buffer.byteLength(this.#itemFallback());
  }

  /** Encodes the list item form into `out` at `at`; returns the position after it. */
  writeItem(out: Buffer, at: number): number {
    const h = this.#headerLength();
    if (!h) return at + out.write(this.#itemFallback(), at);
    out[at] = 0x7b; // '{'
    return at + 1 + out.write(this.json.slice(h), at + 1);
  }

  /** An object whose JSON does not start with its kind/apiVersion (never written by the write rules). */
  #itemFallback(): string {
    const { kind: _k, apiVersion: _a, ...rest } = this.obj;
    return JSON.stringify(rest);
  }

  /** Drops the parsed object once this version is no longer current: the JSON is all the history needs. */
  release(): void {
    this.#headerLength();
    this.#obj = undefined;
  }
}

/** A list body: `head` + the item forms of `entries` separated by commas + `tail`, encoded into one buffer. */
export function encodeList(head: string, entries: readonly StoredEntry[], tail: string): Buffer {
  let size = Buffer.byteLength(head) + Buffer.byteLength(tail) + Math.max(0, entries.length - 1);
  for (const e of entries) size += e.itemByteLength;
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

/** The newline-terminated watch frame `{"type":T,"object":<json>}` of an entry, encoded once for every watcher. */
export function watchFrame(type: 'ADDED' | 'MODIFIED' | 'DELETED', entry: StoredEntry): Buffer {
  return Buffer.from(watchLine(type, entry.json));
}

/** A watch frame around already serialised JSON (Tables, views, errors, bookmarks). */
export function watchLine(type: string, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}
