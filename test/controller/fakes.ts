// In-process fakes for the controller's flow functions (no cluster): a ControllerShared over a scripted client,
// a ControllerTerm over plain ObjectStores and recording queues. For races a real cluster cannot stage on demand:
// a cache that lags the API server, a 409 of a given kind, two replicas deleting at once. The fakes implement
// the controller's narrow interfaces (ObjectClient, KeyQueue), so nothing is cast.
import { Registry } from 'prom-client';
import type { ControllerShared, ControllerTerm } from '../../src/controller/controller-state.ts';
import type { KeyQueue } from '../../src/controller/loop.ts';
import { VOLUME_CLAIM_UID_INDEX } from '../../src/controller/term-caches.ts';
import { createControllerMetrics } from '../../src/controller/controller-metrics.ts';
import { ClaimRecords, Records, type ResizeRecord, type VolumeRecord } from '../../src/controller/object-records.ts';
import { resolveOptions, type ProvisionControllerOptions } from '../../src/controller/options/controller-options.ts';
import { OwnWrites } from '../../src/controller/own-writes.ts';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import type { ObjectClient } from '../../src/runtime/client.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { ConflictError, NotFoundError, syntheticStatus } from '../../src/runtime/errors.ts';
import { silentLogger } from '../../src/runtime/logger.ts';
import { ObjectStore } from '../../src/runtime/object-store.ts';
import type { ApiResource } from '../../src/runtime/resources.ts';
import { ANN_DYNAMICALLY_PROVISIONED } from '../../src/types/annotations.ts';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, Status, StorageClass } from '../../src/types/k8s.ts';

export const notFound = () => new NotFoundError(syntheticStatus(404, 'NotFound', 'not found'));
export const conflict = () => new ConflictError(syntheticStatus(409, 'Conflict', 'conflict'));

/** What a fake client method does: return an object or throw. */
export type Script = (name: string, arg?: unknown) => KubeObject;

/** A client whose calls answer from scripts and are recorded. */
export class ScriptedClient implements ObjectClient {
  calls: Array<{ verb: string; name: string; arg?: unknown }> = [];
  onGet: Script = () => {
    throw notFound();
  };
  onDelete: Script = () => ({ metadata: {} });
  onPatch: Script = (name) => ({ metadata: { name } });
  onWrite: Script = (_name, obj) => obj as KubeObject;
  async get<T extends KubeObject>(_r: ApiResource, name: string): Promise<T> {
    this.calls.push({ verb: 'get', name });
    return this.onGet(name) as T;
  }
  async create<T extends KubeObject>(_r: ApiResource, obj: T): Promise<T> {
    this.calls.push({ verb: 'create', name: obj.metadata.name ?? '' });
    return this.onWrite(obj.metadata.name ?? '', obj) as T;
  }
  async update<T extends KubeObject>(_r: ApiResource, obj: T): Promise<T> {
    this.calls.push({ verb: 'update', name: obj.metadata.name ?? '' });
    return this.onWrite(obj.metadata.name ?? '', obj) as T;
  }
  async delete<T extends KubeObject>(_r: ApiResource, name: string, opts?: unknown): Promise<T | Status> {
    this.calls.push({ verb: 'delete', name, arg: opts });
    return this.onDelete(name, opts) as T;
  }
  async patch<T extends KubeObject>(_r: ApiResource, name: string, patch: unknown, opts?: unknown): Promise<T> {
    this.calls.push({ verb: 'patch', name, arg: { patch, opts } });
    return this.onPatch(name, patch) as T;
  }
}

/** A queue recording the keys the informer handlers added and forgot. */
export class RecordingQueue implements KeyQueue {
  added: string[] = [];
  forgotten: string[] = [];
  add(key: string): void {
    this.added.push(key);
  }
  forget(key: string): void {
    this.forgotten.push(key);
  }
}

export interface Fake {
  s: ControllerShared;
  t: ControllerTerm;
  client: ScriptedClient;
  claims: ObjectStore<PersistentVolumeClaim>;
  volumes: ObjectStore<PersistentVolume>;
  classes: ObjectStore<StorageClass>;
  clock: TestClock;
  /** PV names the fake volume store reports as waiting to be saved. */
  pendingSaves: string[];
}

export function fakeController(
  provisioner: Provisioner,
  options: ProvisionControllerOptions = {},
  identity = 'replica-a',
): Fake {
  const client = new ScriptedClient();
  const clock = new TestClock(Date.parse('2026-01-01T00:00:00Z'));
  const claims = new ObjectStore<PersistentVolumeClaim>(false);
  const volumes = new ObjectStore<PersistentVolume>(false);
  const classes = new ObjectStore<StorageClass>(false);
  volumes.addIndex(VOLUME_CLAIM_UID_INDEX, (v) => (v.spec.claimRef?.uid ? [v.spec.claimRef.uid] : []));
  const pendingSaves: string[] = [];
  const s: ControllerShared = {
    client,
    provisionerName: 'test.kube-provisioner.io/memory',
    provisioner,
    options: resolveOptions({ leaderElection: { mode: 'none' }, ...options }, {}),
    identity,
    events: { event: () => {} },
    metrics: createControllerMetrics(new Registry()),
    clock,
    logger: silentLogger,
    claimRecords: new ClaimRecords(),
    volumeRecords: new Records<VolumeRecord>(),
    resizeRecords: new Records<ResizeRecord>(),
    savedVolumes: new OwnWrites<PersistentVolume>(),
    writtenClaims: new OwnWrites<PersistentVolumeClaim>(),
    claimLock: undefined,
    volumeStore: {
      pending: () => pendingSaves,
      save: async () => ({ kind: 'failed', error: new Error('the fake volume store saves nothing'), cleanedUp: false }),
    },
  };
  const t: ControllerTerm = {
    claims,
    volumes,
    classes,
    nodes: undefined,
    signal: new AbortController().signal,
  };
  return { s, t, client, claims, volumes, classes, clock, pendingSaves };
}

/** A stored-looking copy (uid, resourceVersion) of an object. */
export function stored<T extends KubeObject>(obj: T, uid: string, resourceVersion = '1'): T {
  return { ...obj, metadata: { ...obj.metadata, uid, resourceVersion } };
}

/** A dynamically provisioned, Bound PV of ours, its claimRef pointing at claim `claimUid`. */
export function boundVolume(name: string, claimUid: string): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '5',
      annotations: { [ANN_DYNAMICALLY_PROVISIONED]: 'test.kube-provisioner.io/memory' },
    },
    spec: {
      persistentVolumeReclaimPolicy: 'Delete',
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteOnce'],
      hostPath: { path: `/tmp/${name}` },
      claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c', uid: claimUid },
    },
    status: { phase: 'Bound' },
  };
}

/** A backend call that a shutdown interrupts: it aborts `stop` (the term's signal) and fails. */
export function interruptedBy(stop: AbortController): () => Promise<never> {
  return async () => {
    stop.abort();
    throw new Error('aborted by shutdown');
  };
}

/** Records the reasons of the events `f`'s controller emits. */
export function recordEvents(f: Fake): string[] {
  const reasons: string[] = [];
  f.s.events = { event: (_o, _type, reason) => reasons.push(reason) };
  return reasons;
}
