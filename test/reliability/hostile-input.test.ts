// Hostile input against a running hostpath provisioner: an in-process ProvisionController + HostPathProvisioner
// against the embedded cluster (with its PV binder) on real temp directories. Every row of hostile-rows.ts is a
// claim or class a tenant can create; objects the API must refuse are checked for their Status; forged PVs,
// symlink swaps (before, during and at delete time), live static PVs naming a directory in another spelling,
// classes that appear or change mid-flight and invalid configuration reloads complete the table. The provisioner
// sees the cluster's PVs through a watch, as `run hostpath` does. A local-path teardown script (`rm -rf "$VOL_DIR"`, logging what it was
// given) runs on every delete, so the table covers it too. After everything: a sibling "outside" tree is byte-for-byte the
// same (names, types, modes, mtimes), the roots hold exactly the directories and records of live PVs, and a
// good claim created last is still Bound (the controller kept serving).
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { ConfigFileSource } from '../../src/hostpath/config/config-file-source.ts';
import { DEFAULT_NODE } from '../../src/hostpath/config/hostpath-config.ts';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { VolumeWatch } from '../../src/hostpath/ledger/volume-watch.ts';
import { ANN_HOSTPATH_BASE_PATH, ANN_HOSTPATH_ON_DELETE } from '../../src/hostpath/volume/volume-spec.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { ApiError } from '../../src/runtime/status-errors.ts';
import { silentLogger } from '../../src/types/logger.ts';
import {
  type ApiResource,
  namespaces,
  persistentVolumeClaims,
  persistentVolumes,
  storageClasses,
} from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import type { CoreEvent, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import {
  apiErrorOf,
  claim,
  diffSnapshots,
  directoriesBelow,
  eventsOf,
  expectedDirectories,
  storageClass,
  treeSnapshot,
  volumePath,
  volumeRecords,
  waitFor,
} from './helpers.ts';
import {
  CLAIM_ROWS,
  CLASSES,
  FORGED_ROWS,
  NODE_LOCAL_CLASSES,
  REJECTED_ROWS,
  UNLISTED_CLASS,
  type ClaimRow,
} from './hostile-rows.ts';

const PROVISIONER = 'reliability.kube-provisioner.io/hostpath';
const NS = 'hostile';
const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;

describe('hostile input: claims, classes, configs and API objects', () => {
  let tmp: string;
  let shared: string;
  let nodes: string;
  let raceRoot: string;
  let outside: string;
  let configFile: string;
  let cluster: TestCluster;
  let client: KubeClient;
  let source: ConfigFileSource;
  let controller: ProvisionController;
  const stopWatch = new AbortController();
  let watching: Promise<void> | undefined;
  let outsideBefore: Map<string, string>;
  let tmpEntriesBefore: string[];
  const invalidConfigs: Error[] = [];
  let teardownLog: string;
  /** Archives the shared root's default (archive) leaves behind for deleted volumes. */
  const archivedDirs = new Set<string>();
  const uids = new Map<string, string>();

  const store = () => cluster.store;
  const events = () => store().list('events').items as CoreEvent[];
  const ourEvents = (name: string) => eventsOf(events(), name, PROVISIONER);
  const getClaim = (name: string) =>
    store().get('persistentvolumeclaims', NS, name) as PersistentVolumeClaim | undefined;
  const getVolume = (name: string) => store().get('persistentvolumes', undefined, name) as PersistentVolume | undefined;
  const volumes = () => store().list('persistentvolumes').items as PersistentVolume[];

  function goodConfig(): unknown {
    const classConfigs: Record<string, unknown> = {};
    for (const name of [...Object.keys(CLASSES), 'late', 'midflight', 'final', 'teardown']) {
      classConfigs[name] = NODE_LOCAL_CLASSES.includes(name)
        ? { nodePathMap: [{ node: DEFAULT_NODE, paths: [nodes] }] }
        : { sharedFileSystemPath: { path: shared, capacity: '100Gi' } };
    }
    classConfigs.race = { sharedFileSystemPath: raceRoot };
    return { storageClassConfigs: classConfigs };
  }

  before(async () => {
    tmp = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-hostile-')));
    shared = path.join(tmp, 'roots', 'shared');
    nodes = path.join(tmp, 'roots', 'nodes');
    raceRoot = path.join(tmp, 'roots', 'race');
    outside = path.join(tmp, 'outside');
    for (const d of [
      shared,
      nodes,
      raceRoot,
      path.join(outside, 'etc'),
      path.join(outside, 'victim'),
      path.join(outside, 'swap-target'),
    ]) {
      await fsp.mkdir(d, { recursive: true });
    }
    await fsp.writeFile(path.join(outside, 'etc', 'passwd'), 'root:x:0:0\n');
    await fsp.writeFile(path.join(outside, 'victim', 'precious'), 'do not delete\n');
    await fsp.writeFile(path.join(outside, 'swap-target', 'canary'), 'canary\n');
    await fsp.symlink(path.join(outside, 'swap-target'), path.join(shared, 'linked'));
    configFile = path.join(tmp, 'config.json');
    await fsp.writeFile(configFile, JSON.stringify(goodConfig()));
    teardownLog = path.join(tmp, 'teardown.log');
    await fsp.writeFile(teardownLog, '');
    outsideBefore = await treeSnapshot(outside);
    tmpEntriesBefore = (await fsp.readdir(tmp)).sort();

    cluster = await startCluster();
    client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'reliability-hostile-test' });
    await client.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    source = new ConfigFileSource({
      path: configFile,
      pollIntervalMs: 50,
      settleMs: 20,
      watch: false,
      onInvalid: (e) => invalidConfigs.push(e),
    });
    await source.start();
    // local-path's stock teardown, logging the directory it was handed.
    const teardown = `echo "$VOL_DIR" >> ${teardownLog}\nrm -rf "$VOL_DIR"`;
    const withTeardown = {
      current: () => ({ ...source.current(), scripts: { ...source.current().scripts, teardown } }),
    };
    const watch = new VolumeWatch({ client });
    watching = watch.start(stopWatch.signal);
    const provisioner = new HostPathProvisioner({
      config: withTeardown,
      mode: 'deployment',
      nodeName: 'node-1',
      logger: silentLogger,
      volumeFeed: watch,
      getVolume: (name, s) =>
        client.get<PersistentVolume>(persistentVolumes, name, { signal: s }).catch(() => undefined),
    });
    controller = new ProvisionController(client, PROVISIONER, provisioner, {
      leaderElection: { mode: 'none' },
      threadiness: 4,
      // Infeasible claims are not retried during the test unless they or their class change.
      retry: { backoffBaseMs: 50, backoffMaxMs: 500, infeasibleDelayMs: 600_000 },
      volumeSave: { mode: 'retry', retryCount: 3, intervalMs: 50 },
      logger: silentLogger,
      identity: 'hostile-test',
    });
    void controller.run();

    for (const [name, parameters] of Object.entries(CLASSES)) {
      const extra = NODE_LOCAL_CLASSES.includes(name) ? { volumeBindingMode: 'WaitForFirstConsumer' as const } : {};
      await client.create(
        storageClasses,
        storageClass(name, PROVISIONER, { ...(parameters ? { parameters } : {}), ...extra }),
      );
    }
    await client.create(storageClasses, storageClass(UNLISTED_CLASS, PROVISIONER));
    for (const row of CLAIM_ROWS) {
      const created = await client.create<PersistentVolumeClaim>(
        persistentVolumeClaims,
        claim(row.name, NS, row.className, row),
        { namespace: NS },
      );
      uids.set(row.name, created.metadata.uid ?? '');
    }
  });

  after(async () => {
    await controller?.stop();
    stopWatch.abort();
    await watching;
    await source?.stop();
    client?.close();
    await cluster?.stop();
    if (tmp) await fsp.rm(tmp, { recursive: true, force: true });
  });

  /** Bound, with a PV whose directory is a real directory (no symlink on the way) strictly inside a root. */
  async function assertBoundInside(name: string): Promise<PersistentVolume> {
    const c = await waitFor(`claim ${name} Bound`, () => getClaim(name)?.status?.phase === 'Bound' && getClaim(name));
    const pv = getVolume(c.spec.volumeName ?? '');
    assert.ok(pv, `PV of ${name}`);
    const p = volumePath(pv) ?? '';
    const root = [shared, nodes, raceRoot].find((r) => p.startsWith(`${r}/`));
    assert.ok(root, `${name}: volume path ${JSON.stringify(p)} is not inside a root`);
    assert.equal(path.normalize(p), p);
    let walk = root;
    for (const seg of p.slice(root.length + 1).split('/')) {
      walk = `${walk}/${seg}`;
      assert.ok((await fsp.lstat(walk)).isDirectory(), `${walk} is a real directory`);
    }
    return pv;
  }

  async function assertRefused(row: ClaimRow, pattern: RegExp): Promise<void> {
    const ev = await waitFor(`ProvisioningFailed event on ${row.name}`, () =>
      ourEvents(row.name).find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.equal(ev.type, 'Warning');
    assert.match(ev.message ?? '', pattern, `${row.name} (${row.why})`);
    assert.notEqual(getClaim(row.name)?.status?.phase, 'Bound');
    assert.equal(getVolume(`pvc-${uids.get(row.name)}`), undefined, `${row.name}: no PV`);
  }

  for (const row of CLAIM_ROWS) {
    it(`claim ${row.name}: ${row.why}`, { todo: row.knownBug }, async () => {
      if ('bound' in row.expect) await assertBoundInside(row.name);
      else if ('refused' in row.expect) await assertRefused(row, row.expect.refused);
      else {
        const outcome = await waitFor(`claim ${row.name} Bound or refused`, () =>
          getClaim(row.name)?.status?.phase === 'Bound'
            ? 'bound'
            : ourEvents(row.name).some((e) => e.reason === 'ProvisioningFailed')
              ? 'refused'
              : undefined,
        );
        if (outcome === 'bound') await assertBoundInside(row.name);
      }
    });
  }

  for (const row of REJECTED_ROWS) {
    it(`the API refuses ${row.kind} ${row.name}: ${row.why}`, async () => {
      const resource: ApiResource =
        row.kind === 'claim' ? persistentVolumeClaims : row.kind === 'class' ? storageClasses : persistentVolumes;
      const err = await apiErrorOf(
        () => client.create(resource, row.body as never, row.kind === 'claim' ? { namespace: NS } : {}),
        isApiError,
      );
      assert.ok(row.codes.includes(err.code), `${row.name}: got ${err.code} ${err.reason}: ${err.message}`);
      assert.equal(err.status.kind, 'Status');
    });
  }

  it('event messages stay bounded (4 KiB) whatever the size of the tenant input', async () => {
    await waitFor(
      'refusal events',
      () => ourEvents('ann-huge-used').length > 0 && ourEvents('ann-path-too-long').length > 0,
    );
    const long = events()
      .filter((e) => (e.message ?? '').length > 4096)
      .map((e) => `${e.involvedObject.name}: ${e.message?.length}`);
    assert.deepEqual(long, []);
  });

  it('forged PVs naming our provisioner never make it delete or archive outside the roots or another volume', async () => {
    const good = await assertBoundInside('good-first');
    for (const row of CLAIM_ROWS.filter((r) =>
      ['pattern-no-pv-name', 'pattern-go-no-pv-name', 'in-sub'].includes(r.name),
    ))
      await assertBoundInside(row.name);
    const t = { shared, outside, nodes, goodPath: volumePath(good) ?? '' };
    const roots = { shared, nodes, outside };
    await fsp.mkdir(path.join(shared, 'legacy-leaf'));
    const forge = (row: (typeof FORGED_ROWS)[number]): PersistentVolume => ({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name: row.name,
        annotations: {
          'pv.kubernetes.io/provisioned-by': PROVISIONER,
          ...(row.base ? { [ANN_HOSTPATH_BASE_PATH]: roots[row.base] } : {}),
          ...(row.onDelete ? { [ANN_HOSTPATH_ON_DELETE]: row.onDelete } : {}),
        },
      },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'plain',
        hostPath: { path: row.path(t) },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: NS,
          name: `ghost-${row.name}`,
          uid: '00000000-dead-beef-0000-000000000000',
        },
      },
    });
    // Everything but the legacy leaf must be exactly as it was.
    const sharedBefore = await treeSnapshot(shared);
    for (const row of FORGED_ROWS) await client.create(persistentVolumes, forge(row));
    for (const row of FORGED_ROWS) {
      if (row.expect === 'deleted') {
        await waitFor(`${row.name} deleted`, () => !getVolume(row.name));
        await assert.rejects(fsp.lstat(row.path(t)), { code: 'ENOENT' });
        // Its class (on the shared path, no onDelete) applies the shared path's default: archive, as nfs-subdir does.
        const archived = path.join(path.dirname(row.path(t)), `archived-${path.basename(row.path(t))}`);
        assert.ok((await fsp.lstat(archived)).isDirectory(), `${row.name} is archived at ${archived}`);
        archivedDirs.add(archived);
        continue;
      }
      const ev = await waitFor(`VolumeFailedDelete on ${row.name}`, () =>
        ourEvents(row.name).find((e) => e.reason === 'VolumeFailedDelete'),
      );
      assert.equal(ev.type, 'Warning');
      assert.ok(getVolume(row.name), `${row.name} (${row.why}) is kept`);
    }
    // The root's own mtime moves with the legacy leaf's removal; records come and go in .kube-provisioner.
    const changed = diffSnapshots(sharedBefore, await treeSnapshot(shared)).filter(
      (d) => !d.includes('legacy-leaf') && !d.includes('.kube-provisioner') && !d.startsWith('changed .:'),
    );
    assert.deepEqual(changed, [], 'no volume directory was deleted, renamed or archived');
    assert.ok((await fsp.lstat(path.join(outside, 'victim', 'precious'))).isFile());
    for (const row of FORGED_ROWS) if (getVolume(row.name)) await client.delete(persistentVolumes, row.name);
  });

  it('stable names: a directory a live volume uses is refused naming it; its inside is refused too', async () => {
    await client.create(persistentVolumeClaims, claim('stable-a', NS, 'stable-dir', { annotations: { dir: 'app' } }), {
      namespace: NS,
    });
    const a = await assertBoundInside('stable-a');
    assert.equal(volumePath(a), path.join(shared, 'stable', 'app'));
    await client.create(persistentVolumeClaims, claim('stable-b', NS, 'stable-dir', { annotations: { dir: 'app' } }), {
      namespace: NS,
    });
    const ev = await waitFor('stable-b refused', () =>
      ourEvents('stable-b').find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.match(ev.message ?? '', new RegExp(`already the path of volume ${a.metadata.name}`));
    await client.create(
      persistentVolumeClaims,
      claim('stable-c', NS, 'stable-dir', { annotations: { dir: 'app/inner' } }),
      { namespace: NS },
    );
    const inner = await waitFor('stable-c refused', () =>
      ourEvents('stable-c').find((e) => e.reason === 'ProvisioningFailed'),
    );
    assert.match(inner.message ?? '', new RegExp(`inside the directory of volume ${a.metadata.name}`));
    for (const n of ['stable-b', 'stable-c']) await client.delete(persistentVolumeClaims, n, { namespace: NS });
  });

  it('live static PVs naming a directory in another spelling (BASE//x, BASE/./x, BASE/x/) block it, its inside and the leaf proof', async () => {
    const stable = path.join(shared, 'stable');
    const spellings: Array<[string, string, string]> = [
      ['victim1', `${stable}//victim1`, 'victim1'],
      ['victim2', `${stable}/./victim2`, 'victim2'],
      ['victim3', `${stable}/victim3/`, 'victim3/sub'],
    ];
    for (const [dir, spelled, asked] of spellings) {
      await fsp.mkdir(path.join(stable, dir), { recursive: true });
      await fsp.writeFile(path.join(stable, dir, 'owner-data'), 'not yours\n');
      await client.create(persistentVolumes, {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: `static-${dir}` },
        spec: {
          capacity: { storage: '1Mi' },
          accessModes: ['ReadWriteOnce'],
          persistentVolumeReclaimPolicy: 'Retain',
          storageClassName: 'manual',
          hostPath: { path: spelled },
        },
      });
      await client.create(
        persistentVolumeClaims,
        claim(`steal-${dir}`, NS, 'stable-dir', { annotations: { dir: asked } }),
        { namespace: NS },
      );
    }
    for (const [dir] of spellings) {
      const ev = await waitFor(`steal-${dir} refused`, () =>
        ourEvents(`steal-${dir}`).find((e) => e.reason === 'ProvisioningFailed'),
      );
      assert.match(ev.message ?? '', new RegExp(`volume static-${dir}`), `steal-${dir}`);
    }
    // A released volume of ours with no record at that directory: the leaf proof sees the live static PV.
    await client.create(persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: {
        name: 'leaf-victim1',
        annotations: { 'pv.kubernetes.io/provisioned-by': PROVISIONER, [ANN_HOSTPATH_ON_DELETE]: 'delete' },
      },
      spec: {
        capacity: { storage: '1Mi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Delete',
        storageClassName: 'plain',
        hostPath: { path: path.join(stable, 'victim1') },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: NS,
          name: 'ghost-leaf',
          uid: '00000000-dead-beef-0000-00000000beef',
        },
      },
    });
    await waitFor('VolumeFailedDelete on leaf-victim1', () =>
      ourEvents('leaf-victim1').find(
        (e) => e.reason === 'VolumeFailedDelete' && /static-victim1/.test(e.message ?? ''),
      ),
    );
    for (const [dir] of spellings)
      assert.equal(await fsp.readFile(path.join(stable, dir, 'owner-data'), 'utf8'), 'not yours\n');
    // The released volume goes first: once the static PV is gone, its retried delete would rightly succeed.
    await client.delete(persistentVolumes, 'leaf-victim1');
    await waitFor('leaf PV gone', () => !volumes().some((v) => v.metadata.name === 'leaf-victim1'));
    for (const [dir] of spellings) {
      await client.delete(persistentVolumeClaims, `steal-${dir}`, { namespace: NS });
      await client.delete(persistentVolumes, `static-${dir}`);
    }
    await waitFor('static PVs gone', () => !volumes().some((v) => /^static-victim/.test(v.metadata.name ?? '')));
    for (const [dir] of spellings) await fsp.rm(path.join(stable, dir), { recursive: true, force: true });
  });

  it('a claim whose class appears later is provisioned once the class exists', async () => {
    await client.create(persistentVolumeClaims, claim('class-late', NS, 'late'), { namespace: NS });
    await waitFor('the binder reports the missing class', () =>
      eventsOf(events(), 'class-late').some((e) => /not found/.test(e.message ?? '')),
    );
    assert.equal(ourEvents('class-late').length, 0, 'the provisioner had nothing to say before the class existed');
    await client.create(storageClasses, storageClass('late', PROVISIONER));
    await assertBoundInside('class-late');
  });

  it('a class fixed mid-flight (deleted and recreated) retries the refused claim at once', async () => {
    await client.create(
      storageClasses,
      storageClass('midflight', PROVISIONER, { parameters: { pathPattern: '../${.PV.name}' } }),
    );
    await client.create(persistentVolumeClaims, claim('class-midflight', NS, 'midflight'), { namespace: NS });
    await waitFor('refused with the bad class', () =>
      ourEvents('class-midflight').some((e) => e.reason === 'ProvisioningFailed'),
    );
    await client.delete(storageClasses, 'midflight');
    await client.create(
      storageClasses,
      storageClass('midflight', PROVISIONER, { parameters: { pathPattern: 'fixed/${.PV.name}' } }),
    );
    // retry.infeasibleDelayMs is 10 minutes: only the class change can make this happen within the wait.
    const pv = await assertBoundInside('class-midflight');
    assert.ok(volumePath(pv)?.startsWith(`${shared}/fixed/`));
  });

  it('invalid configuration reloads are refused; the last good configuration keeps serving', async () => {
    const good = source.current();
    const bad: Array<[string, string]> = [
      ['relative path', JSON.stringify({ sharedFileSystemPath: '../etc' })],
      ['the filesystem root', JSON.stringify({ sharedFileSystemPath: '/' })],
      ['nested paths', JSON.stringify({ nodePathMap: [{ node: DEFAULT_NODE, paths: [shared, `${shared}/inner`] }] })],
      ['a base path that is a symlink', JSON.stringify({ sharedFileSystemPath: path.join(shared, 'linked') })],
      ['a base path that is a file', JSON.stringify({ sharedFileSystemPath: path.join(outside, 'etc', 'passwd') })],
      ['not JSON or YAML', '{"sharedFileSystemPath": '],
      ['unknown key', JSON.stringify({ sharedFileSystemPath: shared, helperPod: 'evil' })],
      ['negative capacity', JSON.stringify({ sharedFileSystemPath: { path: shared, capacity: '-1Gi' } })],
      ['a NUL in a path', JSON.stringify({ sharedFileSystemPath: `${shared}/a\u0000b` })],
    ];
    for (const [why, text] of bad) {
      const seen = invalidConfigs.length;
      await fsp.writeFile(configFile, text);
      await waitFor(`the reload of ${why} is refused`, () => invalidConfigs.length > seen);
      assert.deepEqual(source.current(), good, why);
    }
    await fsp.writeFile(configFile, JSON.stringify(goodConfig()));
  });

  it('a symlink swapped in and out of a parent while claims are provisioned never lets a write escape', async () => {
    await client.create(
      storageClasses,
      storageClass('race', PROVISIONER, { parameters: { pathPattern: '${.PVC.annotations.dir}/${.PV.name}' } }),
    );
    const race = path.join(raceRoot, 'swap');
    const stash = path.join(raceRoot, 'stash');
    let swapping = true;
    let swaps = 0;
    const swapper = (async () => {
      while (swapping) {
        // Real directory -> symlink to outside -> real directory again, as fast as the event loop allows.
        await fsp.rename(race, stash).catch(() => {});
        await fsp.symlink(path.join(outside, 'swap-target'), race).catch(() => {});
        await new Promise((r) => setImmediate(r));
        await fsp.unlink(race).catch(() => {});
        await fsp.rename(stash, race).catch(() => {});
        await fsp.mkdir(race).catch(() => {});
        swaps++;
        await new Promise((r) => setImmediate(r));
      }
    })();
    const names = Array.from({ length: 8 }, (_, i) => `race-${i}`);
    try {
      for (const name of names)
        await client.create(persistentVolumeClaims, claim(name, NS, 'race', { annotations: { dir: 'swap' } }), {
          namespace: NS,
        });
      await waitFor(
        'every racing claim Bound or refused',
        () =>
          names.every(
            (n) =>
              getClaim(n)?.status?.phase === 'Bound' || ourEvents(n).some((e) => e.reason === 'ProvisioningFailed'),
          ),
        20_000,
      );
    } finally {
      swapping = false;
      await swapper;
    }
    assert.ok(swaps > 0);
    // The only proof that matters here: nothing appeared in (or vanished from) the symlink's target.
    assert.deepEqual(diffSnapshots(outsideBefore, await treeSnapshot(outside)), []);
  });

  it('a parent swapped for a symlink before delete: the delete is refused, then completes once the path is sane', async () => {
    await client.create(
      persistentVolumeClaims,
      claim('swap-on-delete', NS, 'by-annotation', { annotations: { dir: 'victimparent' } }),
      { namespace: NS },
    );
    const pv = await assertBoundInside('swap-on-delete');
    const pvName = pv.metadata.name ?? '';
    const parent = path.join(shared, 'victimparent');
    const decoy = path.join(tmp, 'decoy');
    await fsp.mkdir(path.join(decoy, pvName), { recursive: true });
    await fsp.writeFile(path.join(decoy, pvName, 'precious'), 'keep me\n');
    const decoyBefore = await treeSnapshot(decoy);
    await fsp.rename(parent, `${parent}.moved`);
    await fsp.symlink(decoy, parent);
    await client.delete(persistentVolumeClaims, 'swap-on-delete', { namespace: NS });
    await waitFor('VolumeFailedDelete', () =>
      ourEvents(pvName).find((e) => e.reason === 'VolumeFailedDelete' && /symlink/.test(e.message ?? '')),
    );
    assert.deepEqual(diffSnapshots(decoyBefore, await treeSnapshot(decoy)), [], 'the symlink target is untouched');
    await fsp.unlink(parent);
    await fsp.rename(`${parent}.moved`, parent);
    await waitFor('PV deleted after the retry', () => !getVolume(pvName), 20_000);
    await assert.rejects(fsp.lstat(path.join(parent, pvName)), { code: 'ENOENT' });
    assert.ok(
      (await fsp.lstat(path.join(parent, `archived-${pvName}`))).isDirectory(),
      'a shared root archives by default',
    );
    archivedDirs.add(path.join(parent, `archived-${pvName}`));
    await fsp.rm(decoy, { recursive: true });
  });

  it('teardown: a parent swapped for a symlink never reaches the script; once sane, the script gets the real directory', async () => {
    await client.create(
      storageClasses,
      storageClass('teardown', PROVISIONER, {
        parameters: { pathPattern: '${.PVC.annotations.dir}/${.PV.name}', onDelete: 'delete' },
      }),
    );
    await client.create(
      persistentVolumeClaims,
      claim('torn-down', NS, 'teardown', { annotations: { dir: 'teardownparent' } }),
      { namespace: NS },
    );
    const pv = await assertBoundInside('torn-down');
    const pvName = pv.metadata.name ?? '';
    const parent = path.join(shared, 'teardownparent');
    const decoy = path.join(tmp, 'decoy-teardown');
    await fsp.mkdir(path.join(decoy, pvName), { recursive: true });
    await fsp.writeFile(path.join(decoy, pvName, 'precious'), 'keep me\n');
    const decoyBefore = await treeSnapshot(decoy);
    await fsp.rename(parent, `${parent}.moved`);
    await fsp.symlink(decoy, parent);
    await client.delete(persistentVolumeClaims, 'torn-down', { namespace: NS });
    await waitFor('VolumeFailedDelete', () =>
      ourEvents(pvName).find((e) => e.reason === 'VolumeFailedDelete' && /symlink/.test(e.message ?? '')),
    );
    assert.deepEqual(diffSnapshots(decoyBefore, await treeSnapshot(decoy)), [], 'the symlink target is untouched');
    assert.ok(
      !(await fsp.readFile(teardownLog, 'utf8')).includes(pvName),
      'the script never ran on the symlinked path',
    );
    await fsp.unlink(parent);
    await fsp.rename(`${parent}.moved`, parent);
    await waitFor('PV deleted after the retry', () => !getVolume(pvName), 20_000);
    assert.ok(
      (await fsp.readFile(teardownLog, 'utf8')).split('\n').includes(path.join(parent, pvName)),
      'the script ran on the real directory',
    );
    await assert.rejects(fsp.lstat(path.join(parent, pvName)), { code: 'ENOENT' });
    await fsp.rm(decoy, { recursive: true });
  });

  it('afterwards: the controller still serves, nothing outside the roots changed, nothing half-created', async () => {
    await client.create(storageClasses, storageClass('final', PROVISIONER));
    await client.create(persistentVolumeClaims, claim('good-last', NS, 'final'), { namespace: NS });
    await assertBoundInside('good-last');
    await waitFor('forged PVs gone', () => !volumes().some((v) => v.metadata.name?.startsWith('forged-')));
    // The known-bug rows may still be churning (create, fail, clean up): delete them and let the cleanup finish.
    for (const row of CLAIM_ROWS.filter((r) => r.knownBug))
      await client.delete(persistentVolumeClaims, row.name, { namespace: NS });
    await waitFor('known-bug claims gone', () => CLAIM_ROWS.every((r) => !r.knownBug || !getClaim(r.name)));
    await waitFor(
      'node root settled',
      async () => (await directoriesBelow(nodes)).length === expectedDirectories(nodes, volumes()).size,
    );

    assert.deepEqual(diffSnapshots(outsideBefore, await treeSnapshot(outside)), [], 'outside tree unchanged');
    assert.deepEqual((await fsp.readdir(tmp)).sort(), tmpEntriesBefore, 'no new entries next to the roots');
    const live = volumes().filter((v) => volumePath(v)?.startsWith(`${shared}/`));
    // Directories of deleted volumes' parents stay (only the volume directory itself is removed).
    const allowed = expectedDirectories(shared, live);
    allowed.add(path.join(shared, 'victimparent'));
    allowed.add(path.join(shared, 'teardownparent'));
    for (const d of archivedDirs) allowed.add(d);
    const unexpected = (await directoriesBelow(shared)).filter((d) => !allowed.has(d));
    assert.deepEqual(unexpected, [], 'every directory in the shared root belongs to a live PV');
    assert.deepEqual(
      await volumeRecords(shared),
      live.map((v) => v.metadata.name ?? '').sort(),
      'one record per live PV, no stale ones',
    );
    for (const pv of live)
      assert.ok((await fsp.lstat(volumePath(pv) ?? '')).isDirectory(), `${pv.metadata.name} has its directory`);
    assert.deepEqual(
      await directoriesBelow(nodes),
      expectedDirectories(nodes, volumes()).size ? [...expectedDirectories(nodes, volumes())].sort() : [],
    );
    // The teardown script only ever saw volume directories strictly inside a root, never a live volume's.
    const tornDown = (await fsp.readFile(teardownLog, 'utf8')).split('\n').filter(Boolean);
    assert.ok(tornDown.length > 0, 'some volumes were deleted through the teardown script');
    const livePaths = new Set(volumes().map((v) => volumePath(v)));
    for (const d of tornDown) {
      assert.ok(
        [shared, nodes, raceRoot].some((r) => d.startsWith(`${r}/`) && path.normalize(d) === d),
        `teardown got ${JSON.stringify(d)}`,
      );
      assert.ok(!livePaths.has(d), `teardown ran on the live volume directory ${d}`);
    }
  });
});
