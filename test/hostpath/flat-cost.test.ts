// Cost that stays flat: a provision, an expansion, a delete proven by its record and a delete proven as a leaf
// (an adopted volume) make exactly the same filesystem calls and API requests with 10 and with 1,000 existing
// volumes. Counted through the injected HostFs and the injected API functions (no clock decides this test): a
// provisioner that reads every record per claim, or lists every PV, makes more calls at 1,000. A provision's calls
// (with the free-space reading `dev` asks for, and the identity read its new PV's event schedules) are also held
// under a budget, call by call: one more filesystem call per claim fails it (docs/benchmarks.md says why each
// call is there).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { filesystemFreeBytes } from '../../src/hostpath/provision/free-space.ts';
import {
  ANN_HOSTPATH_BASE_PATH,
  ANN_HOSTPATH_KIND,
  ANN_HOSTPATH_ON_DELETE,
} from '../../src/hostpath/volume/volume-spec.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { claim, storageClass, provisionOptions, tempTree, signal } from './provisioner-helpers.ts';
import { CountingFs, FakeVolumeFeed } from './cost-fixtures.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-flat-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const NAMESPACES = 7;

/**
 * What one provision may cost at most, by call (FileHandle calls as `handle.<method>`; `statfs`, the freeSpace
 * reading, is made once a second, and the clock stands still here), with its PV's identity read: the count after
 * issue 21's trimming (docs/benchmarks.md).
 */
const PROVISION_BUDGET: Record<string, number> = {
  'handle.chmod': 1,
  'handle.close': 4,
  'handle.stat': 3,
  lstat: 2,
  mkdir: 1,
  open: 4,
  opendir: 1,
  readFile: 1,
  rename: 1,
  writeFile: 3,
};

function volumeAt(root: string, name: string, dir: string, claimUid: string, ours = true): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      annotations: ours
        ? { [ANN_HOSTPATH_BASE_PATH]: root, [ANN_HOSTPATH_KIND]: 'shared', [ANN_HOSTPATH_ON_DELETE]: 'delete' }
        : {},
    },
    spec: {
      capacity: { storage: '1Mi' },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'flat',
      hostPath: { path: dir },
      claimRef: { namespace: 'team-0', name: name, uid: claimUid },
    },
    status: { phase: 'Bound' },
  };
}

/**
 * A base path holding `n` volumes as an earlier run left them (directories, records, Bound PVs in the feed), plus
 * two adopted leaf volumes (a directory and a PV, no record), then the cost of each operation after a warm-up.
 */
async function costs(n: number): Promise<Record<string, Record<string, number>>> {
  const root = path.join(tmp, `n${n}`);
  const records = path.join(root, '.kube-provisioner', 'volumes');
  await fsp.mkdir(records, { recursive: true });
  const feed = new FakeVolumeFeed();
  for (let ns = 0; ns < NAMESPACES; ns++) await fsp.mkdir(path.join(root, `team-${ns}`));
  // Written as an older version left them (records without path claims), 50 at a time.
  for (let first = 0; first < n; first += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, n - first) }, async (_, k) => {
        const i = first + k;
        const rel = `team-${i % NAMESPACES}/vol-${i}`;
        await fsp.mkdir(path.join(root, rel));
        await fsp.writeFile(
          path.join(records, `vol-${i}.json`),
          JSON.stringify({
            pvName: `vol-${i}`,
            claimUid: `uid-${i}`,
            relativePath: rel,
            bytes: String(1024 * 1024),
            scope: '',
            createdAt: '2026-01-01T00:00:00.000Z',
          }),
        );
      }),
    );
  }
  for (let i = 0; i < n; i++)
    feed.put(volumeAt(root, `vol-${i}`, path.join(root, `team-${i % NAMESPACES}/vol-${i}`), `uid-${i}`));
  for (const name of ['legacy-warm', 'legacy-measured']) {
    await fsp.mkdir(path.join(root, 'adopted', name), { recursive: true });
    feed.put({
      ...volumeAt(root, name, path.join(root, 'adopted', name), `uid-${name}`, false),
      status: { phase: 'Released' },
    });
  }
  const counter = new CountingFs();
  const api = new Map<string, number>();
  const call = (what: string) => api.set(what, (api.get(what) ?? 0) + 1);
  const sc = storageClass('flat', { pathPattern: '${.PVC.namespace}/${.PVC.name}' });
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }),
    fs: { fs: counter.fs },
    volumeFeed: feed,
    getVolume: async (name) => {
      call('get volume');
      return feed.get(name);
    },
    storageClass: async () => {
      call('get class');
      return sc;
    },
    // `dev`'s free-space capacity (statfs), counted as a filesystem call; read once a second, and time stands still.
    clock: new TestClock(),
    freeSpace: (base) => {
      counter.count('statfs', base);
      return filesystemFreeBytes(base);
    },
  });

  const apiDuring = async (fn: () => Promise<unknown>) => {
    const before = new Map(api);
    const fs = await counter.during(fn);
    const requests = Object.fromEntries(
      [...api].filter(([k, v]) => v !== before.get(k)).map(([k, v]) => [`api ${k}`, v - (before.get(k) ?? 0)]),
    );
    return { ...fs, ...requests };
  };
  // One claim's life, as the controller drives it: provision, the PV appears, grows, is released and deleted.
  const life = async (claimName: string) => {
    const o = provisionOptions(
      claim({ name: claimName, namespace: 'team-0', size: '1Mi', modes: ['ReadWriteMany'] }),
      sc,
    );
    let pv: PersistentVolume | undefined;
    const provision = await apiDuring(async () => {
      const { volume } = await p.provision(o, signal());
      volume.spec.claimRef = { namespace: 'team-0', name: claimName, uid: o.claim.metadata.uid };
      pv = feed.put({ ...volume, status: { phase: 'Bound' } });
      // The new PV's event schedules the read of its directory's identity: part of what a provision costs.
      await p.settled();
    });
    const expand = await apiDuring(async () => {
      await p.expand(pv!, '2Mi', signal());
      pv = feed.put({ ...pv!, spec: { ...pv!.spec, capacity: { storage: '2Mi' } } });
    });
    const deleteByRecord = await apiDuring(async () => {
      pv = feed.put({ ...pv!, status: { phase: 'Released' } });
      await p.delete(pv, signal());
      feed.remove(pv.metadata.name ?? '');
    });
    return { provision, expand, deleteByRecord };
  };
  const adoptedDelete = (name: string) =>
    apiDuring(async () => {
      const pv = (await feed.get(name))!;
      await p.delete(pv, signal());
      feed.remove(name);
    });

  // Warm-up: the first operations load the base path's records once (and migrate older ones).
  await life('warm');
  await adoptedDelete('legacy-warm');
  const from = counter.trace.length;
  const measured = await life('measured');
  // What the provision did, call by call (the base path spelled <base>), for the reader of a failure.
  if (n === 10) console.log(counter.trace.slice(from).join('\n').replaceAll(root, '<base>'));
  const deleteAsLeaf = await adoptedDelete('legacy-measured');
  assert.equal(
    await fsp.lstat(path.join(root, 'adopted', 'legacy-measured')).catch(() => undefined),
    undefined,
    'the adopted leaf was deleted',
  );
  return { ...measured, deleteAsLeaf };
}

test('provision, expand and delete cost the same with 10 and with 1,000 existing volumes', async () => {
  const small = await costs(10);
  const large = await costs(1000);
  console.log(JSON.stringify(small, null, 1));
  for (const op of Object.keys(small)) {
    assert.ok(Object.keys(small[op]).length > 0, `${op} made filesystem calls (the facade is in use)`);
    assert.deepEqual(large[op], small[op], `${op}: calls with 1,000 existing volumes vs with 10`);
    assert.ok(!Object.keys(large[op]).some((k) => k.includes('list')), `${op} lists nothing`);
  }
  const over = Object.entries(large.provision).filter(([k, v]) => v > (PROVISION_BUDGET[k] ?? 0));
  assert.deepEqual(over, [], 'a provision makes no call beyond its budget');
  const total = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
  assert.ok(total(large.provision) <= total(PROVISION_BUDGET), 'a provision makes no more calls than its budget');
});
