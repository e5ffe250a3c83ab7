// Delete identity: delete/archive touch a directory only when the provisioner can prove it is exactly that PV's
// (its provision-time record names the PV, its claim uid and this path; or, with no record, the path is a leaf:
// no base path, no other volume's directory at, above or below it). Forged Released PVs named like substrings
// of other volumes' directories, like their parents or like namespaces must be refused with nothing touched.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { VolumeIdentityError } from '../../src/hostpath/delete/delete-identity.ts';
import { ANN_HOSTPATH_BASE_PATH, ANN_HOSTPATH_ON_DELETE } from '../../src/hostpath/volume/volume-spec.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await tempTree('kp-identity-');
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

/** A Released, Delete-policy PV as a forger (or an older provisioner) would write it. */
function forged(
  name: string,
  p: string,
  o: { base?: string; onDelete?: string; claimUid?: string } = {},
): PersistentVolume {
  const annotations: Record<string, string> = { 'pv.kubernetes.io/provisioned-by': 'kube-provisioner.io/hostpath' };
  if (o.base) annotations[ANN_HOSTPATH_BASE_PATH] = o.base;
  if (o.onDelete) annotations[ANN_HOSTPATH_ON_DELETE] = o.onDelete;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
      hostPath: { path: p },
      claimRef: {
        namespace: 'default',
        name: `ghost-${name}`,
        uid: o.claimUid ?? '00000000-dead-beef-0000-000000000000',
      },
    },
    status: { phase: 'Released' },
  };
}

async function env(name: string, knownExtra: () => PersistentVolume[] = () => []) {
  const root = path.join(tmp, name);
  await fsp.mkdir(root);
  const live: PersistentVolume[] = [];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => [...live, ...knownExtra()],
    knownVolumesRefreshMs: 0,
  });
  const provision = async (claimName: string, namespace: string, params?: Record<string, string>) => {
    const o = provisionOptions(claim({ name: claimName, namespace }), storageClass('s', params));
    const { volume } = await p.provision(o, signal());
    volume.spec.claimRef = { namespace, name: claimName, uid: o.claim.metadata.uid };
    await fsp.writeFile(path.join(volume.spec.hostPath!.path, 'data'), `${claimName}'s data`);
    live.push(volume);
    return volume;
  };
  return { root, p, live, provision };
}

const refused = (e: unknown) => e instanceof VolumeIdentityError;

test('PV "bob" (a substring of another volume\'s directory) is refused; bob\'s data stays', async () => {
  const { root, p, provision } = await env('bob');
  const bob = await provision('bob', 'default');
  const before = await snapshot(root);
  await assert.rejects(p.delete(forged('bob', bob.spec.hostPath!.path), signal()), refused);
  await assert.rejects(
    p.delete(forged('bob', bob.spec.hostPath!.path, { base: root, onDelete: 'archive' }), signal()),
    refused,
  );
  assert.deepEqual(await snapshot(root), before);
});

test('PV "sub" (the parent of volumes) and PV "default" (a namespace directory with a Bound volume inside) are refused', async () => {
  const { root, p, provision } = await env('parents');
  await provision('a', 'team', { pathPattern: 'sub/${.PV.name}' });
  await provision('b', 'default', { pathPattern: 'shared/${.PVC.namespace}/${.PV.name}' });
  const before = await snapshot(root);
  for (const pv of [
    forged('sub', `${root}/sub`),
    forged('sub', `${root}/sub`, { base: root, onDelete: 'archive' }),
    forged('default', `${root}/shared/default`),
    forged('shared', `${root}/shared`, { base: root }),
  ]) {
    await assert.rejects(p.delete(pv, signal()), refused, pv.spec.hostPath!.path);
  }
  assert.deepEqual(await snapshot(root), before);
});

test('a namespace-named PV with onDelete archive never renames the namespace directory', async () => {
  const { root, p, provision } = await env('ns-archive');
  await provision('db', 'shop', { pathPattern: '${.PVC.namespace}/${.PVC.name}' });
  const before = await snapshot(root);
  await assert.rejects(
    p.delete(forged('shop', `${root}/shop`, { base: root, onDelete: 'archive' }), signal()),
    refused,
  );
  assert.deepEqual(await snapshot(root), before);
});

test('a PV whose name has a record is deleted only at the recorded path; another name at that path is refused', async () => {
  const { root, p, provision } = await env('records');
  const a = await provision('a', 'default', { pathPattern: '${.PVC.namespace}/${.PVC.name}' });
  await fsp.mkdir(`${root}/elsewhere`);
  const before = await snapshot(root);
  const moved = structuredClone(a);
  moved.spec.hostPath!.path = `${root}/elsewhere`;
  await assert.rejects(
    p.delete(moved, signal()),
    (e: unknown) => refused(e) && (e as VolumeIdentityError).rule === 'record-mismatch',
  );
  await assert.rejects(p.delete(forged('impostor', a.spec.hostPath!.path, { base: root }), signal()), refused);
  // Same name and path, another claim: a PV re-created under that name is not the volume the record describes.
  await assert.rejects(
    p.delete(forged(a.metadata.name ?? '', a.spec.hostPath!.path, { base: root }), signal()),
    (e: unknown) => refused(e) && (e as VolumeIdentityError).rule === 'record-mismatch',
  );
  assert.deepEqual(await snapshot(root), before);
  await p.delete(a, signal());
  assert.equal(await fsp.lstat(a.spec.hostPath!.path).catch(() => undefined), undefined);
});

test('volumes with no record: a leaf is deleted; a directory holding a volume is not, and neither is its inside', async () => {
  const { root, p, provision } = await env('no-record');
  // An older (or adopted) volume: a directory and a PV, no record.
  await fsp.mkdir(`${root}/legacy/old`, { recursive: true });
  await fsp.writeFile(`${root}/legacy/old/file`, 'old data');
  const inner = await provision('inner', 'default', { pathPattern: 'outer/${.PV.name}' });
  const before = await snapshot(root);
  await assert.rejects(p.delete(forged('outer-pv', `${root}/outer`), signal()), refused);
  await assert.rejects(p.delete(forged('inside', `${inner.spec.hostPath!.path}/deeper`), signal()), refused);
  assert.deepEqual(await snapshot(root), before);
  await p.delete(forged('old', `${root}/legacy/old`), signal());
  // No onDelete annotation and no class to ask, under a shared path: the shared path's default, archive
  // (nfs-subdir's), so the leaf is renamed in place with its data, and nothing else moves.
  const expected = [
    ...before.filter((e) => !e.startsWith('.kube-provisioner') && !e.startsWith('legacy/old')),
    'legacy/archived-old',
    'legacy/archived-old/file',
  ].sort();
  assert.deepEqual((await snapshot(root)).filter((e) => !e.startsWith('.kube-provisioner')).sort(), expected);
});

test("no record, and the directory is another live PV's (API only, no record): refused", async () => {
  const extra: PersistentVolume[] = [];
  const { root, p } = await env('api-only', () => extra);
  await fsp.mkdir(`${root}/team/app`, { recursive: true });
  const owner = forged('owner', `${root}/team/app`);
  owner.status = { phase: 'Bound' };
  extra.push(owner);
  await assert.rejects(p.delete(forged('team', `${root}/team`), signal()), refused);
  await assert.rejects(p.delete(forged('app', `${root}/team/app`), signal()), refused);
  assert.ok((await fsp.lstat(`${root}/team/app`)).isDirectory());
});

test("pattern without the PV name: a live volume's directory is refused naming it; a free existing directory is reused", async () => {
  const { root, p, provision, live } = await env('collide');
  const pattern = { pathPattern: '${.PVC.namespace}/${.PVC.name}', onDelete: 'retain' };
  const first = await provision('data', 'app', pattern);
  const o = provisionOptions(claim({ name: 'data', namespace: 'app' }), storageClass('s', pattern));
  await assert.rejects(
    p.provision(o, signal()),
    (e: unknown) => e instanceof Error && e.message.includes(first.metadata.name ?? '?'),
  );
  // The first volume goes (retain keeps the directory); the same claim name gets the same directory back.
  await p.delete(first, signal());
  live.splice(0, live.length);
  const { volume } = await p.provision(o, signal());
  assert.equal(volume.spec.hostPath!.path, `${root}/app/data`);
  assert.equal(await fsp.readFile(`${root}/app/data/data`, 'utf8'), "data's data");
  // Ancestors and descendants of a live volume's directory are refused.
  live.push(volume);
  const up = provisionOptions(
    claim({ name: 'x', namespace: 'app' }),
    storageClass('s', { pathPattern: '${.PVC.namespace}' }),
  );
  await assert.rejects(p.provision(up, signal()), /contains the directory of another volume/);
  const down = provisionOptions(
    claim({ name: 'data', namespace: 'app' }),
    storageClass('s', { pathPattern: '${.PVC.namespace}/${.PVC.name}/${.PV.name}' }),
  );
  await assert.rejects(p.provision(down, signal()), /inside the directory of volume/);
});

test('adopted nfs-subdir PVs (nfs source, no annotations of ours) map through the export and pass the same identity rules', async () => {
  const root = path.join(tmp, 'nfs-adopted');
  await fsp.mkdir(root);
  const exportPath = '/exports/k8s';
  const live: PersistentVolume[] = [];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    nfs: { server: '10.0.0.5', path: exportPath },
    knownVolumes: () => live,
    knownVolumesRefreshMs: 0,
  });
  const o = provisionOptions(
    claim({ name: 'app', namespace: 'default' }),
    storageClass('s', { pathPattern: 'outer/${.PV.name}' }),
  );
  const { volume } = await p.provision(o, signal());
  volume.spec.claimRef = { namespace: 'default', name: 'app', uid: o.claim.metadata.uid };
  live.push(volume);
  const livePath = path.join(root, 'outer', o.pvName);
  assert.deepEqual(
    volume.spec.nfs,
    { server: '10.0.0.5', path: `${exportPath}/outer/${o.pvName}` },
    'published as nfs',
  );
  await fsp.mkdir(path.join(root, 'default-old-pvc-1', 'x'), { recursive: true });
  const nfsPv = (name: string, nfsPath: string): PersistentVolume => {
    const pv = forged(name, '/unused');
    delete pv.spec.hostPath;
    pv.metadata.annotations = { 'pv.kubernetes.io/provisioned-by': 'k8s-sigs.io/nfs-subdir-external-provisioner' };
    pv.spec.nfs = { server: '10.0.0.5', path: nfsPath };
    return pv;
  };
  const before = await snapshot(root);
  // Mapped to the live volume's directory, to its parent, or to the export root: refused, nothing touched.
  await assert.rejects(p.delete(nfsPv('impostor', `${exportPath}/outer/${o.pvName}`), signal()), refused);
  await assert.rejects(p.delete(nfsPv('parent', `${exportPath}/outer`), signal()));
  await assert.rejects(p.delete(nfsPv('root', exportPath), signal()));
  assert.deepEqual(await snapshot(root), before);
  assert.ok((await fsp.lstat(livePath)).isDirectory());
  // A leaf no volume uses: nfs-subdir's default applies (archive), the data is kept beside it.
  await p.delete(nfsPv('old', `${exportPath}/default-old-pvc-1`), signal());
  assert.ok((await fsp.lstat(path.join(root, 'archived-default-old-pvc-1', 'x'))).isDirectory());
  await assert.rejects(fsp.lstat(path.join(root, 'default-old-pvc-1')), { code: 'ENOENT' });
});
