// The per-resource watch cache: a bounded ring buffer of committed events used to replay a watch from a
// resourceVersion, plus the event-to-watcher filtering rules of kube-apiserver's cacher (selector transitions
// turn into ADDED/DELETED). Each event's JSON line is built once and shared by every watcher.
import type { KubeObject } from '../../types/k8s.ts';

/** One committed version of an object. Its `obj` is never mutated after commit; `json` is computed once. */
export class StoredEntry {
  readonly obj: KubeObject;
  readonly rv: number;
  #json: string | undefined;
  constructor(obj: KubeObject, rv: number, json?: string) {
    this.obj = obj;
    this.rv = rv;
    this.#json = json;
  }
  get json(): string {
    if (this.#json === undefined) this.#json = JSON.stringify(this.obj);
    return this.#json;
  }
}

export type StoreEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A committed write as the watch machinery sees it. */
export class StoreEvent {
  readonly type: StoreEventType;
  readonly rv: number;
  /** The new state (ADDED/MODIFIED) or the last state with the deletion resourceVersion (DELETED). */
  readonly entry: StoredEntry;
  /** The state before a MODIFIED or DELETED write, for selector transitions and list snapshots. */
  readonly prev: StoredEntry | undefined;
  #line: string | undefined;
  constructor(type: StoreEventType, entry: StoredEntry, prev?: StoredEntry) {
    this.type = type;
    this.rv = entry.rv;
    this.entry = entry;
    this.prev = prev;
  }
  /** The newline-terminated watch frame, serialized once for all watchers. */
  get line(): string {
    if (this.#line === undefined) this.#line = watchLine(this.type, this.entry.json);
    return this.#line;
  }
}

export function watchLine(type: string, objectJson: string): string {
  return `{"type":"${type}","object":${objectJson}}\n`;
}

/** What a watcher receives: an event type and the object version to send (may differ from the stored event). */
export interface FilteredEvent {
  type: StoreEventType;
  entry: StoredEntry;
  /** The shared frame when the event is delivered unchanged; undefined after a selector transition. */
  sharedLine: string | undefined;
}

export type ObjectFilter = (obj: KubeObject) => boolean;

/**
 * Applies a watcher's filter to an event like the cacher does: an object that starts matching arrives as ADDED,
 * one that stops matching as DELETED carrying its previous state at the new resourceVersion.
 * `namespace` is checked separately because it never changes for an object.
 */
export function filterEvent(ev: StoreEvent, namespace: string | undefined, matches: ObjectFilter | undefined): FilteredEvent | undefined {
  if (namespace !== undefined && ev.entry.obj.metadata.namespace !== namespace) return undefined;
  if (!matches) return { type: ev.type, entry: ev.entry, sharedLine: undefined };
  const cur = matches(ev.entry.obj);
  if (ev.type !== 'MODIFIED' || !ev.prev) return cur ? { type: ev.type, entry: ev.entry, sharedLine: undefined } : undefined;
  const prev = matches(ev.prev.obj);
  if (cur && prev) return { type: 'MODIFIED', entry: ev.entry, sharedLine: undefined };
  if (cur) return { type: 'ADDED', entry: ev.entry, sharedLine: undefined };
  if (!prev) return undefined;
  const gone: KubeObject = { ...ev.prev.obj, metadata: { ...ev.prev.obj.metadata, resourceVersion: String(ev.rv) } };
  return { type: 'DELETED', entry: new StoredEntry(gone, ev.rv), sharedLine: undefined };
}

/** The bounded history of one resource. Events with rv > compactedRv are all retained. */
export class EventRing {
  readonly #buf: Array<StoreEvent | undefined>;
  #start = 0;
  #size = 0;
  #compactedRv: number;

  constructor(capacity: number, startRv: number) {
    this.#buf = new Array<StoreEvent | undefined>(Math.max(1, capacity));
    this.#compactedRv = startRv;
  }

  /** The newest resourceVersion that can no longer be replayed from (resume needs rv >= this). */
  get compactedRv(): number {
    return this.#compactedRv;
  }

  push(ev: StoreEvent): void {
    const cap = this.#buf.length;
    if (this.#size === cap) {
      this.#compactedRv = this.#buf[this.#start]!.rv;
      this.#buf[this.#start] = ev;
      this.#start = (this.#start + 1) % cap;
    } else {
      this.#buf[(this.#start + this.#size) % cap] = ev;
      this.#size++;
    }
  }

  /** Events with rv > fromRv in commit order, or undefined when part of that history was dropped. */
  since(fromRv: number): StoreEvent[] | undefined {
    if (fromRv < this.#compactedRv) return undefined;
    const cap = this.#buf.length;
    let first = this.#size;
    // Walk back from the newest event: resumes are almost always from a recent resourceVersion.
    while (first > 0 && this.#buf[(this.#start + first - 1) % cap]!.rv > fromRv) first--;
    const out: StoreEvent[] = [];
    for (let i = first; i < this.#size; i++) out.push(this.#buf[(this.#start + i) % cap]!);
    return out;
  }

  /** Drops all history: resumes from before `rv` get 410 Expired. */
  compact(rv: number): void {
    this.#buf.fill(undefined);
    this.#start = 0;
    this.#size = 0;
    this.#compactedRv = rv;
  }
}
