// Everything CsiProvisioner reads from (and the finalizers it writes to) the cluster, behind one interface, so the
// provisioner's decisions can be tested with a map of objects and run for real on a KubeClient. "Not found" is
// `undefined`, never an error: external-provisioner's decisions turn on it (a missing CSINode means Reschedule).
import { NotFoundError, undefinedIfNotFound } from '../runtime/status-errors.ts';
import type { KubeClient } from '../runtime/client.ts';
import { cacheTransform } from '../runtime/cache-transform.ts';
import { StringTable } from '../types/shared-strings.ts';
import { Informer } from '../runtime/informer.ts';
import type { Logger } from '../types/logger.ts';
import {
  nodes,
  persistentVolumeClaims,
  persistentVolumes,
  pods,
  secrets,
  storageClasses,
  type ApiResource,
} from '../runtime/resources.ts';
import type { KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Secret, StorageClass } from '../types/k8s.ts';
import {
  csiNodes,
  volumeAttachments,
  volumeAttributesClasses,
  volumeSnapshotContents,
  volumeSnapshots,
} from './kinds.ts';
import {
  type CSINode,
  type VolumeAttachment,
  type VolumeAttributesClass,
  type VolumeSnapshot,
  type VolumeSnapshotContent,
} from '../types/storage-objects.ts';

/** Objects whose finalizers CsiProvisioner manages: source claims (cloning) and source snapshots (restoring). */
export type FinalizedKind = 'PersistentVolumeClaim' | 'VolumeSnapshot';

/** What CsiProvisioner reads from the cluster, and the finalizers it writes. */
export interface CsiClusterAccess {
  getSecret(namespace: string, name: string, signal: AbortSignal): Promise<Secret | undefined>;
  getNode(name: string, signal: AbortSignal): Promise<Node | undefined>;
  listNodes(signal: AbortSignal): Promise<Node[]>;
  getCSINode(name: string, signal: AbortSignal): Promise<CSINode | undefined>;
  listCSINodes(signal: AbortSignal): Promise<CSINode[]>;
  /** The VolumeAttachments whose source is the PV `pvName`. */
  volumeAttachmentsOf(pvName: string, signal: AbortSignal): Promise<VolumeAttachment[]>;
  getVolumeSnapshot(namespace: string, name: string, signal: AbortSignal): Promise<VolumeSnapshot | undefined>;
  getVolumeSnapshotContent(name: string, signal: AbortSignal): Promise<VolumeSnapshotContent | undefined>;
  getVolumeAttributesClass(name: string, signal: AbortSignal): Promise<VolumeAttributesClass | undefined>;
  getClaim(namespace: string, name: string, signal: AbortSignal): Promise<PersistentVolumeClaim | undefined>;
  /** The class of a PV whose deletion secrets are not in its annotations (PVs from before they were written). */
  getStorageClass(name: string, signal: AbortSignal): Promise<StorageClass | undefined>;
  getVolume(name: string, signal: AbortSignal): Promise<PersistentVolume | undefined>;
  /** Every PV (the leak inventory maps volume handles to PV names with it, once per inventory). */
  listVolumes(signal: AbortSignal): Promise<PersistentVolume[]>;
  /** Whether a pod that is not finished mounts the claim (resize waits while a FAILED_PRECONDITION volume is in use). */
  claimInUse(namespace: string, name: string, signal: AbortSignal): Promise<boolean>;
  /** Adds `finalizer` to the object unless it has it. */
  addFinalizer(
    kind: FinalizedKind,
    namespace: string,
    name: string,
    finalizer: string,
    signal: AbortSignal,
  ): Promise<void>;
  /** Removes `finalizer` from the object; a missing object or finalizer is not an error. */
  removeFinalizer(
    kind: FinalizedKind,
    namespace: string,
    name: string,
    finalizer: string,
    signal: AbortSignal,
  ): Promise<void>;
}

/** Resource descriptors KubeClusterAccess uses, for clusters that serve a kind at another version. */
export interface CsiResources {
  volumeAttributesClasses: ApiResource<VolumeAttributesClass>;
}

/** CsiClusterAccess on the API server: GETs and LISTs through a KubeClient. */
export class KubeClusterAccess implements CsiClusterAccess {
  private readonly vacs: ApiResource<VolumeAttributesClass>;

  constructor(
    private readonly client: KubeClient,
    resources: Partial<CsiResources> = {},
  ) {
    this.vacs = resources.volumeAttributesClasses ?? volumeAttributesClasses;
  }

  getSecret(namespace: string, name: string, signal: AbortSignal): Promise<Secret | undefined> {
    return undefinedIfNotFound(this.client.get(secrets, name, { namespace, signal }));
  }
  getNode(name: string, signal: AbortSignal): Promise<Node | undefined> {
    return undefinedIfNotFound(this.client.get(nodes, name, { signal }));
  }
  async listNodes(signal: AbortSignal): Promise<Node[]> {
    return (await this.client.listAll(nodes, { signal })).items;
  }
  getCSINode(name: string, signal: AbortSignal): Promise<CSINode | undefined> {
    return undefinedIfNotFound(this.client.get(csiNodes, name, { signal }));
  }
  async listCSINodes(signal: AbortSignal): Promise<CSINode[]> {
    return (await this.client.listAll(csiNodes, { signal })).items;
  }
  async volumeAttachmentsOf(pvName: string, signal: AbortSignal): Promise<VolumeAttachment[]> {
    const all = await this.client.listAll(volumeAttachments, { signal });
    return all.items.filter((va) => va.spec.source?.persistentVolumeName === pvName);
  }
  getVolumeSnapshot(namespace: string, name: string, signal: AbortSignal): Promise<VolumeSnapshot | undefined> {
    return undefinedIfNotFound(this.client.get(volumeSnapshots, name, { namespace, signal }));
  }
  getVolumeSnapshotContent(name: string, signal: AbortSignal): Promise<VolumeSnapshotContent | undefined> {
    return undefinedIfNotFound(this.client.get(volumeSnapshotContents, name, { signal }));
  }
  getVolumeAttributesClass(name: string, signal: AbortSignal): Promise<VolumeAttributesClass | undefined> {
    return undefinedIfNotFound(this.client.get(this.vacs, name, { signal }));
  }
  getClaim(namespace: string, name: string, signal: AbortSignal): Promise<PersistentVolumeClaim | undefined> {
    return undefinedIfNotFound(this.client.get(persistentVolumeClaims, name, { namespace, signal }));
  }
  getStorageClass(name: string, signal: AbortSignal): Promise<StorageClass | undefined> {
    return undefinedIfNotFound(this.client.get(storageClasses, name, { signal }));
  }
  getVolume(name: string, signal: AbortSignal): Promise<PersistentVolume | undefined> {
    return undefinedIfNotFound(this.client.get(persistentVolumes, name, { signal }));
  }
  async listVolumes(signal: AbortSignal): Promise<PersistentVolume[]> {
    return (await this.client.listAll(persistentVolumes, { signal })).items;
  }
  async claimInUse(namespace: string, name: string, signal: AbortSignal): Promise<boolean> {
    const list = await this.client.listAll(pods, { namespace, signal });
    return list.items.some(
      (p) =>
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed' &&
        (p.spec.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === name),
    );
  }
  addFinalizer(
    kind: FinalizedKind,
    namespace: string,
    name: string,
    finalizer: string,
    signal: AbortSignal,
  ): Promise<void> {
    return this.editFinalizers(kind, namespace, name, signal, (f) =>
      f.includes(finalizer) ? undefined : [...f, finalizer],
    );
  }
  removeFinalizer(
    kind: FinalizedKind,
    namespace: string,
    name: string,
    finalizer: string,
    signal: AbortSignal,
  ): Promise<void> {
    return this.editFinalizers(kind, namespace, name, signal, (f) =>
      f.includes(finalizer) ? f.filter((x) => x !== finalizer) : undefined,
    );
  }

  /** Read, change, write back with the read resourceVersion (a conflict surfaces as ConflictError: retried by the caller). */
  private async editFinalizers(
    kind: FinalizedKind,
    namespace: string,
    name: string,
    signal: AbortSignal,
    change: (finalizers: string[]) => string[] | undefined,
  ): Promise<void> {
    const resource: ApiResource<KubeObject> = kind === 'VolumeSnapshot' ? volumeSnapshots : persistentVolumeClaims;
    const current = await undefinedIfNotFound(this.client.get(resource, name, { namespace, signal }));
    if (!current) return;
    const next = change(current.metadata.finalizers ?? []);
    if (!next) return;
    try {
      await this.client.patch(
        resource,
        name,
        { metadata: { resourceVersion: current.metadata.resourceVersion, finalizers: next } },
        { namespace, type: 'merge', signal },
      );
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }
}

/**
 * KubeClusterAccess whose Node, CSINode and VolumeAttachment reads come from informers, as external-provisioner reads
 * them from listers: topology (every Immediate claim needs all nodes' segments) and the delete guard then cost no
 * request per claim. Until an informer has synced, its reads go to the API server. The caches keep what those reads
 * use: Nodes without `status`, VolumeAttachments without `status` and `spec.source.inlineVolumeSpec`, and none of them
 * managedFields.
 */
export class InformedClusterAccess extends KubeClusterAccess {
  private readonly nodes: Informer<Node>;
  private readonly csiNodes: Informer<CSINode>;
  private readonly attachments: Informer<VolumeAttachment>;
  private readonly stopping = new AbortController();

  constructor(client: KubeClient, options: { resources?: Partial<CsiResources>; logger?: Logger } = {}) {
    super(client, options.resources);
    const logger = options.logger;
    // Each cache keeps what the provisioner reads (client-go's SetTransform): a Node's labels, a CSINode's drivers, a
    // VolumeAttachment's source PV and node. A real Node's status (images, volumes in use) is tens of kilobytes, and
    // a VolumeAttachment of a migrated in-tree volume carries a whole PV spec; with 10,000 volumes that is the cache.
    const strings = new StringTable();
    this.nodes = new Informer<Node>({
      client,
      resource: nodes,
      logger,
      transform: cacheTransform<Node>({ strings, dropFields: ['status'] }),
    });
    this.csiNodes = new Informer<CSINode>({
      client,
      resource: csiNodes,
      logger,
      transform: cacheTransform<CSINode>({ strings }),
    });
    this.attachments = new Informer<VolumeAttachment>({
      client,
      resource: volumeAttachments,
      logger,
      transform: cacheTransform<VolumeAttachment>({ strings, dropFields: VOLUME_ATTACHMENT_FIELDS_NOT_CACHED }),
    });
    this.attachments.addIndex(PV_INDEX, (va) =>
      va.spec.source?.persistentVolumeName ? [va.spec.source.persistentVolumeName] : [],
    );
  }

  /** Starts the informers (list + watch in the background). */
  start(): void {
    for (const informer of [this.nodes, this.csiNodes, this.attachments]) informer.start(this.stopping.signal);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all([this.nodes.stop(), this.csiNodes.stop(), this.attachments.stop()]);
  }

  override getNode(name: string, signal: AbortSignal): Promise<Node | undefined> {
    return this.nodes.hasSynced()
      ? Promise.resolve(this.nodes.store.get(undefined, name))
      : super.getNode(name, signal);
  }
  override listNodes(signal: AbortSignal): Promise<Node[]> {
    return this.nodes.hasSynced() ? Promise.resolve(this.nodes.store.list()) : super.listNodes(signal);
  }
  override getCSINode(name: string, signal: AbortSignal): Promise<CSINode | undefined> {
    return this.csiNodes.hasSynced()
      ? Promise.resolve(this.csiNodes.store.get(undefined, name))
      : super.getCSINode(name, signal);
  }
  override listCSINodes(signal: AbortSignal): Promise<CSINode[]> {
    return this.csiNodes.hasSynced() ? Promise.resolve(this.csiNodes.store.list()) : super.listCSINodes(signal);
  }
  override volumeAttachmentsOf(pvName: string, signal: AbortSignal): Promise<VolumeAttachment[]> {
    return this.attachments.hasSynced()
      ? Promise.resolve(this.attachments.store.byIndex(PV_INDEX, pvName))
      : super.volumeAttachmentsOf(pvName, signal);
  }
}

const PV_INDEX = 'persistentVolumeName';

/**
 * What InformedClusterAccess's VolumeAttachment cache drops: the attach status (metadata the plugin returned, errors)
 * and a migrated in-tree volume's inline PV spec. The delete guard reads the source PV's name and the node only.
 */
export const VOLUME_ATTACHMENT_FIELDS_NOT_CACHED: readonly string[] = ['status', 'spec.source.inlineVolumeSpec'];
