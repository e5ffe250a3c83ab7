// The live PVs of the cluster as the hostpath ledger needs them, kept current by watch events (a PV informer: the
// `volumeFeed` option) instead of listing every PV per claim. Each event costs O(1): the PV's source is read in
// canonical form (volume-source.ts); a directory strictly under a configured root is an allocation there; a source
// that cannot be mapped to exactly one directory blocks the roots it could reach; and, once per path, the disk is
// asked where the path really leads and which device and inode it is (directory-identity.ts), so a symlinked or
// bind-mounted spelling blocks the same directory (for a volume this process created, the walk that created it
// has already told the index: no read). Where freshness matters (the leaf proof of a delete), one GET of
// the volume gives a resourceVersion the index waits to have seen: every PV that changed before the volume's last
// change is then in the index (docs/architecture.md, "Live volumes").
import type { PersistentVolume } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import type { Clock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import { allBasePaths, type HostPathConfig } from '../config/hostpath-config.ts';
import { SHARED_SCOPE, type Allocation, type Blocker, type Scope, type VolumeLedger } from './volume-ledger.ts';
import { canonicalAbsolutePath } from '../paths/canonical-path.ts';
import { isStrictlyUnder } from '../paths/path-safety.ts';
import {
  localDirectoryOf,
  longestRootOf,
  possibleNfsDirectories,
  readVolumeDirectory,
  sharedBasePaths,
  type MountedExport,
} from '../volume/volume-source.ts';
import {
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_KIND,
  ANN_HOSTPATH_NODE,
  readVolumeLocation,
} from '../volume/volume-spec.ts';
import type { DirectoryIdentities } from './directory-identity.ts';

/** A watched view of the cluster's PVs: what a runtime Informer of persistentvolumes offers. */
export interface VolumeFeed {
  /** Registers handlers; PVs already known are delivered as adds first. Returns a function that unregisters them. */
  addEventHandler(h: {
    onAdd?(pv: PersistentVolume): void;
    onUpdate?(old: PersistentVolume, pv: PersistentVolume): void;
    onDelete?(pv: PersistentVolume): void;
  }): () => void;
  /** Resolves after the first complete list has been delivered. */
  readonly synced: Promise<void>;
  /** resourceVersion of the last list, event or bookmark applied. */
  readonly lastSyncResourceVersion: string;
}

/** The live volumes' view of the provisioner. */
export interface LiveVolumesContext {
  ledger: VolumeLedger;
  config(): HostPathConfig;
  exports(): MountedExport[];
  identities: DirectoryIdentities;
  /**
   * The node scope of a node named by a PV's hostname affinity alone (a static PV: the node's hostname label, which
   * need not be its name). Default: the value itself.
   */
  nodeScope?(hostname: string): string;
  /** Whether a volume of this scope has its directory on this machine (its identity can be read here). */
  reachable(scope: Scope): boolean;
  clock: Clock;
  logger: Logger;
}

/** How long a leaf proof waits for the index to see the volume's current resourceVersion. */
export const FRESHNESS_TIMEOUT_MS = 30_000;
const RESOLVE_CONCURRENCY = 8;

/** Thrown when the index has not caught up with the API in time: the delete is retried later. */
export class StaleVolumeIndexError extends Error {
  override name = 'StaleVolumeIndexError';
}

interface Tracked {
  scope: Scope;
  path: string;
  /** Not under any root: indexed only through what the disk says (alias, inodes). */
  outside: boolean;
  /**
   * An nfs source of another server name whose path maps below an export: the directories it would be if that
   * name were the export server's (possibleNfsDirectories), indexed as its paths, no disk read.
   */
  possible?: string[];
}

/** Live PVs fed to the ledger's 'api' source, one event at a time. */
export class LiveVolumes {
  private readonly tracked = new Map<string, Tracked>();
  private readonly queue: Array<{ name: string; t: Tracked; done: () => void }> = [];
  /** Every identity read scheduled and not finished yet. */
  private readonly pending = new Set<Promise<void>>();
  private active = 0;
  private seenRv = 0n;
  private rvWaiters: Array<() => void> = [];
  private feed: VolumeFeed | undefined;
  private unfollow: (() => void) | undefined;

  constructor(private readonly ctx: LiveVolumesContext) {}

  /** Follows a feed from now on. */
  follow(feed: VolumeFeed): void {
    this.unfollow?.();
    this.feed = feed;
    this.unfollow = feed.addEventHandler({
      onAdd: (pv) => this.observe(pv),
      onUpdate: (_old, pv) => this.observe(pv),
      onDelete: (pv) => {
        this.forget(pv.metadata.name ?? '');
        this.noteResourceVersion(pv);
      },
    });
  }

  /**
   * The configuration changed (roots, exports): what each PV occupies is read again. A feed delivers every PV it
   * holds to handlers registered again; returns false without a feed (the caller lists the PVs again).
   */
  reread(): boolean {
    if (!this.feed) return false;
    this.follow(this.feed);
    return true;
  }

  /** Resolves once the feed has listed every PV (immediately without a feed). */
  async synced(): Promise<void> {
    await this.feed?.synced;
  }

  /** A PV was added or changed. */
  observe(pv: PersistentVolume): void {
    const name = pv.metadata.name;
    if (!name) return;
    this.apply(name, this.occupancy(pv));
    this.noteResourceVersion(pv);
  }

  /** A PV is gone. */
  forget(name: string): void {
    this.apply(name, undefined);
  }

  /** Replaces every PV at once (the knownVolumes option: a list). */
  replaceAll(volumes: Iterable<PersistentVolume>): void {
    const next = new Map<string, Occupancy>();
    for (const pv of volumes) if (pv.metadata.name) next.set(pv.metadata.name, this.occupancy(pv));
    const allocations: Allocation[] = [];
    const blockers: Blocker[] = [];
    for (const o of next.values()) {
      if (o.allocation) allocations.push(o.allocation);
      if (o.blocker) blockers.push(o.blocker);
    }
    for (const name of this.tracked.keys()) this.dropOutside(name, next.get(name)?.tracked);
    this.ctx.ledger.rebuild('api', allocations, blockers);
    for (const name of [...this.tracked.keys()]) if (!next.has(name)) this.track(name, undefined);
    for (const [name, o] of next) this.track(name, o.tracked);
  }

  /** Resolves when every identity read scheduled so far is done (not those scheduled later: no starvation). */
  async settled(): Promise<void> {
    if (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /**
   * Waits until the index has seen `resourceVersion` (the current one of a PV, from a GET): every PV event up to it
   * has then been applied. Throws StaleVolumeIndexError after FRESHNESS_TIMEOUT_MS.
   */
  async waitForResourceVersion(resourceVersion: string | undefined, signal: AbortSignal): Promise<void> {
    const target = numericRv(resourceVersion);
    if (target === undefined)
      throw new StaleVolumeIndexError(
        `cannot tell whether the live-volume index is current: resourceVersion ${JSON.stringify(resourceVersion)} is not a number`,
      );
    const deadline = this.ctx.clock.now() + FRESHNESS_TIMEOUT_MS;
    while (this.currentRv() < target) {
      const left = deadline - this.ctx.clock.now();
      if (left <= 0)
        throw new StaleVolumeIndexError(
          `the live-volume index has seen resourceVersion ${this.currentRv()}, not yet ${target}; retrying later`,
        );
      signal.throwIfAborted();
      // Woken by the next event, or by the deadline (then the loop throws).
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          timer.cancel();
          reject(signal.reason as Error);
        };
        const done = () => {
          timer.cancel();
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const timer = this.ctx.clock.setTimeout(done, left, { unref: true });
        signal.addEventListener('abort', onAbort, { once: true });
        this.rvWaiters.push(done);
      });
    }
  }

  private currentRv(): bigint {
    const listed = numericRv(this.feed?.lastSyncResourceVersion) ?? 0n;
    return listed > this.seenRv ? listed : this.seenRv;
  }

  private noteResourceVersion(pv: PersistentVolume): void {
    const rv = numericRv(pv.metadata.resourceVersion);
    if (rv === undefined || rv <= this.seenRv) return;
    this.seenRv = rv;
    const waiters = this.rvWaiters;
    this.rvWaiters = [];
    for (const w of waiters) w();
  }

  private apply(name: string, o: Occupancy | undefined): void {
    this.dropOutside(name, o?.tracked);
    const ledger = this.ctx.ledger;
    if (o?.allocation) ledger.observe('api', o.allocation);
    else ledger.forget('api', name);
    if (o?.blocker) ledger.block(o.blocker);
    else ledger.unblock(name);
    this.track(name, o?.tracked);
  }

  // What one PV occupies: an allocation under a root, a blocker, and the directory whose identity to read.
  private occupancy(pv: PersistentVolume): Occupancy {
    const name = pv.metadata.name ?? '';
    const config = this.ctx.config();
    const roots = allBasePaths(config);
    const reading = readVolumeDirectory(pv, this.ctx.exports());
    const loc = readVolumeLocation(pv);
    const shared = sharedBasePaths(config);
    const scopeFor = (base: string | undefined): Scope => {
      const kind = pv.metadata.annotations?.[ANN_HOSTPATH_KIND];
      if (kind === 'shared' || (kind === undefined && base !== undefined && shared.has(base))) return SHARED_SCOPE;
      if (loc.node === undefined) return SHARED_SCOPE;
      return pv.metadata.annotations?.[ANN_HOSTPATH_NODE] === undefined
        ? (this.ctx.nodeScope?.(loc.node) ?? loc.node)
        : loc.node;
    };
    if (reading.kind === 'none') {
      // Another server's name for an export's directory, maybe: blocked by its paths (not counted as allocated).
      // Only below a root: a PV of a base path itself (another server's whole export, say) does not stop placement,
      // as for a PV of this export's root.
      const possible = possibleNfsDirectories(pv, this.ctx.exports()).filter((p) =>
        roots.some((r) => isStrictlyUnder(r, p)),
      );
      if (possible.length === 0) return {};
      return {
        tracked: { scope: scopeFor(longestRootOf(possible[0], roots)), path: possible[0], outside: true, possible },
      };
    }
    if (reading.kind === 'ambiguous') {
      const hit = roots.filter((r) =>
        reading.candidates.some((c) => c === r || isStrictlyUnder(r, c) || isStrictlyUnder(c, r)),
      );
      const scope = scopeFor(hit.find((r) => shared.has(r)) ?? hit[0]);
      // A hostPath or local path holding `..` means what the kernel makes of it (symlinks first, then `..`), which
      // may be under a root whatever its letters say (`/elsewhere/link/../victim`): the disk is asked, as for a
      // path outside every root, and what it resolves to is blocked too.
      const direct = pv.spec.local?.path ?? pv.spec.hostPath?.path;
      const tracked: Tracked | undefined =
        typeof direct === 'string' ? { scope, path: direct, outside: true } : undefined;
      if (hit.length === 0) return { tracked };
      return { blocker: { pvName: name, scope, roots: hit, why: reading.why }, tracked };
    }
    const path = reading.path;
    const annotated = canonicalAbsolutePath(pv.metadata.annotations?.[ANN_HOSTPATH_BASE_PATH]);
    const base =
      annotated !== undefined && roots.includes(annotated) && isStrictlyUnder(annotated, path)
        ? annotated
        : longestRootOf(path, roots);
    const scope = scopeFor(base);
    const tracked: Tracked = { scope, path, outside: base === undefined };
    if (base === undefined) {
      // `/proc/<pid>/root/…` is the host's root to kubelet, whatever this process may read there (not its own, in
      // a sandbox): the PV occupies what is below it, as if spelled so (for delete, it still maps to nothing).
      const host = belowProcRoot(path);
      const hostBase = host === undefined ? undefined : longestRootOf(host, roots);
      if (host === undefined || hostBase === undefined) return { tracked };
      return this.allocationAt(pv, name, hostBase, host, scopeFor(hostBase));
    }
    return this.allocationAt(pv, name, base, path, scope);
  }

  private allocationAt(pv: PersistentVolume, name: string, base: string, path: string, scope: Scope): Occupancy {
    const storage = pv.spec.capacity?.storage;
    // A PV without a valid capacity still occupies its directory.
    const bytes = isQuantity(storage) ? parseQuantity(storage) : 0n;
    return {
      allocation: { pvName: name, scope, basePath: base, path, bytes },
      tracked: { scope, path, outside: false },
    };
  }

  // What an outside PV indexed (aliases, inodes, possible paths) is forgotten when it changes, before the ledger
  // indexes its new allocation: afterwards it would take that allocation's path out of the index with it.
  private dropOutside(name: string, t: Tracked | undefined): void {
    const old = this.tracked.get(name);
    if (old?.outside && !sameTracked(old, t)) this.ctx.ledger.paths(old.scope).remove(name);
  }

  // Reads the identity of a PV's directory once per (scope, path) (dropOutside has forgotten what it replaces).
  private track(name: string, t: Tracked | undefined): void {
    const old = this.tracked.get(name);
    if (old && sameTracked(old, t)) return;
    if (!t) {
      this.tracked.delete(name);
      return;
    }
    this.tracked.set(name, t);
    if (t.possible) {
      const index = this.ctx.ledger.paths(t.scope);
      for (const p of t.possible) index.addAlias(name, p);
      return;
    }
    if (!this.ctx.reachable(t.scope)) return;
    // A volume this process has just created: its identity came from the walk that created it (no symlink below
    // the root, the directories it held open), and stays in the index until the volume is released.
    if (!old && !t.outside && this.ctx.ledger.paths(t.scope).hasInodes(name, t.path)) return;
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    this.pending.add(finished);
    void finished.then(() => this.pending.delete(finished));
    this.queue.push({ name, t, done });
    this.pump();
  }

  private pump(): void {
    while (this.active < RESOLVE_CONCURRENCY && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.active++;
      void this.resolve(job.name, job.t).finally(() => {
        this.active--;
        job.done();
        this.pump();
      });
    }
  }

  private async resolve(name: string, t: Tracked): Promise<void> {
    try {
      const found = await this.ctx.identities.ofVolume(t.path, allBasePaths(this.ctx.config()));
      if (!found || this.tracked.get(name) !== t) return;
      if (!t.outside) {
        this.ctx.ledger.identify(name, t.path, found);
        return;
      }
      const index = this.ctx.ledger.paths(t.scope);
      if (found.alias !== undefined) index.addAlias(name, found.alias);
      index.setInodes(name, found.chain, t.path);
    } catch (e) {
      this.ctx.logger.debug(
        { pv: name, path: t.path, err: (e as Error).message },
        'could not read the identity of a volume directory',
      );
    }
  }
}

/** `/proc/<pid>/root/rest` (canonical) -> `/rest`, repeatedly; undefined when `p` is not spelled through one. */
function belowProcRoot(p: string): string | undefined {
  let out: string | undefined;
  for (let m = PROC_ROOT_RE.exec(p); m; m = PROC_ROOT_RE.exec(out)) out = m[1] ?? '/';
  return out;
}
const PROC_ROOT_RE = /^\/proc\/[^/]+\/root(\/.*)?$/;

function sameTracked(a: Tracked, b: Tracked | undefined): boolean {
  return (
    b !== undefined &&
    a.scope === b.scope &&
    a.path === b.path &&
    a.outside === b.outside &&
    String(a.possible) === String(b.possible)
  );
}

interface Occupancy {
  allocation?: Allocation;
  blocker?: Blocker;
  tracked?: Tracked;
}

function numericRv(rv: string | undefined): bigint | undefined {
  return rv !== undefined && /^\d{1,30}$/.test(rv) ? BigInt(rv) : undefined;
}

/** The allocation a PV of ours stands for (recognised by its base-path annotation), for rebuilding accounting. */
export function allocationOfVolume(
  pv: PersistentVolume,
  exports: readonly MountedExport[] = [],
): Allocation | undefined {
  const ann = pv.metadata.annotations ?? {};
  const basePath = canonicalAbsolutePath(ann[ANN_HOSTPATH_BASE_PATH]);
  const path = localDirectoryOf(pv, exports);
  const storage = pv.spec.capacity?.storage;
  if (!basePath || typeof path !== 'string' || !pv.metadata.name || !isQuantity(storage)) return undefined;
  const scope = ann[ANN_HOSTPATH_KIND] === 'shared' ? SHARED_SCOPE : (ann[ANN_HOSTPATH_NODE] ?? SHARED_SCOPE);
  return { pvName: pv.metadata.name, scope, basePath, path, bytes: parseQuantity(storage) };
}
