// deploy/ cannot rot: every manifest is parsed and applied to the embedded cluster, which validates it as
// kube-apiserver would (names, RBAC rules and roleRefs, workload selectors and pod templates...), through
// client-node and, where kubectl is installed, through `kubectl apply`. What no server checks is checked
// locally: least privilege, cross-references (bindings to roles and service accounts, workloads to their
// service account, StorageClass provisioners to the workloads' --provisioner-name, StorageClass parameters
// and the ConfigMap's configuration to the hostpath parsers) and kustomizations to the files.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiException, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { parseClassParameters } from '../../src/hostpath/config/class-parameters.ts';
import { parseHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { parseRunHostPathArgs } from '../../src/cli/hostpath-options.ts';
import { parseRunCsiArgs } from '../../src/cli/csi-options.ts';
import { parseAllDocuments } from 'yaml';
import {
  arr,
  checkBinding,
  checkCommon,
  checkKustomizations,
  checkRole,
  checkWorkload,
  DEPLOY_DIR,
  loadManifests,
  rec,
  type Manifest,
} from './manifest-checks.ts';

const manifests = loadManifests();
const resources = manifests.filter((m) => m.obj.kind !== 'Kustomization');
const ofKind = (...kinds: string[]) => resources.filter((m) => kinds.includes(String(m.obj.kind)));
const nameOf = (m: Manifest) => String(rec(m.obj.metadata).name);

/** `--flag=value` or `--flag value` from a container's args. */
function flag(args: string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === `--${name}`) return args[i + 1];
    if (args[i].startsWith(`--${name}=`)) return args[i].slice(name.length + 3);
  }
  return undefined;
}
function containerArgs(m: Manifest): string[] {
  const c = arr(rec(rec(rec(m.obj.spec).template).spec).containers).map(rec)[0] ?? {};
  return arr(c.args).map(String);
}
/** The container's literal env values (NFS_SERVER, NFS_PATH...), plus what the downward API would give. */
function containerEnv(m: Manifest): Record<string, string> {
  const c = arr(rec(rec(rec(m.obj.spec).template).spec).containers).map(rec)[0] ?? {};
  const literal = arr(c.env).map(rec).filter((e) => typeof e.value === 'string').map((e) => [String(e.name), String(e.value)]);
  return { NODE_NAME: 'node-1', POD_NAMESPACE: 'kube-provisioner', ...Object.fromEntries(literal) };
}
/** Variants applied on top of deploy/ (common + node-local). */
const VARIANTS = ['shared', 'nfs-subdir', 'csi'];
/** deploy/csi runs `run csi` next to a CSI plugin; the hostpath checks are for the other workloads. */
const isCsi = (m: Manifest) => m.file.startsWith('csi/');
const hostpathWorkloads = (...kinds: string[]) => ofKind(...kinds).filter((m) => !isCsi(m));

describe('deploy/ manifests (local checks)', () => {
  it('parses every document with a known kind, apiVersion and name', () => {
    assert.ok(resources.length >= 10, `only ${resources.length} documents`);
    assert.deepEqual(manifests.flatMap(checkCommon), []);
    const kinds = new Set(resources.map((m) => m.obj.kind));
    for (const k of ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'ConfigMap', 'Deployment', 'DaemonSet', 'StorageClass']) {
      assert.ok(kinds.has(k), `deploy/ has no ${k}`);
    }
  });

  it('kustomizations list existing files and every file is listed', () => {
    assert.deepEqual(checkKustomizations(), []);
  });

  it('kubectl kustomize builds deploy/ (common + node-local) and deploy/shared (skipped without kubectl)', (t) => {
    const build = (dir: string) => {
      try {
        return execFileSync('kubectl', ['kustomize', `${DEPLOY_DIR}${dir}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    };
    const all = build('');
    if (all === undefined) return t.skip('kubectl not installed');
    const kinds = (text: string) => parseAllDocuments(text).map((d) => `${String(rec(d.toJS()).kind)}/${String(rec(rec(d.toJS()).metadata).name)}`).sort();
    const expected = resources.filter((m) => !VARIANTS.some((v) => m.file.startsWith(`${v}/`))).map((m) => `${String(m.obj.kind)}/${nameOf(m)}`).sort();
    assert.deepEqual(kinds(all), expected);
    assert.deepEqual(kinds(build('shared') ?? ''), ['Deployment/kube-provisioner-shared', 'StorageClass/hostpath-shared']);
    assert.deepEqual(kinds(build('nfs-subdir') ?? ''), ['Deployment/kube-provisioner-nfs', 'StorageClass/kube-provisioner-nfs']);
    assert.deepEqual(kinds(build('csi') ?? ''), [
      'ClusterRole/kube-provisioner-csi', 'ClusterRoleBinding/kube-provisioner-csi', 'Deployment/kube-provisioner-csi', 'Role/kube-provisioner-csi',
      'RoleBinding/kube-provisioner-csi', 'ServiceAccount/kube-provisioner-csi', 'StorageClass/csi-hostpath',
    ]);
  });

  it('RBAC: rules are least privilege and bindings point at roles and service accounts in deploy/', () => {
    assert.deepEqual(ofKind('Role', 'ClusterRole').flatMap(checkRole), []);
    assert.deepEqual(ofKind('RoleBinding', 'ClusterRoleBinding').flatMap((m) => checkBinding(m, resources)), []);
  });

  it('workloads: service accounts, probe ports and downward-API env are consistent', () => {
    assert.deepEqual(ofKind('Deployment', 'DaemonSet').flatMap((m) => checkWorkload(m, resources)), []);
  });

  it('the workloads\' args are accepted by the real `run hostpath` flag parser', () => {
    for (const w of hostpathWorkloads('Deployment', 'DaemonSet')) {
      const args = containerArgs(w);
      assert.deepEqual(args.slice(0, 2), ['run', 'hostpath'], nameOf(w));
      // The environment the pod gets: its literal values and the downward API's.
      const o = parseRunHostPathArgs(args.slice(2), containerEnv(w));
      assert.equal(o.nodeName, 'node-1', `${nameOf(w)}: NODE_NAME fallback`);
      assert.equal(o.healthAddress, ':8080', `${nameOf(w)}: the probes use port 8080`);
    }
  });

  it('every StorageClass is served by a workload and has parameters the hostpath provisioner accepts', () => {
    const served = new Set(hostpathWorkloads('Deployment', 'DaemonSet').map((m) => flag(containerArgs(m), 'provisioner-name')));
    for (const sc of hostpathWorkloads('StorageClass')) {
      assert.ok(served.has(String(sc.obj.provisioner)), `StorageClass ${nameOf(sc)}: no workload runs provisioner ${String(sc.obj.provisioner)}`);
      const params = rec(sc.obj.parameters) as Record<string, string>;
      assert.doesNotThrow(() => parseClassParameters(params), `StorageClass ${nameOf(sc)}`);
    }
  });

  it('the nfs-subdir variant mounts the export NFS_SERVER/NFS_PATH name at the mount path and publishes nfs PVs', () => {
    const nfsWorkloads = hostpathWorkloads('Deployment').filter((w) => flag(containerArgs(w), 'config-map') === undefined);
    assert.deepEqual(nfsWorkloads.map(nameOf), ['kube-provisioner-nfs']);
    for (const w of nfsWorkloads) {
      const o = parseRunHostPathArgs(containerArgs(w).slice(2), containerEnv(w));
      assert.equal(o.provisionerName, 'k8s-sigs.io/nfs-subdir-external-provisioner', 'nfs-subdir\'s name: its classes and PVs keep working');
      assert.equal(o.controller.leaderElection?.mode, 'lease');
      assert.ok(o.nfs, 'NFS_SERVER and NFS_PATH are set');
      const pod = rec(rec(rec(w.obj.spec).template).spec);
      const c = arr(pod.containers).map(rec)[0];
      const mount = arr(c.volumeMounts).map(rec).find((v) => v.mountPath === o.nfsMountPath);
      assert.ok(mount, `${nameOf(w)}: nothing mounted at ${o.nfsMountPath}`);
      const volume = arr(pod.volumes).map(rec).find((v) => v.name === mount.name);
      assert.deepEqual(volume?.nfs, { server: o.nfs.server, path: o.nfs.path }, 'the pod mounts the export its PVs name');
    }
    const cls = ofKind('StorageClass').find((m) => m.file.startsWith('nfs-subdir/'));
    assert.ok(cls && arr(cls.obj.mountOptions).length > 0, 'the class shows mountOptions (copied into the PVs)');
  });

  it('the DaemonSet serves node paths and the Deployment the shared path, from existing ConfigMap keys', () => {
    for (const w of ofKind('Deployment', 'DaemonSet').filter((m) => flag(containerArgs(m), 'config-map') !== undefined || m.obj.kind === 'DaemonSet')) {
      const args = containerArgs(w);
      const ref = flag(args, 'config-map');
      assert.ok(ref, `${nameOf(w)}: no --config-map`);
      const [ns, name] = ref.split('/');
      const cm = resources.find((m) => m.obj.kind === 'ConfigMap' && nameOf(m) === name && rec(m.obj.metadata).namespace === ns);
      assert.ok(cm, `${nameOf(w)}: ConfigMap ${ref} is not in deploy/`);
      const key = flag(args, 'config-key') ?? 'config.json';
      const text = rec(cm.obj.data)[key];
      assert.equal(typeof text, 'string', `${nameOf(w)}: ConfigMap ${ref} has no key ${key}`);
      const config = parseHostPathConfig(String(text), `${ref}:${key}`);
      const mode = flag(args, 'mode');
      if (w.obj.kind === 'DaemonSet') {
        assert.equal(mode, 'daemonset');
        assert.equal(flag(args, 'leader-election'), 'none', 'each node instance works for its own node');
        assert.ok(config.nodePathMap.length > 0 && !config.sharedFileSystemPath);
      } else {
        assert.equal(mode, 'deployment');
        assert.equal(flag(args, 'leader-election'), 'lease');
        assert.ok(config.sharedFileSystemPath && config.nodePathMap.length === 0);
      }
      // The base paths are mounted at the same path inside the container (the PV records that path).
      const c = arr(rec(rec(rec(w.obj.spec).template).spec).containers).map(rec)[0];
      const mounts = arr(c.volumeMounts).map((v) => String(rec(v).mountPath));
      const bases = [config.sharedFileSystemPath?.path, ...config.nodePathMap.flatMap((n) => n.paths.map((p) => p.path))].filter(Boolean);
      for (const b of bases) assert.ok(mounts.includes(String(b)), `${nameOf(w)}: base path ${String(b)} is not mounted`);
    }
  });
  it('deploy/csi: `run csi` args pass the real parser, the plugin and the sidecar share the socket, the class names the plugin\'s driver', () => {
    const [w] = ofKind('Deployment').filter(isCsi);
    assert.ok(w, 'deploy/csi has a Deployment');
    const pod = rec(rec(rec(w.obj.spec).template).spec);
    const containers = arr(pod.containers).map(rec);
    const sidecar = containers.find((c) => arr(c.args).map(String)[1] === 'csi');
    const plugin = containers.find((c) => c !== sidecar);
    assert.ok(sidecar && plugin, 'one plugin container and one `run csi` container');
    const args = arr(sidecar.args).map(String);
    const o = parseRunCsiArgs(args.slice(2), { POD_NAMESPACE: 'kube-provisioner', POD_NAME: 'kube-provisioner-csi-0' });
    assert.equal(o.enableCapacity, true);
    assert.equal(o.podNamespace, 'kube-provisioner');
    assert.equal(o.healthAddress, ':8080');
    const env = arr(sidecar.env).map(rec).map((e) => String(e.name));
    assert.ok(env.includes('POD_NAMESPACE') && env.includes('POD_NAME'), 'POD_NAMESPACE and POD_NAME from the downward API');
    const socketDir = (c: Record<string, unknown>) => arr(c.volumeMounts).map(rec).find((m) => m.name === 'socket-dir')?.mountPath;
    assert.equal(socketDir(sidecar), socketDir(plugin));
    assert.ok(o.csiAddress.startsWith(`${String(socketDir(sidecar))}/`), 'the sidecar connects to the socket in the shared directory');
    const endpoint = arr(plugin.args).map(String).find((a) => a.startsWith('--endpoint='))?.slice('--endpoint='.length);
    assert.equal(endpoint, `unix://${o.csiAddress}`);
    const driver = arr(plugin.args).map(String).find((a) => a.startsWith('--drivername='))?.slice('--drivername='.length);
    for (const sc of ofKind('StorageClass').filter(isCsi)) assert.equal(sc.obj.provisioner, driver, `StorageClass ${nameOf(sc)}`);
  });
});

/** Namespaces first, then everything else in file order (what `kubectl apply -k` does too). */
const applyOrder = () => [...ofKind('Namespace'), ...resources.filter((m) => m.obj.kind !== 'Namespace')];
/** client-node hands back model class instances for known kinds; compare their JSON. */
const plain = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
const refOf = (m: Manifest) => ({
  apiVersion: String(m.obj.apiVersion),
  kind: String(m.obj.kind),
  metadata: { name: nameOf(m), namespace: rec(m.obj.metadata).namespace as string | undefined },
});

describe('deploy/ manifests (embedded cluster)', () => {
  let cluster: TestCluster;
  let api: KubernetesObjectApi;

  before(async () => {
    cluster = await startCluster();
    api = cluster.kubeConfig.makeApiClient(KubernetesObjectApi);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('applies every manifest and the server accepts each one', async () => {
    for (const m of applyOrder()) {
      const where = `${m.file}[${m.index}] ${String(m.obj.kind)}`;
      let created: KubernetesObject;
      try {
        created = await api.create(m.obj as KubernetesObject);
      } catch (err) {
        assert.fail(`${where} rejected: ${err instanceof ApiException ? String(err.body) : String(err)}`);
      }
      assert.equal(created.metadata?.name, nameOf(m), where);
      const read = await api.read(refOf(m));
      assert.ok(read.metadata?.uid, `${where}: no uid after create`);
    }
    assert.ok(resources.length >= 10);
  });

  it('reads back what the manifests mean: binding modes, roleRefs, selectors and defaults', async () => {
    for (const sc of ofKind('StorageClass')) {
      const read = (await api.read(refOf(sc))) as KubernetesObject & { provisioner?: string; volumeBindingMode?: string };
      assert.equal(read.provisioner, sc.obj.provisioner);
      assert.equal(read.volumeBindingMode, sc.obj.volumeBindingMode);
    }
    for (const b of ofKind('RoleBinding', 'ClusterRoleBinding')) {
      const read = (await api.read(refOf(b))) as KubernetesObject & { roleRef?: unknown };
      assert.deepEqual(plain(read.roleRef), b.obj.roleRef);
    }
    for (const w of ofKind('Deployment', 'DaemonSet')) {
      const read = (await api.read(refOf(w))) as KubernetesObject & { spec?: Record<string, unknown> };
      assert.deepEqual(plain(read.spec?.selector), rec(w.obj.spec).selector);
      assert.equal(rec(rec(rec(plain(read.spec)).template).spec).restartPolicy, 'Always', 'the pod template got the Pod defaults');
      assert.equal(read.metadata?.generation, 1);
    }
  });

  it('the server rejects a broken manifest (a workload whose selector no longer matches its labels)', async () => {
    const [w] = ofKind('Deployment', 'DaemonSet');
    const broken = structuredClone(w.obj);
    rec(rec(rec(broken.spec).template).metadata).labels = { 'app.kubernetes.io/name': 'something-else' };
    rec(broken.metadata).name = `${nameOf(w)}-broken`;
    await assert.rejects(api.create(broken as KubernetesObject), (err: unknown) => {
      assert.ok(err instanceof ApiException, String(err));
      assert.equal(err.code, 422);
      assert.match(String(err.body), /spec\.template\.metadata\.labels/);
      return true;
    });
  });
});

/** Runs kubectl without blocking the event loop (the cluster serves from this process). */
function kubectl(args: string[]): Promise<{ ok: boolean; missing: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile('kubectl', args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      const missing = (err as NodeJS.ErrnoException | null)?.code === 'ENOENT';
      resolve({ ok: !err, missing, out: `${stdout}${stderr}` });
    });
  });
}

describe('deploy/ manifests (kubectl apply against the embedded cluster)', () => {
  let cluster: TestCluster;
  let dir: string;

  before(async () => {
    cluster = await startCluster();
    dir = await mkdtemp(join(tmpdir(), 'deploy-kubectl-'));
  });
  after(async () => {
    await cluster?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('`kubectl apply -k deploy/`, `-k deploy/shared` and `-k deploy/nfs-subdir` create everything, and re-applying changes nothing (skipped without kubectl)', async (t) => {
    const k = (...args: string[]) => kubectl(['--kubeconfig', cluster.kubeconfigPath, '--cache-dir', join(dir, 'cache'), ...args]);
    const first = await k('apply', '-k', DEPLOY_DIR);
    if (first.missing) return t.skip('kubectl not installed');
    assert.ok(first.ok, first.out);
    let created = first.out;
    for (const v of VARIANTS) {
      const variant = await k('apply', '-k', `${DEPLOY_DIR}${v}`);
      assert.ok(variant.ok, variant.out);
      created += variant.out;
    }
    for (const m of resources) {
      assert.match(created, new RegExp(`/${nameOf(m)} created`), `${m.file}[${m.index}] ${String(m.obj.kind)} not created: ${created}`);
    }
    const again = await k('apply', '-k', DEPLOY_DIR);
    assert.ok(again.ok, again.out);
    assert.doesNotMatch(again.out, / (created|configured)$/m, again.out);
  });
});
