// What the periodic usage walk remembers between measurements, per PV: whether the volume was over its capacity
// (so a Warning is emitted once per crossing, not per measurement) and what was last published on the PV (so the
// usage annotation is rewritten only when it changed enough to matter, bounding API writes).
import type { VolumeUsageSummary } from '../../types/volume-usage.ts';
import type { DirectoryUsage } from './directory-usage.ts';

const MI = 1024n * 1024n;

export class UsageWatch {
  private readonly over = new Map<string, boolean>();
  private readonly published = new Map<string, VolumeUsageSummary>();

  /**
   * Records a measurement; true when it crosses `capacity` upwards. A lower bound above the capacity is a crossing;
   * a lower bound below it proves nothing, so the previous state stands.
   */
  crossed(pvName: string, usage: DirectoryUsage, capacity: bigint | undefined): boolean {
    if (capacity === undefined) return false;
    const was = this.over.get(pvName) ?? false;
    if (usage.bytes > capacity) {
      this.over.set(pvName, true);
      return !was;
    }
    if (usage.complete) this.over.set(pvName, false);
    return false;
  }

  /**
   * Whether `next` should be written over what was last published (or what the PV carries, after a restart):
   * the first time, when completeness changes, or when bytes move by max(1 MiB, capacity/64) or inodes by
   * max(100, 1/64).
   */
  needsPublish(
    pvName: string,
    next: VolumeUsageSummary,
    capacity: bigint | undefined,
    onVolume: VolumeUsageSummary | undefined,
  ): boolean {
    const last = this.published.get(pvName) ?? onVolume;
    if (!last || last.complete !== next.complete) return true;
    const byteStep = capacity !== undefined && capacity / 64n > MI ? capacity / 64n : MI;
    const delta = BigInt(next.bytes) - BigInt(last.bytes);
    if ((delta < 0n ? -delta : delta) >= byteStep) return true;
    return Math.abs(next.inodes - last.inodes) >= Math.max(100, Math.ceil(last.inodes / 64));
  }

  markPublished(pvName: string, s: VolumeUsageSummary): void {
    this.published.set(pvName, s);
  }

  /** Forgets the volumes not in `names` (deleted). */
  retain(names: Set<string>): void {
    for (const m of [this.over, this.published]) for (const k of [...m.keys()]) if (!names.has(k)) m.delete(k);
  }
}
