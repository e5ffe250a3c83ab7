// A CsiClusterAccess over maps of objects, for tests of CsiProvisioner's decisions without an API server (and for
// kinds the embedded cluster does not serve yet). It counts reads, and records finalizer writes.
import type { CsiClusterAccess, FinalizedKind } from '../../src/csi/cluster-access.ts';
import type {
  CSINode,
  VolumeAttachment,
  VolumeAttributesClass,
  VolumeSnapshot,
  VolumeSnapshotContent,
} from '../../src/types/storage-objects.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, Secret, StorageClass } from '../../src/types/k8s.ts';

const key = (ns: string | undefined, name: string) => (ns ? `${ns}/${name}` : name);

export class FakeCluster implements CsiClusterAccess {
  secrets = new Map<string, Secret>();
  nodes = new Map<string, Node>();
  csiNodes = new Map<string, CSINode>();
  attachments: VolumeAttachment[] = [];
  snapshots = new Map<string, VolumeSnapshot>();
  contents = new Map<string, VolumeSnapshotContent>();
  vacs = new Map<string, VolumeAttributesClass>();
  claims = new Map<string, PersistentVolumeClaim>();
  classes = new Map<string, StorageClass>();
  volumes = new Map<string, PersistentVolume>();
  podsUsing = new Set<string>();
  finalizerWrites: Array<{ op: 'add' | 'remove'; kind: FinalizedKind; key: string; finalizer: string }> = [];
  reads = 0;
  /** Make every read fail (an API server outage). */
  failReads: Error | undefined;

  private async read<T>(v: T): Promise<T> {
    this.reads++;
    if (this.failReads) throw this.failReads;
    return v;
  }

  secret(namespace: string, name: string, data: Record<string, string>): this {
    const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
    this.secrets.set(key(namespace, name), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace, name },
      data: encoded,
    });
    return this;
  }
  node(
    name: string,
    labels: Record<string, string>,
    topologyKeys?: string[],
    driver = 'stub.csi.kube-provisioner.io',
  ): this {
    this.nodes.set(name, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } });
    if (topologyKeys)
      this.csiNodes.set(name, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name },
        spec: { drivers: [{ name: driver, nodeID: name, topologyKeys }] },
      });
    return this;
  }

  getSecret(ns: string, name: string) {
    return this.read(this.secrets.get(key(ns, name)));
  }
  getNode(name: string) {
    return this.read(this.nodes.get(name));
  }
  listNodes() {
    return this.read([...this.nodes.values()]);
  }
  getCSINode(name: string) {
    return this.read(this.csiNodes.get(name));
  }
  listCSINodes() {
    return this.read([...this.csiNodes.values()]);
  }
  volumeAttachmentsOf(pv: string) {
    return this.read(this.attachments.filter((a) => a.spec.source.persistentVolumeName === pv));
  }
  getVolumeSnapshot(ns: string, name: string) {
    return this.read(this.snapshots.get(key(ns, name)));
  }
  getVolumeSnapshotContent(name: string) {
    return this.read(this.contents.get(name));
  }
  getVolumeAttributesClass(name: string) {
    return this.read(this.vacs.get(name));
  }
  getClaim(ns: string, name: string) {
    return this.read(this.claims.get(key(ns, name)));
  }
  getStorageClass(name: string) {
    return this.read(this.classes.get(name));
  }
  getVolume(name: string) {
    return this.read(this.volumes.get(name));
  }
  listVolumes() {
    return this.read([...this.volumes.values()]);
  }
  claimInUse(ns: string, name: string) {
    return this.read(this.podsUsing.has(key(ns, name)));
  }
  async addFinalizer(kind: FinalizedKind, ns: string, name: string, finalizer: string) {
    this.finalizerWrites.push({ op: 'add', kind, key: key(ns, name), finalizer });
  }
  async removeFinalizer(kind: FinalizedKind, ns: string, name: string, finalizer: string) {
    this.finalizerWrites.push({ op: 'remove', kind, key: key(ns, name), finalizer });
  }
}
