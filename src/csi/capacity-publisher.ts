// Capacity publishing (external-provisioner's --enable-capacity), as a control loop in the controller's flow
// shape: a key per (storage class x topology segment), a pure decision (decideCapacity) on what the caches and the
// last GetCapacity reading say, a sync that carries it out and returns a Next for the worker to apply, one record
// per key, metrics, and informer hooks that put keys on the queue.
//
// What is published: for each StorageClass of this driver with volumeBindingMode WaitForFirstConsumer (Immediate
// too with --capacity-for-immediate-binding) and each topology segment of the driver (from the CSINodes' topology
// keys and the Nodes' labels; one empty segment for a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS; the node's
// own segment in a node deployment), GetCapacity(class parameters, segment) becomes one CSIStorageCapacity in the
// pod's namespace: generateName `csisc-`, labels csi.storage.k8s.io/drivername and csi.storage.k8s.io/managed-by,
// nodeTopology = the segment as matchLabels, capacity and maximumVolumeSize, and an owner reference when the
// sidecar knows its owner. Each key is polled every pollIntervalMs; objects of ours whose class or segment is gone
// (or duplicates) are deleted.
import type { Registry } from 'prom-client';
import { Gauge } from 'prom-client';
import { Records } from '../controller/object-records.ts';
import { after, backoff, done, type Next, applyNext } from '../controller/next.ts';
import type { KubeClient } from '../runtime/client.ts';
import { realClock, type Clock } from '../runtime/clock.ts';
import { ConflictError, NotFoundError } from '../runtime/errors.ts';
import { Informer } from '../runtime/informer.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { ItemExponentialFailureRateLimiter } from '../runtime/rate-limiters.ts';
import { defineResource, nodes, pods, storageClasses } from '../runtime/resources.ts';
import { WorkQueue } from '../runtime/workqueue.ts';
import { errorMessage } from '../types/errors.ts';
import type { KubeObject, Node, OwnerReference, Pod, StorageClass } from '../types/k8s.ts';
import { formatBytes, parseQuantity } from '../types/quantity.ts';
import type { CSIStorageCapacity } from '../types/storage-objects.ts';
import type { CsiClient } from './csi-client.ts';
import { csiNodes, type CSINode } from './kinds.ts';
import { CSI_PARAMETER_PREFIX } from './parameters.ts';

/** storage.k8s.io/v1 CSIStorageCapacities (namespaced). */
export const csiStorageCapacities = defineResource<CSIStorageCapacity>(
  'storage.k8s.io',
  'v1',
  'csistoragecapacities',
  'CSIStorageCapacity',
  true,
);
const replicaSets = defineResource<KubeObject>('apps', 'v1', 'replicasets', 'ReplicaSet', true);

/** external-provisioner's label on the capacity objects it manages: the driver's name. */
export const LABEL_DRIVER_NAME = 'csi.storage.k8s.io/drivername';
/** external-provisioner's label on the capacity objects it manages: which instance manages them. */
export const LABEL_MANAGED_BY = 'csi.storage.k8s.io/managed-by';
/** external-provisioner's managed-by value of a central deployment. */
export const DEFAULT_MANAGED_BY = 'external-provisioner';

/** A topology segment: key -> value. */
export type Segment = Record<string, string>;

/** One published combination. */
export interface CapacityItem {
  className: string;
  segment: Segment;
}

/** What GetCapacity said for a key, and when. */
export interface CapacityReading {
  capacity: bigint;
  maximumVolumeSize?: bigint;
  at: number;
}

/** What the loop remembers about one key. */
export interface CapacityRecord {
  reading?: CapacityReading;
}

/** The owner of the objects (the pod, or its controller per --capacity-ownerref-level). */
export type CapacityOwner = OwnerReference;

/** A segment's canonical text: its pairs sorted by key. */
export function segmentKey(segment: Segment): string {
  return JSON.stringify(
    Object.keys(segment)
      .sort()
      .map((k) => [k, segment[k]]),
  );
}

/** The key of one (class, segment) combination. */
export function capacityKey(className: string, segment: Segment): string {
  return `${className}\n${segmentKey(segment)}`;
}

/** The key an existing object belongs to (its class and its nodeTopology's matchLabels). */
export function keyOfObject(o: CSIStorageCapacity): string {
  return capacityKey(o.storageClassName, o.nodeTopology?.matchLabels ?? {});
}

/**
 * The driver's topology segments, as external-provisioner's node topology informer finds them: each CSINode that
 * lists the driver with topology keys, valued by its Node's labels; a node missing a label of its keys has no
 * segment. Duplicates are one segment.
 */
export function segmentsOf(
  csiNodeList: readonly CSINode[],
  nodeOf: (name: string) => Node | undefined,
  driverName: string,
): Segment[] {
  const out = new Map<string, Segment>();
  for (const cn of csiNodeList) {
    const keys = cn.spec.drivers?.find((d) => d.name === driverName)?.topologyKeys;
    if (!keys || keys.length === 0) continue;
    const labels = nodeOf(cn.metadata.name ?? '')?.metadata.labels;
    if (!labels) continue;
    const segment: Segment = {};
    if (!keys.every((k) => (labels[k] !== undefined ? ((segment[k] = labels[k]), true) : false))) continue;
    out.set(segmentKey(segment), segment);
  }
  return [...out.values()];
}

/** Whether capacity is published for `sc`: this driver, WaitForFirstConsumer (or any mode with immediateBinding). */
export function publishesFor(sc: StorageClass, driverName: string, immediateBinding: boolean): boolean {
  return sc.provisioner === driverName && (immediateBinding || sc.volumeBindingMode === 'WaitForFirstConsumer');
}

/** Every combination to publish. */
export function desiredItems(
  classes: readonly StorageClass[],
  segments: readonly Segment[],
  driverName: string,
  immediateBinding: boolean,
): Map<string, CapacityItem> {
  const out = new Map<string, CapacityItem>();
  for (const sc of classes) {
    if (!publishesFor(sc, driverName, immediateBinding)) continue;
    const className = sc.metadata.name ?? '';
    for (const segment of segments) out.set(capacityKey(className, segment), { className, segment });
  }
  return out;
}

/** What to do for one key. */
export type CapacityDecision =
  | { action: 'poll' }
  | { action: 'create'; object: CSIStorageCapacity }
  | { action: 'update'; object: CSIStorageCapacity }
  | { action: 'delete'; names: string[] }
  | { action: 'none'; nextPollMs: number };

/** The inputs of decideCapacity: everything the caches and the record hold for one key. */
export interface CapacityInput {
  /** The combination, when it is still wanted. */
  item?: CapacityItem;
  /** The objects of ours for this key (normally 0 or 1), oldest first. */
  existing: readonly CSIStorageCapacity[];
  reading?: CapacityReading;
  now: number;
  pollIntervalMs: number;
  namespace: string;
  labels: Record<string, string>;
  owner?: CapacityOwner;
}

/**
 * The decision for one key, with no I/O: a combination no longer wanted loses its objects; a wanted one is polled
 * when its reading is missing or older than the poll interval, then created, updated (capacity, maximumVolumeSize,
 * labels or owner differ) or left; duplicates beyond the oldest are deleted first.
 */
export function decideCapacity(i: CapacityInput): CapacityDecision {
  if (!i.item) {
    return i.existing.length > 0
      ? { action: 'delete', names: i.existing.map((o) => o.metadata.name ?? '') }
      : { action: 'none', nextPollMs: 0 };
  }
  if (i.existing.length > 1) return { action: 'delete', names: i.existing.slice(1).map((o) => o.metadata.name ?? '') };
  const age = i.reading ? i.now - i.reading.at : Infinity;
  if (!i.reading || age >= i.pollIntervalMs) return { action: 'poll' };
  const nextPollMs = Math.max(0, i.pollIntervalMs - age);
  const want = desiredObject(i.item, i.reading, i);
  const have = i.existing[0];
  if (!have) return { action: 'create', object: want };
  const same =
    sameQuantity(have.capacity, want.capacity) &&
    sameQuantity(have.maximumVolumeSize, want.maximumVolumeSize) &&
    Object.entries(i.labels).every(([k, v]) => have.metadata.labels?.[k] === v) &&
    (!i.owner || (have.metadata.ownerReferences ?? []).some((r) => r.uid === i.owner!.uid));
  if (same) return { action: 'none', nextPollMs };
  return {
    action: 'update',
    object: {
      ...have,
      metadata: {
        ...have.metadata,
        labels: { ...have.metadata.labels, ...i.labels },
        ...(i.owner
          ? {
              ownerReferences: [
                ...(have.metadata.ownerReferences ?? []).filter((r) => r.uid !== i.owner!.uid),
                i.owner,
              ],
            }
          : {}),
      },
      capacity: want.capacity,
      ...(want.maximumVolumeSize !== undefined ? { maximumVolumeSize: want.maximumVolumeSize } : {}),
    },
  };
}

function sameQuantity(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  try {
    return parseQuantity(a) === parseQuantity(b);
  } catch {
    return false;
  }
}

/** The object external-provisioner creates for a combination. */
export function desiredObject(
  item: CapacityItem,
  reading: CapacityReading,
  o: { namespace: string; labels: Record<string, string>; owner?: CapacityOwner },
): CSIStorageCapacity {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'CSIStorageCapacity',
    metadata: {
      generateName: 'csisc-',
      namespace: o.namespace,
      labels: { ...o.labels },
      ...(o.owner ? { ownerReferences: [o.owner] } : {}),
    },
    storageClassName: item.className,
    nodeTopology: { matchLabels: { ...item.segment } },
    capacity: formatBytes(reading.capacity),
    ...(reading.maximumVolumeSize !== undefined ? { maximumVolumeSize: formatBytes(reading.maximumVolumeSize) } : {}),
  };
}

/** The owner reference of --capacity-ownerref-level: 0 the pod, 1 its controller, 2 the ReplicaSet's controller. */
export async function ownerReferenceFor(
  client: KubeClient,
  namespace: string,
  podName: string,
  level: 0 | 1 | 2,
  signal?: AbortSignal,
): Promise<CapacityOwner> {
  let obj: KubeObject = await client.get<Pod>(pods, podName, { namespace, signal });
  let ref: OwnerReference = { apiVersion: 'v1', kind: 'Pod', name: podName, uid: obj.metadata.uid ?? '' };
  for (let l = 0; l < level; l++) {
    const owner = (obj.metadata.ownerReferences ?? []).find((r) => r.controller);
    if (!owner)
      throw new Error(`--capacity-ownerref-level ${level}: ${ref.kind} ${namespace}/${ref.name} has no controller`);
    ref = { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid };
    if (l + 1 < level) {
      if (owner.kind !== 'ReplicaSet')
        throw new Error(
          `--capacity-ownerref-level ${level}: ${owner.kind} ${namespace}/${owner.name} is not a ReplicaSet`,
        );
      obj = await client.get(replicaSets, owner.name, { namespace, signal });
    }
  }
  return { ...ref, controller: true };
}

/** external-provisioner's capacity metrics. */
export interface CapacityMetrics {
  desired: Gauge<string>;
  current: Gauge<string>;
  obsolete: Gauge<string>;
}

function capacityMetrics(registry: Registry | undefined): CapacityMetrics {
  const make = (name: string, help: string) => {
    const existing = registry?.getSingleMetric(name);
    if (existing) return existing as Gauge<string>;
    return new Gauge({ name, help, registers: registry ? [registry] : [] });
  };
  return {
    desired: make(
      'csistoragecapacities_desired_goal',
      'Number of CSIStorageCapacity objects that are supposed to be managed automatically.',
    ),
    current: make(
      'csistoragecapacities_desired_current',
      'Number of CSIStorageCapacity objects that exist and are supposed to be managed automatically.',
    ),
    obsolete: make(
      'csistoragecapacities_obsolete',
      'Number of CSIStorageCapacity objects that exist and will be deleted automatically.',
    ),
  };
}

/** Options of the capacity loop. */
export interface CapacityControllerOptions {
  client: KubeClient;
  /** GetCapacity goes through this client. */
  csi: Pick<CsiClient, 'call'>;
  driverName: string;
  /** Where the objects go ($POD_NAMESPACE). */
  namespace: string;
  /** The csi.storage.k8s.io/managed-by value (default `external-provisioner`). */
  managedBy?: string;
  owner?: CapacityOwner;
  /** A fixed segment instead of the CSINodes' (a plugin without topology: {}; a node deployment: its node's). */
  fixedSegment?: Segment;
  /** Default 1 minute. */
  pollIntervalMs?: number;
  /** Publish for Immediate classes too (default false). */
  immediateBinding?: boolean;
  /** Whether this instance may write (the controller's leadership); default always. */
  active?: () => boolean;
  /**
   * Subscribes to "became active" (the controller's onStartedLeading): an inactive instance parks its keys and this
   * event puts them back on the queue. Without it, an inactive instance looks again every `standbyRecheckMs`.
   */
  onActive?: (listener: () => void) => () => void;
  /** Without onActive: how often an inactive instance looks again whether it became active (default 5 s). */
  standbyRecheckMs?: number;
  registry?: Registry;
  clock?: Clock;
  logger?: Logger;
}

/** Index of our objects by key. */
const BY_KEY = 'key';

/** The capacity loop. run() until the signal aborts. */
export class CapacityController {
  readonly records = new Records<CapacityRecord>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly metrics: CapacityMetrics;
  private readonly labels: Record<string, string>;
  private readonly pollIntervalMs: number;
  private desired = new Map<string, CapacityItem>();
  private classes?: Informer<StorageClass>;
  private capacities?: Informer<CSIStorageCapacity>;
  private csiNodeInformer?: Informer<CSINode>;
  private nodeInformer?: Informer<Node>;
  private queue?: WorkQueue<string>;
  /** Keys an inactive instance put aside until it becomes active (onActive). */
  private readonly parked = new Set<string>();

  constructor(private readonly o: CapacityControllerOptions) {
    this.clock = o.clock ?? realClock;
    this.logger = (o.logger ?? silentLogger).child({ loop: 'capacity' });
    this.metrics = capacityMetrics(o.registry);
    this.labels = { [LABEL_DRIVER_NAME]: o.driverName, [LABEL_MANAGED_BY]: o.managedBy ?? DEFAULT_MANAGED_BY };
    this.pollIntervalMs = o.pollIntervalMs ?? 60_000;
  }

  /** Keys waiting for this instance to become active. */
  standbyKeys(): string[] {
    return [...this.parked];
  }

  /** Became active: the parked keys go back on the queue (they stay parked until run() has one). */
  wake(): void {
    const queue = this.queue;
    if (!queue) return;
    for (const key of this.parked) queue.add(key);
    this.parked.clear();
  }

  /** The combinations wanted now (after the caches synced). */
  desiredKeys(): string[] {
    return [...this.desired.keys()];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { client } = this.o;
    const informer = <T extends KubeObject>(
      resource: Parameters<typeof client.get<T>>[0],
      extra: { namespace?: string; labelSelector?: string } = {},
    ) => new Informer<T>({ client, resource, clock: this.clock, logger: this.logger, ...extra });
    this.classes = informer<StorageClass>(storageClasses);
    this.capacities = informer<CSIStorageCapacity>(csiStorageCapacities, {
      namespace: this.o.namespace,
      labelSelector: Object.entries(this.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    });
    this.capacities.addIndex(BY_KEY, (c) => [keyOfObject(c)]);
    if (!this.o.fixedSegment) {
      this.csiNodeInformer = informer<CSINode>(csiNodes);
      this.nodeInformer = informer<Node>(nodes);
    }
    const informers: Informer<KubeObject>[] = [
      this.classes,
      this.capacities,
      ...(this.csiNodeInformer ? [this.csiNodeInformer, this.nodeInformer!] : []),
    ] as Informer<KubeObject>[];
    const queue = new WorkQueue<string>({
      name: 'capacity',
      clock: this.clock,
      rateLimiter: new ItemExponentialFailureRateLimiter<string>(1000, 300_000),
      registry: this.o.registry,
    });
    this.queue = queue;
    this.wireHooks(queue);
    const unsubscribe = this.o.onActive?.(() => this.wake());
    for (const inf of informers) inf.start(signal);
    const stop = () => queue.shutdown();
    signal.addEventListener('abort', stop, { once: true });
    try {
      await Promise.all(informers.map((i) => i.synced));
      this.recompute();
      for (const key of this.capacities.store.list().map(keyOfObject)) queue.add(key);
      for (;;) {
        const item = await queue.get();
        if (item.shutdown) return;
        try {
          applyNext(queue, item.key, await this.sync(item.key, signal));
        } catch (err) {
          if (!signal.aborted) this.logger.warn({ key: item.key, err: errorMessage(err) }, 'capacity sync failed');
          applyNext(queue, item.key, backoff);
        } finally {
          queue.done(item.key);
        }
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      signal.removeEventListener('abort', stop);
      unsubscribe?.();
      queue.shutdown();
      await Promise.all(informers.map((i) => i.stop()));
    }
  }

  /** Informer hooks: classes and topology change the wanted keys; our objects' changes re-check their key. */
  private wireHooks(queue: WorkQueue<string>): void {
    const topologyChanged = () => this.recompute();
    this.classes!.addEventHandler({
      onAdd: topologyChanged,
      onUpdate: (a, b) => a !== b && topologyChanged(),
      onDelete: topologyChanged,
    });
    this.csiNodeInformer?.addEventHandler({
      onAdd: topologyChanged,
      onUpdate: (a, b) => a !== b && topologyChanged(),
      onDelete: topologyChanged,
    });
    // Node status writes are frequent: only a change of labels can change a segment.
    this.nodeInformer?.addEventHandler({
      onAdd: topologyChanged,
      onUpdate: (a, b) =>
        JSON.stringify(a.metadata.labels ?? {}) !== JSON.stringify(b.metadata.labels ?? {}) && topologyChanged(),
      onDelete: topologyChanged,
    });
    const objectChanged = (c: CSIStorageCapacity) => {
      queue.add(keyOfObject(c));
      this.updateGauges();
    };
    this.capacities!.addEventHandler({
      onAdd: objectChanged,
      onUpdate: (_a, b) => objectChanged(b),
      onDelete: objectChanged,
    });
  }

  /** Recomputes the wanted keys; keys that appeared or went away are queued. */
  private recompute(): void {
    if (
      !this.classes?.hasSynced() ||
      (this.csiNodeInformer && !(this.csiNodeInformer.hasSynced() && this.nodeInformer!.hasSynced()))
    )
      return;
    const segments = this.o.fixedSegment
      ? [this.o.fixedSegment]
      : segmentsOf(this.csiNodeInformer!.store.list(), (n) => this.nodeInformer!.store.get(n), this.o.driverName);
    const next = desiredItems(this.classes.store.list(), segments, this.o.driverName, this.o.immediateBinding ?? false);
    const previous = this.desired;
    this.desired = next;
    for (const key of next.keys()) if (!previous.has(key)) this.queue?.add(key);
    for (const key of previous.keys()) {
      if (next.has(key)) continue;
      this.records.forget(key);
      this.queue?.add(key);
    }
    // A class whose parameters changed: the readings of all its segments are stale.
    const changed = this.changedClasses();
    for (const [key, item] of next) {
      if (previous.has(key) && changed.has(item.className)) {
        this.records.forget(key);
        this.queue?.add(key);
      }
    }
    this.updateGauges();
  }

  /** The parameters of each class as last seen, to tell which classes changed since the last recompute. */
  private readonly classParams = new Map<string, string>();
  private changedClasses(): Set<string> {
    const changed = new Set<string>();
    const seen = new Set<string>();
    for (const sc of this.classes?.store.list() ?? []) {
      const name = sc.metadata.name ?? '';
      seen.add(name);
      const text = JSON.stringify(sc.parameters ?? {});
      const before = this.classParams.get(name);
      if (before !== undefined && before !== text) changed.add(name);
      this.classParams.set(name, text);
    }
    for (const name of this.classParams.keys()) if (!seen.has(name)) this.classParams.delete(name);
    return changed;
  }

  private updateGauges(): void {
    const objects = this.capacities?.store.list() ?? [];
    let current = 0;
    for (const o of objects) if (this.desired.has(keyOfObject(o))) current++;
    this.metrics.desired.set(this.desired.size);
    this.metrics.current.set(current);
    this.metrics.obsolete.set(objects.length - current);
  }

  /** One key: decide, poll GetCapacity if asked, decide again, write. */
  async sync(key: string, signal: AbortSignal): Promise<Next> {
    if (this.o.active && !this.o.active()) {
      if (!this.o.onActive) return after(this.o.standbyRecheckMs ?? 5000);
      this.parked.add(key);
      return done;
    }
    let d = this.decide(key);
    if (d.action === 'poll') {
      const item = this.desired.get(key)!;
      const sc = this.classes!.store.get(item.className);
      if (!sc) return done;
      const reply = await this.o.csi.call(
        'getCapacity',
        {
          // Capacity does not depend on the capabilities; the spec wants one (external-provisioner sends this one).
          volumeCapabilities: [{ mount: {}, accessMode: { mode: 'UNKNOWN' } }],
          parameters: capacityParameters(sc.parameters ?? {}),
          ...(Object.keys(item.segment).length > 0 ? { accessibleTopology: { segments: item.segment } } : {}),
        },
        { signal },
      );
      this.records.set(key, 'reading', {
        capacity: reply.availableCapacity ?? 0n,
        ...(reply.maximumVolumeSize !== undefined ? { maximumVolumeSize: reply.maximumVolumeSize.value ?? 0n } : {}),
        at: this.clock.now(),
      });
      d = this.decide(key);
    }
    const ns = this.o.namespace;
    try {
      switch (d.action) {
        case 'poll':
          return backoff;
        case 'none':
          return this.desired.has(key) ? after(d.nextPollMs) : done;
        case 'create':
          await this.o.client.create(csiStorageCapacities, d.object, { namespace: ns, signal });
          return after(this.pollIntervalMs);
        case 'update':
          await this.o.client.update(csiStorageCapacities, d.object, { namespace: ns, signal });
          return after(this.pollIntervalMs);
        case 'delete':
          for (const name of d.names) {
            await this.o.client.delete(csiStorageCapacities, name, { namespace: ns, signal }).catch((err: unknown) => {
              if (!(err instanceof NotFoundError)) throw err;
            });
          }
          // Duplicates gone: the key is synced again by their delete events (and by this).
          return this.desired.has(key) ? after(0) : done;
      }
    } catch (err) {
      // A stale cache (conflict): the informer event brings the current object; try again soon.
      if (err instanceof ConflictError) return after(100);
      throw err;
    }
  }

  /** decideCapacity on the caches and the record of `key`. */
  decide(key: string): CapacityDecision {
    const existing = [...(this.capacities?.store.byIndex(BY_KEY, key) ?? [])].sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
        (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
    );
    return decideCapacity({
      ...(this.desired.has(key) ? { item: this.desired.get(key)! } : {}),
      existing,
      ...(this.records.get(key)?.reading ? { reading: this.records.get(key)!.reading! } : {}),
      now: this.clock.now(),
      pollIntervalMs: this.pollIntervalMs,
      namespace: this.o.namespace,
      labels: this.labels,
      ...(this.o.owner ? { owner: this.o.owner } : {}),
    });
  }
}

/** The class parameters GetCapacity gets: the class's own, without the csi.storage.k8s.io/ keys meant for us. */
export function capacityParameters(parameters: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(parameters).filter(([k]) => !k.startsWith(CSI_PARAMETER_PREFIX)));
}
