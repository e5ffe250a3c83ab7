// Randomized end-to-end: hostile labels/annotations through the real provisioner on a real temp tree.
// Whatever is accepted lands strictly inside the root (checked with realpath), and nothing outside changes.
// Then forged PVs named after path segments, aimed at random directories in random spellings (`//`, `/./`, a
// trailing `/`: the same directory), never reach a live volume's data.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { VolumeIdentityError } from '../../src/hostpath/delete/delete-identity.ts';
import { UnsafePathError } from '../../src/hostpath/paths/path-safety.ts';
import { ANN_HOSTPATH_BASE_PATH, ANN_HOSTPATH_ON_DELETE } from '../../src/hostpath/volume/volume-spec.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';
import { fuzzSeed, seededRandom } from '../support/fuzz-seed.ts';

const ATOMS = [
  '..',
  '.',
  '/',
  '../',
  '%2e%2e',
  '\u0000',
  '\\',
  'é',
  '🙂',
  '\u202e',
  'outside',
  'link',
  'x'.repeat(120),
  'ns',
  '.kube-provisioner',
  'archived-',
  ' ',
];

test('randomized: hostile claims never create or delete anything outside the root', async (t) => {
  const seed = fuzzSeed(t);
  const rand = seededRandom(seed);
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
    const value = () =>
      Array.from({ length: 1 + Math.floor(rand() * 4) }, () => ATOMS[Math.floor(rand() * ATOMS.length)]).join('');
    let accepted = 0;
    for (let i = 0; i < 300; i++) {
      const o = provisionOptions(
        claim({ labels: { l: value() }, annotations: { p: value() } }),
        classes[i % classes.length],
      );
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

test("randomized: forged PVs named after path segments never delete or archive a live volume's data", async (t) => {
  const seed = fuzzSeed(t);
  const rand = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const tmp = await tempTree('kp-fuzz-forged-');
  try {
    const root = path.join(tmp, 'root');
    await fsp.mkdir(root);
    const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
    // Layouts with and without the PV name, nested and flat, in both template syntaxes.
    const classes = [
      storageClass('flat'),
      storageClass('ns-name', { pathPattern: '${.PVC.namespace}/${.PVC.name}' }),
      storageClass('go-ns-name', { pathPattern: 'go/{{ .PVC.Namespace }}/{{ .PVC.Name }}' }),
      storageClass('ns-pv', { pathPattern: '${.PVC.namespace}/${.PV.name}' }),
    ];
    const live: Array<{ dir: string; content: string }> = [];
    for (let i = 0; i < 24; i++) {
      const c = claim({
        name: pick(['db', 'bob', 'sub', 'data', `app-${i}`]),
        namespace: pick(['default', 'shop', 'sub', 'bob']),
      });
      try {
        const { volume } = await p.provision(provisionOptions(c, classes[i % classes.length]), signal());
        const dir = volume.spec.hostPath!.path;
        await fsp.writeFile(path.join(dir, 'data'), `data of ${dir}`);
        live.push({ dir, content: `data of ${dir}` });
      } catch (e) {
        assert.ok(e instanceof InfeasibleError, `seed ${seed}: ${String(e)}`); // a stable name already taken
      }
    }
    assert.ok(live.length >= 10, `seed ${seed}: only ${live.length} volumes`);
    const dirs = [
      root,
      ...(await snapshot(root)).filter((e) => !e.startsWith('.kube-provisioner')).map((e) => path.join(root, e)),
    ];
    const names = [
      ...new Set(
        dirs
          .flatMap((d) => d.slice(root.length + 1).split(/[/_]/))
          .filter((n) => /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(n)),
      ),
    ];
    for (let i = 0; i < 200; i++) {
      // Another spelling of the same directory is the same directory.
      const target = pick([
        (d: string) => d,
        (d: string) => `${d}/`,
        (d: string) => d.replace(/\/([^/]*)$/, '//$1'),
        (d: string) => d.replace(/\/([^/]*)$/, '/./$1'),
      ])(pick(dirs));
      const pv: PersistentVolume = {
        metadata: {
          name: pick([...names, 'root', 'default', 'volumes']),
          annotations: {
            ...(rand() < 0.5 ? { [ANN_HOSTPATH_BASE_PATH]: root } : {}),
            [ANN_HOSTPATH_ON_DELETE]: pick(['delete', 'archive']),
          },
        },
        spec: { hostPath: { path: target }, claimRef: { uid: 'forged' } },
      };
      try {
        await p.delete(pv, signal());
      } catch (e) {
        assert.ok(e instanceof VolumeIdentityError || e instanceof UnsafePathError, `seed ${seed}: ${String(e)}`);
      }
    }
    for (const v of live)
      assert.equal(
        await fsp.readFile(path.join(v.dir, 'data'), 'utf8'),
        v.content,
        `seed ${seed}: ${v.dir} lost its data`,
      );
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});
