import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import {
  validateHostPathConfig,
  DEFAULT_NODE,
  type HostPathConfig,
} from '../../src/hostpath/config/hostpath-config.ts';
import { InfeasibleError, ProvisioningError, IgnoredError } from '../../src/controller/provisioner.ts';
import { BasePathError } from '../../src/hostpath/disk/volume-dirs.ts';
import { UnsafePathError } from '../../src/hostpath/paths/path-safety.ts';
import {
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_NODE,
  ANN_HOSTPATH_ON_DELETE,
} from '../../src/hostpath/volume/volume-spec.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await tempTree('kp-hostpath-');
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function setup(name: string, raw: (dir: string) => unknown): Promise<{ dir: string; config: HostPathConfig }> {
  const dir = path.join(tmp, name);
  await fsp.mkdir(dir);
  return { dir, config: validateHostPathConfig(raw(dir)) };
}

const isInfeasible = (e: unknown) => e instanceof InfeasibleError;
const isReschedule = (e: unknown) => e instanceof ProvisioningError && e.state === 'Reschedule';

test('node path: local PV with node affinity, directory with mode, record; delete removes both', async () => {
  const { dir, config } = await setup('node', (d) => ({ nodePathMap: [{ node: DEFAULT_NODE, paths: [`${d}/disk`] }] }));
  await fsp.mkdir(`${dir}/disk`);
  const p = new HostPathProvisioner({ nodeName: 'n1', config });
  const c = claim({ node: 'n1', size: '2Gi', name: 'db', namespace: 'shop' });
  const opts = provisionOptions(c, storageClass('local'));
  const { volume, state } = await p.provision(opts, signal());
  assert.equal(state, 'Finished');
  const vpath = `${dir}/disk/${opts.pvName}_shop_db`;
  assert.equal(volume.spec.local?.path, vpath);
  assert.equal(volume.spec.hostPath, undefined);
  assert.deepEqual(
    volume.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions,
    [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['host-n1'] }],
    'the node label value, not the node name',
  );
  assert.deepEqual(volume.spec.capacity, { storage: '2Gi' });
  assert.deepEqual(volume.spec.accessModes, ['ReadWriteOnce']);
  assert.equal(volume.spec.persistentVolumeReclaimPolicy, 'Delete');
  assert.equal(volume.spec.volumeMode, 'Filesystem');
  assert.equal(volume.spec.storageClassName, 'local');
  assert.equal(volume.metadata.annotations?.[ANN_HOSTPATH_NODE], 'n1');
  assert.equal(volume.metadata.annotations?.[ANN_HOSTPATH_BASE_PATH], `${dir}/disk`);
  assert.equal((await fsp.stat(vpath)).mode & 0o777, 0o777);
  assert.deepEqual(
    (await p.listVolumes(signal())).map((v) => v.name),
    [opts.pvName],
  );
  assert.deepEqual(p.allocations(), [
    { scope: 'n1', basePath: `${dir}/disk`, allocated: 2n << 30n, volumes: 1, capacity: undefined },
  ]);
  assert.ok((await p.volumeUsage(volume)).entries >= 1);

  const again = await p.provision(opts, signal());
  assert.deepEqual(again.volume, volume, 'provision is idempotent');
  assert.equal(p.allocations()[0].volumes, 1);

  await p.delete(volume, signal());
  await assert.rejects(fsp.lstat(vpath), { code: 'ENOENT' });
  assert.deepEqual(await p.listVolumes(signal()), []);
  assert.deepEqual(p.allocations(), []);
  await p.delete(volume, signal()); // already gone: fine
});

test('volumeType hostPath, mode/uid/gid, nodeAffinityKey and a nested pathPattern', async () => {
  const { dir, config } = await setup('hostpath-type', (d) => ({ nodePathMap: [{ node: 'n1', paths: [d] }] }));
  const p = new HostPathProvisioner({ nodeName: 'n1', config });
  const sc = storageClass('hp', {
    volumeType: 'hostPath',
    mode: '0750',
    uid: String(process.getuid!()),
    gid: String(process.getgid!()),
    nodeAffinityKey: 'zone',
    pathPattern: '{{ .PVC.Namespace }}/{{ .PVC.Labels.app }}/${.PV.name}',
  });
  const c = claim({ node: 'n1', labels: { app: 'web' } });
  const opts = provisionOptions(c, sc);
  const { volume } = await p.provision(opts, signal());
  const vpath = `${dir}/team-a/web/${opts.pvName}`;
  assert.deepEqual(volume.spec.hostPath, { path: vpath, type: 'Directory' });
  assert.equal(volume.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].key, 'zone');
  assert.deepEqual(volume.spec.nodeAffinity?.required?.nodeSelectorTerms[0].matchExpressions?.[0].values, ['z1']);
  const st = await fsp.stat(vpath);
  assert.equal(st.mode & 0o777, 0o750);
  assert.equal(st.uid, process.getuid!());
  // A node without the affinity label cannot get such a volume.
  const c2 = claim({ node: 'n1', labels: { app: 'web' } });
  const o2 = provisionOptions(c2, sc);
  o2.selectedNode = { metadata: { name: 'n1', labels: {} } };
  await assert.rejects(p.provision(o2, signal()), isInfeasible);
});

test('shared path: no affinity, ReadWriteMany allowed, Immediate binding (no selected node)', async () => {
  const { dir, config } = await setup('shared', (d) => ({ sharedFileSystemPath: d }));
  const p = new HostPathProvisioner({ config, nodeName: 'controller-node' });
  const c = claim({ modes: ['ReadWriteMany'] });
  const sc = storageClass('nfs', { pathPattern: '${.PVC.namespace}-${.PVC.name}-${.PV.name}' });
  const opts = provisionOptions(c, sc);
  const { volume } = await p.provision(opts, signal());
  assert.equal(volume.spec.nodeAffinity, undefined);
  assert.deepEqual(volume.spec.accessModes, ['ReadWriteMany']);
  assert.equal(volume.spec.hostPath?.path, `${dir}/team-a-${c.metadata.name}-${opts.pvName}`);
  await assert.rejects(
    p.provision(provisionOptions(claim(), storageClass('x', { volumeType: 'local' })), signal()),
    isInfeasible,
  );
});

test('onDelete policies: delete removes, retain keeps, archive renames in place; Retain class recorded', async () => {
  const { dir, config } = await setup('ondelete', (d) => ({ sharedFileSystemPath: d }));
  const p = new HostPathProvisioner({ config });
  const results: Record<string, string[]> = {};
  for (const policy of ['delete', 'retain', 'archive']) {
    const sc = storageClass(`sc-${policy}`, { onDelete: policy, pathPattern: `${policy}/\${.PVC.name}/\${.PV.name}` });
    const c = claim({ name: 'data' });
    const { volume } = await p.provision(provisionOptions(c, sc), signal());
    assert.equal(volume.metadata.annotations?.[ANN_HOSTPATH_ON_DELETE], policy);
    await fsp.writeFile(`${volume.spec.hostPath!.path}/file`, policy);
    await p.delete(volume, signal());
    results[policy] = await snapshot(path.join(dir, policy));
  }
  assert.deepEqual(results.delete, ['data']);
  assert.equal(results.retain.length, 3, 'retained with its file');
  assert.ok(
    results.archive.some((e) => /^data\/archived-pvc-[0-9a-f-]+\/file$/.test(e)),
    results.archive.join(','),
  );
  assert.deepEqual(await p.listVolumes(signal()), [], 'no record survives any policy');
  const retainClass = await p.provision(provisionOptions(claim(), storageClass('r', undefined, 'Retain')), signal());
  assert.equal(retainClass.volume.spec.persistentVolumeReclaimPolicy, 'Retain');
});

test('capacity: fits, Reschedule with a selected node, Infeasible without or when larger than any path', async () => {
  const { dir, config } = await setup('capacity', (d) => ({
    nodePathMap: [
      {
        node: DEFAULT_NODE,
        paths: [
          { path: `${d}/small`, capacity: '1Gi' },
          { path: `${d}/big`, capacity: '3Gi' },
        ],
      },
    ],
  }));
  await fsp.mkdir(`${dir}/small`);
  await fsp.mkdir(`${dir}/big`);
  const p = new HostPathProvisioner({ nodeName: 'n1', config });
  const sc = storageClass('cap');
  const v1 = await p.provision(provisionOptions(claim({ node: 'n1', size: '2Gi' }), sc), signal());
  assert.equal(v1.volume.metadata.annotations?.[ANN_HOSTPATH_BASE_PATH], `${dir}/big`, 'the only path it fits');
  const v2 = await p.provision(provisionOptions(claim({ node: 'n1', size: '1Gi' }), sc), signal());
  assert.equal(
    v2.volume.metadata.annotations?.[ANN_HOSTPATH_BASE_PATH],
    `${dir}/small`,
    'most free space first (tie, then least allocated)',
  );
  await assert.rejects(p.provision(provisionOptions(claim({ node: 'n1', size: '2Gi' }), sc), signal()), isReschedule);
  await new HostPathProvisioner({ config, nodeName: 'n2' }).provision(
    provisionOptions(claim({ node: 'n2', size: '2Gi' }), sc),
    signal(),
  ); // another node, another disk
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n1', size: '4Gi' }), sc), signal()),
    isInfeasible,
    'larger than any capacity',
  );
  await p.delete(v1.volume, signal());
  await p.provision(provisionOptions(claim({ node: 'n1', size: '2Gi' }), sc), signal());

  // Shared path, no selected node: a claim that does not fit now is infeasible (nothing to reschedule).
  const s = await setup('capacity-shared', (d) => ({ sharedFileSystemPath: { path: d, capacity: '1Gi' } }));
  const ps = new HostPathProvisioner({ config: s.config });
  await ps.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal());
  await assert.rejects(ps.provision(provisionOptions(claim({ size: '1' }), sc), signal()), isInfeasible);
  await assert.rejects(
    ps.provision(provisionOptions(claim({ size: '1', node: 'n1' }), sc), signal()),
    isInfeasible,
    'every node sees the shared path: no Reschedule',
  );
});

test('accounting survives a restart: rebuilt from disk records, and from PVs', async () => {
  const { dir, config } = await setup('restart', (d) => ({
    nodePathMap: [{ node: 'n1', paths: [{ path: d, capacity: '2Gi' }] }],
  }));
  const sc = storageClass('cap');
  const first = new HostPathProvisioner({ nodeName: 'n1', config });
  const { volume } = await first.provision(provisionOptions(claim({ node: 'n1', size: '2Gi' }), sc), signal());
  const second = new HostPathProvisioner({ nodeName: 'n1', config });
  // n1 is the only node with paths: rescheduling could not help, so it is infeasible (backs off, no loop).
  await assert.rejects(
    second.provision(provisionOptions(claim({ node: 'n1', size: '1Gi' }), sc), signal()),
    isInfeasible,
  );
  assert.equal(second.allocations()[0].allocated, 2n << 30n);

  // Records lost (say a restore): the API's PVs still rebuild the accounting.
  await fsp.rm(path.join(dir, '.kube-provisioner'), { recursive: true });
  let calls = 0;
  const third = new HostPathProvisioner({
    nodeName: 'n1',
    config,
    knownVolumes: () => {
      calls++;
      return [volume];
    },
  });
  await assert.rejects(
    third.provision(provisionOptions(claim({ node: 'n1', size: '1Gi' }), sc), signal()),
    isInfeasible,
  );
  assert.equal(calls, 1);
  third.rebuildFromVolumes([]);
  await third.provision(provisionOptions(claim({ node: 'n1', size: '1Gi' }), sc), signal());
  assert.equal(calls, 1, 'refreshed at most every knownVolumesRefreshMs');
});

test('Reschedule for a node without paths; Infeasible for node paths without a selected node', async () => {
  const { dir, config } = await setup('reschedule', (d) => ({
    nodePathMap: [
      { node: 'n1', paths: [d] },
      { node: 'n2', paths: [] },
    ],
  }));
  const p = new HostPathProvisioner({ config });
  const sc = storageClass('r');
  await assert.rejects(p.provision(provisionOptions(claim({ node: 'n2' }), sc), signal()), isReschedule);
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n3' }), sc), signal()),
    isReschedule,
    'unlisted, no default entry',
  );
  await assert.rejects(p.provision(provisionOptions(claim(), sc), signal()), isInfeasible);
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n2' }), storageClass('np', { nodePath: dir })), signal()),
    isReschedule,
  );
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n1' }), storageClass('np', { nodePath: '/elsewhere' })), signal()),
    isInfeasible,
  );
  const withDefault = new HostPathProvisioner({ config, nodeName: 'n1' });
  await withDefault.provision(provisionOptions(claim(), sc), signal()); // deployment mode: own node for Immediate claims
});

test('daemonset sharding: two instances over one tree each serve only their node', async () => {
  const { dir, config } = await setup('shard', (d) => ({
    nodePathMap: [
      { node: 'n1', paths: [`${d}/n1`] },
      { node: 'n2', paths: [`${d}/n2`] },
    ],
  }));
  await fsp.mkdir(`${dir}/n1`);
  await fsp.mkdir(`${dir}/n2`);
  const p1 = new HostPathProvisioner({ config, mode: 'daemonset', nodeName: 'n1' });
  const p2 = new HostPathProvisioner({ config, mode: 'daemonset', nodeName: 'n2' });
  assert.throws(() => new HostPathProvisioner({ config, mode: 'daemonset' }), /nodeName/);
  const sc = storageClass('ds');
  const c = claim({ node: 'n1' });
  assert.equal(p1.shouldProvision(c), true);
  assert.equal(p2.shouldProvision(c), false);
  assert.equal(p1.shouldProvision(claim()), false, "unscheduled claims are nobody's in daemonset mode");
  await assert.rejects(p2.provision(provisionOptions(c, sc), signal()), IgnoredError);
  const { volume } = await p1.provision(provisionOptions(c, sc), signal());
  await assert.rejects(p2.delete(volume, signal()), IgnoredError);
  assert.equal((await snapshot(`${dir}/n1`)).filter((e) => e.startsWith('pvc-')).length, 1, 'n2 touched nothing');
  assert.deepEqual(await p2.listVolumes(signal()), [], 'each lists only its own node');
  assert.equal((await p1.listVolumes(signal())).length, 1);
  await p1.delete(volume, signal());
  assert.deepEqual(
    (await snapshot(`${dir}/n1`)).filter((e) => e.startsWith('pvc-')),
    [],
  );
});

test('bad input: Infeasible with nothing created outside (or inside) the roots', async () => {
  const { dir, config } = await setup('hostile', (d) => ({
    nodePathMap: [{ node: DEFAULT_NODE, paths: [`${d}/root`] }],
  }));
  await fsp.mkdir(`${dir}/root`);
  await fsp.mkdir(`${dir}/outside`);
  await fsp.symlink(`${dir}/outside`, `${dir}/root/linked-ns`);
  const before = await snapshot(dir);
  const p = new HostPathProvisioner({ nodeName: 'n', config });
  const pattern = (pathPattern: string) => storageClass('p', { pathPattern });
  const cases: Array<[string, ReturnType<typeof provisionOptions>]> = [
    [
      'annotation traversal',
      provisionOptions(
        claim({ node: 'n', annotations: { p: '../../outside' } }),
        pattern('${.PVC.annotations.p}/${.PV.name}'),
      ),
    ],
    [
      'absolute annotation',
      provisionOptions(claim({ node: 'n', annotations: { p: '/etc' } }), pattern('${.PVC.annotations.p}${.PV.name}')),
    ],
    [
      'NUL',
      provisionOptions(
        claim({ node: 'n', annotations: { p: 'a\u0000b' } }),
        pattern('${.PVC.annotations.p}/${.PV.name}'),
      ),
    ],
    [
      'very long',
      provisionOptions(
        claim({ node: 'n', annotations: { p: 'x'.repeat(5000) } }),
        pattern('${.PVC.annotations.p}/${.PV.name}'),
      ),
    ],
    ['missing key', provisionOptions(claim({ node: 'n' }), pattern('${.PVC.annotations.p}/${.PV.name}'))],
    [
      'symlinked parent',
      provisionOptions(claim({ node: 'n', namespace: 'linked-ns' }), pattern('${.PVC.namespace}/${.PV.name}')),
    ],
    ['unknown parameter', provisionOptions(claim({ node: 'n' }), storageClass('p', { archive: 'yes' }))],
    ['invalid mode', provisionOptions(claim({ node: 'n' }), storageClass('p', { mode: '999' }))],
    ['invalid uid', provisionOptions(claim({ node: 'n' }), storageClass('p', { uid: '-3' }))],
    ['Block', provisionOptions(claim({ node: 'n', block: true }), storageClass('p'))],
    [
      'ReadWriteMany on a node path',
      provisionOptions(claim({ node: 'n', modes: ['ReadWriteMany'] }), storageClass('p')),
    ],
    ['absurd size', provisionOptions(claim({ node: 'n', size: '-1Gi' }), storageClass('p'))],
    ['bad size', provisionOptions(claim({ node: 'n', size: 'lots' }), storageClass('p'))],
  ];
  const sel = provisionOptions(claim({ node: 'n' }), storageClass('p'));
  sel.claim.spec.selector = { matchLabels: { a: 'b' } };
  cases.push(['selector', sel]);
  const clone = provisionOptions(claim({ node: 'n' }), storageClass('p'));
  clone.claim.spec.dataSource = { kind: 'PersistentVolumeClaim', name: 'other' };
  cases.push(['dataSource', clone]);
  for (const [name, o] of cases) {
    await assert.rejects(p.provision(o, signal()), isInfeasible, name);
  }
  // The provisioner's own metadata directory may now exist (empty: records, path claims, markers); nothing else changed.
  const meta = [
    'root/.kube-provisioner',
    'root/.kube-provisioner/volumes',
    'root/.kube-provisioner/paths',
    'root/.kube-provisioner/below',
  ];
  assert.deepEqual(
    (await snapshot(dir)).filter((e) => !meta.includes(e)),
    before,
    'nothing created, not even records',
  );
  assert.equal(p.supportsBlock(), false);
  // The provisioner keeps serving other claims.
  await p.provision(provisionOptions(claim({ node: 'n' }), storageClass('p')), signal());
});

test('classes not in storageClassConfigs are infeasible; a missing base is a retryable error leaving nothing behind', async () => {
  const { dir, config } = await setup('classes', (d) => ({
    storageClassConfigs: { fast: { nodePathMap: [{ node: DEFAULT_NODE, paths: [`${d}/missing`] }] } },
  }));
  const p = new HostPathProvisioner({ nodeName: 'n', config });
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n' }), storageClass('slow')), signal()),
    isInfeasible,
  );
  await assert.rejects(
    p.provision(provisionOptions(claim({ node: 'n' }), storageClass('fast')), signal()),
    (e: unknown) => e instanceof BasePathError && e.reason === 'missing' && !(e instanceof InfeasibleError),
  );
  assert.deepEqual(await snapshot(dir), []);
});

test('delete re-checks the PV path against the configured roots and refuses everything else', async () => {
  const { dir, config } = await setup('delete-checks', (d) => ({ sharedFileSystemPath: `${d}/root` }));
  await fsp.mkdir(`${dir}/root`);
  await fsp.mkdir(`${dir}/victim`);
  await fsp.writeFile(`${dir}/victim/pvc-x`, 'precious');
  const p = new HostPathProvisioner({ config });
  const { volume } = await p.provision(provisionOptions(claim(), storageClass('s')), signal());
  const tampered = (mut: (v: typeof volume) => void) => {
    const v = structuredClone(volume);
    mut(v);
    return v;
  };
  const bad = [
    tampered((v) => {
      v.spec.hostPath!.path = `${dir}/victim/${v.metadata.name}`;
    }),
    tampered((v) => {
      v.spec.hostPath!.path = `${dir}/root`;
    }),
    tampered((v) => {
      v.spec.hostPath!.path = `${dir}/root/../victim/${v.metadata.name}`;
    }),
    tampered((v) => {
      v.metadata.annotations![ANN_HOSTPATH_BASE_PATH] = `${dir}/victim`;
      v.spec.hostPath!.path = `${dir}/victim/${v.metadata.name}`;
    }),
    tampered((v) => {
      v.metadata.annotations![ANN_HOSTPATH_BASE_PATH] = dir;
    }),
    tampered((v) => {
      v.spec.hostPath!.path = `${dir}/root/other-volume`;
    }),
    tampered((v) => {
      v.metadata.annotations![ANN_HOSTPATH_ON_DELETE] = 'shred';
    }),
    tampered((v) => {
      delete v.spec.hostPath;
    }),
  ];
  const snap = await snapshot(dir);
  for (const [i, v] of bad.entries()) await assert.rejects(p.delete(v, signal()), Error, `case ${i}`);
  assert.deepEqual(await snapshot(dir), snap);
  await p.delete(volume, signal());
});

test('concurrent provisions never overcommit a base path', async () => {
  const { config } = await setup('concurrent', (d) => ({ sharedFileSystemPath: { path: d, capacity: '10Gi' } }));
  const p = new HostPathProvisioner({ config });
  const sc = storageClass('c');
  const results = await Promise.allSettled(
    Array.from({ length: 25 }, () => p.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal())),
  );
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 10);
  assert.ok(results.every((r) => r.status === 'fulfilled' || isInfeasible(r.reason)));
  assert.equal(p.allocations()[0].allocated, 10n << 30n);
});

test('a name-only volume (leak inventory) is deleted through its record; unknown names are refused', async () => {
  const { dir, config } = await setup('leak', (d) => ({ nodePathMap: [{ node: 'n1', paths: [d] }] }));
  const p = new HostPathProvisioner({ config, mode: 'daemonset', nodeName: 'n1' });
  const o = provisionOptions(
    claim({ node: 'n1' }),
    storageClass('l', { pathPattern: '${.PVC.namespace}/${.PV.name}' }),
  );
  await p.provision(o, signal());
  assert.deepEqual(
    (await p.listVolumes(signal())).map((v) => v.name),
    [o.pvName],
  );
  assert.ok((await p.listVolumes(signal()))[0].createdAt instanceof Date);
  await p.delete({ metadata: { name: o.pvName }, spec: {} }, signal());
  assert.deepEqual(await p.listVolumes(signal()), []);
  assert.deepEqual(
    (await snapshot(dir)).filter((e) => !e.startsWith('.kube-provisioner')),
    ['team-a'],
  );
  await assert.rejects(p.delete({ metadata: { name: 'pvc-unknown' }, spec: {} }, signal()), IgnoredError);
  const deployment = new HostPathProvisioner({ config });
  await assert.rejects(
    deployment.delete({ metadata: { name: 'pvc-unknown' }, spec: {} }, signal()),
    (e: unknown) => e instanceof Error && !(e instanceof IgnoredError),
  );
});

test('a config holder is read on every call: reloads apply at once; a removed root can no longer be deleted from', async () => {
  const { dir } = await setup('reload', (d) => ({ sharedFileSystemPath: d }));
  await fsp.mkdir(`${dir}/a`);
  await fsp.mkdir(`${dir}/b`);
  let current = validateHostPathConfig({ sharedFileSystemPath: { path: `${dir}/a`, capacity: '1Gi' } });
  const p = new HostPathProvisioner({ config: { current: () => current } });
  const sc = storageClass('s');
  const { volume } = await p.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal());
  await assert.rejects(p.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal()), isInfeasible);
  current = validateHostPathConfig({ sharedFileSystemPath: { path: `${dir}/a`, capacity: '2Gi' } });
  await p.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal());
  current = validateHostPathConfig({ sharedFileSystemPath: `${dir}/b` });
  const moved = await p.provision(provisionOptions(claim(), sc), signal());
  assert.ok(moved.volume.spec.hostPath?.path.startsWith(`${dir}/b/`));
  const snap = await snapshot(`${dir}/a`);
  await assert.rejects(
    p.delete(volume, signal()),
    (e: unknown) => e instanceof UnsafePathError && e.rule === 'outside-root',
  );
  assert.deepEqual(await snapshot(`${dir}/a`), snap);
  // Back in the configuration: a fresh instance scans the records of the returning base path.
  current = validateHostPathConfig({ sharedFileSystemPath: { path: `${dir}/a`, capacity: '2Gi' } });
  const restarted = new HostPathProvisioner({ config: { current: () => current } });
  await assert.rejects(
    restarted.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal()),
    isInfeasible,
    'a is full (2 x 1Gi on disk)',
  );
  await restarted.delete(volume, signal());
  await restarted.provision(provisionOptions(claim({ size: '1Gi' }), sc), signal());
});

test('a failed chown (injected, so it fails as root too) leaves no directory, no record and no allocation', async () => {
  const { dir, config } = await setup('chown-fails', (d) => ({
    nodePathMap: [{ node: 'n1', paths: [{ path: d, capacity: '1Gi' }] }],
  }));
  let failing = true;
  const chown = async () => {
    if (failing) throw Object.assign(new Error('EPERM: operation not permitted, fchown'), { code: 'EPERM' });
  };
  const p = new HostPathProvisioner({ nodeName: 'n1', config, fs: { chown } });
  const sc = storageClass('own', { uid: '1234', gid: '5678', pathPattern: '{{ .PVC.Namespace }}/${.PV.name}' });
  const opts = provisionOptions(claim({ node: 'n1', size: '1Gi' }), sc);
  await assert.rejects(p.provision(opts, signal()), (e: NodeJS.ErrnoException) => e.code === 'EPERM');
  assert.deepEqual(
    (await snapshot(dir)).filter((e) => !e.startsWith('.kube-provisioner')),
    [],
    'no volume directory, no parent left behind',
  );
  assert.deepEqual(await p.listVolumes(signal()), [], 'no record');
  assert.deepEqual(p.allocations(), [], 'the reservation was released');
  failing = false;
  const { volume } = await p.provision(opts, signal());
  assert.equal(
    volume.spec.local?.path,
    `${dir}/team-a/${opts.pvName}`,
    'the whole capacity is free again for the retry',
  );
});

test('a selected node that is not a valid node name is infeasible before anything is created', async () => {
  const { dir, config } = await setup('bad-node', (d) => ({ nodePathMap: [{ node: DEFAULT_NODE, paths: [d] }] }));
  const p = new HostPathProvisioner({ config });
  for (const node of ['../../etc', 'a/b', 'UPPER', `n${'x'.repeat(253)}`, 'a\u0000b', '.']) {
    const c = claim({ annotations: { 'volume.kubernetes.io/selected-node': node } });
    await assert.rejects(
      p.provision({ ...provisionOptions(c, storageClass('local')), selectedNodeName: node }, signal()),
      isInfeasible,
      JSON.stringify(node),
    );
  }
  assert.deepEqual(await snapshot(dir), []);
  assert.deepEqual(p.allocations(), []);
});

test('an unsafe path error quotes at most 1 KiB of a huge path', async () => {
  const { dir, config } = await setup('huge-path', (d) => ({ sharedFileSystemPath: d }));
  const p = new HostPathProvisioner({ config });
  const c = claim({ annotations: { dir: 'h'.repeat(200_000) } });
  const sc = storageClass('huge', { pathPattern: '${.PVC.annotations.dir}/${.PV.name}' });
  const err = await p.provision(provisionOptions(c, sc), signal()).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof InfeasibleError);
  assert.ok(err.cause instanceof UnsafePathError && err.cause.rule === 'segment-too-long');
  assert.ok(Buffer.byteLength(err.message) < 1200, `message of ${Buffer.byteLength(err.message)} bytes`);
  assert.match(err.message, /shortened/);
  assert.equal(err.cause.path.length > 200_000, true, 'the error still carries the whole path for callers');
  assert.deepEqual(await snapshot(dir), []);
});

test('after a restart, provisions running while the PVs are being listed wait for the list (no overcommit)', async () => {
  const { dir, config } = await setup('restart-race', (d) => ({ sharedFileSystemPath: { path: d, capacity: '10Gi' } }));
  const sc = storageClass('cap');
  const { volume } = await new HostPathProvisioner({ config }).provision(
    provisionOptions(claim({ size: '6Gi' }), sc),
    signal(),
  );
  await fsp.rm(path.join(dir, '.kube-provisioner'), { recursive: true });
  const restarted = new HostPathProvisioner({
    config,
    knownVolumes: () => new Promise((r) => setTimeout(() => r([volume]), 50)),
  });
  const [small, big] = await Promise.allSettled([
    restarted.provision(provisionOptions(claim({ size: '3Gi' }), sc), signal()),
    restarted.provision(provisionOptions(claim({ size: '5Gi' }), sc), signal()),
  ]);
  assert.equal(small.status, 'fulfilled');
  assert.ok(
    big.status === 'rejected' && isInfeasible(big.reason),
    'the 5Gi claim does not fit next to the listed 6Gi volume',
  );
  assert.deepEqual(
    restarted.allocations().map((a) => a.allocated),
    [9n << 30n],
  );
});

test('onDelete default follows the path kind: a shared path archives (nfs-subdir), a node path deletes (local-path)', async () => {
  const { dir, config } = await setup('default-ondelete', (d) => ({
    storageClassConfigs: {
      nfs: { sharedFileSystemPath: `${d}/export` },
      local: { nodePathMap: [{ node: DEFAULT_NODE, paths: [`${d}/disk`] }] },
    },
  }));
  await fsp.mkdir(`${dir}/export`);
  await fsp.mkdir(`${dir}/disk`);
  const p = new HostPathProvisioner({ nodeName: 'n1', config });
  const shared = await p.provision(
    provisionOptions(claim({ name: 'nfs-data', modes: ['ReadWriteMany'] }), storageClass('nfs')),
    signal(),
  );
  assert.equal(shared.volume.metadata.annotations?.[ANN_HOSTPATH_ON_DELETE], 'archive');
  const sharedDir = shared.volume.spec.hostPath!.path;
  await fsp.writeFile(`${sharedDir}/file`, 'keep');
  await p.delete(shared.volume, signal());
  assert.equal(
    await fsp.readFile(`${dir}/export/archived-${path.basename(sharedDir)}/file`, 'utf8'),
    'keep',
    'archived-<directory name>, no suffix',
  );

  const local = await p.provision(
    provisionOptions(claim({ name: 'node-data', node: 'n1' }), storageClass('local')),
    signal(),
  );
  assert.equal(local.volume.metadata.annotations?.[ANN_HOSTPATH_ON_DELETE], 'delete');
  await p.delete(local.volume, signal());
  assert.deepEqual(
    (await snapshot(`${dir}/disk`)).filter((e) => !e.startsWith('.kube-provisioner')),
    [],
  );
});
