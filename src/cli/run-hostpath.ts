// `kube-provisioner run hostpath`: the hostpath provisioner against a real (or embedded) cluster, configured by
// flags with environment fallbacks (options.ts), until SIGINT/SIGTERM, then a graceful shutdown that releases
// the Lease. Exit code 0 after a clean stop, 1 when it cannot start.
import type { Command } from 'commander';
import { KubeClient } from '../runtime/client.ts';
import { loadCliKubeConfig } from './user-errors.ts';
import { createLogger } from '../runtime/logger.ts';
import { checkConfigPaths, validateHostPathConfig, type HostPathConfig } from '../hostpath/config/hostpath-config.ts';
import { startHostPathService } from './hostpath-service.ts';
import { givenIn } from './flags.ts';
import {
  addRunHostPathOptions,
  resolveRunHostPathOptions,
  type RawRunHostPathFlags,
  type RunHostPathOptions,
} from './hostpath-options.ts';
import { abortOnSignals } from './signals.ts';
import { registerRunCsiCommand } from './run-csi-command.ts';
import { registerCsiHostPathPluginCommand } from './run-csi-hostpath-plugin.ts';
import { userAgent } from './version.ts';

/** Runs until `signal` aborts; resolves after a clean stop. Throws when it cannot start. */
export async function runHostPath(
  o: RunHostPathOptions,
  signal: AbortSignal,
  io: { out(line: string): void } = { out: () => {} },
): Promise<void> {
  const logger = createLogger({ level: o.logLevel, name: 'kube-provisioner' });
  const { kubeConfig, source } = loadCliKubeConfig({ path: o.kubeconfig, context: o.context });
  const client = new KubeClient({
    kubeConfig,
    userAgent: userAgent(o.provisionerName),
    qps: o.kubeApiQps,
    burst: o.kubeApiBurst,
    timeoutMs: o.kubeApiTimeoutMs,
  });
  try {
    logger.info({ kubeconfig: source, server: kubeConfig.getCurrentCluster()?.server }, 'connecting');
    const service = await startHostPathService(
      {
        client,
        provisionerName: o.provisionerName,
        mode: o.mode,
        nodeName: o.nodeName,
        config: o.configMap
          ? { configMap: o.configMap }
          : o.configFile
            ? { file: o.configFile }
            : { value: await nfsOnlyConfig(o.nfsMountPath) },
        nfs: o.nfs,
        otherNodeClaims: o.otherNodeClaims,
        controller: o.controller,
        healthAddress: o.healthAddress,
        metricsAddress: o.metricsAddress,
        volumeUsageIntervalMs: o.volumeUsageIntervalMs,
        volumeUsageWalkRate: o.volumeUsageWalkRate,
        logger,
      },
      signal,
    );
    io.out(
      `kube-provisioner run hostpath: provisioner ${o.provisionerName} (${o.mode}, leader election ${service.controller.options.leaderElection.mode})` +
        (service.healthUrl ? `, health ${service.healthUrl}/healthz` : '') +
        (service.metricsUrl ? `, metrics ${service.metricsUrl}` : ''),
    );
    await service.done;
    io.out('kube-provisioner run hostpath: stopped');
  } finally {
    client.close();
  }
}

/** nfs-subdir's setup, configured by its environment alone: the export's mount point is the shared path. */
async function nfsOnlyConfig(mountPath: string): Promise<HostPathConfig> {
  const config = validateHostPathConfig({ sharedFileSystemPath: mountPath }, '--nfs-mount-path');
  await checkConfigPaths(config, { source: '--nfs-mount-path' });
  return config;
}

/** Registers `run` and its `hostpath`, `csi` and `csi-hostpath-plugin` subcommands. */
export function registerRunCommand(program: Command): void {
  const run = program.command('run').description('run a provisioner against a cluster');
  const hostpath = run
    .command('hostpath')
    .description(
      'provision directories as volumes, on node-local paths (daemonset) or a shared filesystem (deployment)',
    );
  addRunHostPathOptions(hostpath).action(async (flags: RawRunHostPathFlags, cmd: Command) => {
    const options = resolveRunHostPathOptions(flags, process.env, givenIn(cmd));
    const stop = new AbortController();
    const removeHandlers = abortOnSignals(stop, createLogger({ level: options.logLevel }), (line) =>
      process.stderr.write(`${line}\n`),
    );
    try {
      await runHostPath(options, stop.signal, { out: (line) => process.stdout.write(`${line}\n`) });
    } finally {
      removeHandlers();
    }
  });
  registerRunCsiCommand(run);
  registerCsiHostPathPluginCommand(run);
}
