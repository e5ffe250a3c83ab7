// What the cluster controllers' cache keeps per claim and per volume (issue 21: 10,000 claims left 26 MB in the
// ClusterCache's claims and VolumeIndex, 1.1-1.5 KB each). Each watch event is a fresh JSON.parse, so every string of
// every object was its own copy: the class, provisioner, namespace, access modes, phase, finalizers and annotation
// values repeated 10,000 times. The cache shares those through one bounded string table. Measured as retained heap
// after a full GC, per object against its JSON length: a count of bytes, not a timing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterCache } from '../../src/cluster/controllers/cluster-cache.ts';
import type { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { KubeObject, WatchEvent } from '../../src/types/k8s.ts';
import { heapAfterGc } from '../support/heap.ts';

const uid = (i: number) => `0b1c2d3e-aaaa-bbbb-cccc-${String(i).padStart(12, '0')}`;
const at = (i: number) =>
  `2026-12-01T07:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z`;
const provisioner = 'hostpath.kube-provisioner.io';

function claim(i: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: `claim-${i}`,
      namespace: 'default',
      uid: uid(i),
      resourceVersion: String(100_000 + i),
      creationTimestamp: at(i),
      annotations: {
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
        'volume.beta.kubernetes.io/storage-provisioner': provisioner,
        'volume.kubernetes.io/storage-provisioner': provisioner,
      },
      finalizers: ['kubernetes.io/pvc-protection'],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '1Mi' } },
      storageClassName: 'hostpath',
      volumeMode: 'Filesystem',
      volumeName: `pvc-${uid(i)}`,
    },
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Mi' } },
  };
}

function volume(i: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${uid(i)}`,
      uid: uid(i + 1_000_000),
      resourceVersion: String(200_000 + i),
      creationTimestamp: at(i),
      annotations: { 'pv.kubernetes.io/provisioned-by': provisioner, 'hostpath.kube-provisioner.io/node': 'node-1' },
      finalizers: ['kubernetes.io/pv-protection'],
    },
    spec: {
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'hostpath',
      volumeMode: 'Filesystem',
      hostPath: { path: `/var/lib/kube-provisioner/volumes/shared/default/claim-${i}-pvc-${uid(i)}`, type: '' },
      claimRef: {
        kind: 'PersistentVolumeClaim',
        namespace: 'default',
        name: `claim-${i}`,
        uid: uid(i),
        apiVersion: 'v1',
        resourceVersion: String(100_000 + i),
      },
    },
    status: { phase: 'Bound' },
  };
}

/** A store stand-in that hands the cache each object as a watch delivers it: freshly parsed from its JSON. */
function feeder(): { store: ClusterStore; send(resource: string, obj: KubeObject): void } {
  const watchers = new Map<string, (ev: WatchEvent) => void>();
  const store = {
    watch(resource: string, _opts: unknown, onEvent: (ev: WatchEvent) => void) {
      watchers.set(resource, onEvent);
      return () => watchers.delete(resource);
    },
  } as unknown as ClusterStore;
  return {
    store,
    send: (resource, obj) =>
      watchers.get(resource)!({ type: 'ADDED', object: JSON.parse(JSON.stringify(obj)) as KubeObject }),
  };
}

describe('cluster controllers cache memory', () => {
  for (const [resource, make] of [
    ['persistentvolumeclaims', claim],
    ['persistentvolumes', volume],
  ] as const) {
    const limit = resource === 'persistentvolumes' ? 1.4 : 1.2;
    it(`keeps a Bound ${resource === 'persistentvolumes' ? 'PV' : 'claim'} in at most ${limit}x its JSON text (repeated strings shared)`, () => {
      const { store, send } = feeder();
      const cache = new ClusterCache();
      cache.start(store);
      const n = 5000;
      const before = heapAfterGc();
      for (let i = 0; i < n; i++) send(resource, make(i));
      const perObject = (heapAfterGc() - before) / n;
      const jsonBytes = JSON.stringify(make(n - 1)).length;
      assert.equal(resource === 'persistentvolumes' ? cache.volumes.size : cache.claims.size, n);
      // Parsed without sharing: 1.42x the JSON for a claim (1,144 bytes), 1.71x for a PV with its index entries
      // (1,531 bytes); shared, 1.14x (913 bytes) and 1.33x (1,191 bytes; a claim key naming one volume is a string, not a Set).
      assert.ok(
        perObject <= limit * jsonBytes,
        `${Math.round(perObject)} bytes of heap per object, JSON ${jsonBytes} bytes`,
      );
      cache.stop();
    });
  }
});
