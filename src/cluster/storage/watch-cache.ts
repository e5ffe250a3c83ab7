// The per-resource watch cache: a bounded ring buffer of committed events used to replay a watch from a
// resourceVersion, plus the event-to-watcher filtering rules of kube-apiserver's cacher (selector transitions
// turn into ADDED/DELETED). Events reference the committed entries (stored-entry.ts): no copies are kept.
import type { KubeObject } from '../../types/k8s.ts';
import { StoredEntry, watchFrame } from './stored-entry.ts';

export type StoreEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * A committed write as the watch machinery sees it. It holds the entries (their serialised JSON), never a copy:
 * the frame sent to watchers is built at dispatch and shared by all of them, not kept in the history.
 */
export class StoreEvent {
  readonly type: StoreEventType;
  readonly rv: number;
  /** The object's storage key (`namespace/name` or `name`). */
  readonly key: string;
  /** The object's namespace (undefined for cluster-scoped objects): it never changes for an object. */
  readonly namespace: string | undefined;
  /** The new state (ADDED/MODIFIED) or the last state with the deletion resourceVersion (DELETED). */
  readonly entry: StoredEntry;
  /** The state before a MODIFIED or DELETED write, for selector transitions and list snapshots. */
  readonly prev: StoredEntry | undefined;
  private frameBytes: Buffer | undefined;
  constructor(
    type: StoreEventType,
    key: string,
    namespace: string | undefined,
    entry: StoredEntry,
    prev?: StoredEntry,
  ) {
    this.type = type;
    this.rv = entry.rv;
    this.key = key;
    this.namespace = namespace;
    this.entry = entry;
    this.prev = prev;
  }

  /** The watch frame of this event, built on first use and shared until dropFrame(). */
  frame(): Buffer {
    return (this.frameBytes ??= watchFrame(this.type, this.entry));
  }

  /** Forgets the frame once every live watcher has it: the history keeps entries, not frames. */
  dropFrame(): void {
    this.frameBytes = undefined;
  }
}

/** What a watcher receives: an event type and the object version to send (may differ from the stored event). */
export interface FilteredEvent {
  type: StoreEventType;
  entry: StoredEntry;
  /** The live event whose frame every watcher shares, when delivered unchanged; undefined after a selector transition or in a replay. */
  shared: StoreEvent | undefined;
}

export type ObjectFilter = (obj: KubeObject) => boolean;

/**
 * Applies a watcher's filter to an event like the cacher does: an object that starts matching arrives as ADDED,
 * one that stops matching as DELETED carrying its previous state at the new resourceVersion.
 * `namespace` is checked separately because it never changes for an object.
 */
export function filterEvent(
  ev: StoreEvent,
  namespace: string | undefined,
  matches: ObjectFilter | undefined,
): FilteredEvent | undefined {
  if (namespace !== undefined && ev.namespace !== namespace) return undefined;
  if (!matches) return { type: ev.type, entry: ev.entry, shared: undefined };
  const cur = matches(ev.entry.obj);
  if (ev.type !== 'MODIFIED' || !ev.prev)
    return cur ? { type: ev.type, entry: ev.entry, shared: undefined } : undefined;
  const prev = matches(ev.prev.obj);
  if (cur && prev) return { type: 'MODIFIED', entry: ev.entry, shared: undefined };
  if (cur) return { type: 'ADDED', entry: ev.entry, shared: undefined };
  if (!prev) return undefined;
  const gone: KubeObject = { ...ev.prev.obj, metadata: { ...ev.prev.obj.metadata, resourceVersion: String(ev.rv) } };
  return { type: 'DELETED', entry: new StoredEntry(gone, ev.rv), shared: undefined };
}

/**
 * What the history alone keeps alive of an event, in characters of JSON (bytes, for ASCII): the superseded state of a
 * MODIFIED or DELETED event and the deletion's own record. The current state of an object is the table's, not the
 * history's.
 */
function historyWeight(ev: StoreEvent): number {
  return (ev.prev?.json.length ?? 0) + (ev.type === 'DELETED' ? ev.entry.json.length : 0);
}

/**
 * The bounded history of one resource: at most `capacity` events, and at most `maxBytes` of superseded versions
 * (the oldest events go first; the newest is always kept). Events with rv > compactedRv are all retained.
 */
export class EventRing {
  private readonly buf: Array<StoreEvent | undefined>;
  private start = 0;
  private size = 0;
  private compacted: number;
  private bytes = 0;

  constructor(
    capacity: number,
    startRv: number,
    private readonly maxBytes = Infinity,
  ) {
    this.buf = new Array<StoreEvent | undefined>(Math.max(1, capacity));
    this.compacted = startRv;
  }

  /** Characters of superseded versions the history keeps (see historyWeight). */
  get retainedBytes(): number {
    return this.bytes;
  }

  /** Events retained. */
  get length(): number {
    return this.size;
  }

  /** The newest resourceVersion that can no longer be replayed from (resume needs rv >= this). */
  get compactedRv(): number {
    return this.compacted;
  }

  push(ev: StoreEvent): void {
    const cap = this.buf.length;
    if (this.size === cap) this.dropOldest();
    this.buf[(this.start + this.size) % cap] = ev;
    this.size++;
    this.bytes += historyWeight(ev);
    while (this.bytes > this.maxBytes && this.size > 1) this.dropOldest();
  }

  /** Takes back the newest event if it is `ev` (a write whose transaction failed); false when it is not there. */
  dropNewest(ev: StoreEvent): boolean {
    if (this.size === 0) return false;
    const at = (this.start + this.size - 1) % this.buf.length;
    if (this.buf[at] !== ev) return false;
    this.buf[at] = undefined;
    this.size--;
    this.bytes -= historyWeight(ev);
    return true;
  }

  private dropOldest(): void {
    const ev = this.buf[this.start]!;
    this.compacted = ev.rv;
    this.bytes -= historyWeight(ev);
    this.buf[this.start] = undefined;
    this.start = (this.start + 1) % this.buf.length;
    this.size--;
  }

  /** Events with rv > fromRv in commit order, or undefined when part of that history was dropped. */
  since(fromRv: number): StoreEvent[] | undefined {
    if (fromRv < this.compacted) return undefined;
    const cap = this.buf.length;
    let first = this.size;
    // Walk back from the newest event: resumes are almost always from a recent resourceVersion.
    while (first > 0 && this.buf[(this.start + first - 1) % cap]!.rv > fromRv) first--;
    const out: StoreEvent[] = [];
    for (let i = first; i < this.size; i++) out.push(this.buf[(this.start + i) % cap]!);
    return out;
  }

  /** Drops all history: resumes from before `rv` get 410 Expired. */
  compact(rv: number): void {
    this.buf.fill(undefined);
    this.start = 0;
    this.size = 0;
    this.bytes = 0;
    this.compacted = rv;
  }
}
