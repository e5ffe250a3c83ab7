// Least privilege, measured: `kube-provisioner run hostpath` processes (the deploy/ configurations: a shared
// Deployment with Lease election and a node-local DaemonSet instance, both configured from a ConfigMap) go
// through a claim lifecycle against the embedded cluster: provision, finalizer, resize, a lost PV-create response,
// repeated events, configuration reload, reschedule, delete, shutdown. The cluster's audit counter lists every
// (verb, resource) they used; deploy/ RBAC must grant each of them and nothing else. Per-claim election may
// only add what the ClusterRole's comment documents. Also: the API refuses requests without the token or with
// a wrong one, and binds loopback by default.
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startCli, stopProcess, waitUntil, type CliProcess } from '../../bench/chaos/processes.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  configMaps,
  leases,
  namespaces,
  nodes,
  persistentVolumeClaims,
  storageClasses,
} from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { CoreEvent, KubeObject, Lease, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';

/** core/v1 ConfigMap (not among the shared types). */
interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}
import { claim, storageClass, volumePath } from './helpers.ts';
import { allows, DEPLOY_DIR, grantKeys, loadGrants, usedKeys } from './rbac.ts';

const NS = 'kube-provisioner';
const AUDITED = 'rbac-audit.example.com';
const SHARED = `${AUDITED}/shared`;
const NODE = `${AUDITED}/node`;
const PER_CLAIM = 'rbac-per-claim.example.com/hostpath';

describe('least privilege and API authentication', { concurrency: true }, () => {
  let tmp: string;
  let cluster: TestCluster;
  let client: KubeClient;
  const processes: CliProcess[] = [];
  // Started together in before(): node + tsx start-up dominates, so they overlap.
  let sharedP: CliProcess;
  let nodeP: CliProcess;
  let replicaPs: CliProcess[];
  let perClaimP: CliProcess;
  let clusterP: CliProcess;

  before(async () => {
    tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-rbac-'));
    for (const d of ['shared', 'node', 'far', 'per-claim']) await fsp.mkdir(path.join(tmp, d));
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'least-privilege-test' });
    await client.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    await client.create(
      configMaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'kube-provisioner-config', namespace: NS },
        data: {
          'shared.json': JSON.stringify({ sharedFileSystemPath: path.join(tmp, 'shared') }),
          'config.json': JSON.stringify({
            nodePathMap: [
              { node: 'empty-node', paths: [] },
              { node: 'full-node', paths: [path.join(tmp, 'node')] },
              { node: 'far-node', paths: [path.join(tmp, 'far')] },
            ],
          }),
          'per-claim.json': JSON.stringify({ sharedFileSystemPath: path.join(tmp, 'per-claim') }),
        },
      } as ConfigMap,
      { namespace: NS },
    );
    sharedP = provisioner(SHARED, [
      '--mode',
      'deployment',
      '--config-map',
      `${NS}/kube-provisioner-config`,
      '--config-key',
      'shared.json',
      '--leader-election',
      'lease',
      '--lease-duration',
      '3s',
      '--renew-deadline',
      '2s',
      '--retry-period',
      '500ms',
      '--add-finalizer',
    ]);
    nodeP = provisioner(NODE, [
      '--mode',
      'daemonset',
      '--node-name',
      'full-node',
      '--config-map',
      `${NS}/kube-provisioner-config`,
      '--config-key',
      'config.json',
      '--leader-election',
      'none',
    ]);
    replicaPs = [1, 2].map(() =>
      provisioner(`${AUDITED}/replicas`, [
        '--mode',
        'deployment',
        '--config-map',
        `${NS}/kube-provisioner-config`,
        '--config-key',
        'shared.json',
        '--leader-election',
        'none',
      ]),
    );
    perClaimP = provisioner(PER_CLAIM, [
      '--mode',
      'deployment',
      '--config-map',
      `${NS}/kube-provisioner-config`,
      '--config-key',
      'per-claim.json',
      '--leader-election',
      'per-claim',
    ]);
    clusterP = startCli(['cluster', '--data-dir', path.join(tmp, 'cluster'), '--port', '0']);
    processes.push(clusterP);
    // Start-up (node + tsx) is slow on a loaded machine: wait for every process here, generously, not in the tests.
    for (const p of [sharedP, nodeP, ...replicaPs, perClaimP]) {
      await waitUntil(
        'a provisioner process started',
        () => {
          if (p.done()) throw new Error(`exited: ${p.stderr().slice(-1000)}`);
          return /kube-provisioner run hostpath: provisioner/.test(p.stdout());
        },
        180_000,
      );
    }
    await waitUntil('cluster process ready', () => /ready at https:/.test(clusterP.stdout()), 180_000);
  });

  after(async () => {
    for (const p of processes) await stopProcess(p, 2_000);
    client?.close();
    await cluster?.stop();
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  const getClaim = (ns: string, name: string) =>
    cluster.store.get('persistentvolumeclaims', ns, name) as PersistentVolumeClaim | undefined;
  const getVolume = (name: string) =>
    cluster.store.get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
  const eventsOn = (name: string) =>
    (cluster.store.list('events').items as CoreEvent[]).filter((e) => e.involvedObject.name === name);

  function provisioner(name: string, args: string[]): CliProcess {
    const p = startCli(
      [
        'run',
        'hostpath',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--provisioner-name',
        name,
        '--health-address',
        'off',
        '--log-level',
        'warn',
        '--backoff-base',
        '100ms',
        '--backoff-max',
        '1s',
        '--retry-interval-max',
        '1s',
        '--volume-save-interval',
        '100ms',
        ...args,
      ],
      { env: { ...process.env, POD_NAMESPACE: NS } },
    );
    processes.push(p);
    return p;
  }

  async function bound(ns: string, name: string): Promise<PersistentVolume> {
    const c = await waitUntil(
      `claim ${name} Bound`,
      () => getClaim(ns, name)?.status?.phase === 'Bound' && getClaim(ns, name),
      60_000,
    );
    return waitUntil(`PV of ${name}`, () => getVolume(c.spec.volumeName ?? ''));
  }

  it('run hostpath (deploy/ configurations) uses exactly the (verb, resource) pairs deploy/ RBAC grants', async () => {
    const shared = sharedP;
    const node = nodeP;

    // Provision (PV create, finalizer patch).
    await client.create(storageClasses, storageClass('audit-shared', SHARED, { allowVolumeExpansion: true }));
    await client.create(persistentVolumeClaims, claim('first', 'default', 'audit-shared'), { namespace: 'default' });
    const first = await bound('default', 'first');
    await waitUntil('finalizer on the PV', () =>
      getVolume(first.metadata.name ?? '')?.metadata.finalizers?.includes(
        'external-provisioner.volume.kubernetes.io/finalizer',
      ),
    );
    await client.create(persistentVolumeClaims, claim('second', 'default', 'audit-shared'), { namespace: 'default' });
    await bound('default', 'second');
    // Resize (claim status patches, PV capacity patch).
    await client.patch(
      persistentVolumeClaims,
      'second',
      { spec: { resources: { requests: { storage: '2Mi' } } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitUntil('second resized', () => getClaim('default', 'second')?.status?.capacity?.storage === '2Mi', 60_000);

    // Two unelected replicas racing for one claim (slow PV creates make both save it): the loser meets
    // AlreadyExists and reads the PV back (get) to check it is this claim's.
    const replicas = replicaPs;
    const slow = cluster.faults.add({ verb: 'create', resource: 'persistentvolumes', latencyMs: 300 });
    await client.create(storageClasses, storageClass('audit-replicas', `${AUDITED}/replicas`));
    const readBack = () =>
      cluster.audit
        .records()
        .some((r) => r.client.includes(AUDITED) && r.verb === 'get' && r.resource === 'persistentvolumes');
    for (let i = 0; i < 10 && !readBack(); i++) {
      await client.create(persistentVolumeClaims, claim(`raced-${i}`, 'default', 'audit-replicas'), {
        namespace: 'default',
      });
      await bound('default', `raced-${i}`);
    }
    cluster.faults.remove(slow);
    for (const r of replicas) assert.equal(await stopProcess(r), 0, r.stderr());
    assert.ok(readBack(), 'a replica read back the PV it found already saved');

    // The same failure twice: the event recorder patches the count of the first event.
    await client.create(storageClasses, storageClass('audit-bad', SHARED, { parameters: { frobnicate: 'yes' } }));
    await client.create(persistentVolumeClaims, claim('refused', 'default', 'audit-bad'), { namespace: 'default' });
    await waitUntil(
      'a repeated ProvisioningFailed event',
      () => eventsOn('refused').some((e) => e.reason === 'ProvisioningFailed' && (e.count ?? 1) >= 2),
      60_000,
    );

    // Configuration reload through the API.
    const cm = await client.get<ConfigMap>(configMaps, 'kube-provisioner-config', { namespace: NS });
    cm.data = {
      ...cm.data,
      'shared.json': JSON.stringify({ sharedFileSystemPath: { path: path.join(tmp, 'shared'), capacity: '10Gi' } }),
    };
    await client.update(configMaps, cm);

    // Reschedule: the class's nodePath is not configured on the node instance's node: it drops the scheduler's choice.
    const wffc = { volumeBindingMode: 'WaitForFirstConsumer' as const };
    await client.create(
      storageClasses,
      storageClass('audit-node', NODE, { ...wffc, parameters: { nodePath: path.join(tmp, 'far') } }),
    );
    await client.create(
      persistentVolumeClaims,
      claim('on-full-node', 'default', 'audit-node', { annotations: { [ANN_SELECTED_NODE]: 'full-node' } }),
      { namespace: 'default' },
    );
    await waitUntil(
      'selected-node removed (Reschedule)',
      () => getClaim('default', 'on-full-node')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
      60_000,
    );

    // nodeAffinityKey: the node instance reads its Node's label through the API (get nodes), no node cache.
    await client.create(nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'full-node', labels: { 'example.com/rack': 'r1' } },
    });
    await client.create(
      storageClasses,
      storageClass('audit-rack', NODE, { ...wffc, parameters: { nodeAffinityKey: 'example.com/rack' } }),
    );
    await client.create(
      persistentVolumeClaims,
      claim('racked', 'default', 'audit-rack', { annotations: { [ANN_SELECTED_NODE]: 'full-node' } }),
      { namespace: 'default' },
    );
    const racked = await bound('default', 'racked');
    assert.deepEqual(racked.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values, ['r1']);

    // Delete: directory removed, finalizer removed, PV deleted.
    for (const name of ['first', 'second']) {
      const pv = getVolume(getClaim('default', name)?.spec.volumeName ?? '');
      await client.delete(persistentVolumeClaims, name, { namespace: 'default' });
      await waitUntil(`PV of ${name} deleted`, () => !getVolume(pv?.metadata.name ?? ''), 60_000);
      await assert.rejects(fsp.lstat(volumePath(pv as PersistentVolume) ?? ''), { code: 'ENOENT' });
    }
    // Shutdown releases the Lease (update).
    assert.equal(await stopProcess(shared), 0, shared.stderr());
    assert.equal(await stopProcess(node), 0, node.stderr());
    const lease = await client.get<Lease>(leases, 'rbac-audit.example.com-shared', { namespace: NS });
    assert.equal(lease.spec.holderIdentity ?? '', '');

    const used = usedKeys(cluster.audit.records(), (c) => c.includes(AUDITED));
    const grants = loadGrants(DEPLOY_DIR, ['csi']);
    const missing = [...used].filter((k) => !allows(grants, k)).sort();
    const unused = [...grantKeys(grants)].filter((k) => !used.has(k)).sort();
    assert.deepEqual(missing, [], `used but not granted by deploy/ RBAC (used: ${[...used].sort().join(', ')})`);
    assert.deepEqual(unused, [], 'granted by deploy/ RBAC but never used');
  });

  it('per-claim election needs only the claim get/update the ClusterRole comment documents', async () => {
    const p = perClaimP;
    await client.create(storageClasses, storageClass('audit-per-claim', PER_CLAIM));
    await client.create(persistentVolumeClaims, claim('locked', 'default', 'audit-per-claim'), {
      namespace: 'default',
    });
    const pv = await bound('default', 'locked');
    await client.delete(persistentVolumeClaims, 'locked', { namespace: 'default' });
    await waitUntil('PV deleted', () => !getVolume(pv.metadata.name ?? ''), 60_000);
    assert.equal(await stopProcess(p), 0, p.stderr());
    const used = usedKeys(cluster.audit.records(), (c) => c.includes(PER_CLAIM));
    const extra = [...used].filter((k) => !allows(loadGrants(DEPLOY_DIR, ['csi']), k)).sort();
    assert.ok(
      extra.every((k) => k === 'get persistentvolumeclaims' || k === 'update persistentvolumeclaims'),
      `unexpected extra pairs: ${extra.join(', ')}`,
    );
    assert.ok(used.has('update persistentvolumeclaims'), 'the lock is written to the claim');
  });

  function request(pathname: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
    const url = new URL(pathname, cluster.url);
    const ca = Buffer.from(cluster.kubeConfig.getCurrentCluster()?.caData ?? '', 'base64');
    return new Promise((resolve, reject) => {
      const req = https.request(url, { method: 'GET', headers, ca, agent: false }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('refuses requests without the token, with a wrong token or another scheme (401 Status), admin endpoints included', async () => {
    const token = cluster.token;
    const cases: Array<[string, Record<string, string>]> = [
      ['no Authorization header', {}],
      ['a wrong token', { Authorization: 'Bearer not-the-token' }],
      ['the token with one more character', { Authorization: `Bearer ${token}x` }],
      ['a prefix of the token', { Authorization: `Bearer ${token.slice(0, -1)}` }],
      ['basic auth', { Authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` }],
      ['an empty bearer', { Authorization: 'Bearer ' }],
    ];
    for (const p of [
      '/api/v1/persistentvolumes',
      '/api/v1/namespaces/kube-system/secrets',
      '/admin/faults',
      '/admin/audit',
      '/version',
    ]) {
      for (const [why, headers] of cases) {
        const res = await request(p, headers);
        assert.equal(res.status, 401, `${p} with ${why}`);
        const status = JSON.parse(res.body) as { kind: string; code: number; reason: string };
        assert.deepEqual(
          [status.kind, status.code, status.reason],
          ['Status', 401, 'Unauthorized'],
          `${p} with ${why}`,
        );
      }
      assert.equal((await request(p, { Authorization: `Bearer ${token}` })).status, 200, `${p} with the token`);
    }
    // Health probes answer without a token, and say nothing else.
    assert.deepEqual(await request('/healthz', {}), { status: 200, body: 'ok' });
  });

  it('binds 127.0.0.1 by default (library and `cluster` command)', async () => {
    assert.equal(new URL(cluster.url).hostname, '127.0.0.1');
    const port = Number(new URL(cluster.url).port);
    const external = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal);
    if (external) {
      const outcome = await new Promise<string>((resolve) => {
        const s = net.connect({ host: external.address, port }, () => {
          s.destroy();
          resolve('connected');
        });
        s.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      });
      assert.notEqual(outcome, 'connected', `the API answered on ${external.address}`);
    }
    const cli = clusterP;
    const url = await waitUntil('cluster ready', () => /ready at (https:\/\/\S+)/.exec(cli.stdout())?.[1], 60_000);
    assert.equal(new URL(url).hostname, '127.0.0.1');
    assert.equal(await stopProcess(cli), 0, cli.stderr());
  });
});
