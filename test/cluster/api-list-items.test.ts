// The wire form of objects, as kube-apiserver sends them (issue 25 part 3): the items of a built-in list carry no
// kind/apiVersion (only the list does), on every list path (whole list, pages, an older resourceVersion, all
// namespaces, another group, the events.k8s.io view, deletecollection); a GET, a write's answer and every watch
// event carry the object WITH kind/apiVersion; Table rows carry them as ConvertToVersion / PartialObjectMetadata
// set them. Read over raw HTTPS, and through client-node, whose typed lists must still work without them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CoreV1Api, type V1PersistentVolume } from '@kubernetes/client-node';
import { startCluster, type TestCluster } from '../../src/testing/index.ts';
import { pvBody, raw } from './api-harness.ts';

let c: TestCluster;
let core: CoreV1Api;
let rvAfterFirst = '';

type Obj = { kind?: string; apiVersion?: string; metadata: { name: string; resourceVersion?: string } };
type List = {
  kind: string;
  apiVersion: string;
  metadata: { resourceVersion: string; continue?: string };
  items: Obj[];
};

function assertBareItems(list: List, listKind: string, apiVersion: string, what: string): void {
  assert.equal(list.kind, listKind, what);
  assert.equal(list.apiVersion, apiVersion, what);
  assert.ok(list.items.length > 0, `${what}: no items`);
  for (const item of list.items) {
    assert.equal(item.kind, undefined, `${what}: item ${item.metadata.name} carries kind`);
    assert.equal(item.apiVersion, undefined, `${what}: item ${item.metadata.name} carries apiVersion`);
    assert.ok(item.metadata.name, `${what}: item without metadata`);
  }
}

async function getList(path: string): Promise<List> {
  const res = await raw(c, 'GET', path);
  assert.equal(res.status, 200, `${path}: ${res.text}`);
  return res.json<List>();
}

/** Reads a raw watch stream until `n` events arrived. */
async function watchEvents(path: string, n: number): Promise<Array<{ type: string; object: Obj }>> {
  const { request } = await import('node:https');
  const ca = Buffer.from(c.kubeConfig.getCurrentCluster()!.caData!, 'base64');
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, c.url),
      { headers: { authorization: `Bearer ${c.token}` }, ca, agent: false },
      (res) => {
        let buf = '';
        const events: Array<{ type: string; object: Obj }> = [];
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            events.push(JSON.parse(buf.slice(0, nl)) as { type: string; object: Obj });
            buf = buf.slice(nl + 1);
          }
          if (events.length >= n) {
            req.destroy();
            resolve(events);
          }
        });
      },
    );
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

before(async () => {
  c = await startCluster({ controllers: false });
  core = c.kubeConfig.makeApiClient(CoreV1Api);
  for (let i = 0; i < 3; i++)
    await core.createPersistentVolume({ body: pvBody(`items-pv-${i}`) as V1PersistentVolume });
  rvAfterFirst = (await getList('/api/v1/persistentvolumes')).metadata.resourceVersion;
  for (let i = 3; i < 6; i++)
    await core.createPersistentVolume({ body: pvBody(`items-pv-${i}`) as V1PersistentVolume });
  for (const ns of ['default', 'kube-system']) {
    const claim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: `items-claim-${ns}` },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    };
    const res = await raw(c, 'POST', `/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      body: JSON.stringify(claim),
    });
    assert.equal(res.status, 201, res.text);
  }
  const sc = {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'items-sc' },
    provisioner: 'example.com/x',
  };
  assert.equal(
    (await raw(c, 'POST', '/apis/storage.k8s.io/v1/storageclasses', { body: JSON.stringify(sc) })).status,
    201,
  );
  const ev = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'items-event', namespace: 'default' },
    involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'items-claim-default' },
    reason: 'Testing',
    message: 'list items',
    type: 'Normal',
  };
  assert.equal((await raw(c, 'POST', '/api/v1/namespaces/default/events', { body: JSON.stringify(ev) })).status, 201);
});
after(() => c.stop());

describe('list items carry no kind/apiVersion, as kube-apiserver serves built-in lists', () => {
  it('a whole list', async () => {
    assertBareItems(await getList('/api/v1/persistentvolumes'), 'PersistentVolumeList', 'v1', 'list');
  });

  it('every page of a paginated list', async () => {
    let cont: string | undefined = '';
    let pages = 0;
    do {
      const list: List = await getList(`/api/v1/persistentvolumes?limit=2${cont ? `&continue=${cont}` : ''}`);
      assertBareItems(list, 'PersistentVolumeList', 'v1', `page ${pages}`);
      cont = list.metadata.continue;
      pages++;
    } while (cont);
    assert.ok(pages >= 3);
  });

  it('a list at an older resourceVersion (rebuilt from the watch cache)', async () => {
    const list = await getList(`/api/v1/persistentvolumes?resourceVersion=${rvAfterFirst}&resourceVersionMatch=Exact`);
    assertBareItems(list, 'PersistentVolumeList', 'v1', 'exact list');
    assert.deepEqual(
      list.items.map((i) => i.metadata.name).filter((n) => n.startsWith('items-pv-')),
      ['items-pv-0', 'items-pv-1', 'items-pv-2'],
    );
  });

  it('a list across namespaces, a namespaced list, another group, and the events.k8s.io view', async () => {
    assertBareItems(
      await getList('/api/v1/persistentvolumeclaims'),
      'PersistentVolumeClaimList',
      'v1',
      'all namespaces',
    );
    assertBareItems(
      await getList('/api/v1/namespaces/kube-system/persistentvolumeclaims'),
      'PersistentVolumeClaimList',
      'v1',
      'one namespace',
    );
    assertBareItems(
      await getList('/apis/storage.k8s.io/v1/storageclasses'),
      'StorageClassList',
      'storage.k8s.io/v1',
      'storage group',
    );
    assertBareItems(await getList('/api/v1/namespaces/default/events'), 'EventList', 'v1', 'core events');
    assertBareItems(
      await getList('/apis/events.k8s.io/v1/namespaces/default/events'),
      'EventList',
      'events.k8s.io/v1',
      'events.k8s.io view',
    );
  });

  it('the list deletecollection answers', async () => {
    for (const name of ['dc-a', 'dc-b']) {
      const body = JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, labels: { dc: 'yes' } },
        data: { a: 'b' },
      });
      assert.equal((await raw(c, 'POST', '/api/v1/namespaces/default/configmaps', { body })).status, 201);
    }
    const res = await raw(c, 'DELETE', '/api/v1/namespaces/default/configmaps?labelSelector=dc%3Dyes');
    assert.equal(res.status, 200, res.text);
    assertBareItems(res.json<List>(), 'ConfigMapList', 'v1', 'deletecollection');
  });

  it('a client that accepts protobuf or JSON gets JSON with bare items (protobuf items never carry them)', async () => {
    const res = await raw(c, 'GET', '/api/v1/persistentvolumes', {
      headers: { accept: 'application/vnd.kubernetes.protobuf, application/json' },
    });
    assert.equal(res.status, 200, res.text);
    assertBareItems(res.json<List>(), 'PersistentVolumeList', 'v1', 'protobuf-or-JSON list');
  });

  it('custom resources (the snapshot kinds) keep kind/apiVersion on their items, as apiextensions-apiserver serves them', async () => {
    const vsc = {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotClass',
      metadata: { name: 'items-vsc' },
      driver: 'example.com/x',
      deletionPolicy: 'Delete',
    };
    assert.equal(
      (await raw(c, 'POST', '/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses', { body: JSON.stringify(vsc) }))
        .status,
      201,
    );
    for (const path of [
      '/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses',
      '/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses?limit=1',
    ]) {
      const list = await getList(path);
      assert.equal(list.kind, 'VolumeSnapshotClassList');
      assert.ok(list.items.length > 0);
      for (const item of list.items)
        assert.deepEqual([item.kind, item.apiVersion], ['VolumeSnapshotClass', 'snapshot.storage.k8s.io/v1'], path);
    }
  });

  it('client-node typed lists still read their items', async () => {
    const list = await core.listPersistentVolume();
    assert.ok(list.items.some((pv) => pv.metadata?.name === 'items-pv-0' && pv.spec?.capacity?.storage === '1Gi'));
  });
});

describe('single objects and watch events carry kind/apiVersion', () => {
  it('a GET and a write answer', async () => {
    const got = (await raw(c, 'GET', '/api/v1/persistentvolumes/items-pv-0')).json<Obj>();
    assert.equal(got.kind, 'PersistentVolume');
    assert.equal(got.apiVersion, 'v1');
    const created = await raw(c, 'POST', '/api/v1/persistentvolumes', {
      body: JSON.stringify(pvBody('items-pv-created')),
    });
    assert.equal(created.json<Obj>().kind, 'PersistentVolume');
    assert.equal(created.json<Obj>().apiVersion, 'v1');
    const sc = (await raw(c, 'GET', '/apis/storage.k8s.io/v1/storageclasses/items-sc')).json<Obj>();
    assert.equal(sc.apiVersion, 'storage.k8s.io/v1');
  });

  it('initial, replayed and live watch events', async () => {
    const initial = await watchEvents('/api/v1/persistentvolumes?watch=true&resourceVersion=0', 6);
    const replayed = await watchEvents(`/api/v1/persistentvolumes?watch=true&resourceVersion=${rvAfterFirst}`, 3);
    const live = watchEvents(
      '/apis/storage.k8s.io/v1/storageclasses?watch=true&resourceVersion=' +
        (await getList('/apis/storage.k8s.io/v1/storageclasses')).metadata.resourceVersion,
      1,
    );
    const sc = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'items-sc-live' },
      provisioner: 'example.com/x',
    };
    assert.equal(
      (await raw(c, 'POST', '/apis/storage.k8s.io/v1/storageclasses', { body: JSON.stringify(sc) })).status,
      201,
    );
    for (const [what, events, kind, apiVersion] of [
      ['initial', initial, 'PersistentVolume', 'v1'],
      ['replayed', replayed, 'PersistentVolume', 'v1'],
      ['live', await live, 'StorageClass', 'storage.k8s.io/v1'],
    ] as const) {
      for (const e of events) {
        assert.equal(e.object.kind, kind, `${what} ${e.type} ${e.object.metadata.name}`);
        assert.equal(e.object.apiVersion, apiVersion, `${what} ${e.type} ${e.object.metadata.name}`);
      }
    }
  });

  it('Table rows: the object with kind for includeObject=Object, PartialObjectMetadata for Metadata', async () => {
    const accept = { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' };
    const full = (await raw(c, 'GET', '/api/v1/persistentvolumes?includeObject=Object', { headers: accept })).json<{
      rows: Array<{ object: Obj }>;
    }>();
    assert.ok(full.rows.length > 0);
    for (const r of full.rows) assert.deepEqual([r.object.kind, r.object.apiVersion], ['PersistentVolume', 'v1']);
    const meta = (await raw(c, 'GET', '/api/v1/persistentvolumes', { headers: accept })).json<{
      rows: Array<{ object: Obj }>;
    }>();
    for (const r of meta.rows)
      assert.deepEqual([r.object.kind, r.object.apiVersion], ['PartialObjectMetadata', 'meta.k8s.io/v1']);
  });
});
