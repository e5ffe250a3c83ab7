// The embedded cluster driven through the real kubectl (v1.32) when it is installed: discovery, server-side
// tables, OpenAPI-v3-backed validation of create/apply (no --validate=false), describe, wait, label/annotate,
// patch, delete, and the controllers' effects as kubectl shows them. Skipped, saying so, without kubectl.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { localNodeName } from '../../src/cluster/controllers/index.ts';
import { kubectlInstalled } from '../support/kubectl.ts';
import { waitFor } from '../support/wait.ts';

const HAVE_KUBECTL = kubectlInstalled();
const SKIP = HAVE_KUBECTL ? false : 'kubectl not installed';

let cluster: TestCluster;
let dir: string;

/** Runs kubectl against the cluster; resolves with stdout, rejects with stderr on a non-zero exit. */
function kubectl(...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'kubectl',
      ['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args],
      { timeout: 20_000, env: { ...process.env, KUBECONFIG: '' } },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`kubectl ${args.join(' ')} failed: ${stderr || err.message}`));
        else resolve(stdout);
      },
    );
  });
}

async function manifest(name: string, text: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, text);
  return file;
}

/** Splits `kubectl get` output into rows of cells (columns separated by 2+ spaces). */
function rows(out: string): string[][] {
  return out
    .trimEnd()
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/));
}

before(async () => {
  if (!HAVE_KUBECTL) return;
  dir = await mkdtemp(join(tmpdir(), 'kubectl-test-'));
  cluster = await startCluster({ controllers: { resyncMs: 500 } });
});
after(async () => {
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('kubectl: discovery and the local node', { skip: SKIP }, async () => {
  const version = await kubectl('version', '-o', 'json');
  assert.equal((JSON.parse(version) as { serverVersion: { minor: string } }).serverVersion.minor, '32');
  const nodes = rows(await kubectl('get', 'nodes'));
  assert.deepEqual(nodes[0], ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION']);
  assert.deepEqual([nodes[1][0], nodes[1][1], nodes[1][2]], [localNodeName(), 'Ready', '<none>']);
  const resources = await kubectl('api-resources', '--no-headers');
  for (const r of ['persistentvolumeclaims', 'persistentvolumes', 'storageclasses', 'leases', 'events'])
    assert.match(resources, new RegExp(`^${r}\\s`, 'm'));
});

test(
  'kubectl: create, get tables, describe, provision by apply, wait, delete -> Released',
  { skip: SKIP },
  async () => {
    const classAndClaim = await manifest(
      'class-claim.yaml',
      `apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: kubectl-default
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: example.com/kubectl
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 1Gi
`,
    );
    assert.match(
      await kubectl('create', '-f', classAndClaim),
      /storageclass.storage.k8s.io\/kubectl-default created\npersistentvolumeclaim\/data created/,
    );

    const sc = rows(await kubectl('get', 'sc'));
    assert.deepEqual(sc[0], [
      'NAME',
      'PROVISIONER',
      'RECLAIMPOLICY',
      'VOLUMEBINDINGMODE',
      'ALLOWVOLUMEEXPANSION',
      'AGE',
    ]);
    assert.deepEqual(sc[1].slice(0, 5), [
      'kubectl-default (default)',
      'example.com/kubectl',
      'Delete',
      'Immediate',
      'false',
    ]);

    const pvc = rows(await kubectl('get', 'pvc', 'data'));
    assert.deepEqual(pvc[0], [
      'NAME',
      'STATUS',
      'VOLUME',
      'CAPACITY',
      'ACCESS MODES',
      'STORAGECLASS',
      'VOLUMEATTRIBUTESCLASS',
      'AGE',
    ]);
    assert.deepEqual(pvc[1].slice(0, 2), ['data', 'Pending']);
    assert.ok(pvc[1].includes('kubectl-default'), 'default class applied');

    const uid = await kubectl('get', 'pvc', 'data', '-o', 'jsonpath={.metadata.uid}');
    let described = '';
    for (let i = 0; i < 100 && !/ExternalProvisioning/.test(described); i++) {
      described = await kubectl('describe', 'pvc', 'data');
    }
    assert.match(described, /volume\.kubernetes\.io\/storage-provisioner: example\.com\/kubectl/);
    assert.match(described, /Used By:\s+<none>/);
    assert.match(
      described,
      /Normal\s+ExternalProvisioning\s+.*persistentvolume-controller\s+Waiting for a volume to be created either by the external provisioner 'example\.com\/kubectl'/,
    );

    // Play the provisioner with kubectl apply (client-side apply; validation through /openapi/v3).
    const pvFile = await manifest(
      'pv.yaml',
      `apiVersion: v1
kind: PersistentVolume
metadata:
  name: pvc-${uid}
  annotations:
    pv.kubernetes.io/provisioned-by: example.com/kubectl
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: kubectl-default
  persistentVolumeReclaimPolicy: Delete
  hostPath: {path: /tmp/kubectl-test}
  claimRef: {kind: PersistentVolumeClaim, apiVersion: v1, namespace: default, name: data, uid: ${uid}}
`,
    );
    assert.match(await kubectl('apply', '-f', pvFile), /created/);
    assert.match(
      await kubectl('wait', '--for=jsonpath={.status.phase}=Bound', 'pvc/data', '--timeout=15s'),
      /condition met/,
    );
    const pv = rows(await kubectl('get', 'pv', '-o', 'wide'));
    assert.deepEqual(pv[0], [
      'NAME',
      'CAPACITY',
      'ACCESS MODES',
      'RECLAIM POLICY',
      'STATUS',
      'CLAIM',
      'STORAGECLASS',
      'VOLUMEATTRIBUTESCLASS',
      'REASON',
      'AGE',
      'VOLUMEMODE',
    ]);
    assert.deepEqual(pv[1].slice(0, 7), [
      `pvc-${uid}`,
      '1Gi',
      'RWO',
      'Delete',
      'Bound',
      'default/data',
      'kubectl-default',
    ]);
    const bound = rows(await kubectl('get', 'pvc', 'data'));
    assert.deepEqual(bound[1].slice(0, 5), ['data', 'Bound', `pvc-${uid}`, '1Gi', 'RWO']);

    assert.match(await kubectl('apply', '-f', pvFile), /unchanged/);
    assert.match(await kubectl('label', 'pvc', 'data', 'team=storage'), /labeled/);
    assert.match(await kubectl('annotate', 'pv', `pvc-${uid}`, 'note=kept'), /annotated/);
    assert.match(
      await kubectl('patch', 'pvc', 'data', '--type', 'merge', '-p', '{"metadata":{"labels":{"tier":"gold"}}}'),
      /patched/,
    );
    assert.match(await kubectl('get', 'pvc', '--show-labels', '-A'), /team=storage,tier=gold|tier=gold,team=storage/);

    assert.match(await kubectl('delete', 'pvc', 'data'), /deleted/);
    assert.match(
      await kubectl('wait', '--for=jsonpath={.status.phase}=Released', `pv/pvc-${uid}`, '--timeout=15s'),
      /condition met/,
    );
    assert.match(await kubectl('delete', 'pv', `pvc-${uid}`), /deleted/);
    assert.equal((await kubectl('get', 'pv', '--no-headers', '--ignore-not-found')).trim(), '');
  },
);

test('kubectl: events, leases and the Terminating status of a claim in use', { skip: SKIP }, async () => {
  const file = await manifest(
    'in-use.yaml',
    `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: held}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: kubectl-default
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: holder}
spec:
  containers: [{name: c, image: busybox}]
  volumes: [{name: d, persistentVolumeClaim: {claimName: held}}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: kubectl-lease}
spec: {holderIdentity: someone}
`,
  );
  await kubectl('apply', '-f', file);
  await kubectl('delete', 'pvc', 'held', '--wait=false');
  const pvc = rows(await kubectl('get', 'pvc', 'held'));
  assert.equal(pvc[1][1], 'Terminating');
  const leases = rows(await kubectl('get', 'lease', 'kubectl-lease'));
  assert.deepEqual(leases[0], ['NAME', 'HOLDER', 'AGE']);
  assert.deepEqual(leases[1].slice(0, 2), ['kubectl-lease', 'someone']);
  const events = rows(await kubectl('get', 'events', '--field-selector', 'involvedObject.name=held'));
  assert.deepEqual(events[0], ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  assert.ok(events.slice(1).some((r) => r[2] === 'ExternalProvisioning' && r[3] === 'persistentvolumeclaim/held'));
  await kubectl('delete', 'pod', 'holder');
  // Prints nothing when the claim is already gone by the time it looks.
  await kubectl('wait', '--for=delete', 'pvc/held', '--timeout=15s');
  assert.equal((await kubectl('get', 'pvc', 'held', '--ignore-not-found')).trim(), '');
});

test('kubectl: get -w streams table rows as the claim changes', { skip: SKIP }, async () => {
  await kubectl(
    'create',
    '-f',
    await manifest(
      'watched.yaml',
      `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: watched}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: kubectl-default
  resources: {requests: {storage: 1Gi}}
`,
    ),
  );
  const child = spawn(
    'kubectl',
    [
      '--kubeconfig',
      cluster.kubeconfigPath,
      '--cache-dir',
      join(dir, 'cache'),
      'get',
      'pvc',
      '--field-selector',
      'metadata.name=watched',
      '-w',
      '--request-timeout=20s',
    ],
    { env: { ...process.env, KUBECONFIG: '' } },
  );
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  // The assertion inside the probe puts kubectl's output so far into the timeout message.
  const shows = (re: RegExp) =>
    waitFor(`kubectl -w output matching ${re}`, () => {
      assert.match(out, re);
      return true;
    });
  try {
    // The initial list shows the claim; the watch that follows from its resourceVersion sees the deletion.
    await shows(/watched\s+Pending\s+kubectl-default/);
    await kubectl('delete', 'pvc', 'watched', '--wait=false');
    await shows(/watched\s+Terminating/);
    const lines = out.trimEnd().split('\n');
    assert.match(
      lines[0],
      /^NAME\s+STATUS\s+VOLUME\s+CAPACITY\s+ACCESS MODES\s+STORAGECLASS\s+VOLUMEATTRIBUTESCLASS\s+AGE$/,
    );
    assert.equal(
      lines.filter((l) => l.startsWith('NAME')).length,
      1,
      'one header: later watch tables carry no column definitions',
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
