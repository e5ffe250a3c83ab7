// The kubelet stand-in, as kwok does it: a pod scheduled to the local node whose volumes can all be mounted
// (every claim Bound to an existing PV, and a hostPath or local PV's directory present on this machine) is
// reported Running and Ready, with container statuses, without running anything: the status message says so.
// A pod whose volumes cannot be mounted stays Pending with a FailedMount Warning event, like kubelet's
// "MountVolume.SetUp failed". This is what lets `kubectl wait --for=condition=Ready pod/...` end the usual
// provisioner walkthrough. Containers never run, so there are no logs (pods/log answers 400).
import { existsSync } from 'node:fs';
import type { Logger } from '../../types/logger.ts';
import type { Pod } from '../../types/k8s.ts';
import { formatTime } from '../common/meta.ts';
import { type ClusterStore } from '../writes/cluster-store.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import type { ClusterCache } from './cluster-cache.ts';
import type { ClusterEventRecorder } from './cluster-event-recorder.ts';
import { backoff, done, KeyedQueue, QueueController, type SyncNext } from './keyed-queue.ts';
import { claimKey } from './volume-match.ts';

/** The message of a pod the stand-in reports Running. */
export const NOT_RUN_MESSAGE =
  'containers are not run by the embedded cluster: its kubelet stand-in reports the pod Running once its volumes can be mounted';

export interface KubeletDeps {
  store: ClusterStore;
  cache: ClusterCache;
  recorder: ClusterEventRecorder;
  nodeName: string;
  now: () => number;
  logger: Logger;
}

/** Why a volume of `pod` cannot be mounted here, or undefined when all can. */
export function unmountableVolume(
  pod: Pod,
  cache: Pick<ClusterCache, 'getClaim' | 'volumes'>,
  pathExists: (p: string) => boolean = existsSync,
): string | undefined {
  const namespace = pod.metadata.namespace ?? '';
  for (const v of pod.spec.volumes ?? []) {
    const claimName =
      v.persistentVolumeClaim?.claimName ?? (v.ephemeral ? `${pod.metadata.name}-${v.name}` : undefined);
    if (claimName === undefined) continue;
    const claim = cache.getClaim(namespace, claimName);
    if (!claim)
      return `MountVolume.SetUp failed for volume "${v.name}": persistentvolumeclaim "${claimName}" not found`;
    if (claim.status?.phase !== 'Bound' || !claim.spec.volumeName)
      return `MountVolume.SetUp failed for volume "${v.name}": persistentvolumeclaim "${claimName}" is not Bound`;
    const pv = cache.volumes.get(claim.spec.volumeName);
    if (!pv)
      return `MountVolume.SetUp failed for volume "${v.name}": persistentvolume "${claim.spec.volumeName}" not found`;
    const dir = pv.spec.hostPath?.path ?? pv.spec.local?.path;
    if (dir !== undefined && !pathExists(dir))
      return `MountVolume.SetUp failed for volume "${v.name}": directory ${dir} of persistentvolume "${claim.spec.volumeName}" does not exist on this node`;
  }
  return undefined;
}

export class KubeletStandIn extends QueueController {
  private readonly d: KubeletDeps;
  protected readonly queue: KeyedQueue;

  constructor(deps: KubeletDeps) {
    super();
    this.d = deps;
    this.queue = new KeyedQueue({
      handle: (key) => this.sync(key),
      onError: (key, err) => deps.logger.error({ err, pod: key }, 'pod status update failed'),
    });
    deps.cache.onChange((change) => {
      if (change.resource === 'pods') {
        const pod = change.obj as Pod;
        if (change.type !== 'DELETED' && this.mine(pod))
          this.queue.add(claimKey(pod.metadata.namespace, pod.metadata.name));
      } else if (change.resource === 'persistentvolumeclaims') {
        this.requeuePodsOf(change.obj.metadata.namespace ?? '', change.obj.metadata.name ?? '');
      } else if (change.resource === 'persistentvolumes') {
        const ref = (change.obj as { spec?: { claimRef?: { namespace?: string; name?: string } } }).spec?.claimRef;
        if (ref) this.requeuePodsOf(ref.namespace ?? '', ref.name ?? '');
      }
    });
  }

  // Pods of this node that are not Running yet (a Running pod keeps its status: kubelet does not unmount).
  private mine(pod: Pod): boolean {
    return (
      pod.spec.nodeName === this.d.nodeName &&
      !pod.metadata.deletionTimestamp &&
      (pod.status?.phase ?? 'Pending') === 'Pending'
    );
  }

  private requeuePodsOf(namespace: string, claimName: string): void {
    for (const pod of this.d.cache.podsUsingClaim(namespace, claimName)) {
      if (this.mine(pod)) this.queue.add(claimKey(pod.metadata.namespace, pod.metadata.name));
    }
  }

  resync(): void {
    for (const pod of this.d.cache.pods.values())
      if (this.mine(pod)) this.queue.add(claimKey(pod.metadata.namespace, pod.metadata.name));
  }

  private sync(key: string): SyncNext {
    const { cache, store, recorder, logger } = this.d;
    const pod = cache.pods.get(key);
    if (!pod || !this.mine(pod)) return done;
    const blocked = unmountableVolume(pod, cache);
    if (blocked) {
      recorder.record(pod, 'Warning', 'FailedMount', blocked);
      logger.debug({ pod: key, reason: blocked }, 'pod volumes cannot be mounted');
      return done;
    }
    try {
      store.update(
        'pods',
        { ...pod, status: runningStatus(pod, formatTime(this.d.now())) },
        { subresource: 'status', user: `system:node:${this.d.nodeName}` },
      );
      logger.info({ pod: key, node: this.d.nodeName }, 'pod reported Running (containers not run)');
      return done;
    } catch (err) {
      if (err instanceof ClusterApiError && err.code === 404) return done;
      if (err instanceof ClusterApiError) return backoff;
      throw err;
    }
  }
}

/** The status kubelet would post for the pod once its containers started, with the not-run message. */
export function runningStatus(pod: Pod, time: string): NonNullable<Pod['status']> {
  const condition = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: time });
  return {
    ...(pod.status ?? {}),
    phase: 'Running',
    message: NOT_RUN_MESSAGE,
    reason: 'NotRun',
    conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
    hostIP: '127.0.0.1',
    podIP: '127.0.0.1',
    startTime: time,
    containerStatuses: pod.spec.containers.map((c) => ({
      name: c.name,
      image: c.image ?? '',
      imageID: '',
      containerID: `kube-provisioner://not-run/${c.name}`,
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: time } },
    })),
  };
}
