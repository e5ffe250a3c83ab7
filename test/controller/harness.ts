// Test harness for the controller's integration tests: an embedded cluster, a runtime client, an in-memory
// provisioner with fault hooks, the controller fixture (useController), object builders and a polling wait
// (timeouts only, no timing assertions).
import { after, before } from 'node:test';
import { Registry } from 'prom-client';
import { mergeOptions } from '../../src/controller/options/controller-options.ts';
import { ProvisionController, type ProvisionControllerConfig } from '../../src/controller/provision-controller.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { silentLogger, type Logger } from '../../src/runtime/logger.ts';
import { persistentVolumeClaims, storageClasses } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { Provisioner, ProvisionOptions, ProvisionResult } from '../../src/controller/provisioner.ts';
import { ANN_STORAGE_PROVISIONER } from '../../src/types/annotations.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { waitFor as poll, type Probe } from '../support/wait.ts';

export const PROVISIONER = 'test.kube-provisioner.io/memory';

export interface Env {
  cluster: TestCluster;
  client: KubeClient;
  stop(): Promise<void>;
}

export async function startEnv(opts: { controllers?: boolean } = {}): Promise<Env> {
  const cluster = await startCluster({ controllers: opts.controllers ?? false });
  const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'controller-test' });
  return {
    cluster,
    client,
    stop: async () => {
      client.close();
      await cluster.stop();
    },
  };
}

/** Options that make a controller fast in tests (small backoffs, short leases). */
export const FAST: ProvisionControllerConfig = {
  leaderElection: { mode: 'none' },
  retry: { backoffBaseMs: 20, backoffMaxMs: 200 },
  volumeSave: { mode: 'retry', retryCount: 3, intervalMs: 20 },
  logger: silentLogger,
};

/** FAST with `layers` over it (groups such as `retry` merge field by field, so the fast backoff stays). */
export function fast(...layers: Array<ProvisionControllerConfig | undefined>): ProvisionControllerConfig {
  return mergeOptions(FAST, ...layers);
}

type ProvisionHook = (
  o: ProvisionOptions,
  signal: AbortSignal,
) => Promise<ProvisionResult | undefined> | ProvisionResult | undefined;

/** A backend keeping volumes in a map. `onProvision`/`onDelete` hooks may throw or delay. */
export class MemoryProvisioner implements Provisioner {
  readonly volumes = new Map<string, { claimUid: string; createdAt: Date }>();
  provisionCalls: string[] = [];
  deleteCalls: string[] = [];
  /** Per provision() call: the name of the Node object passed as selectedNode (nodeCache option), if any. */
  selectedNodeObjects: Array<string | undefined> = [];
  onProvision: ProvisionHook | undefined;
  onDelete: ((v: PersistentVolume) => Promise<void> | void) | undefined;
  supportsBlockVolumes = false;
  /** DeletionGuard: names listed here are never deleted. */
  readonly protectedVolumes = new Set<string>();

  async provision(o: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    this.provisionCalls.push(o.pvName);
    this.selectedNodeObjects.push(o.selectedNode?.metadata.name);
    const hooked = await this.onProvision?.(o, signal);
    if (hooked) return hooked;
    if (!this.volumes.has(o.pvName))
      this.volumes.set(o.pvName, { claimUid: o.claim.metadata.uid ?? '', createdAt: new Date() });
    return {
      volume: {
        metadata: { name: o.pvName },
        spec: {
          capacity: { storage: o.claim.spec.resources?.requests?.storage ?? '1Mi' },
          accessModes: o.claim.spec.accessModes,
          persistentVolumeReclaimPolicy: o.storageClass.reclaimPolicy ?? 'Delete',
          hostPath: { path: `/tmp/memory/${o.pvName}` },
          ...(o.selectedNodeName
            ? {
                nodeAffinity: {
                  required: {
                    nodeSelectorTerms: [
                      {
                        matchExpressions: [
                          { key: 'kubernetes.io/hostname', operator: 'In', values: [o.selectedNodeName] },
                        ],
                      },
                    ],
                  },
                },
              }
            : {}),
        },
      },
    };
  }

  async delete(v: PersistentVolume): Promise<void> {
    this.deleteCalls.push(v.metadata.name ?? '');
    await this.onDelete?.(v);
    this.volumes.delete(v.metadata.name ?? '');
  }

  shouldDelete(v: PersistentVolume): boolean {
    return !this.protectedVolumes.has(v.metadata.name ?? '');
  }

  supportsBlock(): boolean {
    return this.supportsBlockVolumes;
  }

  async listVolumes(): Promise<Array<{ name: string; createdAt?: Date }>> {
    return [...this.volumes].map(([name, v]) => ({ name, createdAt: v.createdAt }));
  }
}

export function storageClass(name: string, extra: Partial<StorageClass> = {}): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: PROVISIONER,
    reclaimPolicy: 'Delete',
    volumeBindingMode: 'Immediate',
    ...extra,
  };
}

/** A claim already handed to our provisioner (as the PV binder would annotate it). */
export function claim(
  name: string,
  className: string,
  extra: {
    annotations?: Record<string, string>;
    namespace?: string;
    spec?: Partial<PersistentVolumeClaim['spec']>;
  } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: extra.namespace ?? 'default',
      annotations: { [ANN_STORAGE_PROVISIONER]: PROVISIONER, ...(extra.annotations ?? {}) },
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Mi' } },
      storageClassName: className,
      ...(extra.spec ?? {}),
    },
  };
}

export async function createClass(env: Env, sc: StorageClass): Promise<StorageClass> {
  return env.client.create(storageClasses, sc);
}

export async function createClaim(env: Env, c: PersistentVolumeClaim): Promise<PersistentVolumeClaim> {
  return env.client.create(persistentVolumeClaims, c, { namespace: c.metadata.namespace });
}

/** Polls `fn` until it returns a truthy value (default timeout 10,000 ms here). */
export const waitFor = <T>(what: string, fn: Probe<T>, timeoutMs = 10_000): Promise<T> => poll(what, fn, timeoutMs);

/** One 'volume decision' the controller logged: which PV, at which resourceVersion, and what it decided. */
export interface VolumeDecisionEntry {
  pv: string;
  resourceVersion: number;
  action: string;
  code: string;
}

/**
 * A logger that records the controller's per-PV decisions (its 'volume decision' debug lines) and drops the rest.
 * Tests wait for the decision on a PV version to prove the controller looked at it, instead of sleeping.
 */
export function volumeDecisionLogger(into: VolumeDecisionEntry[]): Logger {
  const make = (bindings: Record<string, unknown>): Logger => ({
    debug: (obj, msg) => {
      if (msg !== 'volume decision' || typeof obj !== 'object') return;
      const e = { ...bindings, ...obj } as Record<string, unknown>;
      into.push({
        pv: String(e.pv),
        resourceVersion: Number(e.resourceVersion),
        action: String(e.action),
        code: String(e.code),
      });
    },
    info() {},
    warn() {},
    error() {},
    child: (b) => make({ ...bindings, ...b }),
  });
  return make({});
}

/** Events about the object named `name` in the cluster store (any namespace). */
export function eventsFor(env: Env, name: string): CoreEvent[] {
  return (env.cluster.store.list('events').items as CoreEvent[]).filter((e) => e.involvedObject.name === name);
}

export function reasons(env: Env, name: string): string[] {
  return eventsFor(env, name).map((e) => e.reason ?? '');
}

export function getPV(env: Env, name: string): PersistentVolume | undefined {
  return env.cluster.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
}

export function getPVC(env: Env, namespace: string, name: string): PersistentVolumeClaim | undefined {
  return env.cluster.store.get('persistentvolumeclaims', namespace, name) as PersistentVolumeClaim | undefined;
}

/** What useController gives a test suite once its `before` hook ran. */
export interface ControllerFixture<B extends MemoryProvisioner = MemoryProvisioner> {
  env: Env;
  backend: B;
  /** The first (usually the only) controller. */
  ctrl: ProvisionController;
  /** Every controller, in the order of `replicas`. */
  ctrls: ProvisionController[];
  /** The first controller's registry (each controller has its own). */
  registry: Registry;
}

/** One of several controllers on the same backend: its own options (identity, ...) and view of the backend. */
export interface ControllerReplica<B extends MemoryProvisioner = MemoryProvisioner> {
  options?: ProvisionControllerConfig;
  provisioner?(backend: B): Provisioner;
}

/**
 * Registers the before/after hooks of a controller suite in the calling `describe`: an embedded cluster (`env` is
 * passed to startEnv, e.g. `{ controllers: true }` for the cluster's own controllers), a MemoryProvisioner or the
 * subclass `backend` makes (`setup` may script it and prepare the cluster before any controller starts), running
 * controllers with FAST options plus `options` (one, or one per `replicas` entry, each with its own registry), and
 * the StorageClasses `classes`. Everything is stopped after the suite (a test may stop a controller earlier).
 * Read the fields inside tests (set in `before`).
 */
export function useController<B extends MemoryProvisioner = MemoryProvisioner>(
  opts: {
    env?: Parameters<typeof startEnv>[0];
    backend?(): B;
    options?: ProvisionControllerConfig;
    classes?: StorageClass[];
    setup?(backend: B, env: Env): void | Promise<void>;
    replicas?: Array<ControllerReplica<B>>;
  } = {},
): ControllerFixture<B> {
  const f = {} as ControllerFixture<B>;
  before(async () => {
    f.env = await startEnv(opts.env);
    f.backend = opts.backend?.() ?? (new MemoryProvisioner() as B);
    await opts.setup?.(f.backend, f.env);
    f.ctrls = (opts.replicas ?? [{}]).map((r) => {
      const provisioner = r.provisioner?.(f.backend) ?? f.backend;
      return new ProvisionController(
        f.env.client,
        PROVISIONER,
        provisioner,
        fast({ registry: new Registry() }, opts.options, r.options),
      );
    });
    [f.ctrl] = f.ctrls;
    f.registry = f.ctrl.registry;
    for (const c of f.ctrls) void c.run();
    for (const sc of opts.classes ?? []) await createClass(f.env, sc);
  });
  after(async () => {
    await Promise.all((f.ctrls ?? []).map((c) => c.stop()));
    await f.env?.stop();
  });
  return f;
}
