// Disk usage of volume directories, measured by walking them (there are no per-directory counters without
// project quotas): allocated bytes as `du` counts them, apparent bytes, and inodes (hard links once), never
// following symlinks. Every walk is bounded twice: a per-volume entry cap, and a WalkBudget shared by all
// volumes (entries per second, paced through an injected clock) so a node with many large volumes cannot cause
// an I/O storm. A walk stopped by either is reported as incomplete: its figures are lower bounds.
import fsp from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import { realClock, type Clock } from '../../runtime/clock.ts';
import { TokenBucket } from '../../runtime/token-bucket.ts';

/** The filesystem calls a walk makes (injected in tests to count them). */
export interface UsageFs {
  lstat(path: string): Promise<BigIntStats>;
  readdir(path: string): Promise<string[]>;
}

/** The real filesystem (lstat with bigint sizes, readdir). */
export const nodeUsageFs: UsageFs = {
  lstat: (p) => fsp.lstat(p, { bigint: true }),
  readdir: (p) => fsp.readdir(p),
};

/** A volume's measured usage. */
export interface DirectoryUsage {
  /** Allocated bytes (st_blocks × 512), hard links once. */
  bytes: bigint;
  /** Sum of file sizes. */
  apparentBytes: bigint;
  /** Entries visited (lstat calls that found something). */
  entries: number;
  /** Distinct inodes among them (what `df -i` would count for this tree). */
  inodes: number;
  /** False when a limit stopped the walk: the figures are then lower bounds. */
  complete: boolean;
  /** What stopped an incomplete walk. */
  stoppedBy?: 'maxEntries' | 'budget';
}

/** Entries per second across every walk that shares it. */
export class WalkBudget {
  private readonly bucket: TokenBucket;
  constructor(
    readonly entriesPerSecond: number,
    private readonly clock: Clock = realClock,
  ) {
    this.bucket = new TokenBucket(entriesPerSecond, Math.max(1, Math.ceil(entriesPerSecond)), clock);
  }

  /**
   * Takes one entry, waiting for it when the bucket is empty. Returns false (nothing taken, no wait) when the
   * entry would only be available after `deadline` (ms since epoch).
   */
  async take(deadline: number, signal?: AbortSignal): Promise<boolean> {
    for (;;) {
      if (this.bucket.tryTake()) return true;
      const waitMs = Math.ceil(((1 - this.bucket.available()) / this.entriesPerSecond) * 1000);
      if (this.clock.now() + waitMs > deadline) return false;
      await this.clock.sleep(Math.max(1, waitMs), signal);
    }
  }
}

/** Bounds and injections of one usage walk. */
export interface UsageOptions {
  /** Entries visited before the walk stops (default 1,000,000). */
  maxEntries?: number;
  /** The shared budget; without it the walk is not paced. */
  budget?: WalkBudget;
  /** With a budget: stop (incomplete) rather than wait past this time (ms since epoch). Default: no deadline. */
  deadline?: number;
  fs?: UsageFs;
  signal?: AbortSignal;
}

/** Disk usage of a directory tree, not following symlinks, bounded by `maxEntries` and the budget. */
export async function directoryUsage(root: string, opts: UsageOptions = {}): Promise<DirectoryUsage> {
  const max = opts.maxEntries ?? 1_000_000;
  const fs = opts.fs ?? nodeUsageFs;
  const seen = new Set<string>();
  const usage: DirectoryUsage = { bytes: 0n, apparentBytes: 0n, entries: 0, inodes: 0, complete: true };
  const stop = (by: 'maxEntries' | 'budget') => {
    usage.complete = false;
    usage.stoppedBy = by;
  };
  const stack = [root];
  while (stack.length > 0) {
    opts.signal?.throwIfAborted();
    if (usage.entries >= max) {
      stop('maxEntries');
      break;
    }
    if (opts.budget && !(await opts.budget.take(opts.deadline ?? Infinity, opts.signal))) {
      stop('budget');
      break;
    }
    const p = stack.pop()!;
    const st = await fs.lstat(p).catch(() => undefined);
    if (!st) continue;
    usage.entries++;
    if (st.nlink > 1n && !st.isDirectory()) {
      const id = `${st.dev}:${st.ino}`;
      if (seen.has(id)) continue;
      seen.add(id);
    }
    usage.inodes++;
    usage.bytes += st.blocks * 512n;
    usage.apparentBytes += st.size;
    if (st.isDirectory()) {
      const names = await fs.readdir(p).catch(() => [] as string[]);
      for (const n of names) stack.push(`${p}/${n}`);
    }
  }
  return usage;
}
