// The serialised form of a committed object version, shared by everything that sends it: the write's own answer,
// GET, every watcher's event frame, the watch cache's history and list snapshots all use the same JSON text,
// produced once at commit. The text is the object WITH kind/apiVersion first (as GETs, write answers and watch
// events carry it); list items, which kube-apiserver serves without them, are the same text with that header cut
// out while it is encoded into the list body. Every version, current or not, keeps only its text once its commit
// is delivered: the parsed object is dropped and parsed again when something asks for it (a write's rules, a
// selector, a view).
// The text stays a JS string (one byte per character for ASCII, no allocation of its own): a Buffer per version
// would cost an ArrayBuffer each, or pin a shared pool slab for as long as the version lives.
import type { KubeObject } from '../../types/k8s.ts';

/** Headers already built, by kind and apiVersion ("" when the header is not plain ASCII); kinds are few. */
const headers = new Map<string, string>();
const MAX_CACHED_HEADERS = 1024;

/**
 * `{"kind":K,"apiVersion":A,` for the object's kind and apiVersion when that text is plain printable ASCII (so
 * its characters are its bytes), else undefined. Built once per kind: every commit asks.
 */
function typeHeader(obj: KubeObject): string | undefined {
  const { kind, apiVersion } = obj;
  if (typeof kind !== 'string' || typeof apiVersion !== 'string') return undefined;
  const key = `${kind}\n${apiVersion}`;
  let header = headers.get(key);
  if (header === undefined) {
    header = `{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`;
    if (!/^[\x20-\x7e]*$/.test(header)) header = '';
    if (headers.size < MAX_CACHED_HEADERS) headers.set(key, header);
  }
  return header || undefined;
}

/** Entries parsed again while a commit's events are delivered: kept parsed until the delivery ends. */
let pinDepth = 0;
const pinned: StoredEntry[] = [];

/**
 * One committed version of an object. Its text is computed once and is what the store keeps; the parsed object is
 * kept only while the write that made it is being committed and delivered (the write rules and the watchers'
 * selectors read it then). Afterwards `obj` parses the text again on each use: the store holds each object once,
 * as text, instead of a parsed copy next to its text (issue 21: the parsed form was more than half of the bytes).
 */
export class StoredEntry {
  readonly rv: number;
  /** The parsed object while the commit needs it, or always for an entry built without text. */
  private parsed: KubeObject | undefined;
  private text: string | undefined;
  /** UTF-8 size of `text`, once asked for. */
  private bytes = -1;
  /** Length of the `{"kind":…,"apiVersion":…,` header `text` starts with (characters = bytes: it is ASCII); 0 if none. */
  private header = -1;

  /** `json`, when given, is the object's JSON (the commit has just produced it). */
  constructor(obj: KubeObject, rv: number, json?: string) {
    this.parsed = obj;
    this.rv = rv;
    this.text = json;
  }

  /**
   * Runs `fn` (the delivery of committed events) with every entry parsed during it kept parsed until it returns:
   * watchers with selectors and the previous state of a MODIFIED event are parsed once per event, not once per
   * watcher. Nests; the entries are released when the outermost call returns.
   */
  static pinDuring(fn: () => void): void {
    pinDepth++;
    try {
      fn();
    } finally {
      if (--pinDepth === 0) {
        for (const e of pinned) e.release();
        pinned.length = 0;
      }
    }
  }

  /**
   * The object: the parsed form while its commit is under way, otherwise parsed from the text (a new object on
   * each call outside a delivery). Never mutate it.
   */
  get obj(): KubeObject {
    if (this.parsed) return this.parsed;
    const obj = JSON.parse(this.text!) as KubeObject;
    if (pinDepth > 0) {
      this.parsed = obj;
      pinned.push(this);
    }
    return obj;
  }

  /** The JSON with kind/apiVersion: what GET, writes and watch events send. */
  get json(): string {
    return (this.text ??= JSON.stringify(this.parsed));
  }

  /** UTF-8 byte length of `json`. */
  get byteLength(): number {
    if (this.bytes < 0) this.bytes = Buffer.byteLength(this.json);
    return this.bytes;
  }

  private headerLength(): number {
    if (this.header < 0) {
      // Computed while the object is still parsed (release() asks first).
      const header = typeHeader(this.obj);
      this.header = header !== undefined && this.json.startsWith(header) ? header.length : 0;
    }
    return this.header;
  }

  /** UTF-8 size of the list item form: the JSON without kind/apiVersion. */
  get itemByteLength(): number {
    const h = this.headerLength();
    return h ? this.byteLength - h + 1 : Buffer.byteLength(this.itemFallback());
  }

  /** Encodes the list item form into `out` at `at`; returns the position after it. */
  writeItem(out: Buffer, at: number): number {
    const h = this.headerLength();
    if (!h) return at + out.write(this.itemFallback(), at);
    out[at] = 0x7b; // '{'
    return at + 1 + out.write(this.json.slice(h), at + 1);
  }

  /** An object whose JSON does not start with its kind/apiVersion (never written by the write rules). */
  private itemFallback(): string {
    const { kind: _k, apiVersion: _a, ...rest } = this.obj;
    return JSON.stringify(rest);
  }

  /**
   * Drops the parsed object once the commit no longer needs it: the text is all the store keeps. An entry
   * without text (a dry run's answer, a selector's synthetic DELETED) keeps its object.
   */
  release(): void {
    if (this.text === undefined) return;
    this.headerLength();
    this.parsed = undefined;
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
