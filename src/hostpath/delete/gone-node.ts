// Gone nodes (daemonset mode): a volume is deleted by the instance on the node named in its annotation, so when
// that Node is deleted for good its Released volumes would stay forever. Policy: once the Node has been seen
// missing for a grace period (it may be re-registering), another instance takes over. A node-local volume's
// directory is on the gone node's disk, which no instance can reach: the PV object is let go without touching
// anything, and a Warning event on the PV says so, with the path, so an admin who gets the disk back knows what
// to clean up. A shared-path volume's directory is reachable from every instance: it is deleted as usual.
import type { PersistentVolume } from '../../types/k8s.ts';
import type { Clock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import { readVolumeLocation, ANN_HOSTPATH_NODE } from '../volume/volume-spec.ts';

/** Reason of the Warning event recorded on a PV let go because its node is gone. */
export const REASON_NODE_GONE = 'VolumeNodeGone';
/** Default grace period: a node missing for less than this may be re-registering. */
export const DEFAULT_GONE_NODE_GRACE_MS = 10 * 60_000;

/** Whether a Node exists: true, false, or undefined when that cannot be told (no permission, API error). */
export type NodeExists = (name: string, signal: AbortSignal) => Promise<boolean | undefined>;

export interface GoneNodeOptions {
  nodeExists: NodeExists;
  /** Default DEFAULT_GONE_NODE_GRACE_MS. */
  graceMs?: number;
  clock: Clock;
  logger: Logger;
}

/** What to do with another node's volume. */
export type GoneNodeVerdict =
  /** The node exists, may come back, or we cannot tell: leave the volume to that node's instance. */
  | { gone: false; reason: string }
  /**
   * Gone for longer than the grace period. `reachable` (shared path): delete the directory as usual; otherwise let
   * the PV go untouched, with `message` as the Warning event.
   */
  | { gone: true; node: string; reachable: boolean; message: string };

/** Tracks, per node name, since when this instance has seen it missing. */
export class GoneNodePolicy {
  private readonly missingSince = new Map<string, number>();
  private readonly graceMs: number;

  constructor(private readonly o: GoneNodeOptions) {
    this.graceMs = o.graceMs ?? DEFAULT_GONE_NODE_GRACE_MS;
    if (!Number.isFinite(this.graceMs) || this.graceMs < 0)
      throw new Error(`gone-node grace period must be a duration >= 0, not ${String(o.graceMs)}`);
  }

  /**
   * The verdict on a volume of ours that belongs to another node. Only PVs carrying our node annotation (an exact
   * node name, not a hostname label value that may differ from it) are ever taken over.
   */
  async check(volume: PersistentVolume, signal: AbortSignal): Promise<GoneNodeVerdict> {
    const node = volume.metadata.annotations?.[ANN_HOSTPATH_NODE];
    const loc = readVolumeLocation(volume);
    if (!node || loc.kind === undefined) return { gone: false, reason: 'it carries no node annotation of ours' };
    const exists = await this.o.nodeExists(node, signal);
    if (exists !== false) {
      this.missingSince.delete(node);
      return { gone: false, reason: exists ? `node ${node} exists` : `whether node ${node} exists cannot be told` };
    }
    const now = this.o.clock.now();
    const since = this.missingSince.get(node) ?? now;
    this.missingSince.set(node, since);
    const left = since + this.graceMs - now;
    if (left > 0)
      return {
        gone: false,
        reason: `node ${node} no longer exists; its volumes are let go if it is still missing in ${Math.ceil(left / 1000)} s`,
      };
    const reachable = loc.kind === 'shared';
    this.o.logger.warn(
      { pv: volume.metadata.name, node, path: loc.path, reachable },
      'node gone: taking over the volume',
    );
    return {
      gone: true,
      node,
      reachable,
      message: `Node ${node} has been gone for more than ${Math.round(this.graceMs / 1000)} s: its directory ${loc.path ?? '(unknown)'} could not be reached and was not deleted (the data stays on that node's disk); the volume object is deleted`,
    };
  }
}
