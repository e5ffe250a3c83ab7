// SIGKILL of the CSI sidecar mid-provisioning leaves no volume without a PV (external-provisioner #486: a restart
// between CreateVolume and the PV). Real processes: the sidecar is `kube-provisioner run csi` in a child process, driving the reference plugin
// over its unix socket, against the embedded cluster over HTTPS. The plugin holds the replies of CreateVolume
// calls whose directory it has already created, so when the sidecar is killed there are volumes on disk that no PV
// names yet, whatever the machine's speed. After a new sidecar starts, every created handle must be a PV's
// volumeHandle (CreateVolume asked again under the same name answers the same volume), and once the claims are
// deleted every handle must be gone.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hostPathCsiPlugin } from '../../src/cli/csi-hostpath-plugin.ts';
import { devCsiSidecarArgs, devCsiStorageClasses, registerCsiDriver, DEV_CSI_CLASSES } from '../../src/cli/dev-csi.ts';
import { serveCsiPlugin, type CsiPluginHandlers, type CsiServer } from '../../src/csi/csi-server.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { readVolumeRecords } from '../../src/hostpath/records/volume-records.ts';
import { localNodeName } from '../../src/cluster/controllers/index.ts';
import { persistentVolumeClaims, persistentVolumes, storageClasses } from '../../src/runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const CLAIMS = 40;

/** `kube-provisioner run csi` (from the sources) with dev's sidecar flags. */
function startSidecar(kubeconfig: string, address: string): { child: ChildProcess; ready: Promise<void> } {
  const args = [
    '--import',
    'tsx',
    'src/cli/main.ts',
    'run',
    'csi',
    '--kubeconfig',
    kubeconfig,
    ...devCsiSidecarArgs(address, 16),
    '--log-level',
    'error',
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: process.env, stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = new Promise<void>((resolveReady, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      if (out.includes('kube-provisioner run csi: driver ')) resolveReady();
    });
    child.once('exit', (code, signal) => reject(new Error(`sidecar exited before it was ready (${code ?? signal})`)));
  });
  return { child, ready };
}

describe('CSI sidecar killed mid-provisioning (SIGKILL, real processes)', () => {
  let cluster: TestCluster;
  let dir: string;
  let server: CsiServer;
  let sharedPath: string;
  const children: ChildProcess[] = [];
  /** CreateVolume replies held back (the volume exists on disk; the sidecar has not heard of it). */
  const held: Array<() => void> = [];
  let holding = true;
  let created = 0;

  before(async () => {
    cluster = await startCluster({ controllers: true });
    dir = mkdtempSync(join(tmpdir(), 'csi-sigkill-'));
    sharedPath = join(dir, 'shared');
    mkdirSync(sharedPath);
    const config = validateHostPathConfig({
      storageClassConfigs: { [DEV_CSI_CLASSES.shared]: { sharedFileSystemPath: sharedPath } },
    });
    const plugin = hostPathCsiPlugin({ config, nodeName: localNodeName() });
    const createVolume = plugin.handlers.createVolume!;
    const handlers: CsiPluginHandlers = {
      ...plugin.handlers,
      createVolume: async (req, ctx) => {
        const reply = await createVolume(req, ctx);
        created++;
        // The first few go through (their PVs are written); later ones are created and their replies held.
        if (holding && created > 5) await new Promise<void>((r) => held.push(r));
        return reply;
      },
    };
    server = await serveCsiPlugin({ endpoint: `unix://${join(dir, 'csi.sock')}`, handlers });
    await registerCsiDriver(cluster.client, plugin.driverName, localNodeName());
    for (const sc of devCsiStorageClasses(plugin.driverName)) await cluster.client.create(storageClasses, sc);
  });
  after(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    holding = false;
    for (const r of held.splice(0)) r();
    await server?.stop(100);
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const pvs = async () => (await cluster.client.listAll<PersistentVolume>(persistentVolumes)).items;
  const handles = async () => (await readVolumeRecords(sharedPath)).map((r) => r.pvName).sort();

  it('every volume created before the kill becomes a PV after a restart, and every one is deleted with its claim', async () => {
    const first = startSidecar(cluster.kubeconfigPath, server.address);
    children.push(first.child);
    await first.ready;
    for (let i = 0; i < CLAIMS; i++) {
      const claim: PersistentVolumeClaim = {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: `data-${i}`, namespace: 'default' },
        spec: {
          accessModes: ['ReadWriteMany'],
          resources: { requests: { storage: '1Mi' } },
          storageClassName: DEV_CSI_CLASSES.shared,
        },
      };
      await cluster.client.create(persistentVolumeClaims, claim, { namespace: 'default' });
    }
    // Mid-provisioning: some volumes exist on disk whose CreateVolume replies never reached the sidecar.
    await waitFor('CreateVolume replies held', () => held.length >= 8, 60_000);
    const beforeKill = await handles();
    const pvsBefore = await pvs();
    const orphans = beforeKill.filter((h) => !pvsBefore.some((pv) => pv.spec.csi?.volumeHandle === h));
    assert.ok(orphans.length >= 8, `volumes without a PV at the kill: ${orphans.length}`);
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));
    holding = false;
    for (const r of held.splice(0)) r();

    const second = startSidecar(cluster.kubeconfigPath, server.address);
    children.push(second.child);
    await second.ready;
    await waitFor(
      'every claim Bound',
      async () => {
        const claims = (
          await cluster.client.listAll<PersistentVolumeClaim>(persistentVolumeClaims, { namespace: 'default' })
        ).items;
        return claims.length === CLAIMS && claims.every((c) => c.status?.phase === 'Bound');
      },
      120_000,
      100,
    );
    const all = await pvs();
    const byHandle = new Set(all.map((pv) => pv.spec.csi?.volumeHandle));
    const onDisk = await handles();
    assert.equal(
      onDisk.length,
      CLAIMS,
      'one volume per claim: the retried CreateVolume answered the volume it had created',
    );
    assert.deepEqual(
      onDisk.filter((h) => !byHandle.has(h)),
      [],
      'every created handle is a PV',
    );
    for (const h of orphans) assert.ok(byHandle.has(h), `${h}, created before the kill, is a PV`);

    for (let i = 0; i < CLAIMS; i++)
      await cluster.client.delete(persistentVolumeClaims, `data-${i}`, { namespace: 'default' });
    await waitFor(
      'every volume deleted',
      async () => (await handles()).length === 0 && (await pvs()).length === 0,
      120_000,
      100,
    );
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
  });
});
