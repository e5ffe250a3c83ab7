// Example: a complete custom provisioner written against the public API of kube-provisioner. Each volume is a
// directory under a base directory, published as a hostPath PV pinned to this node. About 100 lines: the
// controller does everything else (informers, queues, retries, events, metrics, PV save, deletion, leader election).
import { mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  IgnoredError,
  InfeasibleError,
  parseQuantity,
  type PersistentVolume,
  type Provisioner,
  type ProvisionOptions,
  type ProvisionResult,
} from 'kube-provisioner';

/** The annotation recording which node holds a volume, so each node's instance only deletes its own volumes. */
export const ANN_NODE = 'directory.example.com/node';

export interface DirectoryProvisionerOptions {
  /** Where volume directories live. */
  baseDir: string;
  /** This instance's node name (pins PVs to it, and shards deletes by it). */
  nodeName: string;
  /** Largest volume this backend accepts, in bytes (default 1 GiB). */
  maxBytes?: bigint;
}

export class DirectoryProvisioner implements Provisioner {
  constructor(private readonly opts: DirectoryProvisionerOptions) {}

  /** Idempotent: the same pvName always maps to the same directory, so a retried call returns the same volume. */
  async provision(options: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    const { claim, storageClass, pvName, selectedNodeName } = options;
    if (selectedNodeName && selectedNodeName !== this.opts.nodeName) {
      // WaitForFirstConsumer chose another node: that node's instance provisions it.
      throw new IgnoredError(`the claim was scheduled to node ${selectedNodeName}`);
    }
    const request = claim.spec.resources?.requests?.storage ?? '0';
    const bytes = parseQuantity(request);
    if (bytes > (this.opts.maxBytes ?? 1n << 30n)) {
      // Can never succeed as asked: the controller retries slowly until the claim or class changes.
      throw new InfeasibleError(`requested ${request} exceeds this backend's limit`);
    }
    signal.throwIfAborted();
    const dir = join(this.opts.baseDir, pvName);
    await mkdir(dir, { recursive: true, mode: 0o777 });
    await writeFile(join(dir, '.claim'), `${claim.metadata.namespace}/${claim.metadata.name}\n`);
    return {
      volume: {
        metadata: { name: pvName, annotations: { [ANN_NODE]: this.opts.nodeName } },
        spec: {
          capacity: { storage: request },
          accessModes: claim.spec.accessModes,
          persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? 'Delete',
          mountOptions: storageClass.mountOptions,
          volumeMode: 'Filesystem',
          hostPath: { path: dir, type: 'DirectoryOrCreate' },
          nodeAffinity: {
            required: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [this.opts.nodeName] }] },
              ],
            },
          },
        },
      },
    };
  }

  /** Idempotent too: deleting a directory that is already gone succeeds. */
  async delete(volume: PersistentVolume, signal: AbortSignal): Promise<void> {
    const node = volume.metadata.annotations?.[ANN_NODE];
    if (node && node !== this.opts.nodeName) throw new IgnoredError(`volume lives on node ${node}`);
    signal.throwIfAborted();
    await rm(join(this.opts.baseDir, volume.metadata.name ?? ''), { recursive: true, force: true });
  }

  /** Lets the controller's leak inventory find directories without a PV. */
  async listVolumes(): Promise<Array<{ name: string; createdAt?: Date }>> {
    const names = await readdir(this.opts.baseDir).catch(() => [] as string[]);
    return Promise.all(
      names
        .filter((n) => n.startsWith('pvc-'))
        .map(async (name) => ({ name, createdAt: (await stat(join(this.opts.baseDir, name))).birthtime })),
    );
  }
}
