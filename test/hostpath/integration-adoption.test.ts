// Integration: PVs another provisioner created, served by kube-provisioner running under that provisioner's
// name. local-path PVs (hostPath DirectoryOrCreate or local, node affinity, paths with or without the PV name)
// under a configured node path; nfs-subdir-shaped hostPath PVs under the shared path. Each is deleted, archived
// or retained per its class, under the delete-identity rules: a PV whose directory holds another volume is
// refused with VolumeFailedDelete and nothing is touched. A PV with an nfs source and no matching export gets a
// message about the PV, not a pathPattern hint. Also: stable names reuse a free directory with an event.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig, DEFAULT_NODE } from '../../src/hostpath/config/hostpath-config.ts';
import { persistentVolumes } from '../../src/runtime/resources.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import {
  boundVolume,
  claim,
  createClaim,
  createClass,
  deleteClaim,
  exists,
  NS,
  startHostPathEnv,
  startInstance,
  storageClass,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

const LOCAL_PATH = 'rancher.io/local-path';
const NFS_SUBDIR = 'k8s-sigs.io/nfs-subdir-external-provisioner';

describe('hostpath integration: adopting local-path and nfs-subdir volumes', () => {
  let env: HostPathEnv;
  let nodes: string;
  let shared: string;
  let localPath: Instance;
  let nfsSubdir: Instance;

  before(async () => {
    env = await startHostPathEnv('kp-int-adopt-');
    nodes = path.join(env.tmp, 'opt', 'local-path-provisioner');
    shared = path.join(env.tmp, 'persistentvolumes');
    await fsp.mkdir(nodes, { recursive: true });
    await fsp.mkdir(shared, { recursive: true });
    // local-path's own config.json shape: nodePathMap with DEFAULT_PATH_FOR_NON_LISTED_NODES.
    const localConfig = validateHostPathConfig({ nodePathMap: [{ node: DEFAULT_NODE, paths: [nodes] }] });
    const sharedConfig = validateHostPathConfig({ sharedFileSystemPath: shared });
    localPath = startInstance(env, {
      provisionerName: LOCAL_PATH,
      config: localConfig,
      mode: 'daemonset',
      nodeName: env.localNode,
      identity: 'local-path',
    });
    nfsSubdir = startInstance(env, {
      provisionerName: NFS_SUBDIR,
      config: sharedConfig,
      mode: 'deployment',
      nodeName: env.localNode,
      identity: 'nfs-subdir',
    });
    await createClass(env, storageClass('local-path', LOCAL_PATH, { volumeBindingMode: 'WaitForFirstConsumer' }));
    await createClass(env, storageClass('nfs-archive', NFS_SUBDIR, { parameters: { archiveOnDelete: 'true' } }));
    await createClass(env, storageClass('nfs-retain', NFS_SUBDIR, { parameters: { onDelete: 'retain' } }));
    await createClass(
      env,
      storageClass('nfs-stable', NFS_SUBDIR, {
        parameters: { pathPattern: '${.PVC.namespace}/${.PVC.annotations.nfs.io/storage-path}' },
      }),
    );
  });

  after(async () => {
    await localPath?.stop();
    await nfsSubdir?.stop();
    await env?.stop();
  });

  /** A PV as the other provisioner wrote it, pre-bound to a new claim of the same name; returns once Bound. */
  async function existingVolume(
    name: string,
    o: { provisioner: string; className: string; source: PersistentVolume['spec']; dir: string },
  ): Promise<void> {
    await fsp.mkdir(o.dir, { recursive: true });
    await fsp.writeFile(path.join(o.dir, 'data'), `${name}'s data`);
    const pv: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: `pvc-adopted-${name}`, annotations: { 'pv.kubernetes.io/provisioned-by': o.provisioner } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: o.className,
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: NS, name },
        ...o.source,
      },
    };
    await env.client.create(persistentVolumes, pv);
    // Pre-bound both ways, so the provisioner never makes a new volume for the claim.
    await createClaim(env, claim(name, o.className, { spec: { volumeName: `pvc-adopted-${name}` } }));
    await boundVolume(env, name);
  }

  const localSource = (dir: string, local = false): PersistentVolume['spec'] => ({
    ...(local ? { local: { path: dir } } : { hostPath: { path: dir, type: 'DirectoryOrCreate' } }),
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [env.localNode] }] },
        ],
      },
    },
  });

  it('local-path PVs with and without the PV name in their path are deleted when their claim goes', async () => {
    const named = path.join(nodes, `pvc-adopted-lp-named_${NS}_lp-named`);
    const stable = path.join(nodes, NS, 'lp-stable');
    await existingVolume('lp-named', {
      provisioner: LOCAL_PATH,
      className: 'local-path',
      source: localSource(named),
      dir: named,
    });
    await existingVolume('lp-stable', {
      provisioner: LOCAL_PATH,
      className: 'local-path',
      source: localSource(stable, true),
      dir: stable,
    });
    await deleteClaim(env, 'lp-named');
    await deleteClaim(env, 'lp-stable');
    await waitFor(
      'both adopted PVs deleted',
      () => !env.volume('pvc-adopted-lp-named') && !env.volume('pvc-adopted-lp-stable'),
    );
    assert.equal(await exists(named), false);
    assert.equal(await exists(stable), false);
    assert.equal(await exists(path.join(nodes, NS)), true, 'only the volume directory goes, not its parent');
  });

  it('nfs-subdir-shaped PVs follow their class: archiveOnDelete archives, onDelete retain keeps', async () => {
    const archived = path.join(shared, `${NS}-nfs-archive-pvc-adopted-nfs-archive`);
    const kept = path.join(shared, NS, 'kept');
    await existingVolume('nfs-archive', {
      provisioner: NFS_SUBDIR,
      className: 'nfs-archive',
      source: { hostPath: { path: archived } },
      dir: archived,
    });
    await existingVolume('nfs-retain', {
      provisioner: NFS_SUBDIR,
      className: 'nfs-retain',
      source: { hostPath: { path: kept } },
      dir: kept,
    });
    await deleteClaim(env, 'nfs-archive');
    await deleteClaim(env, 'nfs-retain');
    await waitFor(
      'both adopted PVs deleted',
      () => !env.volume('pvc-adopted-nfs-archive') && !env.volume('pvc-adopted-nfs-retain'),
    );
    assert.equal(await exists(archived), false, 'the archived directory was moved away');
    const names = await fsp.readdir(shared);
    const archive = names.find((n) => n.startsWith('archived-'));
    assert.ok(archive, `an archived-* directory in ${names.join(', ')}`);
    assert.equal(await fsp.readFile(path.join(shared, archive, 'data'), 'utf8'), "nfs-archive's data");
    assert.equal(await fsp.readFile(path.join(kept, 'data'), 'utf8'), "nfs-retain's data");
  });

  it('an adopted PV whose directory holds another live volume is refused, with nothing touched', async () => {
    const inner = path.join(shared, 'team', 'inner');
    await existingVolume('adopted-inner', {
      provisioner: NFS_SUBDIR,
      className: 'nfs-archive',
      source: { hostPath: { path: inner } },
      dir: inner,
    });
    await existingVolume('adopted-outer', {
      provisioner: NFS_SUBDIR,
      className: 'nfs-archive',
      source: { hostPath: { path: path.join(shared, 'team') } },
      dir: path.join(shared, 'team'),
    });
    await deleteClaim(env, 'adopted-outer');
    const ev = await waitFor('VolumeFailedDelete', () =>
      env.events('pvc-adopted-adopted-outer').find((e) => e.reason === 'VolumeFailedDelete'),
    );
    assert.match(ev.message ?? '', /contains the directory of another volume/);
    assert.equal(await fsp.readFile(path.join(inner, 'data'), 'utf8'), "adopted-inner's data");
    assert.ok(env.volume('pvc-adopted-adopted-outer'), 'the PV stays for the admin to look at');
  });

  it('an nfs PV with no configured export says so, not a pathPattern hint', async () => {
    await env.client.create(persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-adopted-nfs-source', annotations: { 'pv.kubernetes.io/provisioned-by': NFS_SUBDIR } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteMany'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'nfs-archive',
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: NS, name: 'nfs-source' },
        nfs: { server: 'nfs.example', path: '/export/default-nfs-source' },
      },
    } as PersistentVolume);
    await createClaim(env, claim('nfs-source', 'nfs-archive', { spec: { volumeName: 'pvc-adopted-nfs-source' } }));
    await boundVolume(env, 'nfs-source');
    await deleteClaim(env, 'nfs-source');
    const ev = await waitFor('VolumeFailedDelete', () =>
      env.events('pvc-adopted-nfs-source').find((e) => e.reason === 'VolumeFailedDelete'),
    );
    assert.match(ev.message ?? '', /is an nfs volume \(nfs\.example:\/export\/default-nfs-source\)/);
    assert.doesNotMatch(ev.message ?? '', /pathPattern|PV\.name/);
  });

  it('stable names (nfs-subdir storage-path annotation): a free existing directory is reused, and the event says so', async () => {
    const dir = path.join(shared, NS, 'app-data');
    await fsp.mkdir(dir, { recursive: true });
    await fsp.writeFile(path.join(dir, 'data'), 'from the last install');
    await createClaim(env, claim('stable', 'nfs-stable', { annotations: { 'nfs.io/storage-path': 'app-data' } }));
    const pv = await boundVolume(env, 'stable');
    assert.equal(pv.spec.hostPath?.path, dir);
    assert.equal(await fsp.readFile(path.join(dir, 'data'), 'utf8'), 'from the last install');
    const ev = await waitFor('VolumeDirectoryReused', () =>
      env.events('stable').find((e) => e.reason === 'VolumeDirectoryReused'),
    );
    assert.equal(ev.type, 'Normal');
    // A second claim for the same directory is refused while the first volume lives, naming it.
    await createClaim(env, claim('stable-2', 'nfs-stable', { annotations: { 'nfs.io/storage-path': 'app-data' } }));
    const refused = await waitFor('ProvisioningFailed', () =>
      env.events('stable-2').find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.match(refused.message ?? '', new RegExp(`already the path of volume ${pv.metadata.name}`));
  });
});
