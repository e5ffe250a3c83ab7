// Where a checked claim's directory goes: the base path with the most free space among those that fit (with the
// freeSpace option, a path that configures no capacity is bounded by its filesystem's free space), the directory
// the plan rendered below it, checked against every live volume it could collide with. When nothing fits on the
// selected node, Reschedule only while another node may have room; otherwise InfeasibleError, so the claim backs
// off instead of looping between the scheduler and this node. Synchronous from the ledger read to the caller's
// reserve(), so two concurrent provisions cannot both take the last free bytes.
import { InfeasibleError, ProvisioningError, type ProvisionOptions } from '../../controller/provisioner.ts';
import {
  DEFAULT_NODE,
  allBasePaths,
  pathSetForClass,
  type BasePath,
  type HostPathConfig,
} from '../config/hostpath-config.ts';
import { checkExistingVolumePath, resolveVolumePath, UnsafePathError } from '../paths/path-safety.ts';
import type { VolumePathIndex } from '../ledger/volume-path-index.ts';
import { SHARED_SCOPE, type VolumeLedger } from '../ledger/volume-ledger.ts';
import { FreeSpaceReadings, withCapacity } from './free-space.ts';
import { formatBytes } from '../../types/quantity.ts';
import { StorageClassParameterError } from '../config/class-parameters.ts';
import { PathTemplateError } from '../paths/path-template.ts';
import { VolumeTypeAnnotationError } from '../volume/volume-source.ts';
import type { HostPathPlan } from './claim-check.ts';

/**
 * An infeasible claim refused for space: `tooLarge` when no configured path is that big, else the paths are full.
 * The controller treats it as any InfeasibleError; the CSI reference plugin answers OUT_OF_RANGE or
 * RESOURCE_EXHAUSTED from it, as csi-driver-host-path does.
 */
export class NoSpaceError extends InfeasibleError {
  constructor(
    message: string,
    readonly tooLarge: boolean,
  ) {
    super(message);
  }
}

/** A volume's place: its scope, base path, directory and the segments below the base. */
export interface Placement {
  scope: string;
  base: BasePath;
  path: string;
  segments: string[];
  /** False: the ledger already held this volume (a retried provision). */
  isNew: boolean;
}

/** What placement reads from the provisioner. */
export interface PlacementContext {
  ledger: VolumeLedger;
  /** A path's filesystem free space (the freeSpace option); undefined: paths without capacity are unlimited. */
  freeSpace?: (basePath: string) => Promise<bigint>;
  /** Now, in ms (how old a free-space reading is). */
  now(): number;
  /** Every live-volume index a directory in `scope` can collide with. */
  reachableIndexes(scope: string): VolumePathIndex[];
}

const MAX_REMEMBERED_REFUSALS = 10_000;

/** Places volumes; remembers which nodes refused a claim for space (so one brought back is not rescheduled again). */
export class VolumePlacer {
  /** Volume name -> nodes that refused it for lack of space. */
  private readonly capacityRefusals = new Map<string, Set<string>>();
  private readonly readings?: FreeSpaceReadings;

  constructor(private readonly ctx: PlacementContext) {
    if (ctx.freeSpace) this.readings = new FreeSpaceReadings(ctx.freeSpace, () => ctx.now());
  }

  /** After a configuration reload: nodes that refused a claim for space may have paths or room now. */
  forgetRefusals(): void {
    this.capacityRefusals.clear();
    this.readings?.forget();
  }

  /** With the freeSpace option: the capacity of each path of the class that configures none, for a claim of `bytes`. */
  async freeCapacities(
    config: HostPathConfig,
    className: string,
    scope: string,
    bytes: bigint,
  ): Promise<Map<string, bigint>> {
    const set = pathSetForClass(config, className);
    if (!this.readings || !set) return new Map();
    const paths = set.sharedFileSystemPath ? [set.sharedFileSystemPath] : set.nodePathMap.flatMap((n) => n.paths);
    return this.readings.capacities(scope, paths, (p) => this.ctx.ledger.allocated(scope, p), bytes);
  }

  /** Picks the base path and directory (no await: the caller reserves right after). */
  place(o: ProvisionOptions, plan: HostPathPlan, config: HostPathConfig, freeCapacity: Map<string, bigint>): Placement {
    const { pvName } = o;
    const { scope, bytes } = plan;
    const ledger = this.ctx.ledger;
    const candidates = withCapacity(plan.candidates, freeCapacity);
    const existing = ledger.get(pvName);
    if (existing && existing.scope === scope) {
      const base = candidates.find((c) => c.path === existing.basePath);
      if (base) {
        const segments = infeasibleOn(() => checkExistingVolumePath(base.path, existing.path));
        return { scope, base, path: existing.path, segments, isNew: false };
      }
    }
    const rel = plan.relativePath;
    if (rel === undefined) throw new Error('placing a volume needs the plan of a named volume');
    const fitting = candidates.filter((c) => ledger.fits(scope, c.path, c.capacity, bytes, pvName));
    if (fitting.length === 0) this.refuseForSpace(o, plan, config, candidates, freeCapacity);
    this.capacityRefusals.delete(pvName);
    // Most free space first (unlimited counts as most), then least allocated, then configuration order.
    const ranked = fitting.map((c, i) => ({
      c,
      i,
      free: ledger.free(scope, c.path, c.capacity, pvName),
      alloc: ledger.allocated(scope, c.path),
    }));
    ranked.sort((a, b) => cmpFree(b.free, a.free) || (a.alloc < b.alloc ? -1 : a.alloc > b.alloc ? 1 : 0) || a.i - b.i);
    const base = ranked[0].c;
    const { path, segments } = infeasibleOn(() => resolveVolumePath(base.path, rel));
    // Stable names: a directory at, inside or above a live volume's is refused, naming that volume.
    for (const index of this.ctx.reachableIndexes(scope))
      infeasibleOn(() => index.checkFree(path, pvName, allBasePaths(config)));
    return { scope, base, path, segments, isNew: true };
  }

  private refuseForSpace(
    o: ProvisionOptions,
    plan: HostPathPlan,
    config: HostPathConfig,
    candidates: BasePath[],
    freeCapacity: Map<string, bigint>,
  ): never {
    const { pvName } = o;
    const { scope, bytes } = plan;
    const ledger = this.ctx.ledger;
    const all = withCapacity(allPathsOfClass(o, config), freeCapacity);
    const fitsSomewhere = all.some((p) => p.capacity === undefined || p.capacity >= bytes);
    const freeOf = (c: BasePath) => freeText(ledger.free(scope, c.path, c.capacity, pvName));
    const msg = `no base path has ${requestOf(o)} free for this claim (${candidates.map((c) => `${c.path}: ${freeOf(c)} free`).join(', ')})`;
    if (!fitsSomewhere)
      throw new NoSpaceError(`the claim asks for ${requestOf(o)}, more than the capacity of any configured path`, true);
    // Every node sees the same shared path: another node would not help.
    if (scope === SHARED_SCOPE) throw new NoSpaceError(msg, false);
    // Asking the scheduler again only helps if another node may have room; otherwise it selects this node again
    // at once and the claim loops. Then it backs off like any infeasible claim instead.
    if (!this.otherNodeMayFit(o, plan, config, freeCapacity)) {
      throw new NoSpaceError(
        `no node has ${requestOf(o)} free for this claim (${candidates.map((c) => `${scope}:${c.path}: ${freeOf(c)} free`).join(', ')}; no other node has room)`,
        false,
      );
    }
    this.rememberRefusal(pvName, scope);
    if (o.selectedNodeName) throw new ProvisioningError(`${msg}; asking the scheduler for another node`, 'Reschedule');
    throw new NoSpaceError(msg, false);
  }

  /**
   * Whether a node other than the plan's may have room for the claim: a listed node whose path fits, or (with
   * default paths for unlisted nodes, which we cannot enumerate) any node as long as the scheduler has not brought
   * this claim back to a node that already refused it for capacity.
   */
  private otherNodeMayFit(
    o: ProvisionOptions,
    plan: HostPathPlan,
    config: HostPathConfig,
    freeCapacity: Map<string, bigint>,
  ): boolean {
    const { params, scope: node, bytes } = plan;
    const set = pathSetForClass(config, o.storageClass.metadata.name ?? '');
    if (!set) return false;
    const usable = (paths: BasePath[]) =>
      withCapacity(paths, freeCapacity).filter((p) => params.nodePath === undefined || p.path === params.nodePath);
    for (const entry of set.nodePathMap) {
      if (entry.node === DEFAULT_NODE || entry.node === node) continue;
      if (usable(entry.paths).some((p) => this.ctx.ledger.fits(entry.node, p.path, p.capacity, bytes, o.pvName)))
        return true;
    }
    const defaults = set.nodePathMap.find((n) => n.node === DEFAULT_NODE);
    if (!defaults || !usable(defaults.paths).some((p) => p.capacity === undefined || p.capacity >= bytes)) return false;
    return !(this.capacityRefusals.get(o.pvName)?.has(node) ?? false);
  }

  // Bounded: a claim deleted while refused leaves its entry until newer ones push it out.
  private rememberRefusal(pvName: string, node: string): void {
    const nodes = this.capacityRefusals.get(pvName) ?? new Set<string>();
    this.capacityRefusals.delete(pvName);
    this.capacityRefusals.set(pvName, nodes.add(node));
    if (this.capacityRefusals.size > MAX_REMEMBERED_REFUSALS)
      this.capacityRefusals.delete(this.capacityRefusals.keys().next().value ?? '');
  }
}

function allPathsOfClass(o: ProvisionOptions, config: HostPathConfig): BasePath[] {
  const set = pathSetForClass(config, o.storageClass.metadata.name ?? '');
  if (!set) return [];
  return set.sharedFileSystemPath ? [set.sharedFileSystemPath] : set.nodePathMap.flatMap((n) => n.paths);
}

/** Orders free space, undefined (unlimited) last. */
function cmpFree(a: bigint | undefined, b: bigint | undefined): number {
  if (a === b) return 0;
  if (a === undefined) return 1;
  if (b === undefined) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The claim's storage request, for messages. */
const requestOf = (o: ProvisionOptions) => o.claim.spec.resources?.requests?.storage ?? '?';
/** Free bytes, for messages. */
const freeText = (f: bigint | undefined) => (f === undefined ? 'unlimited' : f <= 0n ? '0' : formatBytes(f));

/** Configuration and tenant-input errors can never succeed as they stand: InfeasibleError, with the cause. */
function infeasibleOn<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (
      e instanceof StorageClassParameterError ||
      e instanceof PathTemplateError ||
      e instanceof UnsafePathError ||
      e instanceof VolumeTypeAnnotationError
    ) {
      throw new InfeasibleError(e.message, { cause: e });
    }
    throw e;
  }
}
