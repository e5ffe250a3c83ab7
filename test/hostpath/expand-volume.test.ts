// HostPathProvisioner.expand() on real directories: the ledger and the record carry the new size, asking again for
// the same size changes nothing, a growth the base path cannot hold is infeasible and allocates nothing, archived
// or deleting volumes are refused, and in daemonset mode only the volume's node expands it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { InfeasibleError, IgnoredError } from '../../src/controller/provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { readVolumeRecord, recordFileName, recordsDir } from '../../src/hostpath/records/volume-records.ts';
import { VolumeIdentityError } from '../../src/hostpath/delete/delete-identity.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, provisionOptions, signal, storageClass, tempTree } from './provisioner-helpers.ts';

const MI = 1024n * 1024n;
let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-expand-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

test('expand: ledger and record grow; same size again is a no-op; over budget is infeasible', async () => {
  const base = path.join(tmp, 'budget');
  await fsp.mkdir(base);
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: { path: base, capacity: '10Mi' } }),
  });
  const sc = storageClass('shared');
  const { volume: a } = await p.provision(
    provisionOptions(claim({ size: '2Mi', modes: ['ReadWriteMany'] }), sc),
    signal(),
  );
  const { volume: b } = await p.provision(
    provisionOptions(claim({ size: '2Mi', modes: ['ReadWriteMany'] }), sc),
    signal(),
  );
  const allocated = () => p.allocations().find((x) => x.basePath === base)?.allocated;
  assert.deepEqual(await p.expand(a, '5Mi', signal()), { capacity: '5Mi' });
  assert.equal(allocated(), 7n * MI);
  assert.equal((await readVolumeRecord(base, a.metadata.name ?? ''))?.bytes, String(5n * MI));
  assert.deepEqual(await p.expand(a, '5Mi', signal()), { capacity: '5Mi' }, 'idempotent');
  assert.equal(allocated(), 7n * MI, 'counted once');
  await assert.rejects(
    p.expand(b, '6Mi', signal()),
    (e: unknown) => e instanceof InfeasibleError && /cannot hold 6Mi/.test(e.message),
  );
  assert.equal(allocated(), 7n * MI, 'a refused growth allocates nothing');
  assert.equal((await readVolumeRecord(base, b.metadata.name ?? ''))?.bytes, String(2n * MI));
  assert.deepEqual(await p.expand(b, '5Mi', signal()), { capacity: '5Mi' }, 'exactly the rest fits');
  assert.equal(allocated(), 10n * MI);
});

test('after a crash between expand and the PV write, a new instance counts the grown size (record) over the PV', async () => {
  const base = path.join(tmp, 'restart');
  await fsp.mkdir(base);
  const config = validateHostPathConfig({ sharedFileSystemPath: { path: base, capacity: '10Mi' } });
  const sc = storageClass('shared');
  const first = new HostPathProvisioner({ config });
  const { volume } = await first.provision(
    provisionOptions(claim({ size: '2Mi', modes: ['ReadWriteMany'] }), sc),
    signal(),
  );
  await first.expand(volume, '6Mi', signal()); // the PV still says 2Mi: its write never happened
  const second = new HostPathProvisioner({ config, knownVolumes: () => [volume] });
  // 6Mi (record) + 4Mi fits 10Mi; 5Mi would not, whatever the stale PV says.
  await assert.rejects(
    second.provision(provisionOptions(claim({ size: '5Mi', modes: ['ReadWriteMany'] }), sc), signal()),
    InfeasibleError,
  );
  assert.equal(second.allocations().find((x) => x.basePath === base)?.allocated, 6n * MI);
  assert.deepEqual(await second.expand(volume, '6Mi', signal()), { capacity: '6Mi' }, 'the repeated expand is a no-op');
  assert.equal(second.allocations().find((x) => x.basePath === base)?.allocated, 6n * MI);
  second.rebuildFromVolumes([{ ...volume, spec: { ...volume.spec, capacity: { storage: '6Mi' } } }]);
  assert.equal(second.allocations().find((x) => x.basePath === base)?.allocated, 6n * MI);
});

test('expand refuses archived (directory gone), released and deleting volumes', async () => {
  const base = path.join(tmp, 'refuse');
  await fsp.mkdir(base);
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: base }) });
  const { volume } = await p.provision(
    provisionOptions(claim({ size: '1Mi', modes: ['ReadWriteMany'] }), storageClass('shared')),
    signal(),
  );
  await assert.rejects(p.expand({ ...volume, status: { phase: 'Released' } }, '2Mi', signal()), InfeasibleError);
  await assert.rejects(
    p.expand(
      { ...volume, metadata: { ...volume.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } },
      '2Mi',
      signal(),
    ),
    InfeasibleError,
  );
  const dir = volume.spec.hostPath?.path ?? '';
  await fsp.rename(dir, `${dir}-archived`);
  await assert.rejects(
    p.expand(volume, '2Mi', signal()),
    (e: unknown) => e instanceof InfeasibleError && /is gone/.test(e.message),
  );
});

test("daemonset mode: only the volume's node expands it", async () => {
  const base = path.join(tmp, 'nodes');
  await fsp.mkdir(path.join(base, 'n1'), { recursive: true });
  await fsp.mkdir(path.join(base, 'n2'));
  const config = validateHostPathConfig({
    nodePathMap: [
      { node: 'n1', paths: [`${base}/n1`] },
      { node: 'n2', paths: [`${base}/n2`] },
    ],
  });
  const p1 = new HostPathProvisioner({ config, mode: 'daemonset', nodeName: 'n1' });
  const p2 = new HostPathProvisioner({ config, mode: 'daemonset', nodeName: 'n2' });
  const { volume } = await p1.provision(
    provisionOptions(claim({ node: 'n1', size: '1Mi' }), storageClass('ds')),
    signal(),
  );
  assert.equal(p1.shouldExpand(volume), true);
  assert.equal(p2.shouldExpand(volume), false);
  await assert.rejects(p2.expand(volume, '2Mi', signal()), IgnoredError);
  assert.deepEqual(await p1.expand(volume, '2Mi', signal()), { capacity: '2Mi' });
});

test('expansion keeps the claim uid in the record: a Retain PV expanded, deleted by hand and re-created under its name for another claim keeps its directory', async () => {
  const base = path.join(tmp, 'keep-uid');
  await fsp.mkdir(base);
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: base }) });
  const o = provisionOptions(
    claim({ size: '1Mi', modes: ['ReadWriteMany'] }),
    storageClass('retained', { onDelete: 'delete' }, 'Retain'),
  );
  const { volume } = await p.provision(o, signal());
  volume.spec.claimRef = { namespace: 'team-a', name: o.claim.metadata.name ?? '', uid: o.claim.metadata.uid };
  await fsp.writeFile(path.join(volume.spec.hostPath?.path ?? '', 'data'), 'retained data');
  await p.expand({ ...volume, status: { phase: 'Bound' } }, '2Mi', signal());
  const record = await readVolumeRecord(base, volume.metadata.name ?? '');
  assert.equal(record?.claimUid, o.claim.metadata.uid, 'the record still names the claim');
  assert.equal(record?.bytes, String(2n * MI), 'and carries the new size');
  await recreatedForAnotherClaimIsRefused(p, volume);
});

/**
 * The Retain PV is deleted by hand (the provisioner is not asked: the record stays), then re-created under the same
 * name for another claim with the Delete policy, and released: its delete is refused and the retained data stays.
 */
async function recreatedForAnotherClaimIsRefused(p: HostPathProvisioner, volume: PersistentVolume): Promise<void> {
  const recreated = structuredClone(volume);
  recreated.spec.persistentVolumeReclaimPolicy = 'Delete';
  recreated.spec.claimRef = { namespace: 'team-b', name: 'other', uid: '99999999-0000-0000-0000-000000000000' };
  recreated.status = { phase: 'Released' };
  await assert.rejects(
    p.delete(recreated, signal()),
    (e: unknown) => e instanceof VolumeIdentityError && e.rule === 'record-mismatch',
  );
  assert.equal(await fsp.readFile(path.join(volume.spec.hostPath?.path ?? '', 'data'), 'utf8'), 'retained data');
}

test("an older record without a claim uid gets the bound claim's uid from an expansion (also one to the same size)", async () => {
  const base = path.join(tmp, 'add-uid');
  await fsp.mkdir(base);
  const config = validateHostPathConfig({ sharedFileSystemPath: base });
  const first = new HostPathProvisioner({ config });
  const sc = storageClass('retained', { onDelete: 'delete' }, 'Retain');
  const bound = async () => {
    const o = provisionOptions(claim({ size: '1Mi', modes: ['ReadWriteMany'] }), sc);
    const { volume } = await first.provision(o, signal());
    volume.spec.claimRef = { namespace: 'team-a', name: o.claim.metadata.name ?? '', uid: o.claim.metadata.uid };
    volume.status = { phase: 'Bound' };
    // As an older version wrote it: no claim uid.
    const name = volume.metadata.name ?? '';
    const { claimUid, ...older } = (await readVolumeRecord(base, name)) ?? assert.fail('no record');
    assert.equal(claimUid, o.claim.metadata.uid);
    await fsp.writeFile(path.join(recordsDir(base), recordFileName(name)), JSON.stringify(older));
    return { volume, uid: o.claim.metadata.uid };
  };
  const grown = await bound();
  const same = await bound();
  const p = new HostPathProvisioner({ config });
  assert.deepEqual(await p.expand(grown.volume, '2Mi', signal()), { capacity: '2Mi' });
  const record = await readVolumeRecord(base, grown.volume.metadata.name ?? '');
  assert.equal(record?.claimUid, grown.uid, 'the expanded record names the bound claim');
  assert.equal(record?.bytes, String(2n * MI));
  assert.deepEqual(await p.expand(same.volume, '1Mi', signal()), { capacity: '1Mi' });
  assert.equal((await readVolumeRecord(base, same.volume.metadata.name ?? ''))?.claimUid, same.uid);
  // Now the record proves the claim: a PV re-created under its name for another claim does not get the directory.
  await fsp.writeFile(path.join(grown.volume.spec.hostPath?.path ?? '', 'data'), 'retained data');
  await recreatedForAnotherClaimIsRefused(p, grown.volume);
});
