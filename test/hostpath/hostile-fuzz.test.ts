// Randomized end-to-end: hostile labels/annotations through the real provisioner on a real temp tree.
// Whatever is accepted lands strictly inside the root (checked with realpath), and nothing outside changes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ATOMS = ['..', '.', '/', '../', '%2e%2e', '\u0000', '\\', 'é', '🙂', '\u202e', 'outside', 'link', 'x'.repeat(120), 'ns', '.kube-provisioner', 'archived-', ' '];

test('randomized: hostile claims never create or delete anything outside the root', async () => {
  const seed = Number(process.env.PATH_FUZZ_SEED ?? Date.now() % 100000);
  const rand = mulberry32(seed);
  const tmp = await tempTree('kp-fuzz-');
  try {
    const root = path.join(tmp, 'root');
    await fsp.mkdir(root);
    await fsp.mkdir(path.join(tmp, 'outside'));
    await fsp.writeFile(path.join(tmp, 'outside', 'secret'), 'x');
    await fsp.symlink(path.join(tmp, 'outside'), path.join(root, 'link'));
    const outsideBefore = await snapshot(path.join(tmp, 'outside'));
    const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
    const classes = [
      storageClass('a', { pathPattern: '${.PVC.annotations.p}/${.PV.name}' }),
      storageClass('b', { pathPattern: '{{ .PVC.Labels.l }}{{ .PVC.Annotations.p }}-{{ .PV.Name }}' }),
      storageClass('c', { pathPattern: '${.PVC.annotations.p}/${.PVC.labels.l}/${.PV.name}', onDelete: 'archive' }),
    ];
    const value = () => Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ATOMS[Math.floor(rand() * ATOMS.length)]).join('');
    let accepted = 0;
    for (let i = 0; i < 300; i++) {
      const o = provisionOptions(claim({ labels: { l: value() }, annotations: { p: value() } }), classes[i % classes.length]);
      try {
        const { volume } = await p.provision(o, signal());
        accepted++;
        const real = await fsp.realpath(volume.spec.hostPath!.path);
        assert.ok(real.startsWith(root + '/'), `seed ${seed}: ${real} is outside ${root}`);
        if (rand() < 0.5) await p.delete(volume, signal());
      } catch (e) {
        assert.ok(e instanceof InfeasibleError, `seed ${seed}: ${String(e)}`);
      }
    }
    assert.ok(accepted > 20, `seed ${seed}: only ${accepted} accepted`);
    assert.deepEqual(await snapshot(path.join(tmp, 'outside')), outsideBefore, `seed ${seed}: outside changed`);
    assert.equal((await fsp.lstat(path.join(root, 'link'))).isSymbolicLink(), true);
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});
