// deploy/ cannot rot: every manifest is parsed, applied to the embedded cluster when it serves the kind (the
// server validates it), and checked locally otherwise (RBAC, ServiceAccount, workloads: their pod templates
// are created as Pods so the server validates the pod spec). Cross-references are checked too: bindings to
// roles and service accounts, StorageClass provisioners to the workloads' --provisioner-name, StorageClass
// parameters and the ConfigMap's configuration to the hostpath parsers, kustomizations to the files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { parseClassParameters } from '../../src/hostpath/class-parameters.ts';
import { parseHostPathConfig } from '../../src/hostpath/config.ts';
import { parseRunHostPathArgs } from '../../src/cli/options.ts';
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

/** Exposes discovery (protected in client-node) to tell served kinds from unserved ones. */
class DiscoveringObjectApi extends KubernetesObjectApi {
  async serves(apiVersion: string, kind: string): Promise<boolean> {
    try {
      return (await this.resource(apiVersion, kind)) !== undefined;
    } catch {
      return false; // the whole group/version is unknown (404 from discovery)
    }
  }
}

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
    const expected = resources.filter((m) => !m.file.startsWith('shared/')).map((m) => `${String(m.obj.kind)}/${nameOf(m)}`).sort();
    assert.deepEqual(kinds(all), expected);
    assert.deepEqual(kinds(build('shared') ?? ''), ['Deployment/kube-provisioner-shared', 'StorageClass/hostpath-shared']);
  });

  it('RBAC: rules are explicit and bindings point at roles and service accounts in deploy/', () => {
    assert.deepEqual(ofKind('Role', 'ClusterRole').flatMap(checkRole), []);
    assert.deepEqual(ofKind('RoleBinding', 'ClusterRoleBinding').flatMap((m) => checkBinding(m, resources)), []);
  });

  it('workloads: selectors, mounts, service accounts, probes and downward-API env are consistent', () => {
    assert.deepEqual(ofKind('Deployment', 'DaemonSet').flatMap((m) => checkWorkload(m, resources)), []);
  });

  it('the workloads\' args are accepted by the real `run hostpath` flag parser', () => {
    for (const w of ofKind('Deployment', 'DaemonSet')) {
      const args = containerArgs(w);
      assert.deepEqual(args.slice(0, 2), ['run', 'hostpath'], nameOf(w));
      // The environment the pod gets from the downward API.
      const o = parseRunHostPathArgs(args.slice(2), { NODE_NAME: 'node-1', POD_NAMESPACE: 'kube-provisioner' });
      assert.equal(o.nodeName, 'node-1', `${nameOf(w)}: NODE_NAME fallback`);
      assert.equal(o.healthAddress, ':8080', `${nameOf(w)}: the probes use port 8080`);
    }
  });

  it('every StorageClass is served by a workload and has parameters the hostpath provisioner accepts', () => {
    const served = new Set(ofKind('Deployment', 'DaemonSet').map((m) => flag(containerArgs(m), 'provisioner-name')));
    for (const sc of ofKind('StorageClass')) {
      assert.ok(served.has(String(sc.obj.provisioner)), `StorageClass ${nameOf(sc)}: no workload runs provisioner ${String(sc.obj.provisioner)}`);
      const params = rec(sc.obj.parameters) as Record<string, string>;
      assert.doesNotThrow(() => parseClassParameters(params), `StorageClass ${nameOf(sc)}`);
    }
  });

  it('the DaemonSet serves node paths and the Deployment the shared path, from existing ConfigMap keys', () => {
    for (const w of ofKind('Deployment', 'DaemonSet')) {
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
});

describe('deploy/ manifests (embedded cluster)', () => {
  let cluster: TestCluster;
  let api: DiscoveringObjectApi;
  const unserved = new Set<string>();

  before(async () => {
    cluster = await startCluster();
    api = cluster.kubeConfig.makeApiClient(DiscoveringObjectApi);
  });
  after(async () => {
    await cluster?.stop();
  });

  it('applies every manifest of a served kind (namespaces first) and the server accepts it', async (t) => {
    const ordered = [...ofKind('Namespace'), ...resources.filter((m) => m.obj.kind !== 'Namespace')];
    let applied = 0;
    for (const m of ordered) {
      if (!(await api.serves(String(m.obj.apiVersion), String(m.obj.kind)))) {
        unserved.add(`${String(m.obj.apiVersion)}/${String(m.obj.kind)}`);
        continue;
      }
      const created = await api.create(m.obj as KubernetesObject);
      assert.equal(created.metadata?.name, nameOf(m), `${m.file}[${m.index}]`);
      const read = await api.read({ apiVersion: String(m.obj.apiVersion), kind: String(m.obj.kind), metadata: { name: nameOf(m), namespace: rec(m.obj.metadata).namespace as string | undefined } });
      assert.ok(read.metadata?.uid, `${m.file}[${m.index}]: no uid after create`);
      applied++;
    }
    // Namespace, ConfigMap and StorageClass are served by the embedded cluster today.
    assert.ok(applied >= 4, `only ${applied} manifests applied`);
    t.diagnostic(`applied ${applied} manifests; kinds the embedded cluster does not serve (checked locally): ${[...unserved].sort().join(', ') || 'none'}`);
  });

  it('StorageClasses read back with their binding mode and provisioner', async () => {
    for (const sc of ofKind('StorageClass')) {
      const read = (await api.read({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: nameOf(sc) } })) as KubernetesObject & {
        provisioner?: string;
        volumeBindingMode?: string;
      };
      assert.equal(read.provisioner, sc.obj.provisioner);
      assert.equal(read.volumeBindingMode, sc.obj.volumeBindingMode);
    }
  });

  it('the pod templates of the workloads are valid Pods for the server', async () => {
    for (const w of ofKind('Deployment', 'DaemonSet')) {
      const template = rec(rec(w.obj.spec).template);
      const pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { ...rec(template.metadata), name: `${nameOf(w)}-template-check`, namespace: String(rec(w.obj.metadata).namespace) },
        spec: template.spec,
      };
      const created = await api.create(pod as KubernetesObject);
      assert.equal(created.metadata?.name, pod.metadata.name);
      await api.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod.metadata.name, namespace: pod.metadata.namespace } });
    }
  });
});
