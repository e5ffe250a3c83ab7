// One directory, one identity: a live PV names its directory in whatever spelling it was written with (`BASE//x`,
// `BASE/./x`, `BASE/x/`, an nfs source with a trailing slash, a doubled slash, a server in capitals or with a
// trailing dot, a symlinked or bind-mounted path). Every one of them must block that directory, its inside and its
// parents, for placement, reuse and the leaf proof; a source that cannot be mapped to exactly one directory blocks
// everything it could mean. Rendered patterns with a trailing `/` are local-path's and are accepted.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { VolumeIdentityError } from '../../src/hostpath/delete/delete-identity.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { nodeHostFs, type HostFs } from '../../src/hostpath/disk/host-fs.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-spelling-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const STABLE = storageClass('stable', { pathPattern: '${.PVC.annotations.nfs.io/storage-path}', onDelete: 'delete' });

/** A Bound static (or adopted) PV: no annotations of ours, no record. */
function livePv(name: string, source: Pick<PersistentVolume['spec'], 'hostPath' | 'nfs' | 'local'>): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Retain',
      ...source,
      claimRef: { namespace: 'owner', name, uid: `uid-owner-${name}` },
    },
    status: { phase: 'Bound' },
  };
}

/** A tenant's Released PV at `dir` (no record: the leaf proof decides). */
function releasedPv(name: string, source: Pick<PersistentVolume['spec'], 'hostPath' | 'nfs'>): PersistentVolume {
  return {
    ...livePv(name, source),
    spec: {
      ...livePv(name, source).spec,
      persistentVolumeReclaimPolicy: 'Delete',
      claimRef: { namespace: 'tenant', name, uid: `uid-tenant-${name}` },
    },
    status: { phase: 'Released' },
  };
}

const tenantClaim = (name: string, storagePath: string) =>
  provisionOptions(
    claim({ name, namespace: 'tenant', modes: ['ReadWriteMany'], annotations: { 'nfs.io/storage-path': storagePath } }),
    STABLE,
  );

async function ownerData(root: string, rel: string): Promise<void> {
  await fsp.mkdir(path.join(root, rel), { recursive: true });
  await fsp.writeFile(path.join(root, rel, 'owner-data'), 'not yours');
}

const refusedNaming = (pv: string) => (e: unknown) => e instanceof InfeasibleError && e.message.includes(pv);
const identityRefused = (e: unknown) => e instanceof VolumeIdentityError;

test('static hostPath PVs spelled BASE//victim, BASE/./victim2, BASE/victim3/ block their directory, its inside and the leaf proof', async () => {
  const root = path.join(tmp, 'static');
  for (const d of ['victim', 'victim2', 'victim3', 'victim4', 'victim5']) await ownerData(root, d);
  const live = [
    livePv('owner1', { hostPath: { path: `${root}//victim` } }),
    livePv('owner2', { hostPath: { path: `${root}/./victim2` } }),
    livePv('owner3', { local: { path: `${root}/victim3/` } }),
    // Red team variants: "/." at the end, several slashes on both sides.
    livePv('owner4', { hostPath: { path: `${root}/victim4/.` } }),
    livePv('owner5', { local: { path: `${root}///victim5///` } }),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('steal1', 'victim'), signal()), refusedNaming('owner1'));
  await assert.rejects(p.provision(tenantClaim('steal2', 'victim2'), signal()), refusedNaming('owner2'));
  await assert.rejects(p.provision(tenantClaim('inside3', 'victim3/sub'), signal()), refusedNaming('owner3'));
  await assert.rejects(p.provision(tenantClaim('steal4', 'victim4'), signal()), refusedNaming('owner4'));
  await assert.rejects(p.provision(tenantClaim('inside5', 'victim5/sub'), signal()), refusedNaming('owner5'));
  // A tenant's released PV (no record) naming the same directory: the leaf proof sees the live owner.
  await assert.rejects(
    p.delete(releasedPv('tenant1', { hostPath: { path: `${root}/victim` } }), signal()),
    identityRefused,
  );
  await assert.rejects(p.delete(releasedPv('tenant3', { hostPath: { path: `${root}/victim3/sub/..//` } }), signal()));
  assert.deepEqual(await snapshot(root), before, 'nothing created, nothing deleted');
});

test('adopted nfs PVs spelled /export/a1/, /export//a2, server nfs.example. or NFS.Example block their directory', async () => {
  const root = path.join(tmp, 'nfs');
  for (const d of ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']) await ownerData(root, d);
  const nfs = (p: string, server = 'nfs.example') => ({ nfs: { server, path: p } });
  const live = [
    livePv('nfs1', nfs('/export/a1/')),
    livePv('nfs2', nfs('/export//a2')),
    livePv('nfs3', nfs('/export/a3', 'nfs.example.')),
    livePv('nfs4', nfs('/export/./a4', 'NFS.Example')),
    // Red team variants: a doubled leading slash, several trailing ones, "/." at the end.
    livePv('nfs5', nfs('//export//a5//')),
    livePv('nfs6', nfs('/export/./a6/.', 'NFS.EXAMPLE.')),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root, nfs: { server: 'nfs.example', path: '/export' } }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  for (const [i, pv] of live.entries()) {
    await assert.rejects(
      p.provision(tenantClaim(`steal-${i}`, `a${i + 1}`), signal()),
      refusedNaming(pv.metadata.name ?? '?'),
    );
    await assert.rejects(
      p.provision(tenantClaim(`inside-${i}`, `a${i + 1}/sub`), signal()),
      refusedNaming(pv.metadata.name ?? '?'),
    );
  }
  await assert.rejects(p.delete(releasedPv('tenant-nfs', nfs('/export/a1')), signal()), identityRefused);
  assert.deepEqual(await snapshot(root), before);
});

test('a live PV whose source cannot be mapped to exactly one directory blocks placement, reuse and the leaf proof under its root', async () => {
  const root = path.join(tmp, 'unmappable');
  await ownerData(root, 'b/data');
  await fsp.mkdir(path.join(root, 'free'));
  const live = [livePv('dotdot', { nfs: { server: 'nfs.example', path: '/export/x/../b' } })];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root, nfs: { server: 'nfs.example', path: '/export' } }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('under-b', 'b'), signal()), refusedNaming('dotdot'));
  await assert.rejects(p.provision(tenantClaim('reuse-free', 'free'), signal()), refusedNaming('dotdot'));
  await assert.rejects(p.delete(releasedPv('leaf', { hostPath: { path: `${root}/free` } }), signal()), identityRefused);
  // A Released PV whose own source holds ".." is never mapped to a directory to delete.
  for (const [i, dotted] of ['/export/./b/..', '/export/free/../b', '/export/..'].entries())
    await assert.rejects(
      p.delete(releasedPv(`dotted${i}`, { nfs: { server: 'nfs.example', path: dotted } }), signal()),
      /cannot be mapped to exactly one directory/,
    );
  assert.deepEqual(await snapshot(root), before);
  // Once that PV is gone, the same claims go through.
  live.length = 0;
  p.rebuildFromVolumes([]);
  const { volume } = await p.provision(tenantClaim('reuse-free', 'free'), signal());
  assert.equal(volume.spec.nfs?.path, '/export/free');
});

test('the same directory through a symlinked path or a bind of the base: same device and inode, blocked', async () => {
  const root = path.join(tmp, 'inode');
  await ownerData(root, 'victim');
  const link = path.join(tmp, 'inode-link');
  await fsp.symlink(root, link);
  const live = [livePv('via-link', { hostPath: { path: `${link}/victim` } })];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('steal', 'victim'), signal()), refusedNaming('via-link'));
  await assert.rejects(p.provision(tenantClaim('inside', 'victim/sub'), signal()), refusedNaming('via-link'));
  await assert.rejects(
    p.delete(releasedPv('tenant', { hostPath: { path: `${root}/victim` } }), signal()),
    identityRefused,
  );
  assert.deepEqual(await snapshot(root), before);
});

test('a live PV spelled through a symlink outside the roots and "..": what the disk resolves it to is blocked', async () => {
  const root = path.join(tmp, 'dotdot-link');
  await ownerData(root, 'victim');
  await fsp.mkdir(path.join(root, 'sub'));
  // Outside every root, lexically: `<tmp>/dotdot-out/../victim` would be `<tmp>/victim`; the kernel resolves the
  // symlink first, then "..": `<root>/sub/..` is `<root>`, so the PV's directory is `<root>/victim`.
  const link = path.join(tmp, 'dotdot-out');
  await fsp.symlink(path.join(root, 'sub'), link);
  const live = [livePv('dotdot-link', { hostPath: { path: `${link}/../victim` } })];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('steal', 'victim'), signal()), refusedNaming('dotdot-link'));
  await assert.rejects(p.provision(tenantClaim('inside', 'victim/sub'), signal()), refusedNaming('dotdot-link'));
  await assert.rejects(
    p.delete(releasedPv('tenant', { hostPath: { path: `${root}/victim` } }), signal()),
    identityRefused,
  );
  assert.deepEqual(await snapshot(root), before);
});

test('local-path\'s custom-path-pattern class ("{{ .PVC.Namespace }}/{{ .PVC.Name }}/", trailing slash) provisions <ns>/<claim>', async () => {
  const root = path.join(tmp, 'trailing');
  await fsp.mkdir(root);
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
  const sc = storageClass('local-path-custom-path-pattern', { pathPattern: '{{ .PVC.Namespace }}/{{ .PVC.Name }}/' });
  const o = provisionOptions(claim({ name: 'local-path-pvc', namespace: 'default', modes: ['ReadWriteOnce'] }), sc);
  const { volume } = await p.provision(o, signal());
  assert.equal(volume.spec.hostPath?.path, `${root}/default/local-path-pvc`);
  assert.ok((await fsp.lstat(`${root}/default/local-path-pvc`)).isDirectory());
  // Any number of trailing slashes, as filepath.Join cleans them (a missing value is refused by the renderer, so
  // they cannot stand for one): the same directory.
  const twice = storageClass('twice', { pathPattern: '{{ .PVC.Namespace }}/{{ .PVC.Name }}//' });
  const again = await p.provision(provisionOptions(claim({ name: 'x', namespace: 'default' }), twice), signal());
  assert.equal(again.volume.spec.hostPath?.path, `${root}/default/x`);
  // One inside is still an empty segment, refused.
  const inside = storageClass('inside', { pathPattern: '{{ .PVC.Namespace }}//{{ .PVC.Name }}' });
  await assert.rejects(
    p.provision(provisionOptions(claim({ name: 'y', namespace: 'default' }), inside), signal()),
    /empty segment/,
  );
});

test('a live PV spelled through a symlink whose directory does not exist yet (DirectoryOrCreate) blocks where it will be created', async () => {
  const root = path.join(tmp, 'not-yet');
  await fsp.mkdir(path.join(root, 'victim'), { recursive: true });
  // Outside the root, a symlink to it; inside the root, a symlink to another directory. Neither PV's directory
  // exists: kubelet creates it (through the symlink) when the owner's pod starts.
  const out = path.join(tmp, 'not-yet-out');
  await fsp.symlink(root, out);
  await fsp.symlink(path.join(root, 'victim'), path.join(root, 'link'));
  const live = [
    livePv('via-outside-link', { hostPath: { path: `${out}/newdir`, type: 'DirectoryOrCreate' } }),
    livePv('via-inside-link', { hostPath: { path: `${root}/link/x`, type: 'DirectoryOrCreate' } }),
    livePv('missing-then-up', { hostPath: { path: `${out}/gone/../later`, type: 'DirectoryOrCreate' } }),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  await p.settled();
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('steal-out', 'newdir'), signal()), refusedNaming('via-outside-link'));
  await assert.rejects(p.provision(tenantClaim('above-in', 'victim/x'), signal()), refusedNaming('via-inside-link'));
  await assert.rejects(p.provision(tenantClaim('later', 'later'), signal()), refusedNaming('missing-then-up'));
  assert.deepEqual(await snapshot(root), before, 'nothing created');
});

test('adopted nfs PVs naming the export server by another form of its address (10.0.0.05, 0x0a000005, 10.5, ::ffff:10.0.0.5) block their directory', async () => {
  const root = path.join(tmp, 'nfs-address');
  const servers = ['10.0.0.05', '0x0a000005', '10.5', '::ffff:10.0.0.5'];
  for (const [i] of servers.entries()) await ownerData(root, `a${i}`);
  const live = servers.map((server, i) => livePv(`addr${i}`, { nfs: { server, path: `/export/a${i}` } }));
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root, nfs: { server: '10.0.0.5', path: '/export' } }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  for (const [i] of servers.entries())
    await assert.rejects(p.provision(tenantClaim(`steal-addr${i}`, `a${i}`), signal()), refusedNaming(`addr${i}`));
  await assert.rejects(
    p.delete(releasedPv('tenant-addr', { nfs: { server: '10.0.0.5', path: '/export/a0' } }), signal()),
    identityRefused,
  );
  assert.deepEqual(await snapshot(root), before);
});

test('an adopted nfs PV naming the export server by another name (an address for its DNS name) blocks the directory its path maps to', async () => {
  const root = path.join(tmp, 'nfs-other-name');
  await ownerData(root, 'by-address/data');
  await fsp.mkdir(path.join(root, 'free'));
  const live = [
    livePv('by-address', { nfs: { server: '10.0.0.5', path: '/export/by-address' } }),
    livePv('elsewhere', { nfs: { server: '10.0.0.9', path: '/srv/by-address' } }),
    // Another server's whole export (or this one's, by another name): like a PV of the base path itself, it does not
    // stop placement below it.
    livePv('whole-export', { nfs: { server: '10.0.0.9', path: '/export/' } }),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root, nfs: { server: 'nfs.example', path: '/export' } }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('steal-name', 'by-address'), signal()), refusedNaming('by-address'));
  // Other spellings of a server name getaddrinfo may or may not take for it: a port, a doubled trailing dot.
  for (const [i, server] of ['nfs.example:2049', 'nfs.example..', 'nfs.exampIe'].entries()) {
    live.push(livePv(`other-name${i}`, { nfs: { server, path: `/export/other${i}` } }));
    p.rebuildFromVolumes(live);
    await assert.rejects(
      p.provision(tenantClaim(`steal-other${i}`, `other${i}`), signal()),
      refusedNaming(`other-name${i}`),
    );
  }
  await assert.rejects(p.provision(tenantClaim('in-name', 'by-address/data'), signal()), refusedNaming('by-address'));
  await assert.rejects(
    p.delete(releasedPv('tenant-name', { nfs: { server: 'nfs.example', path: '/export/by-address' } }), signal()),
    identityRefused,
  );
  assert.deepEqual(await snapshot(root), before);
  // A path below no export path, or the export's root, blocks nothing.
  const { volume } = await p.provision(tenantClaim('free-name', 'free'), signal());
  assert.equal(volume.spec.nfs?.path, '/export/free');
});

/**
 * The filesystem as a bind mount of `target` at `bind` shows it (without the privilege to mount one): the same
 * device and inode under both spellings, and realpath keeps the bind's spelling.
 */
function bindMountFs(bind: string, target: string): HostFs {
  const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);
  const map = (p: string) => (under(p, bind) ? target + p.slice(bind.length) : p);
  return {
    ...nodeHostFs,
    stat: (p) => nodeHostFs.stat(map(p)),
    lstat: (p) => nodeHostFs.lstat(map(p)),
    realpath: async (p) => {
      const r = await nodeHostFs.realpath(map(p));
      return under(p, bind) && under(r, target) ? bind + r.slice(target.length) : r;
    },
  };
}

test('a live PV spelled through a bind mount whose directory does not exist yet blocks it, and still once kubelet made it', async () => {
  const root = path.join(tmp, 'bind-not-yet');
  await fsp.mkdir(path.join(root, 'victim'), { recursive: true });
  const bind = path.join(tmp, 'bind-not-yet-view');
  await fsp.mkdir(bind);
  const live = [
    livePv('bind-new', { hostPath: { path: `${bind}/newdir`, type: 'DirectoryOrCreate' } }),
    livePv('bind-deep', { hostPath: { path: `${bind}/victim/new/deeper`, type: 'DirectoryOrCreate' } }),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
    fs: { fs: bindMountFs(bind, root) },
  });
  await p.settled();
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('bind-same', 'newdir'), signal()), refusedNaming('bind-new'));
  await assert.rejects(p.provision(tenantClaim('bind-in', 'newdir/sub'), signal()), refusedNaming('bind-new'));
  await assert.rejects(p.provision(tenantClaim('bind-above', 'victim/new'), signal()), refusedNaming('bind-deep'));
  await assert.rejects(
    p.provision(tenantClaim('bind-deep', 'victim/new/deeper'), signal()),
    refusedNaming('bind-deep'),
  );
  assert.deepEqual(await snapshot(root), before, 'nothing created');
  // The owner's pod starts: kubelet makes the directory (through the bind). A stable name must not reuse it.
  await ownerData(root, 'newdir');
  await assert.rejects(p.provision(tenantClaim('bind-reuse', 'newdir'), signal()), refusedNaming('bind-new'));
  await assert.rejects(
    p.delete(releasedPv('bind-leaf', { hostPath: { path: `${root}/newdir` } }), signal()),
    identityRefused,
  );
  assert.ok((await fsp.readdir(path.join(root, 'newdir'))).includes('owner-data'));
});

test('a configuration reload that adds an export or a root re-reads the live PVs: one under it is blocked at once', async () => {
  for (const mode of ['list', 'feed'] as const) {
    const root = path.join(tmp, `reload-${mode}`);
    await ownerData(root, 'victim');
    const other = path.join(tmp, `reload-other-${mode}`);
    await ownerData(other, 'victim2');
    const live = [
      {
        ...livePv('nfs-owner', { nfs: { server: 'nfs.example', path: '/export/victim' } }),
        metadata: { name: 'nfs-owner', resourceVersion: '1' },
      },
      livePv('later-root-owner', { hostPath: { path: `${other}//victim2` } }),
    ];
    // An informer's view: handlers registered after the list get every PV it holds as an add.
    const feed = {
      synced: Promise.resolve(),
      lastSyncResourceVersion: '1',
      addEventHandler: (h: { onAdd?(pv: PersistentVolume): void }) => {
        for (const pv of live) h.onAdd?.(pv);
        return () => {};
      },
    };
    let config = validateHostPathConfig({ sharedFileSystemPath: root });
    const p = new HostPathProvisioner({
      config: { current: () => config },
      ...(mode === 'list'
        ? { knownVolumes: () => live }
        : { volumeFeed: feed, getVolume: async (name: string) => live.find((v) => v.metadata.name === name) }),
    });
    // The ledger has read the PVs under the first configuration.
    await p.provision(tenantClaim(`first-${mode}`, 'first'), signal());
    config = validateHostPathConfig({
      sharedFileSystemPath: root,
      nfs: { server: 'nfs.example', path: '/export' },
      storageClassConfigs: { other: { sharedFileSystemPath: other } },
    });
    p.configurationChanged();
    const before = await snapshot(root);
    await assert.rejects(p.provision(tenantClaim(`steal-nfs-${mode}`, 'victim'), signal()), refusedNaming('nfs-owner'));
    const otherClass = storageClass('other', { pathPattern: '${.PVC.annotations.nfs.io/storage-path}' });
    const o = provisionOptions(
      claim({
        name: `steal2-${mode}`,
        namespace: 'tenant',
        modes: ['ReadWriteMany'],
        annotations: { 'nfs.io/storage-path': 'victim2/in' },
      }),
      otherClass,
    );
    await assert.rejects(p.provision(o, signal()), refusedNaming('later-root-owner'));
    assert.deepEqual(await snapshot(root), before, mode);
  }
});

test("daemonset mode: a static local PV whose hostname affinity is the node's hostname label (not its name) blocks its directory", async () => {
  for (const how of ['selectedNode', 'getNode'] as const) {
    const root = path.join(tmp, `ds-hostname-${how}`);
    await ownerData(root, 'victim');
    const owner = livePv('static-local', { local: { path: `${root}/victim` } });
    owner.spec.nodeAffinity = {
      required: {
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['host-n1'] }] },
        ],
      },
    };
    const p = new HostPathProvisioner({
      mode: 'daemonset',
      nodeName: 'n1',
      config: validateHostPathConfig({ nodePathMap: [{ node: 'n1', paths: [root] }] }),
      knownVolumes: () => [owner],
      ...(how === 'getNode'
        ? {
            getNode: async (name: string) =>
              name === 'n1' ? { metadata: { name, labels: { 'kubernetes.io/hostname': 'host-n1' } } } : undefined,
          }
        : {}),
    });
    const stableNode = storageClass('stable-node', { pathPattern: '${.PVC.annotations.nfs.io/storage-path}' });
    const o = provisionOptions(
      claim({ name: `ds-${how}`, namespace: 'tenant', node: 'n1', annotations: { 'nfs.io/storage-path': 'victim' } }),
      stableNode,
    );
    // Through getNode: the controller hands over no node object (no --node-cache).
    if (how === 'getNode') delete o.selectedNode;
    const before = await snapshot(root);
    await assert.rejects(p.provision(o, signal()), refusedNaming('static-local'), how);
    assert.deepEqual(await snapshot(root), before, how);
  }
  // A delete first after a start (no claim has told the instance anything): the leaf proof still sees the owner.
  const root = path.join(tmp, 'ds-hostname-delete');
  await ownerData(root, 'victim');
  const pinned = (pv: PersistentVolume, host: string): PersistentVolume => ({
    ...pv,
    spec: {
      ...pv.spec,
      nodeAffinity: {
        required: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [host] }] },
          ],
        },
      },
    },
  });
  const owner = pinned(livePv('static-local', { local: { path: `${root}/victim` } }), 'host-n1');
  const p = new HostPathProvisioner({
    mode: 'daemonset',
    nodeName: 'n1',
    config: validateHostPathConfig({ nodePathMap: [{ node: 'n1', paths: [root] }] }),
    knownVolumes: () => [owner],
    getNode: async (name: string) =>
      name === 'n1' ? { metadata: { name, labels: { 'kubernetes.io/hostname': 'host-n1' } } } : undefined,
  });
  const tenant = pinned(releasedPv('tenant-local', { hostPath: { path: `${root}/victim` } }), 'n1');
  await assert.rejects(p.delete(tenant, signal()), identityRefused);
  assert.ok((await fsp.readdir(path.join(root, 'victim'))).includes('owner-data'));
});

test('a live PV outside every root that a reload puts under one keeps its path in the index (no disk read needed)', async () => {
  const root = path.join(tmp, 'reload-lexical');
  const later = path.join(tmp, 'reload-lexical-later');
  await fsp.mkdir(root);
  await ownerData(later, 'victim');
  // Nothing under that root can be read by this process (realpath, stat): only the owner's path protects it.
  const unreadable = (p: string) => p === later || p.startsWith(`${later}/`);
  const eacces = (p: string) => Object.assign(new Error(`EACCES: ${p}`), { code: 'EACCES' });
  const fs: HostFs = {
    ...nodeHostFs,
    realpath: (p) => (unreadable(p) ? Promise.reject(eacces(p)) : nodeHostFs.realpath(p)),
    stat: (p) => (unreadable(p) ? Promise.reject(eacces(p)) : nodeHostFs.stat(p)),
  };
  const live = [livePv('later-owner', { hostPath: { path: `${later}/victim` } })];
  let config = validateHostPathConfig({ sharedFileSystemPath: root });
  const p = new HostPathProvisioner({ config: { current: () => config }, knownVolumes: () => live, fs: { fs } });
  await p.provision(tenantClaim('lexical-first', 'first'), signal());
  config = validateHostPathConfig({
    sharedFileSystemPath: root,
    storageClassConfigs: { later: { sharedFileSystemPath: later } },
  });
  p.configurationChanged();
  const laterClass = storageClass('later', { pathPattern: '${.PVC.annotations.nfs.io/storage-path}' });
  const o = provisionOptions(
    claim({
      name: 'lexical',
      namespace: 'tenant',
      modes: ['ReadWriteMany'],
      annotations: { 'nfs.io/storage-path': 'victim' },
    }),
    laterClass,
  );
  await assert.rejects(p.provision(o, signal()), refusedNaming('later-owner'));
});

test("an archive never takes the name of a live PV's directory that does not exist yet", async () => {
  const root = path.join(tmp, 'archive-name');
  await ownerData(root, 'data');
  const live = [livePv('static-archived', { hostPath: { path: `${root}/archived-data`, type: 'DirectoryOrCreate' } })];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  const released = releasedPv('tenant-archive', { hostPath: { path: `${root}/data` } });
  released.metadata.annotations = { 'hostpath.kube-provisioner.io/on-delete': 'archive' };
  await p.delete(released, signal());
  const names = (await fsp.readdir(root)).filter((n) => n.startsWith('archived-'));
  assert.equal(names.length, 1);
  assert.notEqual(names[0], 'archived-data', "the static PV's place stays free");
  assert.ok((await fsp.readdir(path.join(root, names[0]))).includes('owner-data'));
});

test('a live PV spelled through /proc/<pid>/root (the host root, to kubelet) blocks the directory below it, readable here or not', async () => {
  const root = path.join(tmp, 'proc-root');
  await ownerData(root, 'v1');
  await ownerData(root, 'v2');
  const live = [
    livePv('proc-self', { hostPath: { path: `/proc/self/root${root}/v1` } }),
    // PID 1's root may not be readable by this process (a sandbox, another user): only its spelling tells.
    livePv('proc-one', { hostPath: { path: `/proc/1/root/${root}//v2` } }),
    livePv('proc-missing', { hostPath: { path: `/proc/4194304/root${root}/v3`, type: 'DirectoryOrCreate' } }),
  ];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    knownVolumes: () => live,
  });
  const before = await snapshot(root);
  await assert.rejects(p.provision(tenantClaim('proc-v1', 'v1'), signal()), refusedNaming('proc-self'));
  await assert.rejects(p.provision(tenantClaim('proc-v2', 'v2'), signal()), refusedNaming('proc-one'));
  await assert.rejects(p.provision(tenantClaim('proc-v3', 'v3/sub'), signal()), refusedNaming('proc-missing'));
  assert.deepEqual(await snapshot(root), before);
});
