// `dev --csi`: CSI mode on the embedded cluster in one command. The reference plugin (the hostpath provisioner as a
// CSI plugin, `run csi-hostpath-plugin` in a child process) serves DIR/csi/csi.sock; what a kubelet and node-driver-registrar would publish is written to the API
// (the CSIDriver, and this node's entry in its CSINode with the topology key); the CSI sidecar drives the plugin.
// StorageClasses `csi-hostpath` (Immediate, shared path) and `csi-hostpath-local` (WaitForFirstConsumer, node path)
// use the driver. The sidecar is `kube-provisioner run csi`'s, in this process (startDevCsiSidecar).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Registry } from 'prom-client';
import { socketPathOf } from '../csi/csi-client.ts';
import { csiNodes } from '../csi/kinds.ts';
import { DEFAULT_NODE } from '../hostpath/config/hostpath-config.ts';
import type { KubeClient } from '../runtime/client.ts';
import { AlreadyExistsError, NotFoundError } from '../runtime/errors.ts';
import type { Logger } from '../runtime/logger.ts';
import { defineResource, storageClasses } from '../runtime/resources.ts';
import { LABEL_HOSTNAME } from '../types/annotations.ts';
import type { StorageClass } from '../types/k8s.ts';
import type { CSIDriver, CSINode } from '../types/storage-objects.ts';
import { HOSTPATH_CSI_DRIVER, PARAM_CONFIG_CLASS } from './csi-hostpath-plugin.ts';
import { parseRunCsiArgs } from './csi-options.ts';
import { startCsiSidecar, type CsiSidecar } from './run-csi.ts';

/** CSIDrivers (cluster-scoped). */
export const csiDrivers = defineResource<CSIDriver>('storage.k8s.io', 'v1', 'csidrivers', 'CSIDriver', false);

/** The classes `dev --csi` creates. */
export const DEV_CSI_CLASSES = { shared: 'csi-hostpath', local: 'csi-hostpath-local' } as const;

/** The StorageClasses of the reference plugin in dev (also used by tests and benchmarks). */
export function devCsiStorageClasses(driver = HOSTPATH_CSI_DRIVER): StorageClass[] {
  const base = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    provisioner: driver,
    reclaimPolicy: 'Delete' as const,
    allowVolumeExpansion: true,
  };
  const pathPattern = '${.PVC.namespace}/${.PVC.name}-${.PV.name}';
  return [
    {
      ...base,
      metadata: { name: DEV_CSI_CLASSES.shared },
      volumeBindingMode: 'Immediate',
      parameters: { [PARAM_CONFIG_CLASS]: DEV_CSI_CLASSES.shared, pathPattern, onDelete: 'delete' },
    },
    {
      ...base,
      metadata: { name: DEV_CSI_CLASSES.local },
      volumeBindingMode: 'WaitForFirstConsumer',
      parameters: { [PARAM_CONFIG_CLASS]: DEV_CSI_CLASSES.local, pathPattern },
    },
  ];
}

/** The plugin's first-run configuration: DIR/volumes/csi-shared and this node's DIR/volumes/csi-local. */
export function devCsiConfig(volumesDir: string): object {
  return {
    storageClassConfigs: {
      [DEV_CSI_CLASSES.shared]: { sharedFileSystemPath: join(volumesDir, 'csi-shared') },
      [DEV_CSI_CLASSES.local]: { nodePathMap: [{ node: DEFAULT_NODE, paths: [join(volumesDir, 'csi-local')] }] },
    },
  };
}

/**
 * What node-driver-registrar and the kubelet publish for a driver: its CSIDriver (no attach, persistent volumes),
 * and its entry (node id, topology keys) in the node's CSINode, created or updated. Idempotent.
 */
export async function registerCsiDriver(
  client: KubeClient,
  driver: string,
  nodeName: string,
  topologyKey = LABEL_HOSTNAME,
): Promise<void> {
  await client
    .create(csiDrivers, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: driver },
      spec: {
        attachRequired: false,
        podInfoOnMount: false,
        volumeLifecycleModes: ['Persistent'],
        storageCapacity: false,
        fsGroupPolicy: 'File',
      },
    })
    .catch((err: unknown) => {
      if (!(err instanceof AlreadyExistsError)) throw err;
    });
  const entry = { name: driver, nodeID: nodeName, topologyKeys: [topologyKey] };
  const existing = await client.get<CSINode>(csiNodes, nodeName).catch((err: unknown) => {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  });
  if (!existing) {
    await client.create(csiNodes, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: nodeName },
      spec: { drivers: [entry] },
    });
    return;
  }
  const drivers = (existing.spec.drivers ?? []).filter((d) => d.name !== driver);
  await client.update(csiNodes, { ...existing, spec: { ...existing.spec, drivers: [...drivers, entry] } });
}

/** How dev runs the sidecar. */
export interface DevCsiSidecarOptions {
  client: KubeClient;
  /** The plugin's socket. */
  address: string;
  workerThreads: number;
  logger: Logger;
  registry?: Registry;
  signal?: AbortSignal;
}

/**
 * The flags of `kube-provisioner run csi` that dev's sidecar runs with (tests and benchmarks start it with them too).
 * No health endpoint, and no client-side rate limit, as dev's own client: the cluster is local (`run csi`'s default of 20 QPS would cap the
 * sidecar at 4-6 claims/s, since a claim takes 3-5 requests).
 */
export function devCsiSidecarArgs(address: string, workerThreads: number): string[] {
  return [
    '--csi-address',
    address,
    '--leader-election',
    'none',
    '--worker-threads',
    String(workerThreads),
    '--extra-create-metadata',
    '--kube-api-qps',
    '0',
    // No fixed port: dev serves its own endpoints, and two dev instances (or tests) must not collide on :8080.
    '--health-address',
    'off',
  ];
}

/**
 * The sidecar of `dev --csi`: `kube-provisioner run csi`'s startCsiSidecar in this process, on dev's API client,
 * with external-provisioner's defaults and `--extra-create-metadata` (the plugin names directories after the
 * claims), no leader election.
 */
export async function startDevCsiSidecar(o: DevCsiSidecarOptions): Promise<CsiSidecar> {
  const options = parseRunCsiArgs(devCsiSidecarArgs(o.address, o.workerThreads));
  return startCsiSidecar(options, {
    client: o.client,
    logger: o.logger,
    startupIntervalMs: 100,
    ...(o.registry ? { registry: o.registry } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  });
}

/** The reference plugin as `kube-provisioner run csi-hostpath-plugin` in a child process. */
export interface PluginProcess {
  driverName: string;
  /** `unix://…` */
  address: string;
  socketPath: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `kube-provisioner run csi-hostpath-plugin` as a child process (this module's main, with this process's
 * node flags, so a run from the sources stays one) and waits for it to listen. A process of its own: in the
 * cluster's process its replies waited behind the cluster's synchronous SQLite writes during a burst of creates,
 * past the sidecar's 10 s call deadline.
 */
export async function startPluginProcess(o: {
  endpoint: string;
  configFile: string;
  nodeName: string;
  logLevel?: string;
}): Promise<PluginProcess> {
  const main = fileURLToPath(new URL(`./main${extname(fileURLToPath(import.meta.url))}`, import.meta.url));
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      main,
      'run',
      'csi-hostpath-plugin',
      '--endpoint',
      o.endpoint,
      '--config',
      o.configFile,
      '--node-name',
      o.nodeName,
      '--log-level',
      o.logLevel ?? 'warn',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  // Its logs go to dev's stderr; its own note on the SIGTERM that stop() sends does not.
  child.stderr!.on('data', (b: Buffer) => {
    const text = b
      .toString()
      .split('\n')
      .filter((l) => !/^received SIG[A-Z]+, shutting down/.test(l))
      .join('\n');
    if (text.trim()) process.stderr.write(text.endsWith('\n') ? text : `${text}\n`);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (b: Buffer) => {
      out += b.toString();
      const found = out.split('\n').find((l) => l.includes(' listening on '));
      if (found) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(found);
      }
    };
    child.stdout!.on('data', onData);
    void exited.then(() =>
      reject(
        new Error(`the CSI plugin process exited before it listened (exit code ${child.exitCode ?? child.signalCode})`),
      ),
    );
  });
  const m = / (\S+) listening on (unix:\/\/\S+)/.exec(line);
  const address = m?.[2] ?? o.endpoint;
  return {
    driverName: m?.[1] ?? HOSTPATH_CSI_DRIVER,
    address,
    socketPath: socketPathOf(address),
    child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** CSI mode in dev: the plugin, its registration, the sidecar. */
export interface DevCsi {
  plugin: PluginProcess;
  sidecar: CsiSidecar;
  configFile: string;
  stop(): Promise<void>;
}

/**
 * Starts the reference plugin process (configuration DIR/csi-hostpath-config.json), registers it, creates its
 * classes, starts the sidecar in this process.
 */
export async function startDevCsi(o: {
  client: KubeClient;
  dataDir: string;
  nodeName: string;
  workerThreads: number;
  logger: Logger;
  logLevel?: string;
  registry?: Registry;
  signal?: AbortSignal;
}): Promise<DevCsi> {
  const volumesDir = join(o.dataDir, 'volumes');
  await mkdir(join(volumesDir, 'csi-shared'), { recursive: true });
  await mkdir(join(volumesDir, 'csi-local'), { recursive: true });
  const configFile = join(o.dataDir, 'csi-hostpath-config.json');
  if (!existsSync(configFile)) await writeFile(configFile, `${JSON.stringify(devCsiConfig(volumesDir), null, 2)}\n`);
  const plugin = await startPluginProcess({
    endpoint: `unix://${join(o.dataDir, 'csi', 'csi.sock')}`,
    configFile,
    nodeName: o.nodeName,
    logLevel: o.logLevel,
  });
  try {
    await registerCsiDriver(o.client, plugin.driverName, o.nodeName);
    for (const sc of devCsiStorageClasses(plugin.driverName)) {
      await o.client.create(storageClasses, sc).catch((err: unknown) => {
        if (!(err instanceof AlreadyExistsError)) throw err;
      });
    }
    const sidecar = await startDevCsiSidecar({
      client: o.client,
      address: plugin.address,
      workerThreads: o.workerThreads,
      logger: o.logger,
      registry: o.registry,
      signal: o.signal,
    });
    return {
      plugin,
      sidecar,
      configFile,
      stop: async () => {
        await sidecar.stop();
        await plugin.stop();
      },
    };
  } catch (err) {
    await plugin.stop();
    throw err;
  }
}
