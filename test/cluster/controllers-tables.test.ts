// Server-side printing (tables.ts) and the minimal OpenAPI v3 (openapi.ts): columns and cells as kubectl 1.32 shows them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { toTable } from '../../src/cluster/registry/tables.ts';
import { humanDuration, accessModesString, age } from '../../src/cluster/registry/table-columns.ts';
import { openApiV3Paths, openApiV3Document } from '../../src/cluster/http/openapi.ts';
import { RESOURCES } from '../../src/cluster/registry/registry.ts';
import type { KubeObject } from '../../src/types/k8s.ts';

const NOW = Date.parse('2026-01-10T12:00:00Z');
const ago = (s: number) => new Date(NOW - s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

type TableBody = {
  kind: string;
  apiVersion: string;
  metadata: Record<string, string>;
  columnDefinitions: Array<{ name: string; priority: number; format: string; type: string }>;
  rows: Array<{ cells: unknown[]; object: unknown }>;
};
function table(resource: string, objs: KubeObject[], include: 'None' | 'Object' | 'Metadata' = 'Metadata'): TableBody {
  // Kinds whose registry entry carries its columns (rbac, coordination) print those.
  const columns = RESOURCES.find((r) => r.resource === resource)?.columns;
  return toTable(
    { resource, kind: 'X', group: '', version: 'v1', columns },
    objs,
    { resourceVersion: '42' },
    include,
    NOW,
  ) as TableBody;
}
function row(resource: string, obj: KubeObject): Record<string, unknown> {
  const t = table(resource, [obj]);
  return Object.fromEntries(t.columnDefinitions.map((c, i) => [c.name, t.rows[0].cells[i]]));
}

test('humanDuration matches apimachinery HumanDuration', () => {
  const cases: Array<[number, string]> = [
    [-5, '<invalid>'],
    [-1, '0s'],
    [0, '0s'],
    [5, '5s'],
    [119, '119s'],
    [120, '2m'],
    [182, '3m2s'],
    [600, '10m'],
    [47 * 60, '47m'],
    [179 * 60, '179m'],
    [3 * 3600, '3h'],
    [5 * 3600 + 3 * 60, '5h3m'],
    [8 * 3600, '8h'],
    [47 * 3600, '47h'],
    [48 * 3600, '2d'],
    [3 * 86400 + 2 * 3600, '3d2h'],
    [8 * 86400, '8d'],
    [400 * 86400, '400d'],
    [730 * 86400, '2y'],
    [740 * 86400, '2y10d'],
    [3000 * 86400, '8y'],
  ];
  for (const [s, want] of cases) assert.equal(humanDuration(s * 1000), want, `${s}s`);
  assert.equal(age(undefined, NOW), '<unknown>');
  assert.equal(age(ago(65), NOW), '65s');
});

test('access modes are abbreviated in fixed order and deduplicated', () => {
  assert.equal(accessModesString(['ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOnce']), 'RWO,RWX');
  assert.equal(accessModesString(['ReadWriteOncePod', 'ReadOnlyMany']), 'ROX,RWOP');
  assert.equal(accessModesString(undefined), '');
});

test('pvc columns: pending, bound, terminating, beta class annotation', () => {
  const t = table('persistentvolumeclaims', []);
  assert.deepEqual(
    t.columnDefinitions.map((c) => c.name),
    [
      'Name',
      'Status',
      'Volume',
      'Capacity',
      'Access Modes',
      'StorageClass',
      'VolumeAttributesClass',
      'Age',
      'VolumeMode',
    ],
  );
  assert.deepEqual(
    t.columnDefinitions.map((c) => c.priority),
    [0, 0, 0, 0, 0, 0, 0, 0, 1],
  );
  assert.equal(t.columnDefinitions[0].format, 'name');
  const pending = {
    metadata: { name: 'c', creationTimestamp: ago(5) },
    spec: { storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
    status: { phase: 'Pending' },
  };
  assert.deepEqual(row('persistentvolumeclaims', pending), {
    Name: 'c',
    Status: 'Pending',
    Volume: '',
    Capacity: '',
    'Access Modes': '',
    StorageClass: 'fast',
    VolumeAttributesClass: '<unset>',
    Age: '5s',
    VolumeMode: '<unset>',
  });
  const bound = {
    metadata: {
      name: 'c',
      creationTimestamp: ago(182),
      deletionTimestamp: ago(1),
      annotations: { 'volume.beta.kubernetes.io/storage-class': 'legacy' },
    },
    spec: { storageClassName: 'fast', volumeName: 'pv1', volumeMode: 'Filesystem', volumeAttributesClassName: 'gold' },
    status: { phase: 'Bound', capacity: { storage: '2Gi' }, accessModes: ['ReadWriteOnce'] },
  };
  assert.deepEqual(row('persistentvolumeclaims', bound), {
    Name: 'c',
    Status: 'Terminating',
    Volume: 'pv1',
    Capacity: '2Gi',
    'Access Modes': 'RWO',
    StorageClass: 'legacy',
    VolumeAttributesClass: 'gold',
    Age: '3m2s',
    VolumeMode: 'Filesystem',
  });
});

test('pv columns', () => {
  const pv = {
    metadata: { name: 'pv1', creationTimestamp: ago(3 * 86400) },
    spec: {
      capacity: { storage: '5Gi' },
      accessModes: ['ReadWriteMany', 'ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Retain',
      claimRef: { namespace: 'ns', name: 'c' },
      storageClassName: 'slow',
      volumeMode: 'Block',
    },
    status: { phase: 'Released', reason: 'Gone' },
  };
  assert.deepEqual(row('persistentvolumes', pv), {
    Name: 'pv1',
    Capacity: '5Gi',
    'Access Modes': 'RWO,RWX',
    'Reclaim Policy': 'Retain',
    Status: 'Released',
    Claim: 'ns/c',
    StorageClass: 'slow',
    VolumeAttributesClass: '<unset>',
    Reason: 'Gone',
    Age: '3d',
    VolumeMode: 'Block',
  });
  const bare = row('persistentvolumes', {
    metadata: { name: 'p', deletionTimestamp: ago(0) },
    spec: {},
    status: { phase: 'Bound' },
  });
  assert.equal(bare.Status, 'Terminating');
  assert.equal(bare.Claim, '');
  assert.equal(bare.Age, '<unknown>');
});

test('storageclass columns with (default) suffix and defaults', () => {
  const sc = {
    metadata: {
      name: 'std',
      creationTimestamp: ago(10),
      annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' },
    },
    provisioner: 'example.com/hostpath',
  };
  assert.deepEqual(row('storageclasses', sc), {
    Name: 'std (default)',
    Provisioner: 'example.com/hostpath',
    ReclaimPolicy: 'Delete',
    VolumeBindingMode: 'Immediate',
    AllowVolumeExpansion: false,
    Age: '10s',
  });
  const beta = row('storageclasses', {
    metadata: { name: 'b', annotations: { 'storageclass.beta.kubernetes.io/is-default-class': 'true' } },
    provisioner: 'p',
    reclaimPolicy: 'Retain',
    volumeBindingMode: 'WaitForFirstConsumer',
    allowVolumeExpansion: true,
  });
  assert.equal(beta.Name, 'b (default)');
  assert.equal(beta.VolumeBindingMode, 'WaitForFirstConsumer');
  assert.equal(beta.AllowVolumeExpansion, true);
  assert.equal(
    row('storageclasses', {
      metadata: { name: 'x', annotations: { 'storageclass.kubernetes.io/is-default-class': 'yes' } },
      provisioner: 'p',
    }).Name,
    'x',
  );
});

test('event columns: last seen fallbacks, object, source, count', () => {
  const ev = {
    metadata: { name: 'c.123' },
    involvedObject: { kind: 'PersistentVolumeClaim', name: 'c', fieldPath: '' },
    type: 'Normal',
    reason: 'ExternalProvisioning',
    message: ' waiting \n',
    firstTimestamp: ago(36),
    lastTimestamp: ago(6),
    count: 3,
    source: { component: 'persistentvolume-controller' },
  };
  assert.deepEqual(row('events', ev), {
    'Last Seen': '6s',
    Type: 'Normal',
    Reason: 'ExternalProvisioning',
    Object: 'persistentvolumeclaim/c',
    Subobject: '',
    Source: 'persistentvolume-controller',
    Message: 'waiting',
    'First Seen': '36s',
    Count: 3,
    Name: 'c.123',
  });
  const newApi = row('events', {
    metadata: { name: 'e' },
    involvedObject: { kind: 'Pod' },
    eventTime: '2026-01-10T11:59:50.000000Z',
    reportingComponent: 'sched',
    reportingInstance: 'host1',
  });
  assert.equal(newApi['Last Seen'], '10s');
  assert.equal(newApi.Object, 'pod');
  assert.equal(newApi.Source, 'sched, host1');
  assert.equal(newApi.Count, 1);
  const series = row('events', {
    metadata: { name: 's' },
    involvedObject: { kind: 'Pod', name: 'p' },
    count: 0,
    series: { count: 7, lastObservedTime: '2026-01-10T11:59:58.000000Z' },
    firstTimestamp: ago(100),
  });
  assert.equal(series.Count, 7);
  assert.equal(series['Last Seen'], '2s');
});

test('node, pod, lease, namespace, configmap, secret columns', () => {
  const node = row('nodes', {
    metadata: {
      name: 'n1',
      creationTimestamp: ago(60),
      labels: { 'node-role.kubernetes.io/control-plane': '', 'kubernetes.io/role': 'worker' },
    },
    spec: { unschedulable: true },
    status: {
      conditions: [{ type: 'Ready', status: 'False' }],
      nodeInfo: { kubeletVersion: 'v1.32.0' },
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    },
  });
  assert.deepEqual(node, {
    Name: 'n1',
    Status: 'NotReady,SchedulingDisabled',
    Roles: 'control-plane,worker',
    Age: '60s',
    Version: 'v1.32.0',
    'Internal-IP': '10.0.0.1',
    'External-IP': '<none>',
    'OS-Image': '<unknown>',
    'Kernel-Version': '<unknown>',
    'Container-Runtime': '<unknown>',
  });
  assert.equal(row('nodes', { metadata: { name: 'n' }, status: {} }).Status, 'Unknown');
  assert.equal(
    row('nodes', { metadata: { name: 'n' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } }).Roles,
    '<none>',
  );
  const pod = row('pods', {
    metadata: { name: 'p', creationTimestamp: ago(1) },
    spec: { containers: [{ name: 'a' }, { name: 'b' }], nodeName: 'n1' },
    status: {
      phase: 'Running',
      containerStatuses: [
        { ready: true, restartCount: 2 },
        { ready: false, restartCount: 1 },
      ],
    },
  });
  assert.deepEqual(pod, {
    Name: 'p',
    Ready: '1/2',
    Status: 'Running',
    Restarts: '3',
    Age: '1s',
    IP: '<none>',
    Node: 'n1',
    'Nominated Node': '<none>',
    'Readiness Gates': '<none>',
  });
  assert.equal(
    row('pods', { metadata: { name: 'p', deletionTimestamp: ago(0) }, spec: { containers: [] } }).Status,
    'Terminating',
  );
  assert.deepEqual(
    row('leases', { metadata: { name: 'l', creationTimestamp: ago(2) }, spec: { holderIdentity: 'me' } }),
    { Name: 'l', Holder: 'me', Age: '2s' },
  );
  assert.deepEqual(row('namespaces', { metadata: { name: 'default' }, status: { phase: 'Terminating' } }), {
    Name: 'default',
    Status: 'Terminating',
    Age: '<unknown>',
  });
  assert.equal(
    row('configmaps', { metadata: { name: 'cm' }, data: { a: '1', b: '2' }, binaryData: { c: 'AA==' } }).Data,
    3,
  );
  assert.deepEqual(row('secrets', { metadata: { name: 's' }, data: { a: 'AA==' } }), {
    Name: 's',
    Type: 'Opaque',
    Data: 1,
    Age: '<unknown>',
  });
});

test('toTable shape and includeObject', () => {
  const obj = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'cm', namespace: 'ns', labels: { a: 'b' } },
    data: {},
  };
  const meta = table('configmaps', [obj]);
  assert.equal(meta.kind, 'Table');
  assert.equal(meta.apiVersion, 'meta.k8s.io/v1');
  assert.deepEqual(meta.metadata, { resourceVersion: '42' });
  assert.deepEqual(meta.rows[0].object, {
    kind: 'PartialObjectMetadata',
    apiVersion: 'meta.k8s.io/v1',
    metadata: obj.metadata,
  });
  assert.deepEqual(table('configmaps', [obj], 'Object').rows[0].object, obj);
  assert.equal(table('configmaps', [obj], 'None').rows[0].object, null);
  const generic = table('widgets', [{ metadata: { name: 'w', creationTimestamp: ago(0) } }]);
  assert.deepEqual(
    generic.columnDefinitions.map((c) => c.name),
    ['Name', 'Created At'],
  );
  const withContinue = toTable(
    { resource: 'pods', kind: 'Pod', group: '', version: 'v1' },
    [],
    { resourceVersion: '1', continue: 'abc' },
    'Metadata',
    NOW,
  ) as TableBody;
  assert.deepEqual(withContinue.metadata, { resourceVersion: '1', continue: 'abc' });
  for (const { resource, columns } of RESOURCES) if (columns) assert.ok(columns.length >= 3, resource);
  // Every core/v1 and apps/v1 kind carries its columns on its registry entry.
  for (const r of RESOURCES) if (r.group === '' || r.group === 'apps') assert.ok(r.columns, r.resource);
});

test('columns declared on a registry entry print in place of the generic table', () => {
  const columns = [
    {
      name: 'Name',
      type: 'string',
      format: 'name',
      description: 'name',
      priority: 0,
      cell: (o: KubeObject) => o.metadata.name ?? '',
    },
    {
      name: 'Size',
      type: 'string',
      description: 'size',
      priority: 0,
      cell: (o: KubeObject) => String((o.spec as { size?: string } | undefined)?.size ?? ''),
    },
  ];
  const t = toTable(
    { resource: 'configmaps', kind: 'ConfigMap', group: '', version: 'v1', columns },
    [{ metadata: { name: 'w' }, spec: { size: '3' } }],
    {},
    'None',
    NOW,
  ) as TableBody;
  assert.deepEqual(
    t.columnDefinitions.map((c) => c.name),
    ['Name', 'Size'],
  );
  assert.deepEqual(t.rows[0].cells, ['w', '3']);
  // The rbac bindings declare theirs on their registry entries.
  const rb = RESOURCES.find((r) => r.resource === 'rolebindings')!;
  const binding = {
    metadata: { name: 'rb', creationTimestamp: ago(30) },
    roleRef: { kind: 'Role', name: 'reader' },
    subjects: [
      { kind: 'User', name: 'alice' },
      { kind: 'ServiceAccount', name: 'sa', namespace: 'ns' },
    ],
  };
  const bt = toTable(rb, [binding], {}, 'None', NOW) as TableBody;
  assert.deepEqual(
    bt.columnDefinitions.map((c) => c.name),
    ['Name', 'Role', 'Age', 'Users', 'Groups', 'ServiceAccounts'],
  );
  assert.deepEqual(bt.rows[0].cells, ['rb', 'Role/reader', '30s', 'alice', '', 'ns/sa']);
});

test('openapi v3: paths per group/version, PATCH ops with GVK and fieldValidation, no strategic merge, generated schemas', () => {
  const resources = [
    {
      group: '',
      version: 'v1',
      resource: 'persistentvolumeclaims',
      kind: 'PersistentVolumeClaim',
      namespaced: true,
      hasStatus: true,
    },
    {
      group: '',
      version: 'v1',
      resource: 'persistentvolumes',
      kind: 'PersistentVolume',
      namespaced: false,
      hasStatus: true,
    },
    { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses', kind: 'StorageClass', namespaced: false },
  ];
  const index = openApiV3Paths(resources);
  assert.deepEqual(Object.keys(index.paths).sort(), ['api/v1', 'apis/storage.k8s.io/v1']);
  assert.match(index.paths['api/v1'].serverRelativeURL, /^\/openapi\/v3\/api\/v1\?hash=[0-9A-F]{128}$/);
  const doc = openApiV3Document('apis/storage.k8s.io/v1', resources) as {
    paths: Record<
      string,
      Record<
        string,
        {
          'x-kubernetes-group-version-kind': unknown;
          parameters?: Array<{ name: string; in: string }>;
          requestBody?: { content: Record<string, unknown> };
        }
      >
    >;
    components: { schemas: Record<string, Record<string, unknown>> };
  };
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    '/apis/storage.k8s.io/v1/storageclasses',
    '/apis/storage.k8s.io/v1/storageclasses/{name}',
  ]);
  const patch = doc.paths['/apis/storage.k8s.io/v1/storageclasses/{name}'].patch;
  assert.deepEqual(patch['x-kubernetes-group-version-kind'], {
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'StorageClass',
  });
  assert.ok(patch.parameters?.some((p) => p.name === 'fieldValidation' && p.in === 'query'));
  assert.ok(!('application/strategic-merge-patch+json' in (patch.requestBody?.content ?? {})));
  const schema = doc.components.schemas['io.k8s.api.storage.v1.StorageClass'] as {
    properties: Record<string, { type?: string }>;
  };
  assert.equal(schema.properties.provisioner.type, 'string');
  assert.deepEqual((schema as Record<string, unknown>)['x-kubernetes-group-version-kind'], [
    { group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass' },
  ]);
  const core = openApiV3Document('api/v1', resources) as { paths: Record<string, unknown> };
  assert.ok('/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}/status' in core.paths);
  assert.ok('/api/v1/persistentvolumes/{name}' in core.paths);
});
