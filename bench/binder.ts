// Benchmark of the embedded cluster's PV binder: claims and matching PVs created in bulk on an in-process
// store, then the time until every claim is Bound. Two shapes: PVs pre-bound by claimRef (what a provisioner
// creates) and Available PVs matched by class/capacity/modes. Reports pairs/s and µs per pair for 1,000 and
// 10,000 pairs: the cost per pair should stay flat (no scan of all objects per event).
// Run: npm run bench:binder  (node --import tsx bench/binder.ts [sizes...])
import { ClusterStore } from '../src/cluster/writes/cluster-store.ts';
import { startClusterControllers } from '../src/cluster/controllers/index.ts';
import type { PersistentVolumeClaim } from '../src/types/k8s.ts';

type Shape = 'prebound' | 'available';

/** Creates one side of the pairs before measuring, the other side inside the measurement. */
async function run(pairs: number, shape: Shape): Promise<{ createMs: number; bindMs: number; bindCpuMs: number }> {
  const store = new ClusterStore({ watchCacheSize: 1000 });
  for (const name of ['default', 'bench'])
    store.create('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const ctl = startClusterControllers(store, { nodeName: 'bench-node', resyncMs: 3_600_000 });
  store.create('storageclasses', {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'bench' },
    provisioner: 'bench.example.com/p',
  });
  const createClaim = (i: number) =>
    store.create('persistentvolumeclaims', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `c-${i}`, namespace: 'bench' },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'bench', resources: { requests: { storage: '1Gi' } } },
    }) as PersistentVolumeClaim;
  const createVolume = (i: number, claim?: PersistentVolumeClaim) =>
    store.create('persistentvolumes', {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name: `pv-${i}`,
        annotations: claim ? { 'pv.kubernetes.io/provisioned-by': 'bench.example.com/p' } : {},
      },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'bench',
        persistentVolumeReclaimPolicy: 'Delete',
        hostPath: { path: `/tmp/pv-${i}` },
        ...(claim
          ? {
              claimRef: {
                kind: 'PersistentVolumeClaim',
                apiVersion: 'v1',
                namespace: 'bench',
                name: claim.metadata.name,
                uid: claim.metadata.uid,
              },
            }
          : {}),
      },
    });
  // Setup (not measured): prebound = claims already waiting for their provisioner; available = a pool of PVs.
  const claims: PersistentVolumeClaim[] = [];
  if (shape === 'prebound') for (let i = 0; i < pairs; i++) claims.push(createClaim(i));
  else for (let i = 0; i < pairs; i++) createVolume(i);
  await ctl.idle();
  const t0 = performance.now();
  if (shape === 'prebound') for (let i = 0; i < pairs; i++) createVolume(i, claims[i]);
  else for (let i = 0; i < pairs; i++) createClaim(i);
  const tCreated = performance.now();
  const cpu0 = process.cpuUsage();
  await ctl.idle();
  const tBound = performance.now();
  const cpu = process.cpuUsage(cpu0);
  const bound = store
    .list('persistentvolumeclaims', { namespace: 'bench' })
    .items.filter((c) => (c as PersistentVolumeClaim).status?.phase === 'Bound').length;
  await ctl.stop();
  if (bound !== pairs) throw new Error(`only ${bound} of ${pairs} claims bound`);
  return { createMs: tCreated - t0, bindMs: tBound - tCreated, bindCpuMs: (cpu.user + cpu.system) / 1000 };
}

// Warm the JIT so the first measured size is not penalised.
await run(300, 'prebound');
await run(300, 'available');

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
// CPU time is reported too: on a shared machine wall time mostly measures the neighbours.
console.log('shape       pairs  wall ms  pairs/s  µs/pair |  cpu ms  pairs/s(cpu)  cpu µs/pair | creation ms');
for (const shape of ['prebound', 'available'] as Shape[]) {
  for (const pairs of sizes.length ? sizes : [1_000, 10_000]) {
    const { createMs, bindMs, bindCpuMs } = await run(pairs, shape);
    const col = (v: number, w: number, d = 0) => v.toFixed(d).padStart(w);
    console.log(
      `${shape.padEnd(10)} ${col(pairs, 6)} ${col(bindMs, 8)} ${col(pairs / (bindMs / 1000), 8)} ${col((bindMs * 1000) / pairs, 8, 1)} | ` +
        `${col(bindCpuMs, 7)} ${col(pairs / (bindCpuMs / 1000), 13)} ${col((bindCpuMs * 1000) / pairs, 12, 1)} | ${col(createMs, 11)}`,
    );
  }
}
