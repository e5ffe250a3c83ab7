// Event TTL in the store (kube-apiserver's --event-ttl): each version of a tracked resource's objects is queued by
// when it was last seen, and a sweep reads only the expired ones. Counted, not timed: the objects a sweep parses
// are the same with 10 and with 1,000 live Events.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterStore } from '../../src/cluster/writes/cluster-store.ts';
import type { KubeObject } from '../../src/types/k8s.ts';

const lastSeen = (obj: KubeObject) => Date.parse(String(obj.lastTimestamp));
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

function event(name: string, seenMs: number): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: 'default' },
    involvedObject: { kind: 'Pod', namespace: 'default', name: 'p' },
    reason: 'R',
    message: 'm',
    count: 1,
    firstTimestamp: at(seenMs),
    lastTimestamp: at(seenMs),
  };
}

function storeWith(live: number, old: number): ClusterStore {
  const store = new ClusterStore();
  store.create('namespaces', { metadata: { name: 'default' } });
  for (let i = 0; i < old; i++) store.create('events', event(`old-${i}`, Date.UTC(2026, 0, 1, 0, 0, i)));
  store.trackExpiry('events', lastSeen);
  for (let i = 0; i < live; i++) store.create('events', event(`live-${i}`, Date.UTC(2026, 0, 2)));
  return store;
}

/** JSON.parse calls made by `fn`. */
function parsesDuring<T>(fn: () => T): { result: T; parses: number } {
  const original = JSON.parse;
  let parses = 0;
  JSON.parse = ((...args: Parameters<typeof JSON.parse>) => {
    parses++;
    return original(...args);
  }) as typeof JSON.parse;
  try {
    return { result: fn(), parses };
  } finally {
    JSON.parse = original;
  }
}

describe('store expiry (event TTL)', () => {
  it('takes the expired objects, earliest first, without reading the live ones (same cost at 10 and 1,000)', () => {
    const costs: number[] = [];
    for (const live of [10, 1000]) {
      const store = storeWith(live, 5);
      const { result, parses } = parsesDuring(() => store.takeExpired('events', Date.UTC(2026, 0, 1, 12)));
      assert.deepEqual(
        result.map((e) => e.obj.metadata.name),
        ['old-0', 'old-1', 'old-2', 'old-3', 'old-4'],
      );
      costs.push(parses);
      // Each version is reported once.
      assert.equal(store.takeExpired('events', Date.UTC(2026, 0, 1, 12)).length, 0);
      assert.equal(store.takeExpired('events', Date.UTC(2026, 0, 3)).length, live);
    }
    assert.equal(costs[0], costs[1]);
    assert.equal(costs[0], 0);
  });

  it('skips a version that was replaced or deleted since it was queued; the replacement has its own time', () => {
    const store = storeWith(0, 3);
    const renewed = store.get('events', 'default', 'old-0')!;
    renewed.lastTimestamp = at(Date.UTC(2026, 0, 2));
    renewed.count = 2;
    store.update('events', renewed);
    store.delete('events', 'default', 'old-1');
    assert.deepEqual(
      store.takeExpired('events', Date.UTC(2026, 0, 1, 12)).map((e) => e.obj.metadata.name),
      ['old-2'],
    );
    assert.deepEqual(
      store.takeExpired('events', Date.UTC(2026, 0, 3)).map((e) => e.obj.metadata.name),
      ['old-0'],
    );
  });
});

describe('store expiry queue', () => {
  it('queues one entry per object, not one per version (an Event whose count rises 100 times is one entry)', () => {
    const store = storeWith(0, 0);
    store.create('events', event('repeated', Date.UTC(2026, 0, 1)));
    for (let i = 1; i <= 100; i++) {
      const e = store.get('events', 'default', 'repeated')!;
      e.count = i + 1;
      e.lastTimestamp = at(Date.UTC(2026, 0, 1, 0, i));
      store.update('events', e);
    }
    assert.equal(store.queuedForExpiry('events'), 1);
    // Last seen at 01:40: not expired at 01:00 (its first version's time), expired at 02:00.
    assert.deepEqual(store.takeExpired('events', Date.UTC(2026, 0, 1, 1)), []);
    assert.deepEqual(
      store.takeExpired('events', Date.UTC(2026, 0, 1, 2)).map((e) => [e.obj.metadata.name, e.obj.count]),
      [['repeated', 101]],
    );
    assert.equal(store.queuedForExpiry('events'), 0);
  });

  it('takes a version that is last seen earlier than the one it replaced at its own time', () => {
    const store = storeWith(0, 0);
    store.create('events', event('rewound', Date.UTC(2026, 0, 2)));
    const e = store.get('events', 'default', 'rewound')!;
    e.lastTimestamp = at(Date.UTC(2026, 0, 1));
    store.update('events', e);
    assert.deepEqual(
      store.takeExpired('events', Date.UTC(2026, 0, 1, 12)).map((x) => x.obj.metadata.name),
      ['rewound'],
    );
    assert.deepEqual(store.takeExpired('events', Date.UTC(2026, 0, 3)), []);
  });

  it('forgets a deleted object when its time comes, and queues it again when it is created again', () => {
    const store = storeWith(0, 0);
    store.create('events', event('again', Date.UTC(2026, 0, 1)));
    store.delete('events', 'default', 'again');
    store.create('events', event('again', Date.UTC(2026, 0, 5)));
    assert.equal(store.queuedForExpiry('events'), 1);
    assert.deepEqual(store.takeExpired('events', Date.UTC(2026, 0, 2)), []);
    assert.deepEqual(
      store.takeExpired('events', Date.UTC(2026, 0, 6)).map((x) => x.obj.metadata.name),
      ['again'],
    );
  });
});
