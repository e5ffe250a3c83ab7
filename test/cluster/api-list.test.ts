// List semantics through client-node over HTTPS: limit/continue pagination with one list resourceVersion,
// label selectors (full syntax), per-kind field selectors, discovery documents and server-side Tables.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, type CoreV1Event, type V1PersistentVolume } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { pvBody, raw } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  for (let i = 0; i < 25; i++) {
    const labels: Record<string, string> = { index: String(i), parity: i % 2 ? 'odd' : 'even' };
    if (i % 5 === 0) labels.five = 'yes';
    await core.createPersistentVolume({
      body: pvBody(`pv-${String(i).padStart(2, '0')}`, labels) as V1PersistentVolume,
    });
  }
});
after(() => c.stop());

describe('list', () => {
  it('paginates with limit/continue, keeping the first page resourceVersion', async () => {
    const first = await core.listPersistentVolume({ limit: 10 });
    assert.equal(first.items.length, 10);
    assert.ok(first.metadata!._continue);
    assert.equal(first.metadata!.remainingItemCount, 15);
    const names = first.items.map((p) => p.metadata!.name!);
    let cont: string | undefined = first.metadata!._continue;
    while (cont) {
      await core.createPersistentVolume({ body: pvBody(`zz-during-${names.length}`) as V1PersistentVolume });
      const page = await core.listPersistentVolume({ limit: 10, _continue: cont });
      assert.equal(page.metadata!.resourceVersion, first.metadata!.resourceVersion);
      names.push(...page.items.map((p) => p.metadata!.name!));
      cont = page.metadata!._continue;
    }
    const ours = names.filter((n) => n.startsWith('pv-'));
    assert.equal(ours.length, 25);
    assert.deepEqual(ours, [...ours].sort());
    assert.equal(new Set(names).size, names.length);
  });

  it('rejects a corrupt continue token with 400', async () => {
    const res = await raw(c, 'GET', '/api/v1/persistentvolumes?limit=2&continue=garbage');
    assert.equal(res.status, 400);
  });

  it('supports the full label selector syntax', async () => {
    const names = async (labelSelector: string) =>
      (await core.listPersistentVolume({ labelSelector })).items
        .map((p) => p.metadata!.name)
        .filter((n) => n!.startsWith('pv-'));
    assert.deepEqual(await names('parity=odd,index in (1,2,3)'), ['pv-01', 'pv-03']);
    assert.deepEqual(await names('five,parity!=odd'), ['pv-00', 'pv-10', 'pv-20']);
    assert.equal((await names('!five')).length, 20);
    assert.deepEqual(await names('index notin (0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23)'), [
      'pv-24',
    ]);
    assert.deepEqual(await names('index>22'), ['pv-23', 'pv-24']);
  });

  it("supports each kind's field selectors and rejects unknown fields with 400", async () => {
    const byName = await core.listPersistentVolume({ fieldSelector: 'metadata.name=pv-07' });
    assert.deepEqual(
      byName.items.map((p) => p.metadata!.name),
      ['pv-07'],
    );
    const notName = await core.listPersistentVolume({
      fieldSelector: 'metadata.name!=pv-07',
      labelSelector: 'parity=odd,index<9',
    });
    assert.deepEqual(
      notName.items.map((p) => p.metadata!.name),
      ['pv-01', 'pv-03', 'pv-05'],
    );
    const event: CoreEvent = {
      metadata: { name: 'ev1', namespace: 'default' },
      involvedObject: { kind: 'PersistentVolumeClaim', name: 'data', namespace: 'default', uid: 'u1' },
      reason: 'Provisioning',
      message: 'hello',
      type: 'Normal',
      source: { component: 'tester' },
    };
    await core.createNamespacedEvent({ namespace: 'default', body: event });
    const evs = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector:
        'involvedObject.name=data,involvedObject.kind=PersistentVolumeClaim,reason=Provisioning,source=tester',
    });
    assert.deepEqual(
      evs.items.map((e) => e.metadata!.name),
      ['ev1'],
    );
    const bad = await raw(c, 'GET', '/api/v1/persistentvolumes?fieldSelector=spec.nope%3Dx');
    assert.equal(bad.status, 400);
    assert.equal(bad.json<{ reason: string }>().reason, 'BadRequest');
    const broken = await raw(c, 'GET', '/api/v1/persistentvolumes?labelSelector=a%20in%20(b');
    assert.equal(broken.status, 400);
    assert.equal(broken.json<{ reason: string }>().reason, 'BadRequest');
  });

  it('serves events.k8s.io/v1 as a view of the same events', async () => {
    const res = await raw(c, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events');
    assert.equal(res.status, 200);
    const list = res.json<{
      kind: string;
      apiVersion: string;
      items: Array<{ apiVersion?: string; regarding?: { name: string }; note?: string }>;
    }>();
    assert.equal(list.kind, 'EventList');
    assert.equal(list.apiVersion, 'events.k8s.io/v1');
    const ev = list.items.find((e) => e.regarding?.name === 'data');
    assert.ok(ev);
    // Items of a built-in list carry no apiVersion of their own (the list's is theirs), as kube-apiserver sends them.
    assert.equal(ev.apiVersion, undefined);
    assert.equal(ev.note, 'hello');
    const created = await raw(c, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
      body: JSON.stringify({
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: 'ev2' },
        eventTime: '2025-01-02T03:04:05.123456Z',
        regarding: { kind: 'PersistentVolumeClaim', name: 'data2', namespace: 'default' },
        reason: 'Provisioning',
        action: 'Provision',
        note: 'via events.k8s.io',
        type: 'Normal',
        reportingController: 'example.com/tester',
        reportingInstance: 'tester-1',
      }),
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json<{ note: string }>().note, 'via events.k8s.io');
    const core1 = await core.readNamespacedEvent({ name: 'ev2', namespace: 'default' });
    assert.equal(core1.message, 'via events.k8s.io');
    assert.equal(core1.involvedObject.name, 'data2');
    assert.equal(core1.reportingComponent, 'example.com/tester');
  });

  it('serializes the zero-valued core/v1 Event fields as Go does (eventTime null, reporting fields "")', async () => {
    const res = await raw(c, 'POST', '/api/v1/namespaces/default/events', {
      body: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: 'legacy' },
        involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' },
        reason: 'R',
        message: 'm',
        type: 'Normal',
      }),
    });
    assert.equal(res.status, 201, res.text);
    const ev = res.json<Record<string, unknown>>();
    assert.equal(ev.eventTime, null);
    assert.equal(ev.reportingComponent, '');
    assert.equal(ev.reportingInstance, '');
    const view = (await raw(c, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events/legacy')).json<
      Record<string, unknown>
    >();
    assert.equal(view.eventTime, null);
    assert.ok(!('reportingController' in view) && !('reportingInstance' in view), 'omitempty in events.k8s.io/v1');
  });
});

describe('discovery and tables', () => {
  it('serves legacy discovery with status subresources and short names', async () => {
    const v1 = await raw(c, 'GET', '/api/v1');
    const resources = v1.json<{ resources: Array<{ name: string; shortNames?: string[]; verbs: string[] }> }>()
      .resources;
    const pvc = resources.find((r) => r.name === 'persistentvolumeclaims')!;
    assert.deepEqual(pvc.shortNames, ['pvc']);
    assert.ok(resources.some((r) => r.name === 'persistentvolumeclaims/status'));
    const groups = (await raw(c, 'GET', '/apis')).json<{ groups: Array<{ name: string }> }>().groups.map((g) => g.name);
    for (const g of ['storage.k8s.io', 'coordination.k8s.io', 'events.k8s.io']) assert.ok(groups.includes(g), g);
    assert.equal((await raw(c, 'GET', '/apis/storage.k8s.io/v1')).status, 200);
    assert.equal((await raw(c, 'GET', '/version')).json<{ major: string }>().major, '1');
    assert.equal((await raw(c, 'GET', '/healthz', { token: null })).text, 'ok');
    const openapi = (await raw(c, 'GET', '/openapi/v3')).json<{ paths: Record<string, unknown> }>();
    assert.ok(openapi.paths['api/v1']);
  });

  it('answers a Table when kubectl asks for one', async () => {
    const res = await raw(c, 'GET', '/api/v1/persistentvolumes?limit=500', {
      headers: {
        accept:
          'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      },
    });
    const table = res.json<{ kind: string; rows: Array<{ cells: unknown[]; object: { kind: string } }> }>();
    assert.equal(table.kind, 'Table');
    assert.ok(table.rows.length >= 25);
    assert.equal(table.rows[0].object.kind, 'PartialObjectMetadata');
  });
});

type CoreEvent = CoreV1Event;
