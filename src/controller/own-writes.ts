// The controller's own writes, kept until the informer cache catches up (client-go's MutationCache): a PV we just
// saved, a claim we just rewrote. Reads take the newer of the cached copy and ours by resourceVersion, so a sync
// never acts on a cache that has not seen our write yet (no duplicate provision(), no second Reschedule).
import type { KubeObject } from '../types/k8s.ts';

/** Whether resourceVersion `a` is newer than `b`. Kubernetes versions are opaque; ours and kube's are integers. */
function newerVersion(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return false;
  if (!/^\d+$/.test(a) || !/^\d+$/.test(b)) return false;
  return a.length !== b.length ? a.length > b.length : a > b;
}

/** An overlay of objects this controller wrote, by key (claim uid, PV name). */
export class OwnWrites<T extends KubeObject> {
  private readonly writes = new Map<string, T>();

  /**
   * Remembers what the API server returned for our write of `key`, unless `cached` (the informer's copy now) already
   * is that version or a newer one: the watch event can arrive before the response, and a copy kept then would stay
   * until the object's next change.
   */
  record(key: string, written: T, cached: T | undefined): void {
    if (cached && !newerVersion(written.metadata.resourceVersion, cached.metadata.resourceVersion)) return;
    this.writes.set(key, written);
  }

  /**
   * The copy to act on: ours while it is newer than the cache's (or the cache has none), else the cache's.
   * Drops our copy once the cache holds the same or a newer version.
   */
  read(key: string, cached: T | undefined): T | undefined {
    const own = this.writes.get(key);
    if (!own) return cached;
    if (!cached || newerVersion(own.metadata.resourceVersion, cached.metadata.resourceVersion)) return own;
    this.writes.delete(key);
    return cached;
  }

  /** True while our write of `key` is newer than `cached` (the cache has not delivered it yet). */
  isAhead(key: string, cached: T | undefined): boolean {
    return this.read(key, cached) !== cached;
  }

  /** An informer delivered `cached` for `key` (or its deletion, with undefined): drop ours when it is superseded. */
  observe(key: string, cached: T | undefined): void {
    if (cached === undefined) this.writes.delete(key);
    else this.read(key, cached);
  }

  /** Forgets our write of `key`. */
  forget(key: string): void {
    this.writes.delete(key);
  }

  /** How many writes the cache has not caught up with (or that no read has dropped yet). */
  get size(): number {
    return this.writes.size;
  }

  /** Keys with a write the cache has not caught up with. */
  keys(): IterableIterator<string> {
    return this.writes.keys();
  }
}
