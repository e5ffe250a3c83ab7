// The line `dev` and `cluster` print when a data directory was asked for but no SQLite driver could be loaded:
// they serve from memory rather than refuse (a global install without the optional native addon still runs), and
// say so plainly, with what keeps the objects across restarts.
import type { EmbeddedCluster } from '../cluster/embedded-cluster.ts';

/** The notice for an in-memory cluster that was given a data directory, else undefined. */
export function persistenceNotice(persistence: EmbeddedCluster['persistence']): string | undefined {
  if (persistence.kind !== 'memory' || persistence.unavailable === undefined) return undefined;
  return (
    `notice: the cluster keeps its objects in memory only; they are gone after a restart (the volumes' directories stay). ` +
    `No SQLite driver: ${persistence.unavailable}. To keep them, run on Node 22.13 or later, or where the optional ` +
    'dependency better-sqlite3 installs (a prebuilt binary for this platform, or a C++ toolchain).'
  );
}
