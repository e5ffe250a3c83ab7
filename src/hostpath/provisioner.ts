// HostPathProvisioner: directories as volumes, on a node's disks or a shared filesystem. It implements the
// Provisioner contract: provision() picks a base path, renders and checks the directory, accounts capacity,
// creates the directory without following symlinks (never one a live volume uses, above or below) and returns
// the PV; delete() (volume-delete.ts) proves the directory is that volume's before applying its onDelete policy.
// It keeps the ledger of live volumes (API PVs, records on disk, its own reservations) both rely on. In
// `daemonset` mode each instance serves only its node (IgnoredError for the others, gone nodes aside);
// `deployment` mode assumes every configured path is reachable here.
import type { PersistentVolume, PersistentVolumeClaim, AccessMode, StorageClass } from '../types/k8s.ts';
import { ANN_SELECTED_NODE } from '../types/annotations.ts';
import { parseQuantity, isQuantity } from '../types/quantity.ts';
import {
  IgnoredError, InfeasibleError, ProvisioningError,
  type Provisioner, type ProvisionOptions, type ProvisionResult,
} from '../controller/provisioner.ts';
import { isDnsSubdomain } from '../types/names.ts';
import { shortenText } from '../types/text.ts';
import type { Clock } from '../runtime/clock.ts';
import { realClock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import { silentLogger } from '../runtime/logger.ts';
import { pathSetForClass, nodeBasePaths, localBasePaths, allBasePaths, type HostPathConfig, type BasePath } from './config.ts';
import { parseClassParameters, type ClassParameters } from './class-parameters.ts';
import { defaultVolumeDirName } from './path-template.ts';
import { resolveVolumePath, checkExistingVolumePath, checkRelativeVolumePath, UnsafePathError, type VolumePathIndex } from './path-safety.ts';
import { createVolumeDir, type FsOpsOptions } from './fs-ops.ts';
import { directoryUsage, type DirectoryUsage, type UsageOptions } from './usage.ts';
import { expandHostPathVolume } from './expand.ts';
import type { ExpandResult } from '../controller/provisioner.ts';
import { VolumeLedger, SHARED_SCOPE, type Allocation, type BasePathAllocation } from './capacity.ts';
import { writeVolumeRecord, removeVolumeRecord, readVolumeRecords, readVolumeRecord, findOverlappingRecord, type VolumeRecord } from './volume-records.ts';
import { affinityValue, infeasibleOn, cmpFree, requestOf, freeText } from './provision-helpers.ts';
import { buildVolume, readVolumeLocation, allocationOfVolume } from './volume-spec.ts';
import { adoptedAllocation } from './volume-source.ts';
import { GoneNodePolicy, type NodeExists } from './gone-node.ts';
import { deleteVolumeDirectory, type DeleteContext, type VolumeEventSink } from './volume-delete.ts';

export type { VolumeEventSink } from './volume-delete.ts';

/** `deployment`: one instance serves every path; `daemonset`: each instance serves its own node. */
export type HostPathMode = 'deployment' | 'daemonset';

/** Anything that has a current configuration (ConfigFileSource, or a ConfigMap-backed holder). */
export interface ConfigHolder {
  current(): HostPathConfig;
}

/** Options of the HostPathProvisioner. */
export interface HostPathProvisionerOptions {
  /** The configuration, or a holder whose current() is read on every call (hot reload). */
  config: HostPathConfig | ConfigHolder;
  /** Default `deployment`. `daemonset` requires nodeName. */
  mode?: HostPathMode;
  /** The node this instance runs on (daemonset: the only node it serves; deployment: default node for Immediate claims). */
  nodeName?: string;
  /**
   * The PVs in the cluster (typically read from the controller's informer cache): allocation accounting is
   * rebuilt from them before the first operation and then at most every knownVolumesRefreshMs.
   */
  knownVolumes?: (signal: AbortSignal) => PersistentVolume[] | Promise<PersistentVolume[]>;
  /** Default 60 s. */
  knownVolumesRefreshMs?: number;
  /**
   * Where the provisioner reports what the controller cannot know (a reused directory): typically an
   * EventRecorder. Optional: without it those facts are only logged.
   */
  events?: VolumeEventSink;
  /**
   * Looks a StorageClass up by name (the controller's cache or a GET). PVs adopted from another provisioner carry
   * no onDelete annotation: their class decides delete, archive or retain. Without it, such PVs are deleted.
   */
  storageClass?: (name: string, signal: AbortSignal) => StorageClass | undefined | Promise<StorageClass | undefined>;
  /**
   * daemonset mode: whether a Node exists. With it, a node-local volume of ours whose node has been missing for
   * goneNodeGraceMs is let go (the PV is deleted, its directory is not: see gone-node.ts).
   */
  nodeExists?: NodeExists;
  /** Default 10 minutes. */
  goneNodeGraceMs?: number;
  logger?: Logger;
  clock?: Clock;
  fs?: FsOpsOptions;
}


/** Allocation of a base path with its configured capacity (undefined = unlimited). */
export interface BasePathStatus extends BasePathAllocation {
  capacity?: bigint;
}

const PV_NAME_RE = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
const NODE_ONLY_MODES: AccessMode[] = ['ReadWriteOnce', 'ReadWriteOncePod'];

interface Placement {
  scope: string;
  base: BasePath;
  path: string;
  segments: string[];
  isNew: boolean;
}

/** The hostpath Provisioner: volumes are directories under configured base paths, published as hostPath or local PVs. */
export class HostPathProvisioner implements Provisioner {
  private readonly mode: HostPathMode;
  private readonly nodeName?: string;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly ledger = new VolumeLedger();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly scannedBases = new Set<string>();
  private scanning: Promise<void> = Promise.resolve();
  private lastApiRefresh = -Infinity;
  private apiRefresh: Promise<void> | undefined;
  private readonly goneNodes?: GoneNodePolicy;

  constructor(private readonly opts: HostPathProvisionerOptions) {
    this.mode = opts.mode ?? 'deployment';
    if (this.mode !== 'deployment' && this.mode !== 'daemonset') throw new Error(`HostPathProvisioner: mode must be deployment or daemonset, not ${String(this.mode)}`);
    if (this.mode === 'daemonset' && !opts.nodeName) throw new Error('HostPathProvisioner: daemonset mode needs nodeName');
    this.nodeName = opts.nodeName;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'hostpath', node: opts.nodeName });
    this.clock = opts.clock ?? realClock;
    if (opts.nodeExists) this.goneNodes = new GoneNodePolicy({ nodeExists: opts.nodeExists, graceMs: opts.goneNodeGraceMs, clock: this.clock, logger: this.logger });
  }

  private config(): HostPathConfig {
    const c = this.opts.config;
    return 'current' in c && typeof c.current === 'function' ? c.current() : (c as HostPathConfig);
  }

  supportsBlock(): boolean {
    return false;
  }

  /** daemonset mode: only claims scheduled to this node are ours. */
  shouldProvision(claim: PersistentVolumeClaim): boolean {
    if (this.mode !== 'daemonset') return true;
    return claim.metadata.annotations?.[ANN_SELECTED_NODE] === this.nodeName;
  }

  async provision(options: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    return this.locked(options.pvName, () => this.provisionLocked(options, signal));
  }

  private async provisionLocked(o: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    signal.throwIfAborted();
    const { claim, storageClass, pvName } = o;
    const className = storageClass.metadata.name ?? '';
    if (this.mode === 'daemonset' && o.selectedNodeName !== this.nodeName) {
      throw new IgnoredError(`claim is ${o.selectedNodeName ? `scheduled to node ${o.selectedNodeName}` : 'not scheduled to a node'}; this instance serves node ${this.nodeName}`);
    }
    // Tenant-writable annotation that ends up in the node affinity, the ledger scope and the path lookup.
    if (o.selectedNodeName !== undefined && !isDnsSubdomain(o.selectedNodeName)) {
      throw new InfeasibleError(`the claim's selected node ${shortenText(JSON.stringify(o.selectedNodeName), 256)} is not a valid node name (a DNS-1123 subdomain)`);
    }
    if (!PV_NAME_RE.test(pvName)) throw new InfeasibleError(`volume name ${JSON.stringify(pvName)} is not a valid DNS subdomain`);
    if (claim.spec.volumeMode === 'Block') throw new InfeasibleError('volumeMode Block is not supported by the hostpath provisioner: its volumes are directories');
    if (claim.spec.dataSource || claim.spec.dataSourceRef) throw new InfeasibleError('claims with a dataSource (clones, snapshots, populators) are not supported by the hostpath provisioner');
    if (claim.spec.selector) throw new InfeasibleError('claims with a label selector cannot be provisioned: hostpath volumes are created, not matched');
    const params = infeasibleOn(() => parseClassParameters(storageClass.parameters));
    const accessModes = claim.spec.accessModes ?? [];
    if (accessModes.length === 0) throw new InfeasibleError('the claim has no accessModes');
    const request = claim.spec.resources?.requests?.storage;
    if (!isQuantity(request) || parseQuantity(request) <= 0n) throw new InfeasibleError(`the claim's storage request ${JSON.stringify(request)} is not a positive quantity`);
    const bytes = parseQuantity(request);

    const config = this.config();
    const set = pathSetForClass(config, className);
    if (!set) throw new InfeasibleError(`storage class ${className} is not listed in the hostpath configuration's storageClassConfigs`);
    await this.ensureLedger(signal);

    const shared = set.sharedFileSystemPath;
    const node = o.selectedNodeName ?? (this.mode === 'deployment' ? this.nodeName : undefined);
    let candidates: BasePath[];
    let scope: string;
    if (shared) {
      candidates = [shared];
      scope = SHARED_SCOPE;
    } else {
      if (!node) throw new InfeasibleError(`storage class ${className} uses node-local paths: it needs volumeBindingMode WaitForFirstConsumer (no node was selected)`);
      const bad = accessModes.filter((m) => !NODE_ONLY_MODES.includes(m));
      if (bad.length > 0) throw new InfeasibleError(`access mode ${bad.join(', ')} is not possible on node-local paths (only ReadWriteOnce, ReadWriteOncePod; use sharedFileSystemPath for shared volumes)`);
      candidates = nodeBasePaths(set, node) ?? [];
      scope = node;
      if (candidates.length === 0) this.rescheduleOrInfeasible(o, `node ${node} has no paths for storage class ${className}`);
    }
    const volumeType = params.volumeType ?? (shared ? 'hostPath' : 'local');
    if (shared && volumeType === 'local') throw new InfeasibleError('volumeType local needs node affinity; volumes on the shared path are hostPath volumes');
    if (params.nodePath !== undefined) {
      candidates = candidates.filter((c) => c.path === params.nodePath);
      if (candidates.length === 0) {
        const anywhere = shared ? shared.path === params.nodePath : set.nodePathMap.some((n) => n.paths.some((p) => p.path === params.nodePath));
        if (!anywhere) throw new InfeasibleError(`nodePath ${params.nodePath} is not a configured path for storage class ${className}`);
        this.rescheduleOrInfeasible(o, `nodePath ${params.nodePath} is not configured on node ${node}`);
      }
    }
    const affinity = shared ? undefined : { key: params.nodeAffinityKey, value: affinityValue(o, params, node!) };

    // From here to reserve(): no await, so concurrent provisions cannot both take the last free bytes.
    const placement = this.place(o, params, candidates, scope, bytes, config);
    if (placement.isNew) {
      this.ledger.reserve({ pvName, scope, basePath: placement.base.path, path: placement.path, bytes });
    }
    const log = this.logger.child({ pv: pvName, pvc: `${claim.metadata.namespace}/${claim.metadata.name}`, storageClass: className });
    let created = true;
    try {
      signal.throwIfAborted();
      const relativePath = placement.segments.join('/');
      await writeVolumeRecord(placement.base.path, {
        pvName, claimUid: claim.metadata.uid, relativePath, bytes: bytes.toString(), scope, createdAt: new Date(this.clock.now()).toISOString(),
      }, this.opts.fs);
      // Another instance (per-claim replicas) may be placing a claim in the same directory: whoever sees the
      // other's record backs off and retries, so two volumes never share a directory.
      const other = placement.isNew ? await findOverlappingRecord(placement.base.path, relativePath, pvName) : undefined;
      if (other) {
        throw new Error(`the directory ${placement.path} overlaps the directory ${placement.base.path}/${other.relativePath} of volume ${other.pvName} (its record is on disk); retrying later`);
      }
      created = (await createVolumeDir(placement.base.path, placement.segments, { ...this.opts.fs, mode: params.mode, uid: params.uid, gid: params.gid })).created;
    } catch (e) {
      if (placement.isNew) {
        this.ledger.release(pvName);
        await removeVolumeRecord(placement.base.path, pvName).catch(() => {});
      }
      log.warn({ err: (e as Error).message, path: placement.path }, 'creating the volume directory failed');
      if (e instanceof UnsafePathError) throw new InfeasibleError(e.message, { cause: e });
      throw e;
    }
    log.info({ path: placement.path, basePath: placement.base.path, bytes: bytes.toString(), reused: placement.isNew && !created }, 'volume directory ready');
    if (placement.isNew && !created) {
      // Stable names: a directory no live volume uses is given to the claim with whatever it holds.
      this.opts.events?.event(claim, 'Normal', 'VolumeDirectoryReused',
        `The directory ${shortenText(placement.path, 1024)} already existed and no live volume uses it: volume ${pvName} reuses it with its contents`);
    }
    const volume = buildVolume({
      pvName, path: placement.path, basePath: placement.base.path, kind: shared ? 'shared' : 'node',
      node: shared ? this.nodeName ?? o.selectedNodeName : node, affinity, volumeType, capacity: request, accessModes,
      reclaimPolicy: storageClass.reclaimPolicy ?? 'Delete', storageClassName: className || undefined, onDelete: params.onDelete,
    });
    return { volume, state: 'Finished' };
  }

  private place(o: ProvisionOptions, params: ClassParameters, candidates: BasePath[], scope: string, bytes: bigint, config: HostPathConfig): Placement {
    const { pvName, claim } = o;
    const existing = this.ledger.get(pvName);
    if (existing && existing.scope === scope) {
      const base = candidates.find((c) => c.path === existing.basePath);
      if (base) {
        const segments = infeasibleOn(() => checkExistingVolumePath(base.path, existing.path));
        return { scope, base, path: existing.path, segments, isNew: false };
      }
    }
    const data = {
      pvName,
      claim: { namespace: claim.metadata.namespace ?? '', name: claim.metadata.name ?? '', labels: claim.metadata.labels, annotations: claim.metadata.annotations },
    };
    const rel = infeasibleOn(() => (params.pathPattern ? params.pathPattern.render(data) : defaultVolumeDirName(data)));
    const fitting = candidates.filter((c) => this.ledger.fits(scope, c.path, c.capacity, bytes, pvName));
    if (fitting.length === 0) {
      const all = this.allPathsOfClass(o, config);
      const fitsSomewhere = all.some((p) => p.capacity === undefined || p.capacity >= bytes);
      const msg = `no base path has ${requestOf(o)} free for this claim (${candidates.map((c) => `${c.path}: ${freeText(this.ledger.free(scope, c.path, c.capacity, pvName))} free`).join(', ')})`;
      if (!fitsSomewhere) throw new InfeasibleError(`the claim asks for ${requestOf(o)}, more than the capacity of any configured path`);
      // Every node sees the same shared path: another node would not help.
      if (scope === SHARED_SCOPE) throw new InfeasibleError(msg);
      this.rescheduleOrInfeasible(o, msg);
    }
    // Most free space first (unlimited counts as most), then least allocated, then configuration order.
    const ranked = fitting.map((c, i) => ({ c, i, free: this.ledger.free(scope, c.path, c.capacity, pvName), alloc: this.ledger.allocated(scope, c.path) }));
    ranked.sort((a, b) => cmpFree(b.free, a.free) || (a.alloc < b.alloc ? -1 : a.alloc > b.alloc ? 1 : 0) || a.i - b.i);
    const base = ranked[0].c;
    const { path, segments } = infeasibleOn(() => resolveVolumePath(base.path, rel));
    for (const index of this.reachableIndexes(scope)) infeasibleOn(() => index.checkFree(path, pvName, allBasePaths(config)));
    return { scope, base, path, segments, isNew: true };
  }

  private allPathsOfClass(o: ProvisionOptions, config: HostPathConfig): BasePath[] {
    const set = pathSetForClass(config, o.storageClass.metadata.name ?? '');
    if (!set) return [];
    return set.sharedFileSystemPath ? [set.sharedFileSystemPath] : set.nodePathMap.flatMap((n) => n.paths);
  }

  // With a selected node, another node may do: Reschedule (the controller clears selected-node). Without, give up.
  private rescheduleOrInfeasible(o: ProvisionOptions, message: string): never {
    if (o.selectedNodeName) throw new ProvisioningError(`${message}; asking the scheduler for another node`, 'Reschedule');
    throw new InfeasibleError(message);
  }

  async delete(volume: PersistentVolume, signal: AbortSignal): Promise<void> {
    const pvName = volume.metadata.name ?? '';
    return this.locked(pvName, () => deleteVolumeDirectory(this.deleteContext(), volume, pvName, signal));
  }

  private deleteContext(): DeleteContext {
    return {
      mode: this.mode, nodeName: this.nodeName, logger: this.logger, clock: this.clock, fs: this.opts.fs, events: this.opts.events,
      storageClass: this.opts.storageClass, goneNodes: this.goneNodes,
      config: () => this.config(),
      configuredRoots: () => this.configuredRoots(),
      ensureLedger: (signal, fresh) => this.ensureLedger(signal, fresh),
      reachableIndexes: () => this.reachableIndexes(undefined),
      release: (pvName) => this.ledger.release(pvName),
      findRecord: (pvName) => this.findRecord(pvName),
    };
  }

  /** daemonset mode: only this node's volumes (and shared ones) are expanded here. */
  shouldExpand(volume: PersistentVolume): boolean {
    if (this.mode !== 'daemonset') return true;
    const loc = readVolumeLocation(volume);
    return loc.kind === 'shared' || loc.node === this.nodeName;
  }

  /** Grows the volume's accounting to `newSize` (infeasible when its base path cannot hold it). */
  async expand(volume: PersistentVolume, newSize: string, signal: AbortSignal): Promise<ExpandResult> {
    return this.locked(volume.metadata.name ?? '', async () => {
      await this.ensureLedger(signal);
      const ctx = { ledger: this.ledger, config: this.config(), roots: this.configuredRoots(), now: this.clock.now(), fs: this.opts.fs };
      return expandHostPathVolume(this.mode === 'daemonset' ? { ...ctx, servedNode: this.nodeName } : ctx, volume, newSize, signal);
    });
  }

  // The roots delete() may touch: those reachable from this instance.
  private configuredRoots(): string[] {
    const config = this.config();
    return this.mode === 'daemonset' ? localBasePaths(config, this.nodeName).map((b) => b.path) : allBasePaths(config);
  }

  private async findRecord(pvName: string): Promise<{ basePath: string; path: string; record: VolumeRecord } | undefined> {
    for (const base of this.configuredRoots()) {
      const r = await readVolumeRecord(base, pvName);
      if (r && r.pvName === pvName) return { basePath: base, path: `${base}/${r.relativePath}`, record: r };
    }
    return undefined;
  }

  // The live-volume indexes a directory in `scope` can collide with: in deployment mode every configured path is
  // on this machine, so every scope; in daemonset mode this node's paths and the shared ones.
  private reachableIndexes(scope: string | undefined): VolumePathIndex[] {
    if (this.mode === 'deployment') return this.ledger.pathIndexesOf();
    const scopes = [this.nodeName ?? '', SHARED_SCOPE];
    if (scope !== undefined && !scopes.includes(scope)) scopes.push(scope);
    return this.ledger.pathIndexesOf(scopes);
  }

  /** The volumes the backend holds (from the on-disk records of the reachable base paths), for the leak inventory. */
  async listVolumes(signal: AbortSignal): Promise<Array<{ name: string; createdAt?: Date }>> {
    const out = new Map<string, { name: string; createdAt?: Date }>();
    for (const base of this.configuredRoots()) {
      signal.throwIfAborted();
      for (const r of await readVolumeRecords(base)) {
        const t = Date.parse(r.createdAt);
        out.set(r.pvName, Number.isNaN(t) ? { name: r.pvName } : { name: r.pvName, createdAt: new Date(t) });
      }
    }
    return [...out.values()];
  }

  /**
   * Rebuilds allocation accounting from PVs: ours (recognised by their base-path annotation), and any other PV
   * whose directory is under a configured root (adopted or static volumes occupy their directory just the same).
   */
  rebuildFromVolumes(volumes: Iterable<PersistentVolume>): void {
    const allocations: Allocation[] = [];
    const config = this.config();
    const roots = allBasePaths(config);
    for (const pv of volumes) {
      const a = allocationOfVolume(pv) ?? adoptedAllocation(pv, roots, config);
      if (a) allocations.push(a);
    }
    this.ledger.rebuild('api', allocations);
  }

  /** Allocated bytes and capacity per base path (for metrics). */
  allocations(): BasePathStatus[] {
    const config = this.config();
    const capacity = new Map<string, bigint | undefined>();
    for (const set of [config, ...Object.values(config.storageClassConfigs)]) {
      if (set.sharedFileSystemPath) capacity.set(set.sharedFileSystemPath.path, set.sharedFileSystemPath.capacity);
      for (const n of set.nodePathMap) for (const p of n.paths) if (!capacity.has(p.path) || p.capacity !== undefined) capacity.set(p.path, p.capacity);
    }
    return this.ledger.snapshot().map((a) => ({ ...a, capacity: capacity.get(a.basePath) }));
  }

  /** Disk usage of a volume's directory (bounded walk, never following symlinks). */
  async volumeUsage(volume: PersistentVolume, opts: UsageOptions = {}): Promise<DirectoryUsage> {
    const loc = readVolumeLocation(volume);
    if (!loc.path || !loc.basePath || !this.configuredRoots().includes(loc.basePath)) throw new Error(`volume ${volume.metadata.name} is not under a configured base path`);
    checkExistingVolumePath(loc.basePath, loc.path);
    return directoryUsage(loc.path, opts);
  }

  // Disk records of every reachable base path once (restart; a base added by a reload is scanned when it
  // appears), then the API's PVs when a source is given and the last refresh is old.
  // `fresh`: list the PVs now whatever the refresh interval (delete identity without a record).
  private async ensureLedger(signal: AbortSignal, fresh = false): Promise<void> {
    if (this.configuredRoots().some((b) => !this.scannedBases.has(b))) {
      this.scanning = this.scanning.then(() => this.scanDiskRecords(), () => this.scanDiskRecords());
    }
    await this.scanning;
    const src = this.opts.knownVolumes;
    if (!src) return;
    // Concurrent callers wait for the list in flight: after a restart, a second provision must not place a
    // volume on the still-empty ledger while the first is fetching the PVs (that overcommitted a base path).
    if (this.apiRefresh) return this.apiRefresh;
    if (!fresh && this.clock.now() - this.lastApiRefresh < (this.opts.knownVolumesRefreshMs ?? 60_000)) return;
    this.lastApiRefresh = this.clock.now();
    // Always asynchronous (even when src throws at once), so the finally below runs after the assignment.
    this.apiRefresh = Promise.resolve()
      .then(() => src(signal))
      .then((volumes) => this.rebuildFromVolumes(volumes))
      .catch((e: unknown) => this.logger.warn({ err: (e as Error).message }, 'could not list volumes to rebuild capacity accounting'))
      .finally(() => {
        this.apiRefresh = undefined;
      });
    return this.apiRefresh;
  }

  private async scanDiskRecords(): Promise<void> {
    for (const base of this.configuredRoots()) {
      if (this.scannedBases.has(base)) continue;
      for (const r of await readVolumeRecords(base)) {
        try {
          checkRelativeVolumePath(r.relativePath);
        } catch {
          this.logger.warn({ pv: r.pvName, basePath: base }, 'ignoring a volume record with an unsafe path');
          continue;
        }
        this.ledger.observe('disk', { pvName: r.pvName, scope: r.scope, basePath: base, path: `${base}/${r.relativePath}`, bytes: BigInt(r.bytes) });
      }
      this.scannedBases.add(base);
    }
  }

  // One operation per volume name at a time (a retried provision waits for the first to finish).
  private async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.then(() => undefined, () => undefined);
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }
}
