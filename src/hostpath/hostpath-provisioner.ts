// HostPathProvisioner: directories as volumes, on a node's disks or a shared filesystem. It implements the
// Provisioner contract: provision() picks a base path, renders and checks the directory, accounts capacity,
// creates the directory without following symlinks (never one a live volume uses, above or below) and returns
// the PV; delete() (delete/volume-delete.ts) proves the directory is that volume's before applying its onDelete
// policy. It keeps the ledger of live volumes (API PVs through a watch, records on disk, its own reservations) both
// rely on, at a cost per claim that does not grow with the number of volumes (ledger/ledger-sources.ts). In
// `daemonset` mode each instance serves only its node (IgnoredError for the others, gone nodes aside);
// `deployment` mode reaches the shared paths and only its own node's paths: a node-local claim for another node
// is left to that node's instance or refused, never created here. local-path's setup/teardown scripts run
// around create and delete (disk/volume-scripts.ts). This file wires the rooms of src/hostpath together
// (docs/architecture.md): config, paths, disk, records, volume, ledger, provision, delete, expand, usage.
import type { EventSink } from '../types/events.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass, Node } from '../types/k8s.ts';
import { ANN_SELECTED_NODE, LABEL_HOSTNAME } from '../types/annotations.ts';
import {
  IgnoredError,
  InfeasibleError,
  ProvisioningError,
  type ClaimCheckInput,
  type ClaimCheckResult,
  type ExpandResult,
  type Provisioner,
  type ProvisionOptions,
  type ProvisionResult,
} from '../controller/provisioner.ts';
import { shortenText } from '../types/text.ts';
import type { Clock } from '../runtime/clock.ts';
import { realClock } from '../runtime/clock.ts';
import type { Logger } from '../types/logger.ts';
import { silentLogger } from '../types/logger.ts';
import {
  localBasePaths,
  allBasePaths,
  type ConfigHolder,
  type HostPathConfig,
  type NfsExport,
} from './config/hostpath-config.ts';
import { onDeleteFor, type ClassParameters } from './config/class-parameters.ts';
import { checkExistingVolumePath, checkScriptPath, UnsafePathError } from './paths/path-safety.ts';
import type { VolumePathIndex } from './ledger/volume-path-index.ts';
import { createVolumeDir, removeVolumeDir, type FsOpsOptions } from './disk/volume-dirs.ts';
import { hostFsOf } from './disk/host-fs.ts';
import { directoryUsage, type DirectoryUsage, type UsageOptions } from './usage/directory-usage.ts';
import { expandHostPathVolume } from './expand/expand-volume.ts';
import { VolumeLedger, SHARED_SCOPE, type BasePathAllocation } from './ledger/volume-ledger.ts';
import type { VolumeRecord } from './records/volume-records.ts';
import { VolumeRecordStore } from './ledger/record-store.ts';
import { LiveVolumes, type VolumeFeed } from './ledger/live-volumes.ts';
import { LedgerSources } from './ledger/ledger-sources.ts';
import { checkInodes, DirectoryIdentities } from './ledger/directory-identity.ts';
import { nodeAffinityValue } from './provision/node-affinity.ts';
import { planHostPathClaim, type HostPathClaimCheckInput } from './provision/claim-check.ts';
import { VolumePlacer, type Placement } from './provision/placement.ts';
import { buildVolume, readVolumeLocation } from './volume/volume-spec.ts';
import { mountedExports, type MountedExport } from './volume/volume-source.ts';
import { runLoggedScript, VolumeScriptError, type ScriptName } from './disk/volume-scripts.ts';
import { GoneNodePolicy, type NodeExists } from './delete/gone-node.ts';
import { deleteVolumeDirectory, type DeleteContext } from './delete/volume-delete.ts';

/** `deployment`: one instance serves every path; `daemonset`: each instance serves its own node. */
export type HostPathMode = 'deployment' | 'daemonset';

/** Options of the HostPathProvisioner. */
export interface HostPathProvisionerOptions {
  /** The configuration, or a holder whose current() is read on every call (hot reload). */
  config: HostPathConfig | ConfigHolder;
  /** Default `deployment`. `daemonset` requires nodeName. */
  mode?: HostPathMode;
  /** The node this instance runs on (daemonset: the only node it serves; deployment: default node for Immediate claims). */
  nodeName?: string;
  /**
   * The PVs of the cluster, watched (a runtime Informer of persistentvolumes): every event updates the live-volume
   * index at once, and no operation lists PVs. Needs getVolume. Takes precedence over knownVolumes.
   */
  volumeFeed?: VolumeFeed;
  /** One PV now (a GET): a delete's leaf proof waits until the feed has seen its current resourceVersion. */
  getVolume?: (name: string, signal: AbortSignal) => Promise<PersistentVolume | undefined>;
  /**
   * Without a feed: the PVs in the cluster as a list, read before the first operation and then at most every
   * knownVolumesRefreshMs (and for each leaf proof). Its cost grows with the number of PVs: prefer volumeFeed.
   */
  knownVolumes?: (signal: AbortSignal) => PersistentVolume[] | Promise<PersistentVolume[]>;
  /** Default 60 s. */
  knownVolumesRefreshMs?: number;
  /**
   * Where the provisioner reports what the controller cannot know (a reused directory): typically an
   * EventRecorder. Optional: without it those facts are only logged.
   */
  events?: EventSink<PersistentVolumeClaim | PersistentVolume>;
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
  /**
   * When set, a base path that configures no capacity may allocate at most what is allocated there plus this
   * (its filesystem's free space, e.g. filesystemFreeBytes); `dev` uses it. Default: unlimited.
   */
  freeSpace?: (basePath: string) => Promise<bigint>;
  /**
   * The NFS export the top-level sharedFileSystemPath is mounted from, when the configuration does not say
   * (nfs-subdir's NFS_SERVER and NFS_PATH). Its PVs are then published as nfs volumes.
   */
  nfs?: NfsExport;
  /**
   * Looks a Node up (GET through the API) when the controller did not hand one over: nodeAffinityKey needs the
   * selected node's labels. Without it only the hostname key works.
   */
  getNode?: (name: string, signal: AbortSignal) => Promise<Node | undefined>;
  /**
   * deployment mode, a node-local claim scheduled to another node: `refuse` (default; a Warning event says how
   * to fix it) or `ignore` (IgnoredError: node-local instances of the same provisioner name serve it).
   */
  otherNodeClaims?: 'refuse' | 'ignore';
  logger?: Logger;
  clock?: Clock;
  fs?: FsOpsOptions;
}

/** Allocation of a base path with its configured capacity (undefined = unlimited). */
export interface BasePathStatus extends BasePathAllocation {
  capacity?: bigint;
}

/** The hostpath Provisioner: volumes are directories under configured base paths, published as hostPath or local PVs. */
export class HostPathProvisioner implements Provisioner {
  private readonly mode: HostPathMode;
  private readonly nodeName?: string;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly ledger = new VolumeLedger();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly records: VolumeRecordStore;
  private readonly live: LiveVolumes;
  /** Hostname label -> node name, where they differ (learnHostname). */
  private readonly hostnameScopes = new Map<string, string>();
  private ownNodeRead: Promise<Node | undefined> | undefined;
  private readonly sources: LedgerSources;
  private readonly identities: DirectoryIdentities;
  private readonly goneNodes?: GoneNodePolicy;
  private readonly placer: VolumePlacer;

  constructor(private readonly opts: HostPathProvisionerOptions) {
    this.mode = opts.mode ?? 'deployment';
    if (this.mode !== 'deployment' && this.mode !== 'daemonset')
      throw new Error(`HostPathProvisioner: mode must be deployment or daemonset, not ${String(this.mode)}`);
    if (this.mode === 'daemonset' && !opts.nodeName)
      throw new Error('HostPathProvisioner: daemonset mode needs nodeName');
    this.nodeName = opts.nodeName;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'hostpath', node: opts.nodeName });
    this.clock = opts.clock ?? realClock;
    this.placer = new VolumePlacer({
      ledger: this.ledger,
      freeSpace: opts.freeSpace,
      now: () => this.clock.now(),
      reachableIndexes: (scope) => this.reachableIndexes(scope),
    });
    this.identities = new DirectoryIdentities(hostFsOf(opts.fs));
    this.records = new VolumeRecordStore({ ledger: this.ledger, logger: this.logger, fs: opts.fs });
    this.live = new LiveVolumes({
      ledger: this.ledger,
      config: () => this.config(),
      exports: () => this.exports(),
      identities: this.identities,
      reachable: (scope) => this.mode === 'deployment' || scope === SHARED_SCOPE || scope === this.nodeName,
      nodeScope: (hostname) => this.hostnameScopes.get(hostname) ?? hostname,
      clock: this.clock,
      logger: this.logger,
    });
    this.sources = new LedgerSources({
      records: this.records,
      live: this.live,
      roots: () => this.configuredRoots(),
      volumeFeed: opts.volumeFeed,
      getVolume: opts.getVolume,
      knownVolumes: opts.knownVolumes,
      knownVolumesRefreshMs: opts.knownVolumesRefreshMs,
      clock: this.clock,
      logger: this.logger,
    });
    if (opts.nodeExists)
      this.goneNodes = new GoneNodePolicy({
        nodeExists: opts.nodeExists,
        graceMs: opts.goneNodeGraceMs,
        clock: this.clock,
        logger: this.logger,
      });
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

  /** The Provisioner contract's checkClaim hook: the same pure checks provision() runs first. */
  checkClaim(input: ClaimCheckInput): ClaimCheckResult {
    const r = planHostPathClaim(this.checkInput(input, this.config()));
    if (r.ok) return { ok: true };
    const { cause: _cause, ...verdict } = r;
    return verdict;
  }

  private checkInput(input: ClaimCheckInput, config: HostPathConfig): HostPathClaimCheckInput {
    return {
      ...input,
      config,
      mode: this.mode,
      nodeName: this.nodeName,
      nfs: this.opts.nfs,
      otherNodeClaims: this.opts.otherNodeClaims,
    };
  }

  /**
   * Called after a configuration reload: nodes that refused a claim for space may have paths or room now, and the
   * live PVs are read again against the new roots and exports.
   */
  configurationChanged(): void {
    this.placer.forgetRefusals();
    this.identities.forgetRoots();
    // What a live PV occupies depends on the roots and exports: one under a new root or export is blocked at once.
    this.sources.configurationChanged();
  }

  /**
   * Learns the hostname label of a node (from the node object at hand, else, for this daemonset instance's own node,
   * one GET, kept): a static PV pinned by it (`kubernetes.io/hostname In [<label>]`, no annotation of ours) is then
   * indexed in that node's scope, not in a scope of the label's value that no placement on the node looks at. A new
   * one re-reads the live PVs.
   */
  private async learnHostname(node: string | undefined, given: Node | undefined, signal: AbortSignal): Promise<void> {
    if (node === undefined) return;
    let nodeObject = given?.metadata.name === node ? given : undefined;
    if (!nodeObject && this.mode === 'daemonset' && node === this.nodeName && this.opts.getNode) {
      if (this.ownNodeRead === undefined)
        this.ownNodeRead = this.opts.getNode(node, signal).catch((e: unknown) => {
          this.logger.debug({ node, err: (e as Error).message }, 'could not read this node for its hostname label');
          return undefined;
        });
      nodeObject = await this.ownNodeRead;
      // Not found or failed: asked again next time.
      if (!nodeObject) this.ownNodeRead = undefined;
    }
    const labels = nodeObject?.metadata.labels;
    const label =
      labels && Object.prototype.hasOwnProperty.call(labels, LABEL_HOSTNAME) ? labels[LABEL_HOSTNAME] : undefined;
    if (!label || label === node || this.hostnameScopes.get(label) === node) return;
    this.hostnameScopes.set(label, node);
    this.sources.configurationChanged();
  }

  private async provisionLocked(o: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    signal.throwIfAborted();
    const { claim, storageClass, pvName } = o;
    const config = this.config();
    const checked = planHostPathClaim(this.checkInput(o, config));
    if (!checked.ok) {
      if (checked.kind === 'ignored') throw new IgnoredError(checked.message);
      if (checked.kind === 'reschedule') throw new ProvisioningError(checked.message, 'Reschedule');
      throw new InfeasibleError(checked.message, checked.cause === undefined ? undefined : { cause: checked.cause });
    }
    const plan = checked.plan;
    const { className, params, accessModes, request, bytes, shared, node, scope, volumeType } = plan;
    const nfsMount = volumeType === 'nfs' ? plan.nfsExport : undefined;
    // The node's labels when the controller did not hand the node over: one GET.
    const affinity = shared
      ? undefined
      : (plan.affinity ?? {
          key: params.nodeAffinityKey,
          value: await nodeAffinityValue(o, params.nodeAffinityKey, node!, this.opts.getNode, signal),
        });
    // A static PV pins its node by the hostname label, which need not be the node's name: know this node's.
    await this.learnHostname(node, o.selectedNode, signal);
    await this.sources.ensure(signal);
    const freeCapacity = await this.placer.freeCapacities(config, className, scope, bytes);

    // From here to reserve(): no await, so concurrent provisions cannot both take the last free bytes.
    const placement = this.placer.place(o, plan, config, freeCapacity);
    if (placement.isNew) {
      this.ledger.reserve({ pvName, scope, basePath: placement.base.path, path: placement.path, bytes });
    }
    const log = this.logger.child({
      pv: pvName,
      pvc: `${claim.metadata.namespace}/${claim.metadata.name}`,
      storageClass: className,
    });
    const created = await this.createOnDisk(o, placement, params, bytes, config, log, signal);
    log.info(
      {
        path: placement.path,
        basePath: placement.base.path,
        bytes: bytes.toString(),
        reused: placement.isNew && !created,
      },
      'volume directory ready',
    );
    if (placement.isNew && !created) {
      // Stable names: a directory no live volume uses is given to the claim with whatever it holds.
      this.opts.events?.event(
        claim,
        'Normal',
        'VolumeDirectoryReused',
        `The directory ${shortenText(placement.path, 1024)} already existed and no live volume uses it: volume ${pvName} reuses it with its contents`,
      );
    }
    const volume = buildVolume({
      pvName,
      path: placement.path,
      basePath: placement.base.path,
      kind: shared ? 'shared' : 'node',
      node: shared ? (this.nodeName ?? o.selectedNodeName) : node,
      affinity,
      volumeType,
      nfsMount,
      mountOptions: storageClass.mountOptions,
      capacity: request,
      accessModes,
      reclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
      storageClassName: className || undefined,
      onDelete: onDeleteFor(params, shared !== undefined),
    });
    return { volume, state: 'Finished' };
  }

  // Identity on disk, record, path claim, overlap check, directory, setup script; on any failure, what this attempt
  // added is taken back. Returns whether the directory was created (false: an existing one is reused).
  private async createOnDisk(
    o: ProvisionOptions,
    placement: Placement,
    params: ClassParameters,
    bytes: bigint,
    config: HostPathConfig,
    log: Logger,
    signal: AbortSignal,
  ): Promise<boolean> {
    const { pvName, claim } = o;
    const base = placement.base.path;
    const relativePath = placement.segments.join('/');
    const record: VolumeRecord = {
      pvName,
      claimUid: claim.metadata.uid,
      relativePath,
      bytes: bytes.toString(),
      scope: placement.scope,
      createdAt: new Date(this.clock.now()).toISOString(),
    };
    try {
      signal.throwIfAborted();
      if (config.scripts.setup !== undefined) checkScriptPath('setup', base, placement.path);
      // The same directory spelled otherwise (a symlink, a bind mount) by a live PV: by device and inode.
      if (placement.isNew) await this.checkDiskIdentity(base, placement.segments, pvName, placement.scope);
      await this.records.write(base, record);
      // Another instance (replicas on a shared path) may be placing a claim in the same directory, above or below
      // it: the path claim is exclusive, and whoever then sees the other's claim backs off and retries, so two
      // volumes never share a directory.
      const held = await this.records.claim(base, record);
      if (held)
        throw new Error(
          `the directory ${placement.path} is the directory of volume ${held.pvName} (its claim is on disk); retrying later`,
        );
      const other = placement.isNew ? await this.records.conflict(base, relativePath, pvName, true) : undefined;
      if (other) {
        throw new Error(
          `the directory ${placement.path} overlaps the directory ${base}/${other.relativePath} of volume ${other.pvName} (its claim is on disk); retrying later`,
        );
      }
      const { created, identity } = await createVolumeDir(base, placement.segments, {
        ...this.opts.fs,
        mode: params.mode,
        uid: params.uid,
        gid: params.gid,
        identity: placement.isNew,
      });
      if (config.scripts.setup !== undefined) {
        await this.runScript('setup', config, placement.path, bytes, signal).catch(async (e: unknown) => {
          // A failed setup leaves nothing behind that this attempt created (a retry starts clean); a reused
          // directory's contents are not this attempt's to remove.
          if (created) await removeVolumeDir(base, placement.segments, { ...this.opts.fs }).catch(() => {});
          throw e;
        });
      }
      // What the disk says the directory is, from the walk that made it: its PV's event need not read it again.
      if (identity) this.ledger.identify(pvName, placement.path, { chain: identity });
      return created;
    } catch (e) {
      if (placement.isNew) {
        this.ledger.release(pvName);
        await this.records.remove(base, pvName, relativePath).catch(() => {});
      }
      log.warn({ err: (e as Error).message, path: placement.path }, 'creating the volume directory failed');
      if (e instanceof UnsafePathError) throw new InfeasibleError(e.message, { cause: e });
      if (e instanceof VolumeScriptError)
        throw new ProvisioningError(shortenText(e.message, 2048), 'Finished', { cause: e });
      throw e;
    }
  }

  // Throws UnsafePathError when the directory (or a parent below the base) is a live volume's by device and inode.
  private async checkDiskIdentity(
    base: string,
    segments: string[],
    pvName: string,
    scope: string | undefined,
  ): Promise<void> {
    const indexes = this.reachableIndexes(scope);
    const chain = await this.identities.ofCandidate(
      base,
      segments,
      indexes.some((i) => i.hasPending()),
    );
    const path = `${base}/${segments.join('/')}`;
    await checkInodes({
      path,
      chain,
      pvName,
      indexes,
      identities: this.identities,
      roots: allBasePaths(this.config()),
    });
  }

  async delete(volume: PersistentVolume, signal: AbortSignal): Promise<void> {
    const pvName = volume.metadata.name ?? '';
    return this.locked(pvName, () => deleteVolumeDirectory(this.deleteContext(), volume, pvName, signal));
  }

  private deleteContext(): DeleteContext {
    return {
      mode: this.mode,
      nodeName: this.nodeName,
      logger: this.logger,
      clock: this.clock,
      fs: this.opts.fs,
      events: this.opts.events,
      storageClass: this.opts.storageClass,
      goneNodes: this.goneNodes,
      config: () => this.config(),
      configuredRoots: () => this.configuredRoots(),
      ensureLedger: async (signal, fresh) => {
        // A delete may come first after a start: this node's hostname label, for static PVs pinned by it.
        if (this.mode === 'daemonset') await this.learnHostname(this.nodeName, undefined, signal);
        return this.sources.ensure(signal, fresh);
      },
      reachableIndexes: () => this.reachableIndexes(undefined),
      checkDiskIdentity: (base, segments, pvName) => this.checkDiskIdentity(base, segments, pvName, undefined),
      release: (pvName) => this.ledger.release(pvName),
      records: this.records,
      exports: () => this.exports(),
      teardown: (dir, bytes, signal) => this.runScript('teardown', this.config(), dir, bytes, signal),
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
      await this.sources.ensure(signal);
      const ctx = {
        ledger: this.ledger,
        config: this.config(),
        roots: this.configuredRoots(),
        now: this.clock.now(),
        fs: this.opts.fs,
        records: this.records,
        exports: this.exports(),
        logger: this.logger,
      };
      return expandHostPathVolume(
        this.mode === 'daemonset' ? { ...ctx, servedNode: this.nodeName } : ctx,
        volume,
        newSize,
        signal,
      );
    });
  }

  // The roots delete() may touch: those reachable from this instance.
  private configuredRoots(): string[] {
    const config = this.config();
    return this.mode === 'daemonset' ? localBasePaths(config, this.nodeName).map((b) => b.path) : allBasePaths(config);
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
    await this.records.ensureLoaded(this.configuredRoots());
    return this.records.list(this.configuredRoots(), signal);
  }

  /**
   * Replaces what the API says about the live volumes (as knownVolumes does): ours (recognised by their base-path
   * annotation), and any other PV whose directory is under a configured root (adopted or static volumes occupy their
   * directory just the same, whatever its spelling; one whose source names no single directory blocks its root).
   */
  rebuildFromVolumes(volumes: Iterable<PersistentVolume>): void {
    this.live.replaceAll(volumes);
  }

  /**
   * Resolves when the identity reads scheduled so far by PV events (a new volume's directory, read once) are done:
   * what a test waits for to count an operation's filesystem calls whole.
   */
  settled(): Promise<void> {
    return this.live.settled();
  }

  /** Allocated bytes and capacity per base path (for metrics). */
  allocations(): BasePathStatus[] {
    const config = this.config();
    const capacity = new Map<string, bigint | undefined>();
    for (const set of [config, ...Object.values(config.storageClassConfigs)]) {
      if (set.sharedFileSystemPath) capacity.set(set.sharedFileSystemPath.path, set.sharedFileSystemPath.capacity);
      for (const n of set.nodePathMap)
        for (const p of n.paths)
          if (!capacity.has(p.path) || p.capacity !== undefined) capacity.set(p.path, p.capacity);
    }
    return this.ledger.snapshot().map((a) => ({ ...a, capacity: capacity.get(a.basePath) }));
  }

  /** Disk usage of a volume's directory (bounded walk, never following symlinks). */
  async volumeUsage(volume: PersistentVolume, opts: UsageOptions = {}): Promise<DirectoryUsage> {
    const loc = readVolumeLocation(volume, this.exports());
    if (!loc.path || !loc.basePath || !this.configuredRoots().includes(loc.basePath))
      throw new Error(`volume ${volume.metadata.name} is not under a configured base path`);
    checkExistingVolumePath(loc.basePath, loc.path);
    return directoryUsage(loc.path, opts);
  }

  /** The NFS exports of the configuration in force, mounted at their shared paths. */
  exports(): MountedExport[] {
    return mountedExports(this.config(), this.opts.nfs);
  }

  private runScript(
    name: ScriptName,
    config: HostPathConfig,
    dir: string,
    bytes: bigint,
    signal: AbortSignal,
  ): Promise<void> {
    return runLoggedScript({
      name,
      scripts: config.scripts,
      dir,
      bytes,
      signal,
      clock: this.clock,
      logger: this.logger,
    });
  }

  // One operation per volume name at a time (a retried provision waits for the first to finish).
  private async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }
}
