// Counts of the EventCorrelator (aggregation, series dedup, spam filter) on a TestClock, as tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TestClock } from '../../src/runtime/clock.ts';
import {
  AGGREGATE_MESSAGE_PREFIX,
  EventCorrelator,
  formatKubeTime,
  type EventCorrelation,
} from '../../src/runtime/event-correlator.ts';
import type { CoreEvent } from '../../src/types/k8s.ts';

let serial = 0;

/** An event as client-go's recorder makes it (makeEvent): count 1, first = last = now. */
function makeEvent(
  clock: TestClock,
  over: { name?: string; uid?: string; type?: 'Normal' | 'Warning'; reason?: string; message?: string } = {},
): CoreEvent {
  const name = over.name ?? 'claim-1';
  const now = formatKubeTime(clock.now());
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${name}.${(serial++).toString(16)}`, namespace: 'default' },
    involvedObject: {
      kind: 'PersistentVolumeClaim',
      namespace: 'default',
      name,
      uid: over.uid ?? `uid-${name}`,
      apiVersion: 'v1',
    },
    reason: over.reason ?? 'Provisioning',
    message: over.message ?? 'External provisioner is provisioning volume',
    type: over.type ?? 'Normal',
    count: 1,
    firstTimestamp: now,
    lastTimestamp: now,
    source: { component: 'hostpath-provisioner', host: 'node-1' },
    reportingComponent: 'hostpath-provisioner',
    reportingInstance: 'node-1',
  };
}

const summary = (r: EventCorrelation) => `${r.action}:${r.event.count}`;

test('series dedup: a repeat patches the first event with count+1 and the new lastTimestamp', async () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  const first = c.correlate(makeEvent(clock));
  assert.equal(first.action, 'create');
  const firstName = first.event.metadata.name;
  await clock.advance(5000);
  const second = c.correlate(makeEvent(clock));
  assert.equal(second.action, 'patch');
  assert.equal(second.event.metadata.name, firstName);
  assert.equal(second.event.firstTimestamp, first.event.firstTimestamp);
  assert.equal(second.event.count, 2);
  assert.deepEqual(second.action === 'patch' && second.patch, {
    count: 2,
    lastTimestamp: formatKubeTime(clock.now()),
    message: 'External provisioner is provisioning volume',
  });
  // A different message, reason, type or object is a different series.
  for (const over of [
    { message: 'other' },
    { reason: 'ProvisioningSucceeded' },
    { type: 'Warning' as const },
    { name: 'claim-2' },
  ]) {
    assert.equal(c.correlate(makeEvent(clock, over)).action, 'create', JSON.stringify(over));
  }
});

test('updateState: the next patch carries the server resourceVersion and name', () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  const created = c.correlate(makeEvent(clock));
  c.updateState({
    ...created.event,
    metadata: { ...created.event.metadata, name: 'server-name', resourceVersion: '42' },
  });
  const repeat = c.correlate(makeEvent(clock));
  assert.equal(repeat.action, 'patch');
  assert.equal(repeat.event.metadata.name, 'server-name');
  assert.equal(repeat.event.metadata.resourceVersion, '42');
});

test('updateState with the correlation key also tracks aggregate series', () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  let last: EventCorrelation | undefined;
  for (let i = 1; i <= 10; i++) last = c.correlate(makeEvent(clock, { message: `m${i}` }));
  assert.ok(last && last.action === 'create' && last.event.message?.startsWith(AGGREGATE_MESSAGE_PREFIX));
  c.updateState({ ...last.event, metadata: { ...last.event.metadata, resourceVersion: '7' } }, last.key);
  const next = c.correlate(makeEvent(clock, { message: 'm11' }));
  assert.equal(next.action, 'patch');
  assert.equal(next.event.metadata.resourceVersion, '7');
  assert.equal(next.event.count, 2);
});

test('aggregation: the 10th distinct message in 10 minutes becomes a combined event, later ones patch it', async () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  const results: EventCorrelation[] = [];
  for (let i = 1; i <= 12; i++) {
    results.push(
      c.correlate(makeEvent(clock, { type: 'Warning', reason: 'ProvisioningFailed', message: `failed: attempt ${i}` })),
    );
    await clock.advance(30_000);
  }
  assert.deepEqual(results.map(summary), [
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'create:1',
    'patch:2',
    'patch:3',
  ]);
  const combined = results[9];
  assert.equal(combined.event.message, `${AGGREGATE_MESSAGE_PREFIX}failed: attempt 10`);
  assert.match(combined.event.metadata.name ?? '', /^claim-1\.[0-9a-f]+$/);
  assert.equal(combined.event.reason, 'ProvisioningFailed');
  assert.equal(results[10].event.metadata.name, combined.event.metadata.name);
  assert.equal(
    results[11].action === 'patch' && results[11].patch.message,
    `${AGGREGATE_MESSAGE_PREFIX}failed: attempt 12`,
  );
});

test('aggregation: a gap longer than 10 minutes starts a fresh group', async () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  const actions: string[] = [];
  for (let i = 1; i <= 9; i++) actions.push(summary(c.correlate(makeEvent(clock, { message: `m${i}` }))));
  await clock.advance(600_001);
  actions.push(summary(c.correlate(makeEvent(clock, { message: 'm10' }))));
  assert.deepEqual(actions, Array(10).fill('create:1'), 'the 10th is not aggregated after the gap');
  assert.equal(c.correlate(makeEvent(clock, { message: 'm11' })).event.message, 'm11');
});

test('aggregation: separate groups per reason and per object', () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  for (let i = 0; i < 9; i++) c.correlate(makeEvent(clock, { reason: 'A', message: `m${i}` }));
  assert.equal(c.correlate(makeEvent(clock, { reason: 'B', message: 'x' })).event.message, 'x');
  assert.equal(c.correlate(makeEvent(clock, { name: 'claim-9', reason: 'A', message: 'x' })).event.message, 'x');
  assert.match(c.correlate(makeEvent(clock, { reason: 'A', message: 'y' })).event.message ?? '', /^\(combined/);
});

test('spam filter: 25 events per source+object+type pass, then one per 5 minutes; drops still count', async () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock });
  const actions = Array.from({ length: 30 }, () => summary(c.correlate(makeEvent(clock))));
  assert.deepEqual(actions, [
    'create:1',
    ...Array.from({ length: 24 }, (_, i) => `patch:${i + 2}`),
    'drop:26',
    'drop:27',
    'drop:28',
    'drop:29',
    'drop:30',
  ]);
  // Another reason on the same object shares the bucket; a Warning or another object does not.
  assert.equal(c.correlate(makeEvent(clock, { reason: 'Other' })).action, 'drop');
  assert.equal(c.correlate(makeEvent(clock, { type: 'Warning' })).action, 'create');
  assert.equal(c.correlate(makeEvent(clock, { name: 'claim-2' })).action, 'create');
  await clock.advance(299_000);
  assert.equal(c.correlate(makeEvent(clock)).action, 'drop');
  await clock.advance(1_000);
  const refilled = c.correlate(makeEvent(clock));
  assert.equal(summary(refilled), 'patch:32', 'the count includes the dropped occurrences');
  assert.equal(c.correlate(makeEvent(clock)).action, 'drop');
});

test('cache size bounds memory: an evicted series is created again', () => {
  const clock = new TestClock();
  const c = new EventCorrelator({ clock, cacheSize: 2 });
  c.correlate(makeEvent(clock, { name: 'a' }));
  c.correlate(makeEvent(clock, { name: 'b' }));
  c.correlate(makeEvent(clock, { name: 'c' }));
  assert.equal(c.correlate(makeEvent(clock, { name: 'c' })).action, 'patch');
  assert.equal(c.correlate(makeEvent(clock, { name: 'a' })).action, 'create');
});
