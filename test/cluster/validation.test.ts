import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObjectMeta } from '../../src/cluster/registry/validation.ts';
import { validateConfigMap, validateSecret } from '../../src/cluster/registry/core/config-maps-secrets.ts';
import { validateNamespace } from '../../src/cluster/registry/core/namespaces.ts';
import { validateNode } from '../../src/cluster/registry/core/nodes.ts';
import { validatePersistentVolumeClaim } from '../../src/cluster/registry/core/persistent-volume-claims.ts';
import { validatePersistentVolume } from '../../src/cluster/registry/core/persistent-volumes.ts';
import { validatePod } from '../../src/cluster/registry/core/pods.ts';
import { validateLease } from '../../src/cluster/registry/coordination.ts';
import { validateEvent } from '../../src/cluster/registry/event-resources.ts';
import { validateStorageClass } from '../../src/cluster/registry/storage/storage-classes.ts';
import type { KubeObject, ObjectMeta, StatusCause } from '../../src/types/k8s.ts';

type Mutation = (o: KubeObject) => void;
/** [description, mutation, expected "field reason" strings (exact set), optional message regex for the first] */
type Case = [string, Mutation, string[], RegExp?];

const summary = (cs: StatusCause[]) => cs.map((c) => `${c.field} ${c.reason}`).sort();

function runCases(validate: (o: KubeObject, old?: KubeObject) => StatusCause[], base: () => KubeObject, cases: Case[]) {
  assert.deepEqual(validate(base()), [], 'base object is valid');
  for (const [name, mutate, want, re] of cases) {
    const o = base();
    mutate(o);
    const got = validate(o);
    assert.deepEqual(summary(got), [...want].sort(), `${name}: ${JSON.stringify(got)}`);
    if (re) assert.match(got[0].message ?? '', re, name);
  }
}

const spec = (o: KubeObject) => o.spec as Record<string, unknown>;

test('validateObjectMeta: names, namespaces, labels, annotations, finalizers, ownerReferences', () => {
  const cases: Array<[ObjectMeta, boolean, 'dns1123subdomain' | 'dns1123label' | 'path', string[], RegExp?]> = [
    [{ name: 'pv-1.example' }, false, 'dns1123subdomain', []],
    [{ generateName: 'pvc-', namespace: 'default' }, true, 'dns1123subdomain', []],
    [
      {},
      false,
      'dns1123subdomain',
      ['metadata.name FieldValueRequired'],
      /^Required value: name or generateName is required$/,
    ],
    [
      { name: 'Bad_Name' },
      false,
      'dns1123subdomain',
      ['metadata.name FieldValueInvalid'],
      /^Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of/,
    ],
    [
      { name: 'a'.repeat(254) },
      false,
      'dns1123subdomain',
      ['metadata.name FieldValueInvalid'],
      /must be no more than 253 characters/,
    ],
    [{ name: 'a.b' }, false, 'dns1123label', ['metadata.name FieldValueInvalid'], /must not contain dots/],
    [{ name: 'a'.repeat(64) }, false, 'dns1123label', ['metadata.name FieldValueInvalid'], /no more than 63/],
    [{ name: 'x%y' }, true, 'path', ['metadata.namespace FieldValueRequired', 'metadata.name FieldValueInvalid']],
    [{ name: 'x', namespace: 'Bad' }, true, 'dns1123subdomain', ['metadata.namespace FieldValueInvalid']],
    [
      { name: 'x', namespace: 'default' },
      false,
      'dns1123subdomain',
      ['metadata.namespace FieldValueForbidden'],
      /not allowed on this type/,
    ],
    [
      { name: 'x', labels: { 'example.com/app': 'web', 'bad key': 'v', k: '-bad' } },
      false,
      'dns1123subdomain',
      ['metadata.labels FieldValueInvalid', 'metadata.labels FieldValueInvalid'],
    ],
    [
      { name: 'x', annotations: { 'Example.com/Big': 'x'.repeat(256 * 1024) } },
      false,
      'dns1123subdomain',
      ['metadata.annotations FieldValueTooLong'],
      /^Too long: may not be more than 262144 bytes$/,
    ],
    [
      { name: 'x', finalizers: ['kubernetes.io/pv-protection', 'kubernetes', 'foregroundDeletion', 'plain', 'a/b/c'] },
      false,
      'dns1123subdomain',
      ['metadata.finalizers FieldValueInvalid', 'metadata.finalizers FieldValueInvalid'],
    ],
    [
      {
        name: 'x',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u' },
          { apiVersion: '', kind: 'K', name: 'n', uid: '' },
        ],
      },
      false,
      'dns1123subdomain',
      ['metadata.ownerReferences.apiVersion FieldValueInvalid', 'metadata.ownerReferences.uid FieldValueInvalid'],
    ],
    [{ name: 'x', generateName: 'Bad-' }, false, 'dns1123subdomain', ['metadata.generateName FieldValueInvalid']],
  ];
  for (const [meta, namespaced, rule, want, re] of cases) {
    const got = validateObjectMeta(meta, namespaced, rule);
    assert.deepEqual(summary(got), [...want].sort(), JSON.stringify(meta).slice(0, 120));
    if (re) assert.match(got[0].message ?? '', re);
  }
});

const pv = (): KubeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name: 'pv1' },
  spec: {
    capacity: { storage: '10Gi' },
    accessModes: ['ReadWriteOnce'],
    hostPath: { path: '/data/pv1' },
    persistentVolumeReclaimPolicy: 'Delete',
    volumeMode: 'Filesystem',
    storageClassName: 'standard',
    claimRef: { namespace: 'default', name: 'c', uid: 'u' },
    nodeAffinity: {
      required: {
        nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1'] }] }],
      },
    },
  },
});

test('validatePersistentVolume', () => {
  runCases(validatePersistentVolume, pv, [
    ['no capacity', (o) => delete spec(o).capacity, ['spec.capacity FieldValueRequired']],
    [
      'bad quantity',
      (o) => (spec(o).capacity = { storage: '10GB' }),
      ['spec.capacity[storage] FieldValueInvalid'],
      /quantities must match/,
    ],
    [
      'negative quantity',
      (o) => (spec(o).capacity = { storage: '-1' }),
      ['spec.capacity[storage] FieldValueInvalid'],
      /greater than or equal to 0/,
    ],
    [
      'extra capacity key',
      (o) => (spec(o).capacity = { storage: '1Gi', cpu: '1' }),
      ['spec.capacity FieldValueNotSupported'],
    ],
    ['no access modes', (o) => (spec(o).accessModes = []), ['spec.accessModes FieldValueRequired']],
    [
      'unknown access mode',
      (o) => (spec(o).accessModes = ['ReadWriteSometimes']),
      ['spec.accessModes FieldValueNotSupported'],
      /^Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"$/,
    ],
    [
      'RWOP mixed',
      (o) => (spec(o).accessModes = ['ReadWriteOncePod', 'ReadWriteOnce']),
      ['spec.accessModes FieldValueForbidden'],
    ],
    ['no source', (o) => delete spec(o).hostPath, ['spec FieldValueRequired'], /must specify a volume type/],
    [
      'two sources',
      (o) => (spec(o).nfs = { server: 's', path: '/x' }),
      ['spec.nfs FieldValueForbidden'],
      /more than 1 volume type/,
    ],
    ['hostPath without path', (o) => (spec(o).hostPath = {}), ['spec.hostPath.path FieldValueRequired']],
    ['hostPath with ..', (o) => (spec(o).hostPath = { path: '/a/../b' }), ['spec.hostPath.path FieldValueInvalid']],
    [
      'hostPath bad type',
      (o) => (spec(o).hostPath = { path: '/a', type: 'Dir' }),
      ['spec.hostPath.type FieldValueNotSupported'],
    ],
    [
      'local without affinity',
      (o) => {
        delete spec(o).hostPath;
        delete spec(o).nodeAffinity;
        spec(o).local = { path: '/mnt' };
      },
      ['spec.nodeAffinity FieldValueRequired'],
    ],
    [
      'relative nfs path',
      (o) => {
        delete spec(o).hostPath;
        spec(o).nfs = { server: 's', path: 'x' };
      },
      ['spec.nfs.path FieldValueInvalid'],
    ],
    [
      'csi without handle',
      (o) => {
        delete spec(o).hostPath;
        spec(o).csi = { driver: 'd.example.com' };
      },
      ['spec.csi.volumeHandle FieldValueRequired'],
    ],
    [
      'bad reclaim policy',
      (o) => (spec(o).persistentVolumeReclaimPolicy = 'Keep'),
      ['spec.persistentVolumeReclaimPolicy FieldValueNotSupported'],
    ],
    ['bad volume mode', (o) => (spec(o).volumeMode = 'Raw'), ['spec.volumeMode FieldValueNotSupported']],
    ['bad class name', (o) => (spec(o).storageClassName = 'Fast_SSD'), ['spec.storageClassName FieldValueInvalid']],
    [
      'claimRef without namespace',
      (o) => (spec(o).claimRef = { name: 'c' }),
      ['spec.claimRef.namespace FieldValueRequired'],
    ],
    [
      'nodeAffinity without required',
      (o) => (spec(o).nodeAffinity = {}),
      ['spec.nodeAffinity.required FieldValueRequired'],
    ],
    [
      'no terms',
      (o) => (spec(o).nodeAffinity = { required: { nodeSelectorTerms: [] } }),
      ['spec.nodeAffinity.required.nodeSelectorTerms FieldValueRequired'],
    ],
    [
      'In without values',
      (o) =>
        (spec(o).nodeAffinity = {
          required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'In' }] }] },
        }),
      ['spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values FieldValueRequired'],
    ],
    [
      'bad operator',
      (o) =>
        (spec(o).nodeAffinity = {
          required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'k', operator: 'Is' }] }] },
        }),
      ['spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator FieldValueInvalid'],
    ],
    ['spec not an object', (o) => (o.spec = 'x'), ['spec FieldValueTypeInvalid']],
  ]);
  const old = pv();
  const changed = pv();
  spec(changed).hostPath = { path: '/other' };
  spec(changed).volumeMode = 'Block';
  assert.deepEqual(summary(validatePersistentVolume(changed, old)), [
    'spec.persistentvolumesource FieldValueForbidden',
    'volumeMode FieldValueInvalid',
  ]);
  const bindOnly = pv();
  spec(bindOnly).claimRef = { namespace: 'default', name: 'other', uid: 'u2' };
  assert.deepEqual(validatePersistentVolume(bindOnly, old), [], 'claimRef and reclaim policy may change');
});

const pvc = (): KubeObject => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'c', namespace: 'default' },
  spec: {
    accessModes: ['ReadWriteOnce'],
    resources: { requests: { storage: '1Gi' } },
    storageClassName: 'standard',
    volumeMode: 'Filesystem',
  },
  status: { phase: 'Pending' },
});

test('validatePersistentVolumeClaim: create', () => {
  runCases(validatePersistentVolumeClaim, pvc, [
    [
      'no access modes',
      (o) => delete spec(o).accessModes,
      ['spec.accessModes FieldValueRequired'],
      /^Required value: at least 1 access mode is required$/,
    ],
    [
      'no storage request',
      (o) => (spec(o).resources = {}),
      ['spec.resources[storage] FieldValueRequired'],
      /^Required value$/,
    ],
    [
      'zero storage',
      (o) => (spec(o).resources = { requests: { storage: '0' } }),
      ['spec.resources[storage] FieldValueInvalid'],
      /^Invalid value: "0": must be greater than zero$/,
    ],
    [
      'garbage storage',
      (o) => (spec(o).resources = { requests: { storage: 'lots' } }),
      ['spec.resources[storage] FieldValueInvalid'],
    ],
    ['bad mode', (o) => (spec(o).accessModes = ['RWO']), ['spec.accessModes FieldValueNotSupported']],
    ['bad volumeMode', (o) => (spec(o).volumeMode = 'block'), ['spec.volumeMode FieldValueNotSupported']],
    [
      'bad selector',
      (o) => (spec(o).selector = { matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
      ['spec.selector FieldValueInvalid'],
    ],
    [
      'dataSource of unknown core kind',
      (o) => (spec(o).dataSource = { kind: 'Pod', name: 'x' }),
      ['spec.dataSource FieldValueInvalid'],
    ],
    ['empty class name allowed', (o) => (spec(o).storageClassName = ''), []],
  ]);
});

test('validatePersistentVolumeClaim: update immutability', () => {
  const bound = () => {
    const o = pvc();
    o.status = { phase: 'Bound', capacity: { storage: '1Gi' } };
    return o;
  };
  const cases: Array<[string, () => KubeObject, Mutation, string[]]> = [
    ['binding sets volumeName', pvc, (o) => (spec(o).volumeName = 'pv1'), []],
    [
      'retroactive default class',
      () => {
        const o = pvc();
        delete spec(o).storageClassName;
        return o;
      },
      (o) => (spec(o).storageClassName = 'std'),
      [],
    ],
    ['class change forbidden', pvc, (o) => (spec(o).storageClassName = 'other'), ['spec FieldValueForbidden']],
    ['access modes immutable', pvc, (o) => (spec(o).accessModes = ['ReadWriteMany']), ['spec FieldValueForbidden']],
    [
      'resize of unbound claim',
      pvc,
      (o) => (spec(o).resources = { requests: { storage: '2Gi' } }),
      ['spec FieldValueForbidden'],
    ],
    ['expansion of bound claim', bound, (o) => (spec(o).resources = { requests: { storage: '2Gi' } }), []],
    [
      'shrink of bound claim',
      bound,
      (o) => (spec(o).resources = { requests: { storage: '512Mi' } }),
      ['spec.resources.requests.storage FieldValueForbidden'],
    ],
    ['VAC change of bound claim', bound, (o) => (spec(o).volumeAttributesClassName = 'gold'), []],
    [
      'volumeName rebind',
      () => {
        const o = bound();
        spec(o).volumeName = 'pv1';
        return o;
      },
      (o) => (spec(o).volumeName = 'pv2'),
      ['spec FieldValueForbidden'],
    ],
  ];
  for (const [name, makeOld, mutate, want] of cases) {
    const old = makeOld();
    const next = structuredClone(old);
    mutate(next);
    const got = validatePersistentVolumeClaim(next, old);
    assert.deepEqual(summary(got), want, `${name}: ${JSON.stringify(got)}`);
  }
  const old = pvc();
  const next = structuredClone(old);
  spec(next).accessModes = ['ReadOnlyMany'];
  assert.match(
    validatePersistentVolumeClaim(next, old)[0].message ?? '',
    /^Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims/,
  );
});

const sc = (): KubeObject => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name: 'standard' },
  provisioner: 'kube-provisioner.io/hostpath',
  parameters: { path: '/data' },
  reclaimPolicy: 'Delete',
  volumeBindingMode: 'WaitForFirstConsumer',
  allowedTopologies: [{ matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: ['n1'] }] }],
});

test('validateStorageClass: create and update', () => {
  runCases(validateStorageClass, sc, [
    ['no provisioner', (o) => delete o.provisioner, ['provisioner FieldValueRequired']],
    ['bad provisioner', (o) => (o.provisioner = 'a/b/c'), ['provisioner FieldValueInvalid']],
    [
      'too many parameters',
      (o) => (o.parameters = Object.fromEntries(Array.from({ length: 513 }, (_, i) => [`k${i}`, 'v']))),
      ['parameters FieldValueTooLong'],
    ],
    [
      'Recycle not allowed',
      (o) => (o.reclaimPolicy = 'Recycle'),
      ['reclaimPolicy FieldValueNotSupported'],
      /supported values: "Delete", "Retain"$/,
    ],
    ['bad binding mode', (o) => (o.volumeBindingMode = 'Later'), ['volumeBindingMode FieldValueNotSupported']],
    ['missing binding mode', (o) => delete o.volumeBindingMode, ['volumeBindingMode FieldValueRequired']],
    [
      'empty topology term',
      (o) => (o.allowedTopologies = [{}]),
      ['allowedTopologies[0].matchLabelExpressions FieldValueRequired'],
    ],
  ]);
  const old = sc();
  const next = sc();
  next.parameters = { path: '/other' };
  next.provisioner = 'other.io/x';
  next.reclaimPolicy = 'Retain';
  next.volumeBindingMode = 'Immediate';
  const got = validateStorageClass(next, old);
  assert.deepEqual(summary(got), [
    'parameters FieldValueForbidden',
    'provisioner FieldValueForbidden',
    'reclaimPolicy FieldValueForbidden',
    'volumeBindingMode FieldValueInvalid',
  ]);
  assert.equal(got.find((c) => c.field === 'parameters')?.message, 'Forbidden: updates to parameters are forbidden.');
  assert.equal(
    got.find((c) => c.field === 'volumeBindingMode')?.message,
    'Invalid value: "Immediate": field is immutable',
  );
  const labelsOnly = sc();
  labelsOnly.metadata.labels = { a: 'b' };
  labelsOnly.allowVolumeExpansion = true;
  assert.deepEqual(validateStorageClass(labelsOnly, old), []);
});

test('validateNode, validatePod, validateLease, validateNamespace', () => {
  runCases(
    validateNode,
    () => ({
      metadata: { name: 'n1' },
      spec: { taints: [{ key: 'k', effect: 'NoSchedule' }] },
      status: { capacity: { storage: '1Ti' } },
    }),
    [
      [
        'bad effect',
        (o) => (spec(o).taints = [{ key: 'k', effect: 'Never' }]),
        ['spec.taints[0].effect FieldValueNotSupported'],
      ],
      [
        'duplicate taint',
        (o) =>
          (spec(o).taints = [
            { key: 'k', effect: 'NoSchedule' },
            { key: 'k', effect: 'NoSchedule' },
          ]),
        ['spec.taints[1] FieldValueDuplicate'],
      ],
      [
        'bad capacity',
        (o) => (o.status = { capacity: { storage: 'x' } }),
        ['status.capacity[storage] FieldValueInvalid'],
      ],
    ],
  );
  const pod = (): KubeObject => ({
    metadata: { name: 'p', namespace: 'default' },
    spec: {
      containers: [{ name: 'app', image: 'busybox', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }],
    },
  });
  runCases(validatePod, pod, [
    ['no containers', (o) => (spec(o).containers = []), ['spec.containers FieldValueRequired']],
    ['no image', (o) => (spec(o).containers = [{ name: 'a' }]), ['spec.containers[0].image FieldValueRequired']],
    [
      'duplicate container',
      (o) =>
        (spec(o).containers = [
          { name: 'a', image: 'i' },
          { name: 'a', image: 'i' },
        ]),
      ['spec.containers[1].name FieldValueDuplicate'],
    ],
    [
      'claimName missing',
      (o) => (spec(o).volumes = [{ name: 'data', persistentVolumeClaim: {} }]),
      ['spec.volumes[0].persistentVolumeClaim.claimName FieldValueRequired'],
    ],
    [
      'mount of unknown volume',
      (o) => (spec(o).volumes = []),
      ['spec.containers[0].volumeMounts[0].name FieldValueNotFound'],
    ],
    ['bad restartPolicy', (o) => (spec(o).restartPolicy = 'Sometimes'), ['spec.restartPolicy FieldValueNotSupported']],
  ]);
  const oldPod = pod();
  const bound = pod();
  spec(bound).nodeName = 'n1';
  (spec(bound).containers as Array<Record<string, unknown>>)[0].image = 'busybox:2';
  assert.deepEqual(validatePod(bound, oldPod), [], 'binding and image change allowed');
  const moved = structuredClone(bound);
  spec(moved).nodeName = 'n2';
  assert.deepEqual(summary(validatePod(moved, bound)), ['spec FieldValueForbidden']);
  const volChange = pod();
  spec(volChange).volumes = [{ name: 'data', persistentVolumeClaim: { claimName: 'other' } }];
  assert.deepEqual(summary(validatePod(volChange, oldPod)), ['spec FieldValueForbidden']);

  runCases(
    validateLease,
    () => ({
      metadata: { name: 'l', namespace: 'kube-system' },
      spec: { holderIdentity: 'me', leaseDurationSeconds: 15, leaseTransitions: 0 },
    }),
    [
      [
        'zero duration',
        (o) => (spec(o).leaseDurationSeconds = 0),
        ['spec.leaseDurationSeconds FieldValueInvalid'],
        /^Invalid value: 0: must be greater than 0$/,
      ],
      [
        'negative transitions',
        (o) => (spec(o).leaseTransitions = -1),
        ['spec.leaseTransitions FieldValueInvalid'],
        /greater than or equal to 0/,
      ],
      [
        'preferredHolder without strategy',
        (o) => (spec(o).preferredHolder = 'x'),
        ['spec.preferredHolder FieldValueForbidden'],
      ],
      [
        'duration as string',
        (o) => (spec(o).leaseDurationSeconds = '15'),
        ['spec.leaseDurationSeconds FieldValueTypeInvalid'],
      ],
    ],
  );
  runCases(
    validateNamespace,
    () => ({ metadata: { name: 'ns' }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } }),
    [
      ['bad finalizer', (o) => (spec(o).finalizers = ['bad finalizer']), ['spec.finalizers FieldValueInvalid']],
      ['bad phase', (o) => (o.status = { phase: 'Gone' }), ['status.phase FieldValueNotSupported']],
    ],
  );
});

test('validateEvent: legacy and new-style events', () => {
  const ev = (): KubeObject => ({
    metadata: { name: 'e', namespace: 'default' },
    involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'c' },
    reason: 'Provisioning',
    message: 'm',
    type: 'Normal',
    source: { component: 'x' },
  });
  runCases(validateEvent, ev, [
    [
      'namespace mismatch',
      (o) => ((o.involvedObject as Record<string, unknown>).namespace = 'other'),
      ['involvedObject.namespace FieldValueInvalid'],
      /does not match event.namespace$/,
    ],
    [
      'cluster-scoped object in default is fine',
      (o) => delete (o.involvedObject as Record<string, unknown>).namespace,
      [],
    ],
    ['no involvedObject', (o) => delete o.involvedObject, ['involvedObject FieldValueRequired']],
    [
      'new-style event without reporting fields',
      (o) => (o.eventTime = '2026-01-01T00:00:00.000000Z'),
      ['action FieldValueRequired', 'reportingComponent FieldValueRequired', 'reportingInstance FieldValueRequired'],
    ],
    [
      'new-style complete',
      (o) =>
        Object.assign(o, {
          eventTime: '2026-01-01T00:00:00.000000Z',
          action: 'Provision',
          reportingComponent: 'kube-provisioner.io/hostpath',
          reportingInstance: 'pod-1',
        }),
      [],
    ],
    [
      'new-style long reason',
      (o) =>
        Object.assign(o, {
          eventTime: 't',
          action: 'a',
          reportingComponent: 'c',
          reportingInstance: 'i',
          reason: 'r'.repeat(129),
        }),
      ['reason FieldValueInvalid'],
    ],
  ]);
});

test('validateConfigMap and validateSecret', () => {
  runCases(
    validateConfigMap,
    () => ({ metadata: { name: 'cm', namespace: 'default' }, data: { 'config.yaml': 'a: 1', KEY_1: 'x' } }),
    [
      ['bad key', (o) => (o.data = { 'a/b': 'x' }), ['data[a/b] FieldValueInvalid']],
      ['dot-dot key', (o) => (o.data = { '..x': 'x' }), ['data[..x] FieldValueInvalid']],
      ['duplicate with binaryData', (o) => (o.binaryData = { KEY_1: 'eA==' }), ['data[KEY_1] FieldValueInvalid']],
      ['over 1 MiB', (o) => (o.data = { big: 'x'.repeat(1024 * 1024 + 1) }), [' FieldValueTooLong']],
    ],
  );
  const frozen = { metadata: { name: 'cm', namespace: 'default' }, data: { a: '1' }, immutable: true };
  assert.deepEqual(summary(validateConfigMap({ ...frozen, data: { a: '2' } }, frozen)), ['data FieldValueForbidden']);
  assert.deepEqual(validateConfigMap({ ...frozen, metadata: { ...frozen.metadata, labels: { x: 'y' } } }, frozen), []);

  runCases(
    validateSecret,
    () => ({ metadata: { name: 's', namespace: 'default' }, type: 'Opaque', data: { token: 'c2VjcmV0' } }),
    [
      [
        'tls without key',
        (o) => Object.assign(o, { type: 'kubernetes.io/tls', data: { 'tls.crt': 'eA==' } }),
        ['data[tls.key] FieldValueRequired'],
      ],
      [
        'over 1 MiB',
        (o) => (o.data = { big: Buffer.from('x'.repeat(1024 * 1024 + 1)).toString('base64') }),
        ['data FieldValueTooLong'],
      ],
    ],
  );
  const s = { metadata: { name: 's', namespace: 'default' }, type: 'Opaque', data: {} };
  assert.deepEqual(
    summary(validateSecret({ ...s, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } }, s)),
    ['type FieldValueInvalid'],
  );
});

// Property: metadata.name validity under the subdomain rule agrees with the reference regex for random strings.
test('property: name validation agrees with the DNS-1123 subdomain grammar', () => {
  let seed = 99;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const alphabet = 'ab0-.A_';
  const re = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
  for (let i = 0; i < 2000; i++) {
    const len = 1 + rnd(12);
    let name = '';
    for (let j = 0; j < len; j++) name += alphabet[rnd(alphabet.length)];
    const ok = validateObjectMeta({ name }, false, 'dns1123subdomain').length === 0;
    assert.equal(ok, re.test(name), name);
    const labelOk = validateObjectMeta({ name }, false, 'dns1123label').length === 0;
    assert.equal(labelOk, re.test(name) && !name.includes('.'), `label ${name}`);
  }
});
