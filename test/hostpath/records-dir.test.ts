// The records directory is walked to (never following a symlink) once; later record writes open it by its path and
// check it is still the directory the walk reached (device and inode), writing through the open directory. A
// `.kube-provisioner` or `volumes` swapped for a symlink after that is refused as before, and nothing is written
// where the symlink leads; once the path is sane again, records are written there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { readVolumeRecord } from '../../src/hostpath/records/volume-records.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { claim, storageClass, tempTree, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-records-dir-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

const sc = storageClass('s', { pathPattern: '${.PV.name}' });
const provision = (p: HostPathProvisioner, pvName: string) =>
  p.provision({ claim: claim({ name: pvName, modes: ['ReadWriteMany'] }), storageClass: sc, pvName }, signal());

for (const swapped of ['.kube-provisioner', '.kube-provisioner/volumes']) {
  test(`${swapped} swapped for a symlink after the first record: the next record is refused, nothing written outside`, async () => {
    const root = path.join(tmp, swapped.replaceAll('/', '-').replace(/^\./, ''));
    const outside = path.join(tmp, `outside-of-${path.basename(root)}`);
    await fsp.mkdir(root);
    await fsp.mkdir(path.join(outside, 'volumes'), { recursive: true });
    const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
    await provision(p, 'first');
    assert.equal((await readVolumeRecord(root, 'first'))?.pvName, 'first');

    const real = path.join(root, swapped);
    await fsp.rename(real, `${real}-aside`);
    await fsp.symlink(swapped.endsWith('volumes') ? path.join(outside, 'volumes') : outside, real);
    await assert.rejects(provision(p, 'second'), InfeasibleError);
    assert.deepEqual(await fsp.readdir(path.join(outside, 'volumes')), [], 'nothing written where the symlink leads');
    const made = await fsp.lstat(path.join(root, 'second')).catch(() => undefined);
    assert.equal(made, undefined, 'the directory was not created either');

    await fsp.unlink(real);
    await fsp.rename(`${real}-aside`, real);
    await provision(p, 'third');
    assert.equal((await readVolumeRecord(root, 'third'))?.pvName, 'third', 'the sane path is written again');
    assert.equal((await readVolumeRecord(root, 'first'))?.pvName, 'first');
  });
}
