// The embedded cluster's own controllers, started together on a store: the PV binder, pvc/pv protection
// (admission + controllers), DefaultStorageClass admission, the scheduler stand-in, the local Node, its kubelet
// stand-in, the default ServiceAccount of every namespace and the garbage collector.
// They are ordinary store clients sharing one cache; stop() leaves no timers or watches behind.
import type { PersistentVolumeClaim } from '../../types/k8s.ts';
import type { Logger } from '../../types/logger.ts';
import { silentLogger } from '../../types/logger.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import { ClusterCache, type CacheReadCounter } from './cluster-cache.ts';
import { installDefaultClassAdmission } from './default-class.ts';
import { ClusterEventRecorder } from './cluster-event-recorder.ts';
import { ensureLocalNode, localNodeName } from './local-node.ts';
import { GarbageCollector } from './garbage-collector.ts';
import { installProtectionAdmission, ProtectionController } from './protection.ts';
import { PvBinder } from './pv-binder.ts';
import { SchedulerStandIn } from './scheduler.ts';
import { EXPAND_CONTROLLER_COMPONENT, installResizeAdmission, watchExternalExpansion } from './volume-expand.ts';
import { KubeletStandIn } from './kubelet.ts';
import { startServiceAccountController } from './service-account.ts';

export { localNodeName } from './local-node.ts';
export type { CacheReadCounter, CachedResource } from './cluster-cache.ts';

/** The PV controller's event source component, as kube-controller-manager names it. */
export const PV_CONTROLLER_COMPONENT = 'persistentvolume-controller';

export interface ClusterControllersOptions {
  /** Period of the full resync of claims and volumes (default 15,000 ms, kube-controller-manager's). */
  resyncMs?: number;
  logger?: Logger;
  /** Name of the local Node (default: this machine's hostname). */
  nodeName?: string;
  /** Clock for event timestamps (default Date.now). */
  now?: () => number;
  /** Counts the cached objects the controllers examine (the flat-cost test injects one). */
  readCounter?: CacheReadCounter;
}

export interface ClusterControllers {
  /** Resolves once every controller queue is empty (for tests and benchmarks). */
  idle(): Promise<void>;
  /** Objects the controllers' event correlators remember events of (tests: nothing is kept once an object is done). */
  eventsRemembered(): number;
  /** Re-queues everything now, as the periodic resync does. */
  resync(): void;
  stop(): Promise<void>;
}

/** Starts the controllers on `store`; objects already stored are synced at once. */
export function startClusterControllers(store: ClusterStore, opts: ClusterControllersOptions = {}): ClusterControllers {
  const logger = (opts.logger ?? silentLogger).child({ component: 'cluster-controllers' });
  const cache = new ClusterCache({ counter: opts.readCounter });
  const recorder = new ClusterEventRecorder(store, PV_CONTROLLER_COMPONENT, { now: opts.now, logger });
  const admissions = [
    installProtectionAdmission(store),
    installDefaultClassAdmission(store, cache),
    installResizeAdmission(store, cache),
  ];
  const expandRecorder = new ClusterEventRecorder(store, EXPAND_CONTROLLER_COMPONENT, { now: opts.now, logger });
  const expansion = watchExternalExpansion(cache, expandRecorder, store);
  const binder = new PvBinder({
    store,
    cache,
    recorder,
    logger: logger.child({ controller: 'persistentvolume-binder' }),
  });
  const protection = new ProtectionController({
    store,
    cache,
    logger: logger.child({ controller: 'storage-protection' }),
  });
  const scheduler = new SchedulerStandIn({ store, cache, logger: logger.child({ controller: 'scheduler' }) });
  const nodeName = opts.nodeName ?? localNodeName();
  const kubeletRecorder = new ClusterEventRecorder(store, 'kubelet', { now: opts.now, logger });
  const recorders = [recorder, expandRecorder, kubeletRecorder];
  // Nothing per object is kept once it is done: the correlators forget a deleted object, and the binder's forgets
  // a claim once it is Bound (its ExternalProvisioning repeats end there). 10,000 claims left 5.5 MB of correlator
  // entries behind otherwise (docs/benchmarks.md).
  cache.onChange((change) => {
    if (change.type === 'DELETED') for (const r of recorders) r.forget(change.obj);
    else if (
      change.resource === 'persistentvolumeclaims' &&
      (change.obj as PersistentVolumeClaim).status?.phase === 'Bound' &&
      (change.old as PersistentVolumeClaim | undefined)?.status?.phase !== 'Bound'
    )
      recorder.forget(change.obj);
  });
  const kubelet = new KubeletStandIn({
    store,
    cache,
    nodeName,
    now: opts.now ?? Date.now,
    logger: logger.child({ controller: 'kubelet' }),
    recorder: kubeletRecorder,
  });
  const garbageCollector = new GarbageCollector({ store, logger: logger.child({ controller: 'garbage-collector' }) });
  const controllers = [binder, protection, scheduler, kubelet, garbageCollector];
  ensureLocalNode(store, nodeName, (opts.now ?? Date.now)());
  const stopServiceAccounts = startServiceAccountController(store, logger.child({ controller: 'serviceaccount' }));
  cache.start(store);
  garbageCollector.start();
  const timer = setInterval(() => {
    for (const c of controllers) c.resync();
  }, opts.resyncMs ?? 15_000);
  timer.unref?.();
  let stopped = false;
  return {
    async idle() {
      // Controllers feed each other (a binder write wakes the scheduler...): wait until all are quiet at once.
      do await Promise.all(controllers.map((c) => c.idle()));
      while (controllers.some((c) => c.busy));
    },
    eventsRemembered() {
      return recorders.reduce((n, r) => n + r.remembered, 0);
    },
    resync() {
      for (const c of controllers) c.resync();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      for (const a of admissions) a.disable();
      expansion.stop();
      stopServiceAccounts();
      cache.stop();
      for (const c of controllers) c.stop();
    },
  };
}
