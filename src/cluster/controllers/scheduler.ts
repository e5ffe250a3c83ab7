// The scheduler stand-in: places unscheduled pods on a ready node that fits them and their claims. For a
// WaitForFirstConsumer claim it does what kube-scheduler's VolumeBinding plugin does: bind a matching static
// PV with node affinity for the node, or else set `volume.kubernetes.io/selected-node` so the provisioner
// creates the volume there; the pod gets spec.nodeName once all its claims are Bound. When a provisioner
// removes selected-node (reschedule), the pod is placed again. A pod created with spec.nodeName skips the
// real scheduler (kube-scheduler never sees it, so nothing selects a node); here its WaitForFirstConsumer claims
// still get that node selected, so such a pod works in the embedded cluster.
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE } from '../../types/annotations.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import type { ClusterCache } from './cluster-cache.ts';
import { podClaimNames } from './cluster-cache.ts';
import { claimBlocksNode, nodeIsSchedulable, nodeSelectorMatches, podFitsNode } from './node-fit.ts';
import { ClaimMatchError, claimClass, claimKey, findBestMatchForClaim, type VolumeSource } from './volume-match.ts';
import { backoff, done, KeyedQueue, QueueController, type SyncNext } from './keyed-queue.ts';

export const SCHEDULER_USER = 'system:kube-scheduler';

export interface SchedulerDeps {
  store: ClusterStore;
  cache: ClusterCache;
  logger: Logger;
}

export class SchedulerStandIn extends QueueController {
  private readonly d: SchedulerDeps;
  protected readonly queue: KeyedQueue;
  /** Keys of live pods without a node or with claims: what node/class/claim changes re-queue. */
  private readonly unscheduled = new Set<string>();

  constructor(deps: SchedulerDeps) {
    super();
    this.d = deps;
    this.queue = new KeyedQueue({
      handle: (key) => this.schedule(key),
      onError: (key, err) => deps.logger.error({ err, pod: key }, 'scheduling failed'),
    });
    deps.cache.onChange((change) => {
      const { obj } = change;
      switch (change.resource) {
        case 'pods': {
          const key = claimKey(obj.metadata.namespace, obj.metadata.name);
          const pod = obj as Pod;
          if (
            change.type !== 'DELETED' &&
            !obj.metadata.deletionTimestamp &&
            (!pod.spec?.nodeName || podClaimNames(pod).length > 0)
          ) {
            this.unscheduled.add(key);
            this.queue.add(key);
          } else this.unscheduled.delete(key);
          break;
        }
        case 'persistentvolumeclaims':
          this.requeuePodsOf(obj.metadata.namespace ?? '', obj.metadata.name ?? '');
          break;
        case 'persistentvolumes': {
          const ref = (obj as PersistentVolume).spec?.claimRef;
          if (ref) this.requeuePodsOf(ref.namespace ?? '', ref.name ?? '');
          break;
        }
        case 'nodes':
        case 'storageclasses':
        case 'csidrivers':
        case 'csistoragecapacities':
          for (const key of this.unscheduled) this.queue.add(key);
          break;
      }
    });
  }

  resync(): void {
    for (const key of this.unscheduled) this.queue.add(key);
  }

  private requeuePodsOf(namespace: string, claimName: string): void {
    for (const pod of this.d.cache.podsUsingClaim(namespace, claimName)) {
      const key = claimKey(pod.metadata.namespace, pod.metadata.name);
      if (this.unscheduled.has(key)) this.queue.add(key);
    }
  }

  private schedule(key: string): SyncNext {
    const { cache, logger } = this.d;
    const pod = cache.pods.get(key);
    if (!pod || pod.metadata.deletionTimestamp) return done;
    const fixedNode = pod.spec.nodeName;
    const claimNames = podClaimNames(pod);
    if (fixedNode && claimNames.length === 0) return done;
    const namespace = pod.metadata.namespace ?? '';
    const claims: PersistentVolumeClaim[] = [];
    for (const name of claimNames) {
      const claim = cache.getClaim(namespace, name);
      // kube-scheduler: persistentvolumeclaim not found -> unschedulable until it appears.
      if (!claim) return done;
      claims.push(claim);
    }
    const world = {
      getVolume: (n: string) => cache.volumes.get(n),
      getClass: (n: string) => cache.classes.get(n),
      getDriver: (n: string) => cache.csiDrivers.get(n),
      capacitiesFor: (n: string) => cache.capacitiesFor(n),
    };
    const fits = (node: Node) =>
      nodeIsSchedulable(node) &&
      podFitsNode(pod, node) &&
      claims.every((c) => claimBlocksNode(c, claimClass(c), node, world) === undefined);
    const nodes = cache.nodesByName();
    const preferred = claims.map((c) => c.metadata.annotations?.[ANN_SELECTED_NODE]).find((n) => n !== undefined);
    const node = nodes.find((n) => n.metadata.name === preferred && fits(n)) ?? nodes.find(fits);
    if (!node) {
      logger.debug({ pod: key }, 'no node fits the pod yet');
      return done;
    }
    const nodeName = node.metadata.name ?? '';
    try {
      let allBound = true;
      for (const claim of claims) {
        if (claim.status?.phase === 'Bound') continue;
        allBound = false;
        if (claim.spec.volumeName || claim.metadata.annotations?.[ANN_SELECTED_NODE]) continue;
        const staticPv = findBestMatchForClaim(claim, nodeFilteredSource(cache.volumes, node), false);
        if (staticPv) this.bindStaticVolume(staticPv, claim);
        else {
          this.d.store.update(
            'persistentvolumeclaims',
            {
              ...claim,
              metadata: {
                ...claim.metadata,
                annotations: { ...(claim.metadata.annotations ?? {}), [ANN_SELECTED_NODE]: nodeName },
              },
            },
            { user: SCHEDULER_USER },
          );
          logger.info(
            { pod: key, pvc: claimKey(namespace, claim.metadata.name), node: nodeName },
            'selected node for claim',
          );
        }
      }
      if (!allBound || fixedNode) return done; // the claims' updates re-queue the pod
      this.d.store.update('pods', { ...pod, spec: { ...pod.spec, nodeName } }, { user: SCHEDULER_USER });
      logger.info({ pod: key, node: nodeName }, 'pod bound to node');
      return done;
    } catch (err) {
      if (err instanceof ClusterApiError && err.code === 404) return done;
      if (err instanceof ClusterApiError) return backoff;
      if (err instanceof ClaimMatchError) return done; // the binder reports it on the claim
      throw err;
    }
  }

  /** What the VolumeBinding plugin does for a static PV: claimRef + bound-by-controller; the binder finishes. */
  private bindStaticVolume(pv: PersistentVolume, claim: PersistentVolumeClaim): void {
    this.d.store.update(
      'persistentvolumes',
      {
        ...pv,
        metadata: {
          ...pv.metadata,
          annotations: { ...(pv.metadata.annotations ?? {}), [ANN_BOUND_BY_CONTROLLER]: 'yes' },
        },
        spec: {
          ...pv.spec,
          claimRef: {
            kind: 'PersistentVolumeClaim',
            namespace: claim.metadata.namespace,
            name: claim.metadata.name,
            uid: claim.metadata.uid,
            apiVersion: 'v1',
            resourceVersion: claim.metadata.resourceVersion,
          },
        },
      },
      { user: SCHEDULER_USER },
    );
  }
}

/** Unclaimed volumes whose node affinity admits `node` (lazily: matching stops at the first fit). */
function nodeFilteredSource(source: VolumeSource, node: Node): VolumeSource {
  function* admitted(group: Iterable<PersistentVolume>): Iterable<PersistentVolume> {
    for (const pv of group) if (nodeSelectorMatches(pv.spec.nodeAffinity?.required, node)) yield pv;
  }
  return {
    preBoundTo: (claim) => source.preBoundTo(claim),
    *unclaimedGroups(className, modes, min) {
      for (const group of source.unclaimedGroups(className, modes, min)) yield admitted(group);
    },
  };
}
