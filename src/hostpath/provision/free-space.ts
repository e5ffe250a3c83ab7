// The real free space of a base path's filesystem (statfs: blocks available to unprivileged users), used as the
// capacity of base paths that configure none when the provisioner is asked to (`dev` does): a claim larger than
// the disk can hold is refused with the infeasible event instead of being Bound to a directory that cannot hold it.
import { statfs } from 'node:fs/promises';
import type { BasePath } from '../config/hostpath-config.ts';

/** Bytes available to an unprivileged writer on the filesystem holding `path`. */
export async function filesystemFreeBytes(path: string): Promise<bigint> {
  const s = await statfs(path, { bigint: true });
  return s.bavail * s.bsize;
}

/**
 * The capacity of each path that configures none: what is allocated there plus what its filesystem has free now.
 * A path whose free space cannot be read keeps no capacity (unlimited), as before the option.
 */
export async function freeSpaceCapacities(
  paths: BasePath[],
  allocated: (path: string) => bigint,
  free: (path: string) => Promise<bigint>,
): Promise<Map<string, bigint>> {
  const out = new Map<string, bigint>();
  for (const p of paths) {
    if (p.capacity !== undefined || out.has(p.path)) continue;
    const bytes = await free(p.path).catch(() => undefined);
    if (bytes !== undefined) out.set(p.path, allocated(p.path) + bytes);
  }
  return out;
}

/** `paths` with the capacities given to those that configure none. */
export function withCapacity(paths: BasePath[], capacities: Map<string, bigint>): BasePath[] {
  return capacities.size === 0
    ? paths
    : paths.map((p) =>
        p.capacity === undefined && capacities.has(p.path) ? { ...p, capacity: capacities.get(p.path) } : p,
      );
}
