// End to end: `kube-provisioner dev --csi` as a separate process. With --demo, the same claims go through the
// in-process hostpath provisioner and then through the CSI sidecar and the reference plugin, and the comparison
// line is printed. Serving: the CSIDriver and the node's CSINode entry are published, a WaitForFirstConsumer claim
// used by a pod is provisioned on the node path through CSI (a CSI PV with the node's topology as its affinity, a
// directory named after the claim), and deleting the claim deletes the directory through DeleteVolume.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { csiNodes } from '../../src/csi/kinds.ts';
import { csiDrivers } from '../../src/cli/dev-csi.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { persistentVolumeClaims, persistentVolumes, pods } from '../../src/runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';
import { runCli, startCli, waitFor } from './cli-helpers.ts';

const DRIVER = 'hostpath.csi.kube-provisioner.io';

describe('kube-provisioner dev --csi', () => {
  let dataDir: string;
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'kp-dev-csi-'));
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('--demo runs the claims through the in-process provisioner, then through the CSI sidecar and the reference plugin, and compares', async () => {
    const r = await runCli(['dev', '--csi', '--data-dir', dataDir, '--demo', '10', '--port', '0'], {
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /CSI mode: plugin hostpath\.csi\.kube-provisioner\.io on .*csi\.sock/);
    assert.match(r.stdout, /^demo: 10\/10 claims Bound in /m);
    assert.match(r.stdout, /^demo \(CSI: sidecar \+ reference plugin\): 10\/10 claims Bound in [\d.]+ s/m);
    assert.match(r.stdout, /^demo: CSI reached [\d.]+ claims\/s vs [\d.]+ in-process: ratio [\d.]+$/m);
    const dirs = await readdir(join(dataDir, 'volumes', 'csi-shared', 'default'));
    assert.equal(
      dirs.filter((d) => d.startsWith('demo-')).length,
      10,
      "the CSI claims' directories, named after the claims (--extra-create-metadata)",
    );
  });

  it('serves: CSIDriver and CSINode published; a WaitForFirstConsumer claim with a pod becomes a CSI volume on the node path, deleted through DeleteVolume', async () => {
    const cli = startCli(['dev', '--csi', '--data-dir', dataDir, '--port', '0'], { timeoutMs: 120_000 });
    try {
      await waitFor('the guide', () => cli.stdout().includes('Ctrl-C to stop'), 60_000);
      const client = new KubeClient({
        kubeConfig: loadKubeConfig({ path: join(dataDir, 'kubeconfig') }).kubeConfig,
        qps: 0,
      });
      try {
        await client.get(csiDrivers, DRIVER);
        const node = (await client.list(csiNodes)).items[0];
        assert.deepEqual(
          node?.spec.drivers.map((d) => [d.name, d.topologyKeys]),
          [[DRIVER, ['kubernetes.io/hostname']]],
        );
        await client.create(
          persistentVolumeClaims,
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: 'local-data', namespace: 'default' },
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '1Mi' } },
              storageClassName: 'csi-hostpath-local',
            },
          } as PersistentVolumeClaim,
          { namespace: 'default' },
        );
        await client.create(
          pods,
          {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'user', namespace: 'default' },
            spec: {
              containers: [{ name: 'c', image: 'busybox' }],
              volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'local-data' } }],
            },
          } as Pod,
          { namespace: 'default' },
        );
        const claim = await waitFor(
          'the claim Bound',
          async () => {
            const c = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, 'local-data', {
              namespace: 'default',
            });
            return c.status?.phase === 'Bound' ? c : undefined;
          },
          60_000,
        );
        const pv = await client.get<PersistentVolume>(persistentVolumes, claim.spec.volumeName ?? '');
        assert.equal(pv.spec.csi?.driver, DRIVER);
        assert.equal(pv.spec.csi?.volumeHandle, pv.metadata.name);
        assert.equal(
          pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.key,
          'kubernetes.io/hostname',
        );
        const dir = join(dataDir, 'volumes', 'csi-local', 'default', `local-data-${pv.metadata.name}`);
        assert.ok(existsSync(dir), `${dir} exists`);
        await client.delete(pods, 'user', { namespace: 'default' });
        await client.delete(persistentVolumeClaims, 'local-data', { namespace: 'default' });
        await waitFor('the directory deleted', () => !existsSync(dir), 60_000);
      } finally {
        client.close();
      }
      cli.child.kill('SIGINT');
      assert.equal(await cli.exited, 0, cli.stderr());
    } finally {
      cli.child.kill('SIGKILL');
    }
  });
});
