// The real free space of a base path's filesystem (statfs: blocks available to unprivileged users), used as the
// capacity of base paths that configure none when the provisioner is asked to (`dev` does): a claim larger than
// the disk can hold is refused with the infeasible event instead of being Bound to a directory that cannot hold it.
// A reading serves a second's claims while they fit by it (FreeSpaceReadings): not one statfs per claim.
import { statfs } from 'node:fs/promises';
import type { BasePath } from '../config/hostpath-config.ts';

/** Bytes available to an unprivileged writer on the filesystem holding `path`. */
export async function filesystemFreeBytes(path: string): Promise<bigint> {
  const s = await statfs(path, { bigint: true });
  return s.bavail * s.bsize;
}

/** How long a free-space reading is reused while claims fit by it. */
export const FREE_SPACE_MAX_AGE_MS = 1_000;

/**
 * The capacity of each path that configures none: what is allocated there plus what its filesystem has free. One
 * reading (a statfs) serves the claims of FREE_SPACE_MAX_AGE_MS as long as each fits by it; a claim that does not
 * reads it again, so nothing is refused on an old reading, and a claim admitted on one may miss at most what
 * tenants wrote in that second (a bound for empty directories anyway: what they hold is not counted). A path whose
 * free space cannot be read keeps no capacity (unlimited), as before the option, and is read again next time.
 */
export class FreeSpaceReadings {
  private readonly last = new Map<string, { at: number; capacity: bigint }>();

  constructor(
    private readonly free: (path: string) => Promise<bigint>,
    private readonly now: () => number,
  ) {}

  async capacities(
    scope: string,
    paths: BasePath[],
    allocated: (path: string) => bigint,
    bytes: bigint,
  ): Promise<Map<string, bigint>> {
    const out = new Map<string, bigint>();
    for (const p of paths) {
      if (p.capacity !== undefined || out.has(p.path)) continue;
      const key = `${scope}\u0000${p.path}`;
      const used = allocated(p.path);
      const last = this.last.get(key);
      if (last && this.now() - last.at < FREE_SPACE_MAX_AGE_MS && last.capacity - used >= bytes) {
        out.set(p.path, last.capacity);
        continue;
      }
      const at = this.now();
      const free = await this.free(p.path).catch(() => undefined);
      if (free === undefined) {
        this.last.delete(key);
        continue;
      }
      const capacity = allocated(p.path) + free;
      this.last.set(key, { at, capacity });
      out.set(p.path, capacity);
    }
    return out;
  }

  /** Forgets every reading (a configuration change may have remounted a path). */
  forget(): void {
    this.last.clear();
  }
}

/** `paths` with the capacities given to those that configure none. */
export function withCapacity(paths: BasePath[], capacities: Map<string, bigint>): BasePath[] {
  return capacities.size === 0
    ? paths
    : paths.map((p) =>
        p.capacity === undefined && capacities.has(p.path) ? { ...p, capacity: capacities.get(p.path) } : p,
      );
}
