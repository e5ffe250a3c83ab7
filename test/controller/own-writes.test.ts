// The overlay of the controller's own writes (client-go MutationCache semantics) and the per-object records.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClaimRecords } from '../../src/controller/object-records.ts';
import { OwnWrites } from '../../src/controller/own-writes.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { newClaim } from './fixtures.ts';

const pv = (rv: string | undefined): PersistentVolume => ({
  metadata: { name: 'pv', ...(rv ? { resourceVersion: rv } : {}) },
  spec: {},
});

describe('OwnWrites', () => {
  it('serves our write until the cache holds the same or a newer resourceVersion', () => {
    const w = new OwnWrites<PersistentVolume>();
    const ours = pv('12');
    w.record('pv', ours, undefined);
    assert.equal(w.read('pv', undefined), ours, 'the cache has nothing yet');
    assert.equal(w.read('pv', pv('9')), ours, 'the cache is older');
    assert.ok(w.isAhead('pv', pv('9')));
    const cached = pv('12');
    assert.equal(w.read('pv', cached), cached, 'the cache caught up');
    assert.deepEqual([...w.keys()], [], 'and our copy is dropped');
  });
  it('compares versions as integers (10 is newer than 9) and drops ours on a deletion', () => {
    const w = new OwnWrites<PersistentVolume>();
    w.record('pv', pv('10'), undefined);
    assert.ok(w.isAhead('pv', pv('9')));
    w.observe('pv', undefined);
    assert.equal(w.read('pv', undefined), undefined);
  });
  it('keeps nothing when the cache already delivered our write (its watch event came before the response)', () => {
    const w = new OwnWrites<PersistentVolume>();
    w.record('pv', pv('12'), pv('12'));
    w.record('newer', pv('12'), pv('13'));
    assert.equal(w.size, 0);
    w.record('pv', pv('12'), pv('11'));
    assert.equal(w.size, 1, 'an older cached copy: ours is kept');
  });
});

describe('ClaimRecords', () => {
  it('keeps one record per claim, drops empty ones and counts claims in progress', () => {
    const r = new ClaimRecords();
    const claim = newClaim('c', 'u1', 'x', '', '');
    r.set('u1', 'inProgress', claim);
    r.set('u1', 'lastDecisionEvent', 'k');
    r.set('u2', 'lastDecisionEvent', 'k');
    assert.equal(r.inProgressCount, 1);
    assert.deepEqual(r.inProgressClaims(), [claim]);
    r.set('u1', 'inProgress', undefined);
    assert.equal(r.inProgressCount, 0);
    assert.deepEqual(r.get('u1'), { lastDecisionEvent: 'k' });
    r.set('u2', 'lastDecisionEvent', undefined);
    assert.equal(r.get('u2'), undefined, 'an empty record is removed');
    r.set('u1', 'inProgress', claim);
    r.forget('u1');
    assert.equal(r.get('u1'), undefined);
    assert.equal(r.inProgressCount, 0, 'forgetting is one delete');
  });
});
