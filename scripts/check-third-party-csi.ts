// Opt-in check of `kube-provisioner run csi` against a third-party CSI plugin binary (docs/csi.md, "Checking a
// third-party plugin"). Run through scripts/check-third-party-csi.sh PLUGIN [-- PLUGIN-ARGS...].
//
// It starts the embedded cluster, the plugin (its controller and node services in one process, as
// csi-driver-host-path's hostpathplugin serves them) on a unix socket in a temp directory, registers it as
// node-driver-registrar and the kubelet would (CSIDriver, this node's CSINode with NodeGetInfo's topology keys, the
// Node's labels from its accessible topology), runs the sidecar in this process, and checks, each as one line:
// provisioning (Immediate and WaitForFirstConsumer), capacity publishing (GET_CAPACITY), expansion
// (EXPAND_VOLUME), restore from a snapshot the plugin took (CREATE_DELETE_SNAPSHOT: CreateSnapshot is called here,
// as external-snapshotter would), clone (CLONE_VOLUME), the leak inventory (LIST_VOLUMES), deletion, and a claim
// larger than the room left (RESOURCE_EXHAUSTED: rescheduled). A capability the plugin lacks is SKIP.
//
// The plugin's arguments: `{endpoint}`, `{node}`, `{dir}` are replaced; the default suits hostpathplugin:
//   --endpoint={endpoint} --nodeid={node} --statedir={dir}/state --capacity=slow=64Mi --capacity=fast=1Gi
//   --maxvolumespernode=100 --v=3
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { parseRunCsiArgs } from '../src/cli/csi-options.ts';
import { startCsiSidecar, type CsiSidecar } from '../src/cli/run-csi.ts';
import { csiStorageCapacities } from '../src/csi/capacity-publisher.ts';
import { CsiClient } from '../src/csi/csi-client.ts';
import { csiDrivers } from '../src/cli/dev-csi.ts';
import { csiNodes, volumeSnapshotContents, volumeSnapshots } from '../src/csi/kinds.ts';
import { localNodeName } from '../src/cluster/controllers/index.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { loadKubeConfig } from '../src/runtime/kubeconfig.ts';
import { createLogger } from '../src/runtime/logger.ts';
import { nodes, persistentVolumeClaims, storageClasses } from '../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../src/types/annotations.ts';
import { errorMessage } from '../src/types/errors.ts';
import type { CoreEvent, Node, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../src/types/k8s.ts';
import type { CSIStorageCapacity } from '../src/types/storage-objects.ts';
import { startCluster, type TestCluster } from '../src/testing/index.ts';
import { createSnapshot } from './check-third-party-csi-snapshot.ts';

const DEFAULT_ARGS = [
  '--endpoint={endpoint}',
  '--nodeid={node}',
  '--statedir={dir}/state',
  '--capacity=slow=64Mi',
  '--capacity=fast=1Gi',
  '--maxvolumespernode=100',
  '--v=3',
];
const NS = 'default';

type Outcome = 'PASS' | 'FAIL' | 'SKIP';
const results: Array<{ name: string; outcome: Outcome; detail: string }> = [];
function report(name: string, outcome: Outcome, detail = ''): void {
  results.push({ name, outcome, detail });
  process.stdout.write(`${outcome} ${name}${detail ? `: ${detail}` : ''}\n`);
}

async function waitUntil<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const bin = argv[0];
  if (!bin) {
    process.stderr.write('usage: scripts/check-third-party-csi.sh PLUGIN-BINARY [-- PLUGIN-ARGS...]\n');
    return 2;
  }
  const sep = argv.indexOf('--');
  const pluginArgs = sep >= 0 ? argv.slice(sep + 1) : DEFAULT_ARGS;
  const dir = mkdtempSync(join(tmpdir(), 'check-third-party-csi-'));
  const node = localNodeName();
  const endpoint = `unix://${join(dir, 'csi.sock')}`;
  const logFile = join(dir, 'plugin.log');
  let cluster: TestCluster | undefined;
  let plugin: ChildProcess | undefined;
  let sidecar: CsiSidecar | undefined;
  let client: KubeClient | undefined;
  let csi: CsiClient | undefined;
  let pluginLog = '';
  try {
    cluster = await startCluster({ controllers: true });
    client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
      qps: 0,
      userAgent: 'check-third-party-csi',
    });
    const args = pluginArgs.map((a) =>
      a.replaceAll('{endpoint}', endpoint).replaceAll('{node}', node).replaceAll('{dir}', dir),
    );
    process.stdout.write(`plugin: ${bin} ${args.join(' ')}\n`);
    plugin = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (b: Buffer) => (pluginLog += b.toString());
    plugin.stdout!.on('data', keep);
    plugin.stderr!.on('data', keep);
    csi = await CsiClient.connect({ address: endpoint, timeoutMs: 10_000 });
    const info = await waitUntil('the plugin answering GetPluginInfo', () =>
      csi!.call('getPluginInfo', {}).catch(() => undefined),
    );
    const driver = info.name ?? '';
    const nodeInfo = await csi.call('nodeGetInfo', {}).catch(() => undefined);
    const segment = nodeInfo?.accessibleTopology?.segments ?? {};
    process.stdout.write(
      `driver ${driver} ${info.vendorVersion ?? ''}; node id ${nodeInfo?.nodeId ?? '?'}; topology ${JSON.stringify(segment)}\n`,
    );

    // What node-driver-registrar and the kubelet publish.
    const existing = await client.get<Node>(nodes, node).catch(() => undefined);
    if (existing) {
      await client.patch(nodes, node, { metadata: { labels: segment } });
    } else {
      await client.create(nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: segment } });
    }
    await client.create(csiDrivers, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIDriver',
      metadata: { name: driver },
      spec: { attachRequired: false, volumeLifecycleModes: ['Persistent'], storageCapacity: true },
    });
    await client.create(csiNodes, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSINode',
      metadata: { name: node },
      spec: {
        drivers: [{ name: driver, nodeID: nodeInfo?.nodeId ?? node, topologyKeys: Object.keys(segment) }],
      },
    });
    const sc = (name: string, mode: StorageClass['volumeBindingMode'], parameters: Record<string, string>) =>
      ({
        apiVersion: 'storage.k8s.io/v1',
        kind: 'StorageClass',
        metadata: { name },
        provisioner: driver,
        reclaimPolicy: 'Delete',
        volumeBindingMode: mode,
        allowVolumeExpansion: true,
        parameters,
      }) satisfies StorageClass;
    await client.create(storageClasses, sc('tp-immediate', 'Immediate', {}));
    // hostpathplugin's GetCapacity answers 0 without a `kind` (so a node deployment, which asks before it takes an
    // Immediate claim, would never take one of tp-immediate's: as external-provisioner).
    await client.create(storageClasses, sc('tp-immediate-fast', 'Immediate', { kind: 'fast' }));
    await client.create(storageClasses, sc('tp-wffc-fast', 'WaitForFirstConsumer', { kind: 'fast' }));
    await client.create(storageClasses, sc('tp-wffc-slow', 'WaitForFirstConsumer', { kind: 'slow' }));

    const logger = createLogger({ level: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'warn', name: 'run-csi' });
    sidecar = await startCsiSidecar(
      parseRunCsiArgs(
        [
          '--kubeconfig',
          cluster.kubeconfigPath,
          '--csi-address',
          endpoint,
          '--leader-election',
          'none',
          '--health-address',
          'off',
          '--enable-capacity',
          '--capacity-poll-interval',
          '1s',
          '--extra-create-metadata',
          '--worker-threads',
          '4',
        ],
        { POD_NAMESPACE: NS },
      ),
      { client, logger, registry: new Registry(), startupIntervalMs: 100 },
    );
    const caps = sidecar.provisioner.driver.controllerCapabilities;
    process.stdout.write(`controller capabilities: ${[...caps].join(', ')}\n`);

    const getPVC = (name: string) =>
      cluster!.store.get('persistentvolumeclaims', NS, name) as PersistentVolumeClaim | undefined;
    const getPV = (name: string) =>
      cluster!.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
    const events = (name: string) =>
      (cluster!.store.list('events').items as CoreEvent[])
        .filter((e) => e.involvedObject.name === name)
        .map((e) => `${e.reason}: ${e.message}`);
    const claim = (
      name: string,
      className: string,
      size: string,
      extra: Partial<PersistentVolumeClaim['spec']> = {},
      annotations: Record<string, string> = {},
    ): PersistentVolumeClaim => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: NS, annotations },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: size } },
        storageClassName: className,
        ...extra,
      },
    });
    const bound = async (name: string) => {
      const c = await waitUntil(`${name} Bound (events: ${events(name).join(' | ')})`, () =>
        getPVC(name)?.status?.phase === 'Bound' ? getPVC(name) : undefined,
      ).catch((err: unknown) => {
        throw new Error(`${errorMessage(err)}; events now: ${events(name).join(' | ')}`);
      });
      return getPV(c.spec.volumeName ?? '')!;
    };
    async function check(name: string, fn: () => Promise<string | void>, needs?: boolean): Promise<void> {
      if (needs === false) return report(name, 'SKIP', 'capability not reported');
      try {
        report(name, 'PASS', (await fn()) ?? '');
      } catch (err) {
        report(name, 'FAIL', errorMessage(err));
      }
    }

    await check('provision: Immediate claim Bound, PV from CreateVolume', async () => {
      await client!.create(persistentVolumeClaims, claim('tp-imm', 'tp-immediate', '5Mi'), { namespace: NS });
      const pv = await bound('tp-imm');
      if (pv.spec.csi?.driver !== driver) throw new Error(`PV driver ${pv.spec.csi?.driver}`);
      return `${pv.metadata.name} handle ${pv.spec.csi.volumeHandle} capacity ${pv.spec.capacity?.storage}`;
    });
    await check('provision: WaitForFirstConsumer claim with a selected node, PV node affinity', async () => {
      await client!.create(
        persistentVolumeClaims,
        claim('tp-wffc', 'tp-wffc-fast', '5Mi', {}, { [ANN_SELECTED_NODE]: node }),
        {
          namespace: NS,
        },
      );
      const pv = await bound('tp-wffc');
      return `nodeAffinity ${JSON.stringify(pv.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [])}`;
    });
    await check(
      'capacity: CSIStorageCapacity per WaitForFirstConsumer class for the node segment',
      async () => {
        const objects = await waitUntil('two capacity objects with capacity', async () => {
          const list = (await client!.list<CSIStorageCapacity>(csiStorageCapacities, { namespace: NS })).items;
          return list.filter((o) => o.capacity !== undefined).length >= 2 ? list : undefined;
        });
        return objects.map((o) => `${o.storageClassName}=${o.capacity}`).join(', ');
      },
      caps.has('GET_CAPACITY'),
    );
    await check(
      'expand: ControllerExpandVolume, PV and claim follow',
      async () => {
        await client!.patch(
          persistentVolumeClaims,
          'tp-imm',
          { spec: { resources: { requests: { storage: '10Mi' } } } },
          { namespace: NS },
        );
        const pv = await waitUntil(`PV of tp-imm at 10Mi (events: ${events('tp-imm').join(' | ')})`, () => {
          const v = getPV(getPVC('tp-imm')?.spec.volumeName ?? '');
          return v?.spec.capacity?.storage === '10Mi' ? v : undefined;
        });
        const c = getPVC('tp-imm');
        return `PV ${pv.spec.capacity?.storage}; claim conditions ${JSON.stringify((c?.status?.conditions ?? []).map((x) => x.type))}, capacity ${c?.status?.capacity?.storage}`;
      },
      caps.has('EXPAND_VOLUME') || sidecar.provisioner.driver.volumeExpansion !== undefined,
    );
    await check(
      'clone: a claim from a PVC source',
      async () => {
        await client!.create(
          persistentVolumeClaims,
          claim('tp-clone', 'tp-immediate', '10Mi', { dataSource: { kind: 'PersistentVolumeClaim', name: 'tp-imm' } }),
          { namespace: NS },
        );
        const pv = await bound('tp-clone');
        return `handle ${pv.spec.csi?.volumeHandle}`;
      },
      caps.has('CLONE_VOLUME'),
    );
    await check(
      'snapshot: restore from a snapshot the plugin took',
      async () => {
        const source = getPV(getPVC('tp-imm')?.spec.volumeName ?? '')!;
        const snap = await createSnapshot(endpoint, 'tp-snap-1', source.spec.csi!.volumeHandle);
        const vs = await client!.create(
          volumeSnapshots,
          {
            apiVersion: 'snapshot.storage.k8s.io/v1',
            kind: 'VolumeSnapshot',
            metadata: { name: 'tp-snap', namespace: NS },
            spec: { source: { volumeSnapshotContentName: 'tp-snap-content' } },
          },
          { namespace: NS },
        );
        await client!.create(volumeSnapshotContents, {
          apiVersion: 'snapshot.storage.k8s.io/v1',
          kind: 'VolumeSnapshotContent',
          metadata: { name: 'tp-snap-content' },
          spec: {
            deletionPolicy: 'Retain',
            driver,
            source: { snapshotHandle: snap.snapshotId },
            sourceVolumeMode: 'Filesystem',
            volumeSnapshotRef: { name: 'tp-snap', namespace: NS, uid: vs.metadata.uid ?? '' },
          },
        });
        await client!.patch(
          volumeSnapshotContents,
          'tp-snap-content',
          { status: { snapshotHandle: snap.snapshotId, readyToUse: true, restoreSize: Number(snap.sizeBytes) } },
          { subresource: 'status' },
        );
        await client!.patch(
          volumeSnapshots,
          'tp-snap',
          {
            status: {
              boundVolumeSnapshotContentName: 'tp-snap-content',
              readyToUse: true,
              restoreSize: `${snap.sizeBytes}`,
            },
          },
          { namespace: NS, subresource: 'status' },
        );
        await client!.create(
          persistentVolumeClaims,
          claim('tp-restore', 'tp-immediate', '10Mi', {
            dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'tp-snap' },
          }),
          { namespace: NS },
        );
        const pv = await bound('tp-restore');
        return `snapshot ${snap.snapshotId} (${snap.sizeBytes} bytes) restored as ${pv.spec.csi?.volumeHandle}`;
      },
      caps.has('CREATE_DELETE_SNAPSHOT'),
    );
    await check(
      'capacity exhausted: RESOURCE_EXHAUSTED with a selected node reschedules (selected-node removed)',
      async () => {
        await client!.create(
          persistentVolumeClaims,
          claim('tp-too-big', 'tp-wffc-slow', '100Mi', {}, { [ANN_SELECTED_NODE]: node }),
          { namespace: NS },
        );
        await waitUntil(`selected-node removed from tp-too-big (events: ${events('tp-too-big').join(' | ')})`, () =>
          getPVC('tp-too-big') && getPVC('tp-too-big')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined
            ? true
            : undefined,
        );
        return events('tp-too-big').find((e) => e.startsWith('ProvisioningFailed')) ?? '';
      },
    );
    await check(
      'leak inventory: ListVolumes lists every provisioned volume under its PV name',
      async () => {
        const listed = await sidecar!.provisioner.listVolumes!(AbortSignal.timeout(30_000));
        const pvs = (cluster!.store.list('persistentvolumes').items as PersistentVolume[]).map((p) => p.metadata.name);
        const missing = pvs.filter((n) => !listed.some((l) => l.name === n));
        if (missing.length > 0)
          throw new Error(`PVs not listed: ${missing.join(', ')}; listed ${JSON.stringify(listed)}`);
        return `${listed.length} volumes`;
      },
      caps.has('LIST_VOLUMES'),
    );
    await check('delete: claims deleted, DeleteVolume, PVs gone', async () => {
      const names = (cluster!.store.list('persistentvolumeclaims', { namespace: NS }).items as PersistentVolumeClaim[])
        .map((c) => c.metadata.name ?? '')
        .filter((n) => n.startsWith('tp-') && n !== 'tp-imm');
      // Clones and restores first: a plugin may refuse to delete a volume that has snapshots or clones.
      for (const n of [...names, 'tp-imm']) await client!.delete(persistentVolumeClaims, n, { namespace: NS });
      if (caps.has('CREATE_DELETE_SNAPSHOT')) {
        await client!.delete(volumeSnapshots, 'tp-snap', { namespace: NS }).catch(() => undefined);
      }
      await waitUntil('every PV deleted', () =>
        cluster!.store.list('persistentvolumes').items.length === 0 ? true : undefined,
      ).catch((err: unknown) => {
        const left = (cluster!.store.list('persistentvolumes').items as PersistentVolume[]).map(
          (p) => `${p.metadata.name} (${p.status?.phase}; ${events(p.metadata.name ?? '').join(' | ')})`,
        );
        throw new Error(`${errorMessage(err)}: ${left.join('; ')}`);
      });
      if (caps.has('LIST_VOLUMES')) {
        const left = await csi!.call('listVolumes', {});
        const ours = (left.entries ?? []).filter((e) => e.volume?.volumeId);
        return `ListVolumes now lists ${ours.length} volume(s)${ours.length ? `: ${ours.map((e) => e.volume?.volumeId).join(', ')}` : ''}`;
      }
    });
    await check(
      '--node-deployment: the node instance takes an unselected Immediate claim, provisions and deletes it',
      async () => {
        await sidecar!.stop();
        sidecar = await startCsiSidecar(
          parseRunCsiArgs(
            [
              '--kubeconfig',
              cluster!.kubeconfigPath,
              '--csi-address',
              endpoint,
              '--node-deployment',
              '--node-deployment-base-delay',
              '100ms',
              '--health-address',
              'off',
              '--worker-threads',
              '4',
            ],
            { POD_NAMESPACE: NS, NODE_NAME: node },
          ),
          { client: client!, logger, registry: new Registry(), startupIntervalMs: 100 },
        );
        await client!.create(persistentVolumeClaims, claim('tp-node', 'tp-immediate-fast', '5Mi'), { namespace: NS });
        const pv = await bound('tp-node');
        const owner = getPVC('tp-node')?.metadata.annotations?.[ANN_SELECTED_NODE];
        if (owner !== node) throw new Error(`selected node ${owner}`);
        await client!.delete(persistentVolumeClaims, 'tp-node', { namespace: NS });
        await waitUntil('its PV deleted', () => (getPV(pv.metadata.name ?? '') ? undefined : true));
        return `selected ${owner}; ${pv.metadata.name} on ${JSON.stringify(pv.spec.nodeAffinity?.required?.nodeSelectorTerms ?? [])}, deleted`;
      },
    );
  } catch (err) {
    report('setup', 'FAIL', errorMessage(err));
  } finally {
    await sidecar?.stop().catch(() => undefined);
    csi?.close();
    plugin?.kill('SIGTERM');
    client?.close();
    await cluster?.stop().catch(() => undefined);
    writeFileSync(logFile, pluginLog);
    const failed = results.filter((r) => r.outcome === 'FAIL').length;
    process.stdout.write(
      `${results.filter((r) => r.outcome === 'PASS').length} passed, ${failed} failed, ${results.filter((r) => r.outcome === 'SKIP').length} skipped; plugin log: ${failed ? logFile : '(removed)'}\n`,
    );
    if (!failed) rmSync(dir, { recursive: true, force: true });
  }
  return results.some((r) => r.outcome === 'FAIL') ? 1 : 0;
}

process.exitCode = await main();
