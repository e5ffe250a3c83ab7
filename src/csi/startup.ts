// External-provisioner's start-up, as steps a caller can also take one by one: wait for the plugin's socket to
// appear, Probe until it says ready (nothing is created before), then GetPluginInfo (its name is the provisioner
// name) and the plugin and controller capabilities. Refusing a plugin without CREATE_DELETE_VOLUME is the
// provisioner's call (CsiProvisioner.start), not the client's: capacity publishing or a resizer need less.
import { stat } from 'node:fs/promises';
import type { Clock } from '../runtime/clock.ts';
import type { Logger } from '../runtime/logger.ts';
import type { CsiClient } from './csi-client.ts';
import type { ControllerRpcType, PluginServiceType } from './descriptors.ts';
import { CsiError, GRPC_CODES } from './grpc-status.ts';

/** What a plugin said about itself at start-up. */
export interface CsiDriverInfo {
  /** GetPluginInfo's name: the provisioner (driver) name. */
  name: string;
  vendorVersion: string;
  manifest: Record<string, string>;
  /** Plugin capabilities (services). */
  pluginCapabilities: ReadonlySet<PluginServiceType>;
  /** Controller capabilities (RPCs); empty without CONTROLLER_SERVICE. */
  controllerCapabilities: ReadonlySet<ControllerRpcType>;
  /** The plugin's VolumeExpansion capability, if any (node-side expansion: the "trivial" resizer). */
  volumeExpansion?: 'ONLINE' | 'OFFLINE';
}

/** The plugin answered, but cannot serve us (a fatal start-up condition, like external-provisioner's exit). */
export class CsiStartupError extends Error {
  override name = 'CsiStartupError';
}

/** Timing of the start-up waits. */
export interface StartupTiming {
  clock: Clock;
  logger: Logger;
  /** Between two looks for the socket, and between two probes (csi-lib-utils probes every second). */
  intervalMs?: number;
}

/** Resolves once `socketPath` exists (the plugin container may start after us). Rejects when `signal` aborts. */
export async function waitForSocket(socketPath: string, signal: AbortSignal, t: StartupTiming): Promise<void> {
  let logged = false;
  for (;;) {
    try {
      await stat(socketPath);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (!logged) t.logger.info({ socket: socketPath }, 'waiting for the CSI plugin socket to appear');
    logged = true;
    await t.clock.sleep(t.intervalMs ?? 1000, signal);
  }
}

/**
 * Probes until the plugin reports ready (csi-lib-utils' ProbeForever). A probe that times out, finds nobody
 * listening yet (UNAVAILABLE) or says `ready: false` is repeated; any other failure is fatal (CsiStartupError).
 * An absent `ready` means ready, as the spec says.
 */
export async function probeUntilReady(client: CsiClient, signal: AbortSignal, t: StartupTiming): Promise<void> {
  for (;;) {
    try {
      const reply = await client.call('probe', {}, { signal });
      // BoolValue{false} is an empty message on the wire: present means "as its value says", absent means ready.
      if (reply.ready === undefined || reply.ready.value === true) return;
      t.logger.info({}, 'CSI driver is not ready');
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (
        !(err instanceof CsiError) ||
        (err.code !== GRPC_CODES.DeadlineExceeded && err.code !== GRPC_CODES.Unavailable)
      ) {
        throw new CsiStartupError(`CSI driver probe failed: ${err instanceof Error ? err.message : String(err)}`, {
          cause: err,
        });
      }
      t.logger.info({ code: err.codeName }, 'CSI driver probe did not answer yet');
    }
    await t.clock.sleep(t.intervalMs ?? 1000, signal);
  }
}

/** GetPluginInfo, GetPluginCapabilities and (with CONTROLLER_SERVICE) ControllerGetCapabilities, each once. */
export async function readDriverInfo(client: CsiClient, signal: AbortSignal): Promise<CsiDriverInfo> {
  const info = await client.call('getPluginInfo', {}, { signal });
  if (!info.name) throw new CsiStartupError('CSI driver returned an empty name in GetPluginInfo');
  client.driverName = info.name;
  const plugin = await client.call('getPluginCapabilities', {}, { signal });
  const pluginCapabilities = new Set<PluginServiceType>();
  let volumeExpansion: CsiDriverInfo['volumeExpansion'];
  for (const c of plugin.capabilities ?? []) {
    if (c.service?.type && c.service.type !== 'UNKNOWN') pluginCapabilities.add(c.service.type);
    const exp = c.volumeExpansion?.type;
    if (exp === 'ONLINE' || exp === 'OFFLINE') volumeExpansion = exp;
  }
  const controllerCapabilities = new Set<ControllerRpcType>();
  if (pluginCapabilities.has('CONTROLLER_SERVICE')) {
    const ctrl = await client.call('controllerGetCapabilities', {}, { signal });
    for (const c of ctrl.capabilities ?? [])
      if (c.rpc?.type && c.rpc.type !== 'UNKNOWN') controllerCapabilities.add(c.rpc.type);
  }
  return {
    name: info.name,
    vendorVersion: info.vendorVersion ?? '',
    manifest: info.manifest ?? {},
    pluginCapabilities,
    controllerCapabilities,
    ...(volumeExpansion ? { volumeExpansion } : {}),
  };
}

/** The whole start-up: socket, Probe until ready, then the driver's name and capabilities. */
export async function waitForPlugin(client: CsiClient, signal: AbortSignal, t: StartupTiming): Promise<CsiDriverInfo> {
  await waitForSocket(client.socketPath, signal, t);
  await probeUntilReady(client, signal, t);
  const info = await readDriverInfo(client, signal);
  t.logger.info(
    {
      driver: info.name,
      version: info.vendorVersion,
      plugin: [...info.pluginCapabilities],
      controller: [...info.controllerCapabilities],
    },
    'CSI driver ready',
  );
  return info;
}
