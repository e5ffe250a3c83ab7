// Path claims between instances sharing a base path (replicas of a shared Deployment): each sees what the other
// just claimed at, above or below its directory through a bounded number of lookups, without knowing the other's
// PVs or reading every record. Records older versions wrote get their claim when a base path is loaded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { claimPath, findConflictingClaim, readPathClaim, releasePath } from '../../src/hostpath/records/path-claims.ts';
import { claim, storageClass, provisionOptions, tempTree, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-claims-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function base(name: string): Promise<string> {
  const b = path.join(tmp, name);
  await fsp.mkdir(path.join(b, '.kube-provisioner'), { recursive: true });
  return b;
}

test('a path is claimed once; its ancestors and descendants conflict; a release frees it', async () => {
  const b = await base('unit');
  assert.equal(await claimPath(b, { pvName: 'a', claimUid: 'u-a', relativePath: 'ns/app' }), undefined);
  assert.equal(
    await claimPath(b, { pvName: 'a', claimUid: 'u-a', relativePath: 'ns/app' }),
    undefined,
    'a retry of the same volume',
  );
  assert.equal((await claimPath(b, { pvName: 'b', relativePath: 'ns/app' }))?.pvName, 'a', 'held by a');
  assert.equal((await findConflictingClaim(b, 'ns', 'c'))?.pvName, 'a', 'below ns');
  assert.equal((await findConflictingClaim(b, 'ns/app/data', 'c'))?.pvName, 'a', 'above ns/app/data');
  assert.equal(await findConflictingClaim(b, 'ns/other', 'c'), undefined);
  assert.equal(await findConflictingClaim(b, 'ns/app', 'a'), undefined, 'its own claim is no conflict');
  await releasePath(b, 'ns/app', 'b');
  assert.equal((await readPathClaim(b, 'ns/app'))?.pvName, 'a', "another volume's release leaves it alone");
  await releasePath(b, 'ns/app', 'a');
  assert.equal(await readPathClaim(b, 'ns/app'), undefined);
  assert.equal(await findConflictingClaim(b, 'ns', 'c'), undefined, 'markers gone with the claim');
  assert.deepEqual(
    await fsp.readdir(path.join(b, '.kube-provisioner', 'below')),
    [],
    'empty marker directories removed',
  );
});

test('a marker whose claim is gone (a crash between the writes) is forgotten when met', async () => {
  const b = await base('stale');
  await claimPath(b, { pvName: 'a', relativePath: 'x/y' });
  const claims = path.join(b, '.kube-provisioner', 'paths');
  for (const f of await fsp.readdir(claims)) await fsp.rm(path.join(claims, f));
  assert.equal(await findConflictingClaim(b, 'x', 'c'), undefined);
  const below = path.join(b, '.kube-provisioner', 'below');
  const [dir] = await fsp.readdir(below);
  assert.deepEqual(await fsp.readdir(path.join(below, dir)), [], 'the stale marker was removed');
});

test("two instances on one base path (neither sees the other's PVs): a stable directory, its parent and its inside go to one volume", async () => {
  const root = path.join(tmp, 'replicas');
  await fsp.mkdir(root);
  const config = validateHostPathConfig({ sharedFileSystemPath: root });
  const one = new HostPathProvisioner({ config });
  const two = new HostPathProvisioner({ config });
  const sc = (pattern: string) => storageClass('stable', { pathPattern: pattern });
  const o = (name: string, pattern: string) =>
    provisionOptions(claim({ name, namespace: 'team', modes: ['ReadWriteMany'] }), sc(pattern));
  // Both have loaded the (empty) base path: what one writes next is known to the other only through the disk.
  await one.listVolumes(signal());
  await two.listVolumes(signal());
  const results = await Promise.allSettled([
    one.provision(o('data', '${.PVC.namespace}/${.PVC.name}'), signal()),
    two.provision(o('data', '${.PVC.namespace}/${.PVC.name}'), signal()),
  ]);
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'exactly one instance got team/data');
  const refusal = results.find((r) => r.status === 'rejected');
  assert.match(String((refusal as PromiseRejectedResult).reason), /team\/data/);
  // The loser's view of the base path has no PV and no memory of the winner's record: only the claims tell.
  const loser = results[0].status === 'rejected' ? one : two;
  await assert.rejects(
    loser.provision(o('parent', '${.PVC.namespace}'), signal()),
    /overlaps the directory .*team\/data/,
  );
  await assert.rejects(
    loser.provision(o('inside', '${.PVC.namespace}/data/${.PVC.name}'), signal()),
    /overlaps the directory .*team\/data/,
  );
  assert.deepEqual((await fsp.readdir(root)).sort(), ['.kube-provisioner', 'team']);
  assert.deepEqual(await fsp.readdir(path.join(root, 'team')), ['data']);
});

test('records an older version wrote (no claims) get their claims when a base path is loaded', async () => {
  const root = path.join(tmp, 'legacy');
  await fsp.mkdir(path.join(root, '.kube-provisioner', 'volumes'), { recursive: true });
  await fsp.mkdir(path.join(root, 'team', 'old'), { recursive: true });
  await fsp.writeFile(
    path.join(root, '.kube-provisioner', 'volumes', 'old-pv.json'),
    JSON.stringify({
      pvName: 'old-pv',
      claimUid: 'u-old',
      relativePath: 'team/old',
      bytes: '1024',
      scope: '',
      createdAt: '2025-01-01T00:00:00Z',
    }),
  );
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
  assert.deepEqual(
    (await p.listVolumes(signal())).map((v) => v.name),
    ['old-pv'],
  );
  assert.deepEqual(await readPathClaim(root, 'team/old'), {
    pvName: 'old-pv',
    claimUid: 'u-old',
    relativePath: 'team/old',
  });
  assert.equal((await findConflictingClaim(root, 'team', 'other'))?.pvName, 'old-pv');
});
