// The PV watch that feeds the hostpath provisioner's live-volume index (live-volumes.ts): the runtime reflector
// (list, then watch with bookmarks, relist on 410), with a store that keeps only what the index reads of each PV
// (name, uid, resourceVersion, our annotations, capacity, source, node affinity: a few hundred bytes), so the
// provisioner's copy of 10,000 PVs costs a few MB, not a second full cache. Handlers see each event's full object.
import type { PersistentVolume } from '../../types/k8s.ts';
import type { Clock } from '../../runtime/clock.ts';
import type { KubeClient } from '../../runtime/client.ts';
import { silentLogger, type Logger } from '../../types/logger.ts';
import { ObjectStore } from '../../runtime/object-store.ts';
import { Reflector } from '../../runtime/reflector.ts';
import { persistentVolumes } from '../../runtime/resources.ts';
import type { VolumeFeed } from './live-volumes.ts';

type Handlers = Parameters<VolumeFeed['addEventHandler']>[0];

const OUR_ANNOTATIONS = 'hostpath.kube-provisioner.io/';

/** What the live-volume index reads of a PV. */
export function slimVolume(pv: PersistentVolume): PersistentVolume {
  const { name, uid, resourceVersion, annotations } = pv.metadata;
  const ours =
    annotations && Object.fromEntries(Object.entries(annotations).filter(([k]) => k.startsWith(OUR_ANNOTATIONS)));
  const { capacity, hostPath, local, nfs, nodeAffinity } = pv.spec;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, uid, resourceVersion, ...(ours && Object.keys(ours).length > 0 ? { annotations: ours } : {}) },
    spec: { capacity, hostPath, local, nfs, nodeAffinity },
  };
}

class SlimVolumeStore extends ObjectStore<PersistentVolume> {
  override upsert(obj: PersistentVolume): PersistentVolume | undefined {
    return super.upsert(slimVolume(obj));
  }
}

/** A watch of every PV, as a VolumeFeed. Start it with start(signal); it stops when the signal aborts. */
export class VolumeWatch implements VolumeFeed {
  readonly synced: Promise<void>;
  private resolveSynced!: () => void;
  private readonly handlers = new Set<Handlers>();
  private readonly store = new SlimVolumeStore();
  private readonly reflector: Reflector<PersistentVolume>;
  private readonly logger: Logger;
  private isSynced = false;

  constructor(o: { client: KubeClient; clock?: Clock; logger?: Logger }) {
    this.logger = (o.logger ?? silentLogger).child({ watch: 'persistentvolumes' });
    this.synced = new Promise((resolve) => (this.resolveSynced = resolve));
    this.reflector = new Reflector<PersistentVolume>({
      client: o.client,
      resource: persistentVolumes,
      store: this.store,
      clock: o.clock,
      logger: o.logger,
      onDelta: (d) => {
        for (const h of this.handlers) {
          try {
            if (d.type === 'add') h.onAdd?.(d.obj);
            else if (d.type === 'update') h.onUpdate?.(d.old, d.obj);
            else h.onDelete?.(d.obj);
          } catch (err) {
            this.logger.error({ err: (err as Error).message }, 'volume watch handler threw');
          }
        }
      },
      onListed: () => {
        this.isSynced = true;
        this.resolveSynced();
      },
    });
  }

  get lastSyncResourceVersion(): string {
    return this.reflector.lastSyncResourceVersion;
  }

  addEventHandler(h: Handlers): () => void {
    this.handlers.add(h);
    if (this.isSynced) for (const pv of this.store.list()) h.onAdd?.(pv);
    return () => this.handlers.delete(h);
  }

  /** Lists and watches until `signal` aborts. */
  start(signal: AbortSignal): Promise<void> {
    return this.reflector.run(signal);
  }
}
