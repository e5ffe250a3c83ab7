// What the live-volume index keeps per volume (issue 21: 10,000 volumes left 4.9 MB in its inode chains). Every
// volume under one base path has the same ancestors; each read of a directory gave each volume its own array of
// the same `dev:ino` strings, and a second copy of its path as the chain's source. Measured as retained heap after
// a full GC, in bytes per volume: a count of bytes, not a timing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { VolumePathIndex } from '../../src/hostpath/ledger/volume-path-index.ts';
import { heapAfterGc } from '../support/heap.ts';

const base = '/var/lib/kube-provisioner/volumes/shared/default';
/** What a read of the directory gives: fresh strings, as stat() results formatted per call. */
const chainOf = (i: number) => ({
  self: `2049:${1_000_000 + i}`,
  ancestors: [64769, 2, 131073, 393217, 524289, 655361].map((ino) => `${2049}:${ino}`),
});

describe('volume path index memory', () => {
  it('shares the ancestor chain of volumes under one directory (<= 950 bytes per volume with its paths; 1,470 before)', () => {
    const index = new VolumePathIndex();
    const n = 5000;
    const before = heapAfterGc();
    for (let i = 0; i < n; i++) {
      const name = `pvc-0b1c2d3e-aaaa-bbbb-cccc-${String(i).padStart(12, '0')}`;
      const path = `${base}/claim-${i}-${name}`;
      index.add(name, path);
      index.setInodes(name, chainOf(i), `${base}/claim-${i}-${name}`);
    }
    const perVolume = (heapAfterGc() - before) / n;
    assert.equal(index.size, n);
    assert.ok(perVolume <= 950, `${Math.round(perVolume)} bytes per volume`);
  });
});
