// A configuration file, watched and hot-reloaded. fs.watch is set on the file's directory (a mounted
// ConfigMap changes by swapping its `..data` symlink, which a watch on the file itself never sees), and a
// poll re-reads the file as a fallback (network filesystems, watch limits). An invalid new version never
// replaces the last good one: onInvalid(err) lets the caller log it and emit an event.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Clock, Timer } from '../../runtime/clock.ts';
import { realClock } from '../../runtime/clock.ts';
import type { Logger } from '../../types/logger.ts';
import { silentLogger } from '../../types/logger.ts';
import { loadHostPathConfig, ConfigError, type HostPathConfig } from './hostpath-config.ts';

/** Options of ConfigFileSource: the file, how often it is checked, logger and clock. */
export interface ConfigFileSourceOptions {
  /** The JSON or YAML file (e.g. a mounted ConfigMap's `config.json`). */
  path: string;
  /** This instance's node: its paths are checked on disk (shared paths always are). */
  nodeName?: string;
  /** Re-read interval of the poll fallback. Default 10 s; 0 disables polling. */
  pollIntervalMs?: number;
  /** How long an invalid version must stay unchanged before it is reported (half-written files). Default 200 ms. */
  settleMs?: number;
  /** Use fs.watch as well as polling. Default true. */
  watch?: boolean;
  /** A new valid configuration was applied (not called for the initial load). */
  onChange?(config: HostPathConfig): void;
  /** A new version is invalid or unreadable; the last good configuration stays in force. */
  onInvalid?(err: Error): void;
  clock?: Clock;
  logger?: Logger;
}

/** Holds the current configuration and keeps it up to date with its file. */
export class ConfigFileSource {
  private config?: HostPathConfig;
  private lastText?: string;
  private lastInvalidText?: string;
  private watcher?: fs.FSWatcher;
  private pollTimer?: Timer;
  private debounce?: Timer;
  private stopped = false;
  private reloading: Promise<void> = Promise.resolve();
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(private readonly opts: ConfigFileSourceOptions) {
    this.clock = opts.clock ?? realClock;
    this.logger = (opts.logger ?? silentLogger).child({ component: 'hostpath-config', file: opts.path });
  }

  /** Loads the file (throws ConfigError or the read error when the first version is invalid), then watches it. */
  async start(): Promise<HostPathConfig> {
    const text = await fsp.readFile(this.opts.path, 'utf8');
    this.config = await loadHostPathConfig(text, { nodeName: this.opts.nodeName, source: this.opts.path });
    this.lastText = text;
    this.logWarnings(this.config);
    if (this.stopped) return this.config;
    if (this.opts.watch !== false) this.startWatch();
    this.schedulePoll();
    return this.config;
  }

  /** The configuration in force (the last good one). Throws before start() succeeded. */
  current(): HostPathConfig {
    if (!this.config) throw new Error('ConfigFileSource: current() before start()');
    return this.config;
  }

  /** Re-reads the file now. Resolves true when a new configuration was applied. */
  reload(): Promise<boolean> {
    const run = this.reloading.then(() => this.reloadOnce());
    this.reloading = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  /** Stops watching and polling; leaves no timers or handles behind. */
  stop(): void {
    this.stopped = true;
    this.watcher?.close();
    this.watcher = undefined;
    this.pollTimer?.cancel();
    this.debounce?.cancel();
  }

  private async reloadOnce(): Promise<boolean> {
    if (this.stopped) return false;
    let text: string;
    try {
      text = await fsp.readFile(this.opts.path, 'utf8');
    } catch (e) {
      this.invalid(e as Error, `unreadable:${(e as NodeJS.ErrnoException).code}`);
      return false;
    }
    if (text === this.lastText) return false;
    try {
      const next = await loadHostPathConfig(text, { nodeName: this.opts.nodeName, source: this.opts.path });
      if (this.stopped) return false;
      this.config = next;
      this.lastText = text;
      this.lastInvalidText = undefined;
      this.logger.info({ config: summarize(next) }, 'hostpath configuration reloaded');
      this.logWarnings(next);
      this.opts.onChange?.(next);
      return true;
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      // An editor writing in place can be caught half-way: only a version that stays put is reported.
      await this.clock.sleep(this.opts.settleMs ?? 200);
      const again = await fsp.readFile(this.opts.path, 'utf8').catch(() => undefined);
      if (again !== text) return this.stopped ? false : this.reloadOnce();
      this.invalid(e, text);
      return false;
    }
  }

  // The same broken content is reported once, not on every poll.
  private invalid(err: Error, key: string): void {
    if (this.lastInvalidText === key) return;
    this.lastInvalidText = key;
    this.logger.error({ err: err.message }, 'invalid hostpath configuration; keeping the last good one');
    this.opts.onInvalid?.(err);
  }

  private startWatch(): void {
    try {
      this.watcher = fs.watch(path.dirname(this.opts.path), { persistent: false }, () => this.scheduleReload());
      this.watcher.on('error', (err) => {
        this.logger.warn({ err: err.message }, 'config watch failed; polling only');
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch (e) {
      this.logger.warn({ err: (e as Error).message }, 'config watch unavailable; polling only');
    }
  }

  // Editors and kubelet write in several steps: wait for the burst to end.
  private scheduleReload(): void {
    if (this.stopped) return;
    this.debounce?.cancel();
    this.debounce = this.clock.setTimeout(
      () => void this.reload().catch((e: unknown) => this.invalid(e as Error, 'error')),
      100,
      { unref: true },
    );
  }

  private schedulePoll(): void {
    const every = this.opts.pollIntervalMs ?? 10_000;
    if (every <= 0 || this.stopped) return;
    this.pollTimer = this.clock.setTimeout(
      () => {
        void this.reload()
          .catch((e: unknown) => this.invalid(e as Error, 'error'))
          .finally(() => this.schedulePoll());
      },
      every,
      { unref: true },
    );
  }

  private logWarnings(config: HostPathConfig): void {
    for (const w of config.warnings) this.logger.warn({}, w);
  }
}

/** A one-line, log-friendly view of a configuration (paths and capacities). */
export function summarize(config: HostPathConfig): Record<string, unknown> {
  const set = (s: HostPathConfig | HostPathConfig['storageClassConfigs'][string]) => ({
    nodePathMap: s.nodePathMap.map((n) => ({
      node: n.node,
      paths: n.paths.map((p) => (p.capacity ? `${p.path} (${p.capacity})` : p.path)),
    })),
    sharedFileSystemPath: s.sharedFileSystemPath?.path,
  });
  return {
    ...set(config),
    storageClassConfigs: Object.fromEntries(Object.entries(config.storageClassConfigs).map(([k, v]) => [k, set(v)])),
  };
}
