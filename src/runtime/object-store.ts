// The informer cache: objects keyed by namespace/name, with a uid lookup and user-defined indexes. Objects
// are deep-frozen on the way in, so readers share them without copying and cannot corrupt the cache by
// mutating (clone with structuredClone before changing anything).
import type { KubeObject } from '../types/k8s.ts';

/** Computes the index values of an object (e.g. a PV's storage class, a PVC's selected node). */
export type IndexFunc<T extends KubeObject> = (obj: T) => readonly string[];

/** `namespace/name`, or `name` for cluster-scoped objects (client-go's MetaNamespaceKeyFunc). */
export function objectKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : `${name}`;
}

/** Key from parts, matching {@link objectKey}. */
export function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Splits a key made by {@link objectKey}. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Recursively freezes a plain-JSON value in place and returns it. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/** The read side of a store, handed to consumers of an informer. */
export interface ReadonlyObjectStore<T extends KubeObject> {
  /** By `namespace/name` key, or by (namespace, name). */
  get(key: string): T | undefined;
  get(namespace: string | undefined, name: string): T | undefined;
  getByUid(uid: string): T | undefined;
  list(): T[];
  keys(): string[];
  readonly size: number;
  /** Objects whose index `indexName` yields `value`. Throws for an unknown index. */
  byIndex(indexName: string, value: string): T[];
  /** Keys whose index `indexName` yields `value`. */
  indexKeys(indexName: string, value: string): string[];
}

interface Index<T extends KubeObject> {
  fn: IndexFunc<T>;
  /**
   * index value -> keys: one key as a plain string, more as a Set. Most index values name one object (a PV name, a
   * claim uid), and a Set per value cost about 200 bytes per cached object.
   */
  entries: Map<string, string | Set<string>>;
}

/** Mutable store used by the reflector. Not safe to mutate from handlers. */
export class ObjectStore<T extends KubeObject = KubeObject> implements ReadonlyObjectStore<T> {
  private readonly objects = new Map<string, T>();
  private readonly uids = new Map<string, string>();
  private readonly indexes = new Map<string, Index<T>>();

  /** @param freeze deep-freeze stored objects (default true); turn off only when every reader clones. */
  constructor(private readonly freeze = true) {}

  get size(): number {
    return this.objects.size;
  }

  /** Adds an index; existing objects are indexed immediately. Index names are unique. */
  addIndex(name: string, fn: IndexFunc<T>): void {
    if (this.indexes.has(name)) throw new Error(`index ${name} already exists`);
    const index: Index<T> = { fn, entries: new Map() };
    this.indexes.set(name, index);
    for (const [key, obj] of this.objects) this.indexAdd(index, key, obj);
  }

  get(keyOrNamespace: string | undefined, name?: string): T | undefined {
    if (name === undefined) return keyOrNamespace === undefined ? undefined : this.objects.get(keyOrNamespace);
    return this.objects.get(keyOf(keyOrNamespace, name));
  }

  getByUid(uid: string): T | undefined {
    const key = this.uids.get(uid);
    return key === undefined ? undefined : this.objects.get(key);
  }

  list(): T[] {
    return [...this.objects.values()];
  }

  keys(): string[] {
    return [...this.objects.keys()];
  }

  byIndex(indexName: string, value: string): T[] {
    return this.indexKeys(indexName, value).map((k) => this.objects.get(k) as T);
  }

  indexKeys(indexName: string, value: string): string[] {
    const index = this.indexes.get(indexName);
    if (!index) throw new Error(`no index named ${indexName}`);
    const keys = index.entries.get(value);
    return keys === undefined ? [] : typeof keys === 'string' ? [keys] : [...keys];
  }

  /** Inserts or replaces; returns the previous object under the same key. */
  upsert(obj: T): T | undefined {
    if (this.freeze) deepFreeze(obj);
    const key = objectKey(obj);
    const old = this.objects.get(key);
    if (old) this.unlink(key, old);
    this.objects.set(key, obj);
    if (obj.metadata.uid) this.uids.set(obj.metadata.uid, key);
    for (const index of this.indexes.values()) this.indexAdd(index, key, obj);
    return old;
  }

  /** Removes by key; returns the removed object. */
  remove(key: string): T | undefined {
    const old = this.objects.get(key);
    if (!old) return undefined;
    this.unlink(key, old);
    this.objects.delete(key);
    return old;
  }

  private unlink(key: string, old: T): void {
    const uid = old.metadata.uid;
    if (uid && this.uids.get(uid) === key) this.uids.delete(uid);
    for (const index of this.indexes.values()) {
      for (const value of index.fn(old)) {
        const keys = index.entries.get(value);
        if (keys === key) index.entries.delete(value);
        else if (typeof keys === 'object') {
          keys.delete(key);
          if (keys.size === 1) index.entries.set(value, keys.values().next().value as string);
        }
      }
    }
  }

  private indexAdd(index: Index<T>, key: string, obj: T): void {
    for (const value of index.fn(obj)) {
      const keys = index.entries.get(value);
      if (keys === undefined) index.entries.set(value, key);
      else if (typeof keys === 'string') {
        if (keys !== key) index.entries.set(value, new Set([keys, key]));
      } else keys.add(key);
    }
  }
}
