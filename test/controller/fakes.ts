// In-process fakes for the controller's flow functions (no cluster): a ControllerShared over a scripted client,
// a ControllerTerm over plain ObjectStores and recording queues. For races a real cluster cannot stage on demand:
// a cache that lags the API server, a 409 of a given kind, two replicas deleting at once.
import { Registry } from 'prom-client';
import type { ControllerShared, ControllerTerm } from '../../src/controller/controller-state.ts';
import { createControllerMetrics } from '../../src/controller/metrics.ts';
import { resolveOptions, type ProvisionControllerOptions } from '../../src/controller/options.ts';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import type { VolumeStore } from '../../src/controller/volume-store.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { ConflictError, NotFoundError, syntheticStatus } from '../../src/runtime/errors.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { ObjectStore } from '../../src/runtime/object-store.ts';
import type { WorkQueue } from '../../src/runtime/workqueue.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';

export const notFound = () => new NotFoundError(syntheticStatus(404, 'NotFound', 'not found'));
export const conflict = () => new ConflictError(syntheticStatus(409, 'Conflict', 'conflict'));

/** What a fake client method does: return a value or throw. */
export type Script = (name: string, arg?: unknown) => unknown;

/** A client whose get/delete/patch/update answer from scripts and record their calls. */
export class ScriptedClient {
  calls: Array<{ verb: string; name: string; arg?: unknown }> = [];
  onGet: Script = () => { throw notFound(); };
  onDelete: Script = () => ({});
  onPatch: Script = (_name, patch) => patch;
  async get(_r: unknown, name: string): Promise<unknown> {
    this.calls.push({ verb: 'get', name });
    return this.onGet(name);
  }
  async delete(_r: unknown, name: string, opts?: unknown): Promise<unknown> {
    this.calls.push({ verb: 'delete', name, arg: opts });
    return this.onDelete(name, opts);
  }
  async patch(_r: unknown, name: string, patch: unknown, opts?: unknown): Promise<unknown> {
    this.calls.push({ verb: 'patch', name, arg: { patch, opts } });
    return this.onPatch(name, patch);
  }
}

/** A queue recording what the flows asked of it. */
export class RecordingQueue {
  added: string[] = [];
  rateLimited: string[] = [];
  after: Array<{ key: string; ms: number }> = [];
  forgotten: string[] = [];
  add(key: string): void { this.added.push(key); }
  addRateLimited(key: string): void { this.rateLimited.push(key); }
  addAfter(key: string, ms: number): void { this.after.push({ key, ms }); }
  forget(key: string): void { this.forgotten.push(key); }
}

export interface Fake {
  s: ControllerShared;
  t: ControllerTerm;
  client: ScriptedClient;
  claims: ObjectStore<PersistentVolumeClaim>;
  volumes: ObjectStore<PersistentVolume>;
  classes: ObjectStore<StorageClass>;
  claimQueue: RecordingQueue;
  volumeQueue: RecordingQueue;
  clock: TestClock;
}

export function fakeController(provisioner: Provisioner, options: ProvisionControllerOptions = {}, identity = 'replica-a'): Fake {
  const client = new ScriptedClient();
  const clock = new TestClock(Date.parse('2026-01-01T00:00:00Z'));
  const claims = new ObjectStore<PersistentVolumeClaim>(false);
  const volumes = new ObjectStore<PersistentVolume>(false);
  const classes = new ObjectStore<StorageClass>(false);
  const claimQueue = new RecordingQueue();
  const volumeQueue = new RecordingQueue();
  const resolved = resolveOptions({ leaderElection: 'none', ...options }, {});
  const s: ControllerShared = {
    client: client as unknown as KubeClient,
    provisionerName: 'test.kube-provisioner.io/memory',
    provisioner,
    options: resolved,
    identity,
    events: { event: () => {} } as unknown as ControllerShared['events'],
    metrics: createControllerMetrics(new Registry()),
    clock,
    logger: silentLogger,
    claimFailures: new Map(),
    volumeFailures: new Map(),
    inProgress: new Map(),
    savedVolumes: new Map(),
    deletedBackends: new Set(),
    lastDecisionEvent: new Map(),
    staleClaimVersions: new Map(),
    claimLock: undefined,
    volumeStore: { pending: () => [] } as unknown as VolumeStore,
  };
  const t: ControllerTerm = {
    claims,
    volumes,
    classes,
    nodes: undefined,
    claimQueue: claimQueue as unknown as WorkQueue<string>,
    volumeQueue: volumeQueue as unknown as WorkQueue<string>,
    signal: new AbortController().signal,
  };
  return { s, t, client, claims, volumes, classes, claimQueue, volumeQueue, clock };
}

/** A stored-looking copy (uid, resourceVersion) of an object. */
export function stored<T extends KubeObject>(obj: T, uid: string, resourceVersion = '1'): T {
  return { ...obj, metadata: { ...obj.metadata, uid, resourceVersion } };
}
