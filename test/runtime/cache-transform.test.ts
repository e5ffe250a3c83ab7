// cacheTransform: what an informer keeps of an object. managedFields, kubectl's last-applied annotation and
// named fields are dropped, every other field is kept as it was, and repeated short strings go through one bounded
// table (names, uids and resourceVersions do not, so the table does not grow with the objects). The informer applies
// it to listed and watched objects before they are cached or handed to a handler.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheTransform, LAST_APPLIED_ANNOTATION } from '../../src/runtime/cache-transform.ts';
import { StringTable } from '../../src/types/shared-strings.ts';
import { KubeClient } from '../../src/runtime/client.ts';
import { Informer } from '../../src/runtime/informer.ts';
import { persistentVolumes } from '../../src/runtime/resources.ts';
import type { Node, PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { waitFor } from '../support/wait.ts';
import { startFakeApi } from './fake-api.ts';

const claim = (i: number): PersistentVolumeClaim => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: {
    name: `data-${i}`,
    namespace: 'apps',
    uid: `uid-${i}`,
    resourceVersion: String(100 + i),
    annotations: {
      'volume.kubernetes.io/storage-provisioner': 'hostpath.kube-provisioner.io',
      [LAST_APPLIED_ANNOTATION]: '{"kind":"PersistentVolumeClaim"}',
    },
    labels: { app: 'db' },
    finalizers: ['kubernetes.io/pvc-protection'],
    managedFields: [{ manager: 'kubectl', operation: 'Apply', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': {} } }],
  } as PersistentVolumeClaim['metadata'],
  spec: {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    storageClassName: 'hostpath',
    volumeName: `pvc-${i}`,
  },
  status: { phase: 'Bound' },
});

test('drops managedFields and the last-applied annotation, keeps every other field', () => {
  const transform = cacheTransform<PersistentVolumeClaim>();
  const out = transform(claim(1));
  const expected = claim(1);
  delete (expected.metadata as { managedFields?: unknown }).managedFields;
  delete expected.metadata.annotations![LAST_APPLIED_ANNOTATION];
  assert.deepEqual(out, expected);
  const onlyLastApplied = claim(2);
  onlyLastApplied.metadata.annotations = { [LAST_APPLIED_ANNOTATION]: '{}' };
  assert.equal(transform(onlyLastApplied).metadata.annotations, undefined, 'no empty annotation map is left');
});

test("drops the named fields (a Node's image list), keeps the rest of status", () => {
  const node: Node = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1' } },
    status: { images: [{ names: ['busybox'], sizeBytes: 1 }], conditions: [{ type: 'Ready', status: 'True' }] },
  } as Node;
  const out = cacheTransform<Node>({ dropFields: ['status.images', 'spec.nothing.here'] })(node);
  assert.deepEqual(out.status, { conditions: [{ type: 'Ready', status: 'True' }] });
  assert.deepEqual(out.metadata.labels, { 'kubernetes.io/hostname': 'n1' });
});

test('shares repeated short strings through one bounded table; names, uids and versions are not added', () => {
  const strings = new StringTable();
  const transform = cacheTransform<PersistentVolumeClaim>({ strings });
  for (let i = 0; i < 50; i++) transform(claim(i));
  // apiVersion, kind, namespace, the provisioner annotation value, label value, finalizer, access mode, quantity,
  // class name and phase: the same 10 strings for 50 claims.
  assert.equal(strings.size, 10);
  const small = new StringTable(3);
  for (const s of ['a', 'b', 'c', 'd']) small.share(s);
  assert.equal(small.size, 1, 'a full table starts over');
  assert.equal(small.share('d'), 'd');
});

test('the informer applies its transform to listed and watched objects before caching and handlers', async () => {
  const fake = await startFakeApi();
  const client = new KubeClient({ kubeConfig: fake.kubeConfig, qps: 0 });
  const seen: string[] = [];
  const pv = (name: string, rv: string): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: { [LAST_APPLIED_ANNOTATION]: '{}', keep: rv } },
    spec: {},
  });
  const informer = new Informer<PersistentVolume>({
    client,
    resource: persistentVolumes,
    transform: cacheTransform<PersistentVolume>(),
    handlers: { onAdd: (o) => seen.push(`${o.metadata.name}:${Object.keys(o.metadata.annotations ?? {}).join(',')}`) },
  });
  try {
    fake.put('persistentvolumes', pv('listed', '1'));
    informer.start();
    await informer.synced;
    await waitFor('watch open', () => fake.openWatches() === 1);
    fake.put('persistentvolumes', pv('watched', '2'));
    await waitFor('watched object cached', () => informer.store.get('watched'));
    assert.deepEqual(seen, ['listed:keep', 'watched:keep']);
    assert.deepEqual(informer.store.get('listed')?.metadata.annotations, { keep: '1' });
  } finally {
    await informer.stop();
    client.close();
    await fake.close();
  }
});
