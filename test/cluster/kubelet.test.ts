// The kubelet stand-in of the embedded cluster: a pod on the local node whose claim is Bound to a PV whose
// directory exists becomes Running and Ready, with container statuses and a message saying containers are not
// run; a pod whose volume cannot be mounted (the directory is missing) stays Pending with a FailedMount Warning;
// pods/log answers 400 with a clear message. Through the project's client; with kubectl when it is installed
// (`kubectl wait --for=condition=Ready` and `kubectl logs`), skipped with a message otherwise.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NOT_RUN_MESSAGE } from '../../src/cluster/controllers/kubelet.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { ApiError } from '../../src/runtime/status-errors.ts';
import { coreEvents, persistentVolumeClaims, persistentVolumes, pods } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/types/k8s.ts';
import { waitFor } from '../support/wait.ts';
import { kubectlInstalled } from '../support/kubectl.ts';

const SKIP_KUBECTL = kubectlInstalled() ? false : 'kubectl not installed: the kubectl wait/logs checks are skipped';

describe('kubelet stand-in', () => {
  let cluster: TestCluster;
  let client: KubeClient;
  let dir: string;

  const volume = (name: string, path: string): PersistentVolume =>
    ({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        hostPath: { path },
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: '',
      },
    }) as PersistentVolume;
  const claim = (name: string, volumeName: string): PersistentVolumeClaim =>
    ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: '',
        volumeName,
        resources: { requests: { storage: '1Mi' } },
      },
    }) as PersistentVolumeClaim;
  const pod = (name: string, claimName: string): Pod =>
    ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: {
        containers: [
          { name: 'app', image: 'busybox' },
          { name: 'sidecar', image: 'busybox' },
        ],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }],
      },
    }) as Pod;
  const getPod = (name: string) => client.get<Pod>(pods, name, { namespace: 'default' });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-kubelet-'));
    await mkdir(join(dir, 'present'));
    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0 });
    await client.create(persistentVolumes, volume('pv-present', join(dir, 'present')));
    await client.create(persistentVolumes, volume('pv-missing', join(dir, 'missing')));
    await client.create(persistentVolumeClaims, claim('data-present', 'pv-present'), { namespace: 'default' });
    await client.create(persistentVolumeClaims, claim('data-missing', 'pv-missing'), { namespace: 'default' });
    await client.create(pods, pod('runs', 'data-present'), { namespace: 'default' });
    await client.create(pods, pod('stuck', 'data-missing'), { namespace: 'default' });
  });
  after(async () => {
    client?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a pod whose volumes can be mounted is Running and Ready, containers reported (not run)', async () => {
    const p = await waitFor('pod runs Running', async () => {
      const got = await getPod('runs');
      return got.status?.phase === 'Running' && got;
    });
    const status = p.status as {
      message?: string;
      conditions?: Array<{ type: string; status: string }>;
      containerStatuses?: Array<{ name: string; ready: boolean; state: { running?: unknown } }>;
    };
    assert.equal(status.message, NOT_RUN_MESSAGE);
    assert.equal(status.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(status.conditions?.find((c) => c.type === 'ContainersReady')?.status, 'True');
    assert.deepEqual(
      status.containerStatuses?.map((c) => [c.name, c.ready, c.state.running !== undefined]),
      [
        ['app', true, true],
        ['sidecar', true, true],
      ],
    );
    assert.ok(p.spec.nodeName, 'scheduled to the local node');
  });

  it('a pod whose volume directory is missing stays Pending with a FailedMount Warning', async () => {
    const ev = await waitFor('FailedMount', async () => {
      const list = await client.list<CoreEvent>(coreEvents, {
        namespace: 'default',
        fieldSelector: 'involvedObject.name=stuck',
      });
      return list.items.find((e) => e.reason === 'FailedMount');
    });
    assert.equal(ev.type, 'Warning');
    assert.match(
      ev.message ?? '',
      /MountVolume\.SetUp failed for volume "data": directory .*missing of persistentvolume "pv-missing" does not exist/,
    );
    assert.equal((await getPod('stuck')).status?.phase, 'Pending');
    // Creating the directory and touching the claim lets it run: the stand-in re-checks on changes.
    await mkdir(join(dir, 'missing'));
    await client.patch(
      persistentVolumeClaims,
      'data-missing',
      { metadata: { labels: { touched: 'yes' } } },
      { namespace: 'default', type: 'merge' },
    );
    await waitFor(
      'pod stuck Running once the directory exists',
      async () => (await getPod('stuck')).status?.phase === 'Running',
    );
  });

  it('pods/log answers 400: containers are not run', async () => {
    const err = await client.get(pods, 'runs', { namespace: 'default', subresource: 'log' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 400);
    assert.match(err.message, /containers are not run by the embedded cluster/);
  });

  it('kubectl wait --for=condition=Ready and kubectl logs', { skip: SKIP_KUBECTL }, async () => {
    const run = (...args: string[]) =>
      new Promise<{ code: number; out: string; err: string }>((resolve) => {
        execFile(
          'kubectl',
          ['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args],
          { timeout: 30_000, env: { ...process.env, KUBECONFIG: '' } },
          (e, out, err) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, out, err }),
        );
      });
    const waited = await run('wait', '--for=condition=Ready', 'pod/runs', '--timeout=20s');
    assert.equal(waited.code, 0, waited.err);
    assert.match(waited.out, /pod\/runs condition met/);
    const logs = await run('logs', 'runs', '-c', 'app');
    assert.notEqual(logs.code, 0);
    assert.match(logs.err, /containers are not run by the embedded cluster/);
  });
});
