// The CSI and snapshot kinds through the real kubectl (v1.32) when it is installed: plain `kubectl apply -f`
// (client-side validation on: kubectl reads the served OpenAPI v3 and leaves validation to the server), a second
// apply that patches, and `kubectl get` with the columns a real cluster prints for each kind. Skipped, saying so,
// without kubectl.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { kubectlInstalled } from '../support/kubectl.ts';

const SKIP = kubectlInstalled() ? false : 'kubectl not installed';
let cluster: TestCluster;
let dir: string;

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

/** `kubectl get` output as rows of cells (columns separated by 2+ spaces); empty cells are kept as ''. */
function table(out: string): Array<Record<string, string>> {
  const lines = out.trimEnd().split('\n');
  const header = lines[0];
  const starts = [...header.matchAll(/\S+/g)].map((m) => m.index!);
  const names = [...header.matchAll(/\S+/g)].map((m) => m[0]);
  return lines
    .slice(1)
    .map((line) => Object.fromEntries(names.map((n, i) => [n, line.slice(starts[i], starts[i + 1]).trim()])));
}

before(async () => {
  if (SKIP) return;
  dir = await mkdtemp(join(tmpdir(), 'kubectl-csi-'));
  cluster = await startCluster({ controllers: false });
});
after(async () => {
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const MANIFEST = `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: hostpath.csi.k8s.io
spec:
  storageCapacity: true
  tokenRequests:
  - audience: vault
  volumeLifecycleModes: [Persistent, Ephemeral]
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node-a
spec:
  drivers:
  - name: hostpath.csi.k8s.io
    nodeID: node-a
    topologyKeys: [topology.hostpath.csi/node]
`;

test(
  'kubectl: plain apply of a CSIDriver and a CSINode passes client-side validation, twice',
  { skip: SKIP },
  async () => {
    const file = join(dir, 'csi.yaml');
    await writeFile(file, MANIFEST);
    assert.match(
      await kubectl('apply', '-f', file),
      /csidriver.storage.k8s.io\/hostpath.csi.k8s.io created\ncsinode.storage.k8s.io\/node-a created/,
    );
    await writeFile(file, `${MANIFEST}  - name: other.csi.k8s.io\n    nodeID: a-1\n`);
    assert.match(
      await kubectl('apply', '-f', file),
      /csidriver.storage.k8s.io\/hostpath.csi.k8s.io unchanged\ncsinode.storage.k8s.io\/node-a configured/,
    );
    const [driver] = table(await kubectl('get', 'csidrivers'));
    assert.deepEqual(Object.keys(driver), [
      'NAME',
      'ATTACHREQUIRED',
      'PODINFOONMOUNT',
      'STORAGECAPACITY',
      'TOKENREQUESTS',
      'REQUIRESREPUBLISH',
      'MODES',
      'AGE',
    ]);
    assert.deepEqual(
      { ...driver, AGE: '' },
      {
        NAME: 'hostpath.csi.k8s.io',
        ATTACHREQUIRED: 'true',
        PODINFOONMOUNT: 'false',
        STORAGECAPACITY: 'true',
        TOKENREQUESTS: 'vault',
        REQUIRESREPUBLISH: 'false',
        MODES: 'Persistent,Ephemeral',
        AGE: '',
      },
    );
    const [node] = table(await kubectl('get', 'csinodes'));
    assert.deepEqual(Object.keys(node), ['NAME', 'DRIVERS', 'AGE']);
    assert.equal(node.DRIVERS, '2');
  },
);

test(
  'kubectl: get columns of VolumeAttachment, CSIStorageCapacity and VolumeAttributesClass',
  { skip: SKIP },
  async () => {
    const file = join(dir, 'more.yaml');
    await writeFile(
      file,
      `apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata:
  name: csi-abc
spec:
  attacher: hostpath.csi.k8s.io
  nodeName: node-a
  source:
    persistentVolumeName: pvc-1
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata:
  name: csisc-1
  namespace: default
storageClassName: fast
capacity: 10Gi
---
apiVersion: storage.k8s.io/v1beta1
kind: VolumeAttributesClass
metadata:
  name: gold
driverName: hostpath.csi.k8s.io
parameters:
  iops: "1000"
`,
    );
    await kubectl('apply', '-f', file);
    const [va] = table(await kubectl('get', 'volumeattachments'));
    assert.deepEqual(
      { ...va, AGE: '' },
      { NAME: 'csi-abc', ATTACHER: 'hostpath.csi.k8s.io', PV: 'pvc-1', NODE: 'node-a', ATTACHED: 'false', AGE: '' },
    );
    const [cap] = table(await kubectl('get', 'csistoragecapacities', '-n', 'default'));
    assert.deepEqual(
      Object.keys(cap),
      ['NAME', 'CREATED', 'AT'],
      'the default table convertor, as kube-apiserver serves this kind',
    );
    const [vac] = table(await kubectl('get', 'vac'));
    assert.deepEqual({ ...vac, AGE: '' }, { NAME: 'gold', DRIVERNAME: 'hostpath.csi.k8s.io', AGE: '' });
  },
);

test("kubectl: the snapshot kinds print their CRDs' columns, empty cells blank", { skip: SKIP }, async () => {
  const file = join(dir, 'snap.yaml');
  await writeFile(
    file,
    `apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: snapclass
driver: hostpath.csi.k8s.io
deletionPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata:
  name: snap-1
  namespace: default
spec:
  volumeSnapshotClassName: snapclass
  source:
    persistentVolumeClaimName: data
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotContent
metadata:
  name: snapcontent-1
spec:
  deletionPolicy: Retain
  driver: hostpath.csi.k8s.io
  source:
    snapshotHandle: snap-handle-1
  volumeSnapshotRef:
    name: snap-1
    namespace: default
`,
  );
  assert.match(await kubectl('apply', '-f', file), /volumesnapshot.snapshot.storage.k8s.io\/snap-1 created/);
  assert.match(await kubectl('apply', '-f', file), /volumesnapshot.snapshot.storage.k8s.io\/snap-1 unchanged/);
  const [cls] = table(await kubectl('get', 'vsclass'));
  assert.deepEqual(
    { ...cls, AGE: '' },
    { NAME: 'snapclass', DRIVER: 'hostpath.csi.k8s.io', DELETIONPOLICY: 'Delete', AGE: '' },
  );
  const [vs] = table(await kubectl('get', 'vs', '-n', 'default'));
  assert.deepEqual(
    { ...vs, AGE: '' },
    {
      NAME: 'snap-1',
      READYTOUSE: '',
      SOURCEPVC: 'data',
      SOURCESNAPSHOTCONTENT: '',
      RESTORESIZE: '',
      SNAPSHOTCLASS: 'snapclass',
      SNAPSHOTCONTENT: '',
      CREATIONTIME: '',
      AGE: '',
    },
  );
  const [vsc] = table(await kubectl('get', 'vsc'));
  assert.deepEqual(
    { ...vsc, AGE: '' },
    {
      NAME: 'snapcontent-1',
      READYTOUSE: '',
      RESTORESIZE: '',
      DELETIONPOLICY: 'Retain',
      DRIVER: 'hostpath.csi.k8s.io',
      VOLUMESNAPSHOTCLASS: '',
      VOLUMESNAPSHOT: 'snap-1',
      VOLUMESNAPSHOTNAMESPACE: 'default',
      AGE: '',
    },
  );
});
