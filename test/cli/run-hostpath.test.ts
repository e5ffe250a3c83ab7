// `kube-provisioner run hostpath` as a separate process against an in-test embedded cluster: a claim becomes
// Bound with its directory on disk, /readyz and /metrics answer, SIGTERM stops it cleanly and releases the
// Lease. With --config-map: the configuration comes from the API, an invalid edit is refused with a Warning
// event on the ConfigMap and the provisioner keeps serving with the last good configuration. With nfs-subdir's
// environment alone (PROVISIONER_NAME, NFS_SERVER, NFS_PATH): nfs PVs under the mounted export.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  configMaps,
  coreEvents,
  leases,
  persistentVolumeClaims,
  persistentVolumes,
  storageClasses,
} from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { CoreEvent, Lease, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { startCli, waitFor } from './cli-helpers.ts';

const PROVISIONER = 'test.kube-provisioner.io/hostpath';

function storageClass(name: string): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: PROVISIONER,
    volumeBindingMode: 'Immediate',
    reclaimPolicy: 'Delete',
  };
}
function claim(name: string, className: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteMany'], storageClassName: className, resources: { requests: { storage: '1Mi' } } },
  } as PersistentVolumeClaim;
}

describe('kube-provisioner run hostpath', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let dir: string;

  before(async () => {
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    dir = await mkdtemp(join(tmpdir(), 'kp-run-'));
  });
  after(async () => {
    client?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function boundVolume(name: string): Promise<PersistentVolume> {
    const pvc = await waitFor(`claim ${name} Bound`, async () => {
      const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, name, { namespace: 'default' });
      return c.status?.phase === 'Bound' ? c : undefined;
    });
    return client.get<PersistentVolume>(persistentVolumes, pvc.spec.volumeName ?? '');
  }

  it('--config FILE, lease election: provisions, serves /readyz and /metrics, releases the lease on SIGTERM', async () => {
    const shared = join(dir, 'shared');
    await mkdir(shared); // a base path must exist: the provisioner never creates one (an unmounted disk)
    const configFile = join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify({ sharedFileSystemPath: shared }));
    await client.create(storageClasses, storageClass('file-class'));
    const cli = startCli([
      'run',
      'hostpath',
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--provisioner-name',
      PROVISIONER,
      '--config',
      configFile,
      '--leader-election',
      'lease',
      '--leader-election-namespace',
      'default',
      '--health-address',
      '127.0.0.1:0',
      '--log-level',
      'warn',
    ]);
    try {
      const health = await waitFor(
        'the health URL',
        () => /health (http:\/\/[^/\s]+)\/healthz/.exec(cli.stdout())?.[1],
      );
      await client.create(persistentVolumeClaims, claim('from-file', 'file-class'));
      const pv = await boundVolume('from-file');
      const path = pv.spec.hostPath?.path ?? pv.spec.local?.path ?? '';
      assert.ok(path.startsWith(`${shared}/`), `PV path ${path} not under ${shared}`);
      assert.ok(existsSync(path), `${path} was not created`);
      assert.equal(pv.metadata.annotations?.['pv.kubernetes.io/provisioned-by'], PROVISIONER);

      const lease = await client.get<Lease>(leases, 'test.kube-provisioner.io-hostpath', { namespace: 'default' });
      assert.ok(lease.spec.holderIdentity, 'the running process holds the lease');
      const ready = await fetch(`${health}/readyz`);
      assert.equal(ready.status, 200);
      const metrics = await (await fetch(`${health}/metrics`)).text();
      assert.match(metrics, /controller_persistentvolumeclaim_provision_total\{[^}]*class="file-class"[^}]*\} 1/);
      assert.match(
        metrics,
        /controller_leader_election_is_leader\{provisioner="test.kube-provisioner.io\/hostpath"\} 1/,
      );

      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0, cli.stderr());
      const released = await client.get<Lease>(leases, 'test.kube-provisioner.io-hostpath', { namespace: 'default' });
      assert.equal(released.spec.holderIdentity ?? '', '', 'the lease is released on shutdown');
      assert.match(cli.stdout(), /stopped/);
    } finally {
      cli.child.kill('SIGKILL');
    }
  });

  it('--config-map: configuration from the API; an invalid edit is refused with an event, serving goes on', async () => {
    const first = join(dir, 'cm-a');
    const second = join(dir, 'cm-b');
    await mkdir(first);
    await mkdir(second);
    await client.create(configMaps, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'hostpath-config', namespace: 'default' },
      data: { 'shared.json': JSON.stringify({ sharedFileSystemPath: first }) },
    } as never);
    await client.create(storageClasses, storageClass('cm-class'));
    const cli = startCli(
      [
        'run',
        'hostpath',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--config-map',
        'hostpath-config',
        '--config-key',
        'shared.json',
        '--health-address',
        'off',
        '--log-level',
        'warn',
      ],
      // Flags from the environment: the provisioner name, the election mode and the namespace of --config-map.
      {
        env: {
          ...process.env,
          PROVISIONER_NAME: PROVISIONER,
          KUBE_PROVISIONER_LEADER_ELECTION: 'none',
          POD_NAMESPACE: 'default',
        },
      },
    );
    try {
      await client.create(persistentVolumeClaims, claim('from-cm-1', 'cm-class'));
      const pv1 = await boundVolume('from-cm-1');
      assert.ok((pv1.spec.hostPath?.path ?? pv1.spec.local?.path ?? '').startsWith(`${first}/`));

      // Invalid: a relative path. The last good configuration stays in force.
      await client.patch(
        configMaps,
        'hostpath-config',
        { data: { 'shared.json': '{"sharedFileSystemPath": "relative/path"}' } },
        { namespace: 'default', type: 'merge' },
      );
      await waitFor('the InvalidConfiguration event', async () => {
        const events = await client.list<CoreEvent>(coreEvents, { namespace: 'default' });
        return events.items.find(
          (e) => e.reason === 'InvalidConfiguration' && e.involvedObject.name === 'hostpath-config',
        );
      });
      await client.create(persistentVolumeClaims, claim('from-cm-2', 'cm-class'));
      const pv2 = await boundVolume('from-cm-2');
      assert.ok(
        (pv2.spec.hostPath?.path ?? pv2.spec.local?.path ?? '').startsWith(`${first}/`),
        'still the last good configuration',
      );

      // A valid edit applies without a restart.
      await client.patch(
        configMaps,
        'hostpath-config',
        { data: { 'shared.json': JSON.stringify({ sharedFileSystemPath: second }) } },
        { namespace: 'default', type: 'merge' },
      );
      await waitFor('the ConfigurationReloaded event', async () => {
        const events = await client.list<CoreEvent>(coreEvents, { namespace: 'default' });
        return events.items.find((e) => e.reason === 'ConfigurationReloaded');
      });
      await client.create(persistentVolumeClaims, claim('from-cm-3', 'cm-class'));
      const pv3 = await boundVolume('from-cm-3');
      assert.ok(
        (pv3.spec.hostPath?.path ?? pv3.spec.local?.path ?? '').startsWith(`${second}/`),
        'the new configuration applies',
      );

      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr());
      // Mode none (from the environment): the Lease released by the first test was not taken again.
      const lease = await client.get<Lease>(leases, 'test.kube-provisioner.io-hostpath', { namespace: 'default' });
      assert.equal(lease.spec.holderIdentity ?? '', '');
    } finally {
      cli.child.kill('SIGKILL');
    }
  });

  it("nfs-subdir's environment only (PROVISIONER_NAME, NFS_SERVER, NFS_PATH): nfs PVs under the mounted export, no configuration", async () => {
    const mount = join(dir, 'persistentvolumes');
    await mkdir(mount);
    const nfsName = 'k8s-sigs.io/nfs-subdir-external-provisioner';
    await client.create(storageClasses, {
      ...storageClass('nfs-client'),
      provisioner: nfsName,
      mountOptions: ['nfsvers=4.1'],
    });
    const cli = startCli(
      [
        'run',
        'hostpath',
        '--kubeconfig',
        cluster.kubeconfigPath,
        '--nfs-mount-path',
        mount,
        '--leader-election',
        'none',
        '--health-address',
        'off',
        '--log-level',
        'warn',
      ],
      {
        env: { ...process.env, PROVISIONER_NAME: nfsName, NFS_SERVER: '10.3.243.101', NFS_PATH: '/ifs/kubernetes' },
      },
    );
    try {
      // Process start-up (node + tsx) is slow on a loaded machine: wait for it generously, then for the claim.
      await waitFor(
        'the provisioner started',
        () => {
          if (cli.child.exitCode !== null) throw new Error(`exited: ${cli.stderr()}`);
          return /kube-provisioner run hostpath: provisioner/.test(cli.stdout());
        },
        120_000,
      );
      await client.create(persistentVolumeClaims, claim('nfs-claim', 'nfs-client'));
      const pv = await boundVolume('nfs-claim');
      assert.deepEqual(pv.spec.nfs, {
        server: '10.3.243.101',
        path: `/ifs/kubernetes/default-nfs-claim-${pv.metadata.name}`,
      });
      assert.deepEqual(pv.spec.mountOptions, ['nfsvers=4.1']);
      assert.ok(existsSync(join(mount, `default-nfs-claim-${pv.metadata.name}`)));
      cli.child.kill('SIGTERM');
      assert.equal(await cli.exited, 0, cli.stderr());
    } finally {
      cli.child.kill('SIGKILL');
    }
  });
});
