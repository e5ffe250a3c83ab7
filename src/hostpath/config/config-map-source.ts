// The hostpath configuration read from a ConfigMap through the API (an informer on that one object), so an
// edit applies within a second instead of after the kubelet's volume sync and a file poll. Like the file
// source: an invalid version never replaces the last good one; it is logged and reported as a Warning event
// on the ConfigMap. A deleted ConfigMap keeps the last configuration in force. local-path's other keys of the
// same ConfigMap (setup, teardown, helperPod.yaml) are read with it.
import {
  ConfigError,
  loadHostPathConfig,
  type ConfigCompanions,
  type ConfigHolder,
  type HostPathConfig,
} from './hostpath-config.ts';
import { summarize } from './config-file-source.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { Informer } from '../../runtime/informer.ts';
import type { Logger } from '../../types/logger.ts';
import { silentLogger } from '../../types/logger.ts';
import { configMaps } from '../../runtime/resources.ts';
import type { EventSink } from '../../types/events.ts';
import type { KubeObject } from '../../types/k8s.ts';

/** The part of a ConfigMap we read. */
interface ConfigMapObject extends KubeObject {
  data?: Record<string, string>;
}

/** Where invalid configurations are reported (an EventRecorder fits). */

export interface ConfigMapSourceOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  /** Data key holding the JSON or YAML configuration. */
  key: string;
  /** This instance's node: its paths are checked on disk. */
  nodeName?: string;
  events?: EventSink;
  logger?: Logger;
  onChange?(config: HostPathConfig): void;
  /** A new version is invalid; the last good configuration stays in force. */
  onInvalid?(err: Error): void;
}

/** The ConfigMap or its key does not exist when the source starts. */
export class ConfigMapMissingError extends Error {
  override name = 'ConfigMapMissingError';
}

/** Event reason of a rejected configuration. */
export const REASON_INVALID_CONFIG = 'InvalidConfiguration';
/** Event reason of an applied new configuration. */
export const REASON_CONFIG_RELOADED = 'ConfigurationReloaded';

/** Holds the configuration in force and follows its ConfigMap. */
export class ConfigMapSource implements ConfigHolder {
  private config?: HostPathConfig;
  private lastText?: string;
  private lastInvalid?: string;
  private informer?: Informer<ConfigMapObject>;
  private applying: Promise<void> = Promise.resolve();
  private readonly logger: Logger;

  constructor(private readonly opts: ConfigMapSourceOptions) {
    this.logger = (opts.logger ?? silentLogger).child({
      component: 'hostpath-config',
      configMap: `${opts.namespace}/${opts.name}`,
      key: opts.key,
    });
  }

  /** Lists the ConfigMap, loads the first configuration (throws when missing or invalid), then follows it. */
  async start(signal: AbortSignal): Promise<HostPathConfig> {
    const { client, namespace, name } = this.opts;
    const informer = new Informer<ConfigMapObject>({
      client,
      resource: configMaps,
      namespace,
      fieldSelector: `metadata.name=${name}`,
      logger: this.logger,
      handlers: {
        onAdd: (cm) => this.enqueue(cm),
        onUpdate: (_old, cm) => this.enqueue(cm),
        onDelete: () => this.logger.warn({}, 'configuration ConfigMap deleted; keeping the last configuration'),
      },
    });
    this.informer = informer;
    informer.start(signal);
    await informer.synced;
    const cm = informer.store.get(namespace, name);
    const text = cm?.data?.[this.opts.key];
    if (text === undefined) {
      await this.stop();
      throw new ConfigMapMissingError(
        cm ? `ConfigMap ${namespace}/${name} has no key ${this.opts.key}` : `ConfigMap ${namespace}/${name} not found`,
      );
    }
    await this.applying;
    if (!this.config) {
      // The first version is invalid: refuse to start (there is no last good configuration to fall back to).
      const err = await loadHostPathConfig(text, {
        nodeName: this.opts.nodeName,
        source: `${namespace}/${name}:${this.opts.key}`,
        companions: companions(cm),
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      await this.stop();
      throw err instanceof Error ? err : new ConfigError([String(err)]);
    }
    return this.config;
  }

  /** The configuration in force. Throws before start() succeeded. */
  current(): HostPathConfig {
    if (!this.config) throw new Error('ConfigMapSource: current() before start()');
    return this.config;
  }

  async stop(): Promise<void> {
    await this.informer?.stop();
  }

  private enqueue(cm: ConfigMapObject): void {
    this.applying = this.applying
      .then(() => this.apply(cm))
      .catch((e: unknown) => this.logger.error({ err: (e as Error).message }, 'applying configuration failed'));
  }

  private async apply(cm: ConfigMapObject): Promise<void> {
    const text = cm.data?.[this.opts.key];
    if (text === undefined) {
      this.reject(cm, `key ${this.opts.key} is missing`, 'missing-key');
      return;
    }
    // The scripts are part of the configuration: a changed script alone is a new version.
    const fingerprint = JSON.stringify([text, companions(cm)]);
    if (fingerprint === this.lastText) return;
    try {
      const next = await loadHostPathConfig(text, {
        nodeName: this.opts.nodeName,
        source: `${this.opts.namespace}/${this.opts.name}:${this.opts.key}`,
        companions: companions(cm),
      });
      const initial = this.config === undefined;
      this.config = next;
      this.lastText = fingerprint;
      this.lastInvalid = undefined;
      for (const w of next.warnings) this.logger.warn({}, w);
      this.logger.info(
        { config: summarize(next) },
        initial ? 'hostpath configuration loaded' : 'hostpath configuration reloaded',
      );
      if (!initial) {
        this.opts.events?.event(
          cm,
          'Normal',
          REASON_CONFIG_RELOADED,
          `hostpath configuration (key ${this.opts.key}) applied`,
        );
        this.opts.onChange?.(next);
      }
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      this.reject(cm, e.message, fingerprint);
    }
  }

  // The same broken content is reported once, not on every resync.
  private reject(cm: ConfigMapObject, message: string, fingerprint: string): void {
    if (this.lastInvalid === fingerprint) return;
    this.lastInvalid = fingerprint;
    const kept = this.config ? 'keeping the last good configuration' : 'no configuration in force yet';
    this.logger.error({ err: message }, `invalid hostpath configuration; ${kept}`);
    if (this.config) {
      this.opts.events?.event(
        cm,
        'Warning',
        REASON_INVALID_CONFIG,
        `invalid hostpath configuration (key ${this.opts.key}), ${kept}: ${message}`,
      );
      this.opts.onInvalid?.(new Error(message));
    }
  }
}

/** local-path's companion keys of the configuration ConfigMap. */
function companions(cm: ConfigMapObject | undefined): ConfigCompanions {
  const d = cm?.data ?? {};
  const out: ConfigCompanions = {};
  for (const key of ['setup', 'teardown', 'helperPod.yaml'] as const) if (typeof d[key] === 'string') out[key] = d[key];
  return out;
}
