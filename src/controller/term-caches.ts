// The informers of one leadership term: claims, PVs, classes and (with the nodeCache option) Nodes, each with the
// cache transform applied before an object is stored, and the claim indexes the flows query. What the caches keep
// is decided here: claims, PVs and classes keep every field but managedFields and kubectl's last-applied copy
// (provision() and delete() receive them whole, and explain prints them), Nodes drop the status lists nothing reads;
// one string table serves the term's caches, so a class or provisioner name is one string however many claims and
// PVs carry it.
import type { Clock } from '../runtime/clock.ts';
import type { KubeClient } from '../runtime/client.ts';
import { cacheTransform } from '../runtime/cache-transform.ts';
import { StringTable } from '../types/shared-strings.ts';
import { Informer } from '../runtime/informer.ts';
import type { Logger } from '../types/logger.ts';
import {
  nodes,
  persistentVolumeClaims,
  persistentVolumes,
  storageClasses,
  type ApiResource,
} from '../runtime/resources.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { claimClassName } from './claim/decide-claim.ts';
import type { ResolvedOptions } from './options/controller-options.ts';

/**
 * Node status fields the node cache drops: nothing in the controller or a provisioner's node checks reads them, and
 * on a real node the image list alone is tens of kilobytes. Labels, annotations, spec, addresses, conditions,
 * capacity, allocatable and nodeInfo are kept.
 */
export const NODE_FIELDS_NOT_CACHED: readonly string[] = [
  'status.images',
  'status.volumesInUse',
  'status.volumesAttached',
  'status.daemonEndpoints',
  'status.config',
  'status.runtimeHandlers',
  'status.features',
];

/** Volume cache index: PVs by their claimRef's uid (the volume loop re-queues a deleted claim's PVs by it). */
export const VOLUME_CLAIM_UID_INDEX = 'claimUid';

/** The informers of one term (not started). */
export interface TermInformers {
  claims: Informer<PersistentVolumeClaim>;
  volumes: Informer<PersistentVolume>;
  classes: Informer<StorageClass>;
  nodes: Informer<Node> | undefined;
  all: Array<Informer<PersistentVolumeClaim> | Informer<PersistentVolume> | Informer<StorageClass> | Informer<Node>>;
}

/** Builds the term's informers with their transforms, the claim indexes `class` and `pvName` and the PV index `claimUid`. */
export function termInformers(client: KubeClient, o: ResolvedOptions, clock: Clock, logger: Logger): TermInformers {
  const strings = new StringTable();
  const informer = <T extends PersistentVolumeClaim | PersistentVolume | StorageClass | Node>(
    resource: ApiResource<T>,
    dropFields?: readonly string[],
  ) =>
    new Informer<T>({
      client,
      resource,
      resyncMs: o.resyncPeriodMs,
      clock,
      logger,
      transform: cacheTransform<T>({ strings, dropFields }),
    });
  const claims = informer<PersistentVolumeClaim>(persistentVolumeClaims);
  const volumes = informer<PersistentVolume>(persistentVolumes);
  const classes = informer<StorageClass>(storageClasses);
  const nodeInformer = o.nodeCache ? informer<Node>(nodes, NODE_FIELDS_NOT_CACHED) : undefined;
  claims.addIndex('class', (c) => [claimClassName(c)]);
  claims.addIndex('pvName', (c) => [o.volumeNameHook(c)]);
  volumes.addIndex(VOLUME_CLAIM_UID_INDEX, (v) => (v.spec.claimRef?.uid ? [v.spec.claimRef.uid] : []));
  return {
    claims,
    volumes,
    classes,
    nodes: nodeInformer,
    all: [claims, volumes, classes, ...(nodeInformer ? [nodeInformer] : [])],
  };
}
