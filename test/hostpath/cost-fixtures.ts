// Fixtures that count what the hostpath provisioner costs: a HostFs that counts every call (and every call on
// the file handles it opens), and a live-volume feed standing in for a PV informer, whose targeted GETs count as
// API requests. Both are injected through the provisioner's options: nothing global is patched.
import type { FileHandle } from 'node:fs/promises';
import { nodeHostFs, type HostFs } from '../../src/hostpath/disk/host-fs.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';

/** A HostFs over the real filesystem that counts calls by name (`handle.<method>` for FileHandle calls). */
export class CountingFs {
  readonly counts = new Map<string, number>();
  /** Every call in order, as `name path` (handle calls without a path): what a cost test prints to explain itself. */
  readonly trace: string[] = [];
  readonly fs: HostFs;

  constructor(inner: HostFs = nodeHostFs) {
    const count = (name: string, where?: unknown) => this.count(name, where);
    const wrapHandle = (h: FileHandle): FileHandle =>
      new Proxy(h, {
        get(target, prop, receiver) {
          const v: unknown = Reflect.get(target, prop, receiver);
          if (typeof v !== 'function' || typeof prop !== 'string') return v;
          return (...args: unknown[]) => {
            count(`handle.${prop}`);
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    const fs = {} as Record<string, unknown>;
    for (const [name, fn] of Object.entries(inner) as Array<[string, (...a: unknown[]) => Promise<unknown>]>) {
      fs[name] = async (...args: unknown[]) => {
        count(name, args[0]);
        const r = await fn(...args);
        return name === 'open' ? wrapHandle(r as FileHandle) : r;
      };
    }
    this.fs = fs as unknown as HostFs;
  }

  /** Counts one call (what the facade does for each of its own; a test adds calls made outside it, e.g. statfs). */
  count(name: string, where?: unknown): void {
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
    this.trace.push(typeof where === 'string' ? `${name} ${where}` : name);
  }

  /** Counts so far, as a sorted plain object. */
  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }

  /** Calls made by `fn`, by name. */
  async during(fn: () => Promise<unknown>): Promise<Record<string, number>> {
    const before = new Map(this.counts);
    await fn();
    const out: Record<string, number> = {};
    for (const [k, v] of [...this.counts].sort(([a], [b]) => a.localeCompare(b))) {
      const d = v - (before.get(k) ?? 0);
      if (d > 0) out[k] = d;
    }
    return out;
  }
}

type Handlers = {
  onAdd?(pv: PersistentVolume): void;
  onUpdate?(old: PersistentVolume, pv: PersistentVolume): void;
  onDelete?(pv: PersistentVolume): void;
};

/**
 * A PV informer stand-in: put() and remove() deliver watch events with increasing resourceVersions; get() is the
 * targeted GET (counted in `requests`). Handlers added late get every known PV as an add, as client-go's do.
 */
export class FakeVolumeFeed {
  readonly synced = Promise.resolve();
  readonly requests = new Map<string, number>();
  private readonly volumes = new Map<string, PersistentVolume>();
  private readonly handlers = new Set<Handlers>();
  private rv = 1;

  get lastSyncResourceVersion(): string {
    return String(this.rv);
  }

  addEventHandler(h: Handlers): () => void {
    this.handlers.add(h);
    for (const pv of this.volumes.values()) h.onAdd?.(pv);
    return () => this.handlers.delete(h);
  }

  /** Creates or updates a PV (a copy, with the next resourceVersion) and delivers the event. */
  put(pv: PersistentVolume): PersistentVolume {
    const name = pv.metadata.name ?? '';
    const next = structuredClone(pv);
    next.metadata.resourceVersion = String(++this.rv);
    const old = this.volumes.get(name);
    this.volumes.set(name, next);
    for (const h of this.handlers) {
      if (old) h.onUpdate?.(old, next);
      else h.onAdd?.(next);
    }
    return next;
  }

  remove(name: string): void {
    const old = this.volumes.get(name);
    if (!old) return;
    this.volumes.delete(name);
    this.rv++;
    for (const h of this.handlers) h.onDelete?.(old);
  }

  /** The targeted GET the provisioner may make (counted). */
  readonly get = async (name: string): Promise<PersistentVolume | undefined> => {
    this.requests.set('get', (this.requests.get('get') ?? 0) + 1);
    const pv = this.volumes.get(name);
    return pv && structuredClone(pv);
  };
}
