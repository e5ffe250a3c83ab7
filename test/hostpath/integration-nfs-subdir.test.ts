// Integration: StorageClasses, claims and configuration written the way nfs-subdir-external-provisioner users
// write them (its README's class parameters, its provisioner name, NFS_SERVER/NFS_PATH), served by a
// deployment-mode instance on a real temp directory standing for the mounted export. Covers the onDelete
// semantics (default archive on a shared path, archiveOnDelete parsed like Go's strconv.ParseBool, onDelete
// wins), the archive name `archived-<directory>`, and NFS-published PVs with the class's mountOptions.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { localPathOfNfsSource } from '../../src/hostpath/volume/volume-source.ts';
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
  volumePath,
  waitFor,
  type HostPathEnv,
  type Instance,
} from './integration-helpers.ts';

// nfs-subdir's default provisioner name (its deploy/class.yaml).
const NFS_SUBDIR = 'k8s-sigs.io/nfs-subdir-external-provisioner';
// archiveOnDelete spellings users write, and whether strconv.ParseBool reads them as true.
const BOOLS = [
  ['false', false],
  ['False', false],
  ['0', false],
  ['1', true],
  ['True', true],
  ['t', true],
] as const;
const boolClass = (value: string) => `archive-${value.toLowerCase()}${value === value.toLowerCase() ? '' : '-upper'}`;

describe('hostpath integration: nfs-subdir-external-provisioner classes', () => {
  let env: HostPathEnv;
  let exportDir: string;
  let instance: Instance;

  before(async () => {
    env = await startHostPathEnv('kp-int-nfs-');
    exportDir = path.join(env.tmp, 'persistentvolumes');
    await fsp.mkdir(exportDir);
    // The export mounted at exportDir; PVs name the server and the export path, as nfs-subdir's do.
    const config = validateHostPathConfig({
      sharedFileSystemPath: exportDir,
      nfs: { server: '10.0.0.5', path: '/exports/k8s' },
    });
    instance = startInstance(env, { provisionerName: NFS_SUBDIR, config, mode: 'deployment', nodeName: env.localNode });
    const cls = (name: string, parameters?: Record<string, string>, extra = {}) =>
      createClass(env, storageClass(name, NFS_SUBDIR, { ...(parameters ? { parameters } : {}), ...extra }));
    await cls('nfs-client');
    for (const [value] of BOOLS) await cls(boolClass(value), { archiveOnDelete: value });
    await cls('archive-yes', { archiveOnDelete: 'yes' });
    await cls('ondelete-retain', { onDelete: 'retain', archiveOnDelete: 'false' });
    await cls('ondelete-delete', { onDelete: 'delete', archiveOnDelete: 'true' });
    await cls('mount-options', undefined, { mountOptions: ['nfsvers=4.1', 'hard'] });
  });

  after(async () => {
    await instance?.stop();
    await env?.stop();
  });

  /** A Bound claim of `className` whose directory holds a file `data`; returns the PV. */
  async function withData(name: string, className: string): Promise<PersistentVolume> {
    await createClaim(env, claim(name, className, { spec: { accessModes: ['ReadWriteMany'] } }));
    const pv = await boundVolume(env, name);
    const dir = localDir(pv);
    await fsp.writeFile(path.join(dir, 'data'), name);
    return pv;
  }

  function localDir(pv: PersistentVolume): string {
    const dir = pv.spec.nfs
      ? localPathOfNfsSource(pv.spec.nfs, { server: '10.0.0.5', path: '/exports/k8s', mountPath: exportDir })
      : volumePath(pv);
    assert.ok(dir, `PV ${pv.metadata.name} maps to a local directory`);
    return dir;
  }

  async function released(name: string, pv: PersistentVolume): Promise<void> {
    await deleteClaim(env, name);
    await waitFor(`PV ${pv.metadata.name} deleted`, () => !env.volume(pv.metadata.name ?? ''));
  }

  it('a class with no parameters archives (nfs-subdir default): archived-<directory name> beside it, data kept', async () => {
    const pv = await withData('default-class', 'nfs-client');
    const dir = localDir(pv);
    assert.equal(
      dir,
      path.join(exportDir, `${NS}-default-class-${pv.metadata.name}`),
      "nfs-subdir's directory name <namespace>-<claim>-<pv>",
    );
    assert.equal(pv.spec.nfs?.path, `/exports/k8s/${NS}-default-class-${pv.metadata.name}`);
    await released('default-class', pv);
    assert.equal(await exists(dir), false);
    const archived = path.join(path.dirname(dir), `archived-${path.basename(dir)}`);
    assert.equal(
      await fsp.readFile(path.join(archived, 'data'), 'utf8'),
      'default-class',
      'archived under its own name, no suffix',
    );
  });

  for (const [value, archives] of BOOLS) {
    it(`archiveOnDelete "${value}": ${archives ? 'archived' : 'deleted'} (strconv.ParseBool)`, async () => {
      const name = `${boolClass(value)}-claim`;
      const pv = await withData(name, boolClass(value));
      const dir = localDir(pv);
      await released(name, pv);
      assert.equal(await exists(dir), false);
      assert.equal(await exists(path.join(path.dirname(dir), `archived-${path.basename(dir)}`)), archives);
    });
  }

  it('archiveOnDelete "yes": nothing is created, a Warning event on the claim names the parameter', async () => {
    await createClaim(env, claim('bad-bool', 'archive-yes'));
    const ev = await waitFor('Warning event', () =>
      env.events('bad-bool').find((e) => e.type === 'Warning' && /archiveOnDelete/.test(e.message ?? '')),
    );
    assert.match(ev.message ?? '', /"yes"/);
    assert.equal(env.claim('bad-bool')?.status?.phase, 'Pending');
    assert.ok(!env.volumes().some((v) => v.spec.claimRef?.name === 'bad-bool'));
    await deleteClaim(env, 'bad-bool');
  });

  it('onDelete wins over archiveOnDelete: retain keeps, delete removes', async () => {
    const kept = await withData('kept', 'ondelete-retain');
    await released('kept', kept);
    assert.equal(await fsp.readFile(path.join(localDir(kept), 'data'), 'utf8'), 'kept');
    const gone = await withData('gone', 'ondelete-delete');
    await released('gone', gone);
    assert.equal(await exists(localDir(gone)), false);
    assert.equal(await exists(path.join(exportDir, `archived-${path.basename(localDir(gone))}`)), false);
  });

  it('a PV nfs-subdir created (no annotations of ours) is archived, never deleted, when released', async () => {
    const dirName = `${NS}-old-claim-pvc-0123abcd`;
    await fsp.mkdir(path.join(exportDir, dirName));
    await fsp.writeFile(path.join(exportDir, dirName, 'data'), 'from nfs-subdir');
    // As nfs-subdir writes it: nfs source, the class's reclaim policy, the library's provisioned-by annotation.
    const old: PersistentVolume = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pvc-0123abcd', annotations: { 'pv.kubernetes.io/provisioned-by': NFS_SUBDIR } },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteMany'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'nfs-client',
        nfs: { server: '10.0.0.5', path: `/exports/k8s/${dirName}` },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: NS,
          name: 'old-claim',
          uid: '0123abcd-0000-0000-0000-000000000000',
        },
      },
    };
    await env.client.create(persistentVolumes, old);
    await waitFor('the released PV deleted', () => !env.volume('pvc-0123abcd'));
    assert.equal(await exists(path.join(exportDir, dirName)), false);
    assert.equal(await fsp.readFile(path.join(exportDir, `archived-${dirName}`, 'data'), 'utf8'), 'from nfs-subdir');
  });

  it('PVs are published as nfs: {server, <export path>/<dir>} with the class mountOptions', async () => {
    const pv = await withData('published', 'mount-options');
    assert.equal(pv.spec.hostPath, undefined);
    assert.equal(pv.spec.local, undefined);
    const dir = volumePath({ ...pv, spec: { ...pv.spec, hostPath: { path: localDir(pv) } } });
    assert.deepEqual(pv.spec.nfs, { server: '10.0.0.5', path: `/exports/k8s/${path.relative(exportDir, dir)}` });
    assert.deepEqual(pv.spec.mountOptions, ['nfsvers=4.1', 'hard']);
    assert.equal(pv.spec.nodeAffinity, undefined);
    await released('published', pv);
    assert.ok(
      await exists(path.join(exportDir, `archived-${path.basename(dir)}`)),
      'default archive applies to nfs PVs too',
    );
  });
});
