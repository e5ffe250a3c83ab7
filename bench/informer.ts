// Informer benchmark: initial sync of N PersistentVolumes, memory per cached object, and controller CPU per
// watch event. The API is a synthetic feed in a child process (this file with argv "feed"), so the CPU
// measured in this process is the informer's alone: HTTP parsing, JSON decoding, store, freezing, handlers.
// Run: node --expose-gc --import tsx bench/informer.ts [objects=10000] [events=50000] [--no-freeze]
//      node --import tsx bench/informer.ts --cluster [objects=10000]   (initial sync over HTTPS from the
//      embedded cluster, in-process: wall time only, since CPU and heap are shared with the server)
import http from 'node:http';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/runtime/client.ts';
import { Informer } from '../src/runtime/informer.ts';
import { persistentVolumes } from '../src/runtime/resources.ts';
import type { PersistentVolume } from '../src/types/k8s.ts';

function makePv(i: number, rv: number): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name: `pvc-${i.toString(16).padStart(8, '0')}-4f1e-9a8b-1c2d3e4f5a6b`,
      uid: `uid-${i}`,
      resourceVersion: String(rv),
      creationTimestamp: '2026-01-01T00:00:00Z',
      annotations: { 'pv.kubernetes.io/provisioned-by': 'hostpath.kube-provisioner.io' },
      finalizers: ['kubernetes.io/pv-protection'],
    },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'hostpath',
      volumeMode: 'Filesystem',
      hostPath: { path: `/var/lib/kube-provisioner/pv-${i}`, type: 'DirectoryOrCreate' },
      claimRef: {
        kind: 'PersistentVolumeClaim',
        namespace: 'default',
        name: `claim-${i}`,
        uid: `claim-uid-${i}`,
        apiVersion: 'v1',
        resourceVersion: String(rv),
      },
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['node-1'] }] },
          ],
        },
      },
    },
    status: { phase: 'Bound' },
  };
}

/** The child process: serves a paginated list of N PVs and a watch that streams E modifications. */
async function feed(objects: number, events: number): Promise<void> {
  const base = 1000;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.writeHead(200, { 'Content-Type': 'application/json' });
    if (url.searchParams.get('watch')) {
      let sent = 0;
      const pump = () => {
        while (sent < events) {
          const i = sent % objects;
          sent++;
          const ok = res.write(JSON.stringify({ type: 'MODIFIED', object: makePv(i, base + objects + sent) }) + '\n');
          if (!ok) return void res.once('drain', pump);
        }
      };
      // Wait for the parent's "go" (it first measures memory after the list).
      req.socket.setNoDelay(true);
      process.once('message', pump);
      return;
    }
    const limit = Number(url.searchParams.get('limit') || objects);
    const start = Number(url.searchParams.get('continue') || 0);
    const end = Math.min(objects, start + limit);
    const items = [];
    for (let i = start; i < end; i++) items.push(makePv(i, base + i));
    res.end(
      JSON.stringify({
        kind: 'PersistentVolumeList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(base + objects), continue: end < objects ? String(end) : undefined },
        items,
      }),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  process.send?.({ port: (server.address() as AddressInfo).port });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  const objects = Number(args[0] ?? 10_000);
  const events = Number(args[1] ?? 50_000);
  // One configuration per process, so the heap measured holds exactly one cache.
  const freeze = !process.argv.includes('--no-freeze');
  const gc = (globalThis as { gc?: () => void }).gc;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(import.meta.url), 'feed', String(objects), String(events)],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  const port = await new Promise<number>((r) => child.once('message', (m: { port: number }) => r(m.port)));
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const client = new KubeClient({ kubeConfig: kc, qps: 0 });

  {
    gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    let updates = 0;
    let done!: () => void;
    const allDelivered = new Promise<void>((r) => {
      done = r;
    });
    const informer = new Informer<PersistentVolume>({
      client,
      resource: persistentVolumes,
      freeze,
      handlers: {
        onUpdate: () => {
          if (++updates === events) done();
        },
      },
    });
    const t0 = performance.now();
    informer.start();
    await informer.synced;
    const syncMs = performance.now() - t0;
    gc?.();
    const perObject = (process.memoryUsage().heapUsed - heapBefore) / objects;
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    child.send('go');
    await allDelivered;
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - w0;
    const usPerEvent = (cpu.user + cpu.system) / events;
    console.log(
      JSON.stringify({
        freeze,
        objects,
        initialSyncMs: Math.round(syncMs),
        heapBytesPerObject: Math.round(perObject),
        events,
        cpuMicrosPerEvent: Number(usPerEvent.toFixed(1)),
        eventsPerSecond: Math.round(events / (wallMs / 1000)),
        gcExposed: Boolean(gc),
      }),
    );
    await informer.stop();
  }
  client.close();
  child.kill();
}

/** Initial sync from the embedded cluster over HTTPS (paginated list of 500 per page). */
async function clusterSync(): Promise<void> {
  const objects = Number(process.argv.slice(2).filter((a) => !a.startsWith('--'))[0] ?? 10_000);
  const { startCluster } = await import('../src/testing/index.ts');
  const cluster = await startCluster({ controllers: false });
  for (let i = 0; i < objects; i++) {
    const pv = makePv(i, 0);
    delete pv.metadata.uid;
    delete pv.metadata.resourceVersion;
    delete pv.status;
    cluster.store.create('persistentvolumes', pv);
  }
  const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
  const runs: number[] = [];
  for (let run = 0; run < 3; run++) {
    const informer = new Informer<PersistentVolume>({ client, resource: persistentVolumes });
    const t0 = performance.now();
    informer.start();
    await informer.synced;
    runs.push(Math.round(performance.now() - t0));
    await informer.stop();
  }
  console.log(JSON.stringify({ mode: 'embedded-cluster-https', objects, initialSyncMs: runs }));
  client.close();
  await cluster.stop();
}

if (process.argv[2] === 'feed') await feed(Number(process.argv[3]), Number(process.argv[4]));
else if (process.argv.includes('--cluster')) await clusterSync();
else await main();
