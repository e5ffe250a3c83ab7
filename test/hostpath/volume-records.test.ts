// Volume records: a PV name too long for a file name is stored under a hashed name that no PV name can be (so a
// PV named exactly that hash never shares the long-named PV's record), and records written by older versions
// (hashed names without the prefix) are still read.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { readVolumeRecord, recordFileName, recordsDir } from '../../src/hostpath/records/volume-records.ts';
import { claim, storageClass, tempTree, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-records-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

// A valid DNS subdomain of 251 characters (labels of at most 63).
const LONG_NAME = Array.from({ length: 4 }, (_, i) => `${String.fromCharCode(97 + i)}${'x'.repeat(61)}`).join('.');
const HASH_NAME = createHash('sha256').update(LONG_NAME).digest('hex');

test('a PV named like the hash of a long PV name has a record of its own', async () => {
  assert.ok(LONG_NAME.length > 240 && LONG_NAME.length <= 253);
  const root = path.join(tmp, 'collide');
  await fsp.mkdir(root);
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
  const sc = storageClass('s', { pathPattern: '${.PV.name}' });
  const long = claim({ name: 'long', modes: ['ReadWriteMany'] });
  const hashed = claim({ name: 'hashed', modes: ['ReadWriteMany'] });
  await p.provision({ claim: long, storageClass: sc, pvName: LONG_NAME }, signal());
  const { volume } = await p.provision({ claim: hashed, storageClass: sc, pvName: HASH_NAME }, signal());
  assert.equal((await readVolumeRecord(root, LONG_NAME))?.pvName, LONG_NAME);
  assert.equal((await readVolumeRecord(root, LONG_NAME))?.claimUid, long.metadata.uid);
  assert.equal((await readVolumeRecord(root, HASH_NAME))?.pvName, HASH_NAME);
  // Deleting the short-named volume leaves the long-named one's record alone.
  volume.spec.claimRef = { namespace: 'team-a', name: 'hashed', uid: hashed.metadata.uid };
  await p.delete(volume, signal());
  assert.equal((await readVolumeRecord(root, LONG_NAME))?.pvName, LONG_NAME);
  assert.equal(await readVolumeRecord(root, HASH_NAME), undefined);
});

test("an older version's <hex>.json record of a long PV name is moved aside before a PV named <hex> writes its own", async () => {
  const root = path.join(tmp, 'legacy');
  await fsp.mkdir(root);
  const config = validateHostPathConfig({ sharedFileSystemPath: root });
  const sc = storageClass('s', { pathPattern: '${.PV.name}' });
  const long = claim({ name: 'long', modes: ['ReadWriteMany'] });
  const { volume: longVolume } = await new HostPathProvisioner({ config }).provision(
    { claim: long, storageClass: sc, pvName: LONG_NAME },
    signal(),
  );
  // As an older version named it: the bare hash.
  const dir = recordsDir(root);
  await fsp.rename(path.join(dir, recordFileName(LONG_NAME)), path.join(dir, `${HASH_NAME}.json`));
  assert.equal((await readVolumeRecord(root, LONG_NAME))?.pvName, LONG_NAME, 'the older file is read');

  const p = new HostPathProvisioner({ config });
  const hashed = claim({ name: 'hashed', modes: ['ReadWriteMany'] });
  const { volume } = await p.provision({ claim: hashed, storageClass: sc, pvName: HASH_NAME }, signal());
  const longRecord = await readVolumeRecord(root, LONG_NAME);
  assert.equal(longRecord?.pvName, LONG_NAME, "the long-named PV's record survives");
  assert.equal(longRecord?.claimUid, long.metadata.uid);
  assert.equal(
    (JSON.parse(await fsp.readFile(path.join(dir, recordFileName(LONG_NAME)), 'utf8')) as { pvName: string }).pvName,
    LONG_NAME,
    'under its hashed name',
  );
  assert.equal((await readVolumeRecord(root, HASH_NAME))?.claimUid, hashed.metadata.uid, 'and <hex>.json is its own');
  // Each delete takes its own record only.
  volume.spec.claimRef = { namespace: 'team-a', name: 'hashed', uid: hashed.metadata.uid };
  await p.delete(volume, signal());
  assert.equal((await readVolumeRecord(root, LONG_NAME))?.pvName, LONG_NAME);
  longVolume.spec.claimRef = { namespace: 'team-a', name: 'long', uid: long.metadata.uid };
  await p.delete(longVolume, signal());
  assert.deepEqual(
    (await fsp.readdir(dir)).filter((n) => n.endsWith('.json')),
    [],
    'no record left',
  );
});
