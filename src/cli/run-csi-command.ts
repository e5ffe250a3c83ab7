// The `run csi` command: flags (csi-options.ts), signals, and startCsiSidecar, imported only when the command runs
// so that `run hostpath` and `--help` never load the gRPC client.
import type { Command } from 'commander';
import { createLogger } from '../runtime/logger.ts';
import { addRunCsiOptions, resolveRunCsiOptions, type RawRunCsiFlags } from './csi-options.ts';
import { givenIn } from './flags.ts';
import { abortOnSignals } from './signals.ts';

/** Registers `run csi` on the `run` command. */
export function registerRunCsiCommand(run: Command): void {
  const csi = run
    .command('csi')
    .description('the sidecar of a CSI plugin: provisioning, resizing and capacity publishing in one process');
  addRunCsiOptions(csi).action(async (flags: RawRunCsiFlags, cmd: Command) => {
    // The environment fallbacks were applied by main's preAction hook.
    const options = resolveRunCsiOptions(flags, process.env, givenIn(cmd));
    const { startCsiSidecar } = await import('./run-csi.ts');
    const stop = new AbortController();
    const logger = createLogger({ level: options.logLevel, name: 'kube-provisioner' });
    const removeHandlers = abortOnSignals(stop, logger, (line) => process.stderr.write(`${line}\n`));
    try {
      let sidecar;
      try {
        sidecar = await startCsiSidecar(options, { logger, signal: stop.signal });
      } catch (err) {
        // A signal while waiting for the plugin's socket or its first ready Probe is a clean stop, not a failure.
        if (!stop.signal.aborted) throw err;
        process.stdout.write('kube-provisioner run csi: stopped before the plugin was ready\n');
        return;
      }
      stop.signal.addEventListener('abort', () => void sidecar.stop(), { once: true });
      process.stdout.write(
        `kube-provisioner run csi: driver ${sidecar.driverName} (leader election ${options.leaderElection}` +
          `${sidecar.provisioner.expand ? ', resize' : ''}${sidecar.capacity ? ', capacity' : ''})` +
          (sidecar.healthUrl ? `, health ${sidecar.healthUrl}/healthz` : '') +
          (sidecar.metricsUrl ? `, metrics ${sidecar.metricsUrl}` : '') +
          '\n',
      );
      await sidecar.done;
      process.stdout.write('kube-provisioner run csi: stopped\n');
    } finally {
      removeHandlers();
    }
  });
}
