// Shared fixtures of the hostpath integration tests: the embedded cluster (with its PV binder and scheduler
// stand-in), real temp directories, in-process HostPathProvisioner + ProvisionController instances, object
// builders for classes, claims and pods, event lookups and a polling wait (timeouts only, no timing assertions).
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import type { ProvisionControllerOptions } from '../../src/controller/options/controller-options.ts';
import {
  HostPathProvisioner,
  type HostPathMode,
  type HostPathProvisionerOptions,
} from '../../src/hostpath/hostpath-provisioner.ts';
import type { ConfigHolder, HostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { EventRecorder } from '../../src/runtime/event-recorder.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { persistentVolumeClaims, persistentVolumes, pods, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../src/types/k8s.ts';
import { waitFor as poll, type Probe } from '../support/wait.ts';

export const NS = 'default';

export interface HostPathEnv {
  cluster: TestCluster;
  client: KubeClient;
  /** realpath of a fresh temp directory, removed by stop(). */
  tmp: string;
  /** The node the embedded cluster registered (this machine). */
  localNode: string;
  claim(name: string): PersistentVolumeClaim | undefined;
  volume(name: string): PersistentVolume | undefined;
  volumes(): PersistentVolume[];
  /** Events on the object `name`, optionally only those recorded by a component starting with `component`. */
  events(name: string, component?: string): CoreEvent[];
  stop(): Promise<void>;
}

export async function startHostPathEnv(prefix: string): Promise<HostPathEnv> {
  const tmp = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), prefix)));
  const cluster = await startCluster();
  const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'hostpath-integration-test' });
  const store = cluster.store;
  const localNode = store.list('nodes').items[0]?.metadata.name ?? '';
  return {
    cluster,
    client,
    tmp,
    localNode,
    claim: (name) => store.get('persistentvolumeclaims', NS, name) as PersistentVolumeClaim | undefined,
    volume: (name) => store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined,
    volumes: () => store.list('persistentvolumes').items as PersistentVolume[],
    events: (name, component) =>
      (store.list('events').items as CoreEvent[]).filter(
        (e) =>
          e.involvedObject.name === name &&
          (component === undefined || (e.reportingComponent ?? e.source?.component ?? '').startsWith(component)),
      ),
    stop: async () => {
      client.close();
      await cluster.stop();
      await fsp.rm(tmp, { recursive: true, force: true });
    },
  };
}

/** Controller options that make tests fast (no leader election, small backoffs). */
export const FAST_CONTROLLER: ProvisionControllerOptions = {
  leaderElection: { mode: 'none' },
  threadiness: 2,
  // Infeasible claims are retried only when they or their class change (the tests change them on purpose).
  retry: { backoffBaseMs: 20, backoffMaxMs: 200, infeasibleDelayMs: 600_000 },
  volumeSave: { mode: 'retry', retryCount: 3, intervalMs: 20 },
};

export interface Instance {
  provisioner: HostPathProvisioner;
  controller: ProvisionController;
  /** provision()/delete() calls and their outcome (`ok`, or the error class name). */
  calls: Array<{ op: 'provision' | 'delete'; name: string; outcome: string }>;
  stop(): Promise<void>;
}

/** A HostPathProvisioner (wrapped to record its calls) and a ProvisionController for it, running. */
export function startInstance(
  env: HostPathEnv,
  o: {
    provisionerName: string;
    config: HostPathConfig | ConfigHolder;
    mode?: HostPathMode;
    nodeName?: string;
    identity?: string;
    controller?: ProvisionControllerOptions;
    /** Extra provisioner options (gone-node policy, clock, otherNodeClaims, nfs, getNode...). */
    provisioner?: Partial<HostPathProvisionerOptions>;
  },
): Instance {
  const events = new EventRecorder({
    client: env.client,
    component: o.provisionerName,
    host: o.nodeName ?? 'test',
    logger: silentLogger,
  });
  const provisioner = new HostPathProvisioner({
    config: o.config,
    mode: o.mode,
    nodeName: o.nodeName,
    logger: silentLogger,
    events,
    knownVolumes: async (signal) => (await env.client.listAll<PersistentVolume>(persistentVolumes, { signal })).items,
    storageClass: (name) => env.cluster.store.get('storageclasses', undefined, name) as StorageClass | undefined,
    ...(o.provisioner ?? {}),
  });
  const calls: Instance['calls'] = [];
  const record = <T>(op: 'provision' | 'delete', name: string, p: Promise<T>): Promise<T> =>
    p.then(
      (v) => {
        calls.push({ op, name, outcome: 'ok' });
        return v;
      },
      (e: unknown) => {
        calls.push({ op, name, outcome: (e as Error).name });
        throw e;
      },
    );
  // The controller sees a recording façade with the provisioner's optional hooks.
  const facade = {
    provision: (opts: Parameters<HostPathProvisioner['provision']>[0], signal: AbortSignal) =>
      record('provision', opts.pvName, provisioner.provision(opts, signal)),
    delete: (v: PersistentVolume, signal: AbortSignal) =>
      record('delete', v.metadata.name ?? '', provisioner.delete(v, signal)),
    shouldProvision: (c: PersistentVolumeClaim) => provisioner.shouldProvision(c),
    supportsBlock: () => provisioner.supportsBlock(),
    listVolumes: (signal: AbortSignal) => provisioner.listVolumes(signal),
  };
  const controller = new ProvisionController(env.client, o.provisionerName, facade, {
    ...FAST_CONTROLLER,
    ...(o.controller ?? {}),
    logger: silentLogger,
    identity: o.identity ?? `${o.nodeName ?? 'instance'}-test`,
  });
  const running = controller.run();
  return {
    provisioner,
    controller,
    calls,
    stop: async () => {
      await controller.stop();
      await running;
      await events.stop();
    },
  };
}

export function storageClass(name: string, provisioner: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    ...extra,
  };
}

export function claim(
  name: string,
  className: string,
  extra: {
    size?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    spec?: Partial<PersistentVolumeClaim['spec']>;
  } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: NS,
      ...(extra.labels ? { labels: extra.labels } : {}),
      ...(extra.annotations ? { annotations: extra.annotations } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: extra.size ?? '1Mi' } },
      storageClassName: className,
      ...(extra.spec ?? {}),
    },
  };
}

export async function createClass(env: HostPathEnv, sc: StorageClass): Promise<void> {
  await env.client.create(storageClasses, sc);
}

export async function createClaim(env: HostPathEnv, c: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
  return env.client.create<PersistentVolumeClaim>(persistentVolumeClaims, c, { namespace: NS });
}

export async function deleteClaim(env: HostPathEnv, name: string): Promise<void> {
  await env.client.delete(persistentVolumeClaims, name, { namespace: NS });
}

/** A pod using the claims; with `nodeName` it is pinned to that node (its WaitForFirstConsumer claims get it selected). */
export async function createPod(env: HostPathEnv, name: string, claims: string[], nodeName?: string): Promise<void> {
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS },
    spec: {
      ...(nodeName ? { nodeName } : {}),
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: claims.map((c, i) => ({ name: `v${i}`, persistentVolumeClaim: { claimName: c } })),
    },
  };
  await env.client.create(pods, pod, { namespace: NS });
}

/** Bound claim -> its PV. */
export async function boundVolume(env: HostPathEnv, name: string, timeoutMs = 15_000): Promise<PersistentVolume> {
  const c = await waitFor(
    `claim ${name} Bound`,
    () => env.claim(name)?.status?.phase === 'Bound' && env.claim(name),
    timeoutMs,
  );
  const pv = env.volume(c.spec.volumeName ?? '');
  if (!pv) throw new Error(`claim ${name} is Bound to ${c.spec.volumeName}, which does not exist`);
  return pv;
}

export const volumePath = (pv: PersistentVolume): string => pv.spec.local?.path ?? pv.spec.hostPath?.path ?? '';

export async function exists(p: string): Promise<boolean> {
  return fsp.lstat(p).then(
    () => true,
    () => false,
  );
}

/** Every entry below `dir` (relative, sorted), skipping the provisioner's `.kube-provisioner` records. */
export async function entriesBelow(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fsp.readdir(d, { withFileTypes: true })) {
      if (d === dir && e.name === '.kube-provisioner') continue;
      out.push(path.relative(dir, path.join(d, e.name)));
      if (e.isDirectory()) await walk(path.join(d, e.name));
    }
  };
  await walk(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
  });
  return out.sort();
}

/** Polls `fn` until it returns a truthy value (default timeout 15,000 ms here). */
export const waitFor = <T>(what: string, fn: Probe<T>, timeoutMs = 15_000): Promise<T> => poll(what, fn, timeoutMs);
