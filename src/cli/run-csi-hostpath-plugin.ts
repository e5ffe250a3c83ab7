// `kube-provisioner run csi-hostpath-plugin`: the reference CSI plugin (csi-hostpath-plugin.ts) served on a unix
// socket, with its hostpath configuration from a file (hot-reloaded), until SIGINT/SIGTERM. It talks to no
// Kubernetes API: pair it with a CSI sidecar (`kube-provisioner run csi`, or external-provisioner).
import { hostname } from 'node:os';
import { Command, Option } from 'commander';
import { serveCsiPlugin, type CsiServer } from '../csi/csi-server.ts';
import { ConfigFileSource } from '../hostpath/config/config-file-source.ts';
import type { HostPathConfig } from '../hostpath/config/hostpath-config.ts';
import { createLogger, type Logger } from '../runtime/logger.ts';
import { LABEL_HOSTNAME } from '../types/annotations.ts';
import { HOSTPATH_CSI_DRIVER, hostPathCsiPlugin, type Mounter } from './csi-hostpath-plugin.ts';
import { LOG_LEVELS, type LogLevel } from './flags.ts';
import { abortOnSignals } from './signals.ts';
import { VERSION } from './version.ts';

/** What `run csi-hostpath-plugin` takes. */
export interface CsiHostPathPluginRunOptions {
  /** `unix:///path` or `/path` (CSI_ENDPOINT). */
  endpoint: string;
  /** A hostpath configuration file, or the configuration itself. */
  config: { file: string } | { value: HostPathConfig };
  nodeName: string;
  driverName?: string;
  topologyKey?: string;
  mounter?: Mounter;
  logger?: Logger;
}

/** A running plugin: stop() ends the server and the configuration watch. */
export interface RunningCsiHostPathPlugin {
  server: CsiServer;
  driverName: string;
  stop(): Promise<void>;
}

/** Loads the configuration, then serves the plugin. Throws when the configuration is missing or invalid. */
export async function startCsiHostPathPlugin(o: CsiHostPathPluginRunOptions): Promise<RunningCsiHostPathPlugin> {
  let holder: { current(): HostPathConfig; stop(): unknown };
  if ('file' in o.config) {
    const source = new ConfigFileSource({
      path: o.config.file,
      nodeName: o.nodeName,
      ...(o.logger ? { logger: o.logger } : {}),
    });
    await source.start();
    holder = source;
  } else {
    const value = o.config.value;
    holder = { current: () => value, stop: () => undefined };
  }
  const plugin = hostPathCsiPlugin({
    config: holder,
    nodeName: o.nodeName,
    driverName: o.driverName,
    topologyKey: o.topologyKey,
    version: VERSION,
    ...(o.mounter ? { mounter: o.mounter } : {}),
    ...(o.logger ? { logger: o.logger } : {}),
  });
  let server: CsiServer;
  try {
    server = await serveCsiPlugin({
      endpoint: o.endpoint,
      handlers: plugin.handlers,
      ...(o.logger ? { logger: o.logger } : {}),
    });
  } catch (err) {
    holder.stop();
    throw err;
  }
  return {
    server,
    driverName: plugin.driverName,
    stop: async () => {
      await server.stop();
      holder.stop();
    },
  };
}

interface Flags {
  endpoint: string;
  config: string;
  nodeName?: string;
  driverName: string;
  topologyKey: string;
  logLevel: LogLevel;
}

/** Registers `run csi-hostpath-plugin` under `run`. */
export function registerCsiHostPathPluginCommand(run: Command): void {
  const cmd = new Command('csi-hostpath-plugin')
    .description(
      'serve the hostpath provisioner as a CSI plugin (Identity, Controller, Node) on a unix socket, for a CSI sidecar',
    )
    .addOption(
      new Option('--endpoint <unix:///path>', 'the socket to listen on').env('CSI_ENDPOINT').makeOptionMandatory(),
    )
    .addOption(
      new Option('--config <file>', 'hostpath configuration file (JSON or YAML, hot-reloaded)').makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--node-name <name>',
        "this node: NodeGetInfo's node id and topology value (default: $NODE_NAME, else the hostname)",
      ).env('NODE_NAME'),
    )
    .addOption(
      new Option(
        '--driver-name <name>',
        'the driver name GetPluginInfo answers (the StorageClass provisioner)',
      ).default(HOSTPATH_CSI_DRIVER),
    )
    .addOption(
      new Option('--topology-key <label>', 'the topology key (a Node label the sidecar reads the value from)').default(
        LABEL_HOSTNAME,
      ),
    )
    .addOption(
      new Option('--log-level <level>', 'log level (JSON logs on stderr)').choices([...LOG_LEVELS]).default('info'),
    );
  cmd.action(async (f: Flags) => {
    const logger = createLogger({ level: f.logLevel, name: 'kube-provisioner' });
    const stop = new AbortController();
    const removeHandlers = abortOnSignals(stop, logger, (line) => process.stderr.write(`${line}\n`));
    try {
      const plugin = await startCsiHostPathPlugin({
        endpoint: f.endpoint,
        config: { file: f.config },
        nodeName: f.nodeName || hostname(),
        driverName: f.driverName,
        topologyKey: f.topologyKey,
        logger,
      });
      process.stdout.write(
        `kube-provisioner run csi-hostpath-plugin: ${plugin.driverName} listening on ${plugin.server.address}\n`,
      );
      await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
      await plugin.stop();
      process.stdout.write('kube-provisioner run csi-hostpath-plugin: stopped\n');
    } finally {
      removeHandlers();
    }
  });
  run.addCommand(cmd);
}
