// The freeSpace option (what `dev` turns on): a base path without a configured capacity may allocate what is
// allocated there plus its filesystem's free space; a configured capacity wins; the real statfs figure is positive.
// The reading is reused for up to a second while claims fit by it, and made afresh before a refusal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { filesystemFreeBytes, FREE_SPACE_MAX_AGE_MS } from '../../src/hostpath/provision/free-space.ts';
import { TestClock } from '../../src/runtime/clock.ts';
import { InfeasibleError, type ProvisionOptions } from '../../src/controller/provisioner.ts';
import type { PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';

const MI = 1n << 20n;
let n = 0;
function options(className: string, size: string): ProvisionOptions {
  n++;
  const claim = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: `c${n}`, namespace: 'default', uid: `uid-${n}` },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: className, resources: { requests: { storage: size } } },
  } as PersistentVolumeClaim;
  const storageClass = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: className },
    provisioner: 'p',
  } as StorageClass;
  return { claim, storageClass, pvName: `pvc-uid-${n}` };
}

test('free space is the capacity of unconfigured paths; configured capacity wins; statfs reads real figures', async (t) => {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-free-')));
  t.after(() => fsp.rm(dir, { recursive: true, force: true }));
  await fsp.mkdir(path.join(dir, 'free'));
  await fsp.mkdir(path.join(dir, 'fixed'));
  const config = validateHostPathConfig({
    storageClassConfigs: {
      free: { sharedFileSystemPath: path.join(dir, 'free') },
      fixed: { sharedFileSystemPath: { path: path.join(dir, 'fixed'), capacity: '1Ti' } },
    },
  });
  const p = new HostPathProvisioner({ config, freeSpace: async () => 10n * MI });
  const signal = new AbortController().signal;
  await p.provision(options('free', '6Mi'), signal);
  await p.provision(options('free', '10Mi'), signal); // the directories are empty: the disk still has 10Mi free
  for (const size of ['11Mi', '8Ei', '1e30']) {
    await assert.rejects(
      p.provision(options('free', size), signal),
      (e) => e instanceof InfeasibleError && /free|capacity/.test(e.message),
      size,
    );
  }
  await p.provision(options('fixed', '512Gi'), signal); // configured: 1Ti, whatever the disk says
  assert.ok((await filesystemFreeBytes(dir)) > 0n);
});

test('the free space is read once a second while claims fit, and afresh before a claim is refused for space', async (t) => {
  const dir = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-free-')));
  t.after(() => fsp.rm(dir, { recursive: true, force: true }));
  const config = validateHostPathConfig({ storageClassConfigs: { free: { sharedFileSystemPath: dir } } });
  const clock = new TestClock();
  let free = 100n * MI;
  let reads = 0;
  const p = new HostPathProvisioner({
    config,
    clock,
    freeSpace: async () => {
      reads++;
      return free;
    },
  });
  const signal = new AbortController().signal;
  for (let i = 0; i < 5; i++) await p.provision(options('free', '1Mi'), signal);
  assert.equal(reads, 1, 'five claims that fit within a second: one reading');
  await clock.advance(FREE_SPACE_MAX_AGE_MS);
  await p.provision(options('free', '1Mi'), signal);
  assert.equal(reads, 2, 'a reading a second old is not reused');
  // The disk fills up (1Mi free): by the last reading (capacity 105Mi, 6Mi allocated) a 50Mi claim still fits,
  // and is placed within the second; a 60Mi one does not, and is refused only after a fresh reading says so.
  free = 1n * MI;
  await p.provision(options('free', '50Mi'), signal);
  assert.equal(reads, 2, 'within the second, a claim that fits by the last reading is placed by it');
  await assert.rejects(p.provision(options('free', '60Mi'), signal), InfeasibleError);
  assert.equal(reads, 3, 'a claim that does not fit by the last reading reads the free space again');
  free = 200n * MI;
  await p.provision(options('free', '150Mi'), signal);
  assert.equal(reads, 4, 'room made on the disk is seen at once by the claim it lets in');
});
