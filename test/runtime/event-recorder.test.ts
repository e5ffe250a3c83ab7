// EventRecorder: client-go naming and fields, namespace `default` for cluster-scoped objects, series
// patches (count/lastTimestamp), aggregation, spam filter, a bounded queue that drops instead of blocking.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient } from '../../src/runtime/client.ts';
import { EventRecorder } from '../../src/runtime/event-recorder.ts';
import { AGGREGATE_MESSAGE_PREFIX } from '../../src/runtime/event-correlator.ts';
import type { CoreEvent, KubeObject } from '../../src/types/k8s.ts';
import { coreEvents } from '../../src/runtime/resources.ts';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { startFakeApi, type FakeApi } from './fake-api.ts';

const pv: KubeObject = {
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name: 'pv-1', uid: 'uid-pv', resourceVersion: '9' },
};
const pvc: KubeObject = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'apps', uid: 'uid-pvc' },
};

function events(fake: FakeApi): CoreEvent[] {
  return [...fake.objects.entries()].filter(([k]) => k.startsWith('events/')).map(([, v]) => v as CoreEvent);
}

async function withRecorder(
  fn: (fake: FakeApi, rec: EventRecorder) => Promise<void>,
  opts: { queueSize?: number; writers?: number } = {},
): Promise<void> {
  const fake = await startFakeApi();
  const client = new KubeClient({ kubeConfig: fake.kubeConfig, qps: 0, retryBaseDelayMs: 1 });
  const rec = new EventRecorder({ client, component: 'test-provisioner', host: 'node-1', retryDelayMs: 1, ...opts });
  try {
    await fn(fake, rec);
  } finally {
    await rec.stop();
    client.close();
    await fake.close();
  }
}

test('an event about a PV goes to namespace default with client-go naming and fields', () =>
  withRecorder(async (fake, rec) => {
    rec.event(pv, 'Normal', 'ProvisioningSucceeded', 'volume pv-1 provisioned');
    rec.event(pvc, 'Warning', 'ProvisioningFailed', 'no space');
    await rec.flush();
    const [a, b] = events(fake).sort((x, y) => (x.reason ?? '').localeCompare(y.reason ?? ''));
    assert.equal(b.metadata.namespace, 'default');
    assert.match(b.metadata.name ?? '', /^pv-1\.[0-9a-f]+$/);
    assert.deepEqual(b.involvedObject, {
      kind: 'PersistentVolume',
      name: 'pv-1',
      uid: 'uid-pv',
      apiVersion: 'v1',
      resourceVersion: '9',
    });
    assert.equal(b.type, 'Normal');
    assert.equal(b.count, 1);
    assert.deepEqual(b.source, { component: 'test-provisioner', host: 'node-1' });
    assert.equal(b.reportingComponent, 'test-provisioner');
    assert.equal(b.reportingInstance, 'node-1');
    assert.match(b.firstTimestamp ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal(a.metadata.namespace, 'apps');
    assert.equal(a.involvedObject.namespace, 'apps');
    assert.equal(rec.stats.created, 2);
  }));

test('repeats become one event whose count grows by patch', () =>
  withRecorder(async (fake, rec) => {
    for (let i = 0; i < 4; i++) rec.event(pvc, 'Normal', 'ExternalProvisioning', 'waiting for a volume');
    await rec.flush();
    const all = events(fake);
    assert.equal(all.length, 1);
    assert.equal(all[0].count, 4);
    assert.equal(rec.stats.created, 1);
    assert.equal(rec.stats.patched, 3);
    assert.ok(fake.requests.filter((r) => r.startsWith('PATCH')).length === 3);
  }));

test('ten distinct messages for one reason are aggregated; the spam filter drops past burst 25', () =>
  withRecorder(async (fake, rec) => {
    for (let i = 0; i < 12; i++) rec.event(pvc, 'Warning', 'ProvisioningFailed', `attempt ${i} failed`);
    await rec.flush();
    const combined = events(fake).filter((e) => e.message?.startsWith(AGGREGATE_MESSAGE_PREFIX));
    assert.equal(combined.length, 1, 'one aggregate event');
    assert.equal(combined[0].count, 3, 'messages 10..12 counted on the aggregate');
    assert.equal(events(fake).length, 10, '9 individual events + 1 aggregate');

    // Spam key is source+object+type: 12 Warning events spent 12 tokens of 25; 20 more with distinct reasons drop 7.
    for (let i = 0; i < 20; i++) rec.event(pvc, 'Warning', `Reason${i}`, 'x');
    await rec.flush();
    assert.equal(rec.stats.droppedSpam, 7);
  }));

test('event() never blocks or throws: a full queue drops and counts; API errors are counted, not thrown', () =>
  withRecorder(
    async (fake, rec) => {
      fake.fault = (method) => (method === 'POST' ? 403 : undefined);
      for (let i = 0; i < 5; i++)
        rec.event({ metadata: { name: `o${i}` }, kind: 'Node', apiVersion: 'v1' }, 'Normal', 'R', 'm');
      assert.equal(rec.stats.droppedQueueFull, 2, 'one in flight + two queued, two dropped');
      await rec.flush();
      assert.equal(rec.stats.failed, 3);
      assert.equal(rec.stats.created, 0);
    },
    { queueSize: 2, writers: 1 },
  ));

test("events about different objects are written several at a time; one object's events stay in order", async () => {
  let inFlight = 0;
  let maxInFlight = 0;
  const created: CoreEvent[] = [];
  const gates: Array<() => void> = [];
  // A client whose creates wait until released, so the writes in flight at once can be counted.
  const client = {
    async create(_r: unknown, body: CoreEvent) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise<void>((release) => gates.push(release));
      inFlight--;
      created.push(body);
      return { ...body, metadata: { ...body.metadata, resourceVersion: String(created.length) } };
    },
  } as unknown as KubeClient;
  const rec = new EventRecorder({ client, component: 'test-provisioner', writers: 4 });
  const objects = Array.from({ length: 40 }, (_, i): KubeObject => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: `c${i}`, namespace: 'ns', uid: `u${i}` },
  }));
  for (let step = 0; step < 3; step++) for (const o of objects) rec.event(o, 'Normal', `Step${step}`, 'm');
  const flushed = rec.flush();
  while (created.length < 120) {
    await new Promise((r) => setImmediate(r));
    for (const release of gates.splice(0)) release();
  }
  await flushed;
  assert.equal(maxInFlight, 4, 'four lanes write at once');
  for (const o of objects) {
    const steps = created.filter((e) => e.involvedObject.uid === o.metadata.uid).map((e) => e.reason);
    assert.deepEqual(steps, ['Step0', 'Step1', 'Step2'], `events about ${o.metadata.name} in order`);
  }
  await rec.stop();
});

describe('event recorder against the embedded cluster', () => {
  let cluster: TestCluster;
  before(async () => {
    cluster = await startCluster({ controllers: false });
  });
  after(async () => {
    await cluster.stop();
  });

  test('series, aggregation and spam filtering as observed in the cluster', async () => {
    const client = new KubeClient({ kubeConfig: cluster.kubeConfig, qps: 0, userAgent: 'recorder-test' });
    const rec = new EventRecorder({ client, component: 'test-provisioner', host: 'node-1' });
    const claim: KubeObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default', uid: 'uid-claim' },
    };
    const volume: KubeObject = {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv-9', uid: 'uid-pv9' },
    };
    try {
      for (let i = 0; i < 5; i++) rec.event(volume, 'Normal', 'ProvisioningSucceeded', 'same message');
      for (let i = 0; i < 12; i++) rec.event(claim, 'Warning', 'ProvisioningFailed', `attempt ${i}: backend busy`);
      for (let i = 0; i < 20; i++) rec.event(claim, 'Warning', `Other${i}`, 'spam');
      await rec.flush();
      const list = await client.list<CoreEvent>(coreEvents, { namespace: 'default' });
      const about = (name: string) => list.items.filter((e) => e.involvedObject.name === name);
      const pvEvents = about('pv-9');
      assert.equal(pvEvents.length, 1, 'five repeats are one event');
      assert.equal(pvEvents[0].count, 5);
      assert.notEqual(pvEvents[0].firstTimestamp, undefined);
      const failed = about('data').filter((e) => e.reason === 'ProvisioningFailed');
      assert.equal(failed.length, 10, '9 individual + 1 aggregate');
      const combined = failed.filter((e) => e.message?.startsWith(AGGREGATE_MESSAGE_PREFIX));
      assert.equal(combined.length, 1);
      assert.equal(combined[0].count, 3);
      // 12 Warnings about the claim used 12 of 25 spam tokens: 13 of the 20 "Other" events pass, 7 are dropped.
      assert.equal(about('data').filter((e) => e.reason?.startsWith('Other')).length, 13);
      assert.equal(rec.stats.droppedSpam, 7);
      assert.equal(
        cluster.audit.count({ client: 'recorder-test', verb: 'patch', resource: 'events', code: 200 }),
        4 + 2,
      );
    } finally {
      await rec.stop();
      client.close();
    }
  });
});
