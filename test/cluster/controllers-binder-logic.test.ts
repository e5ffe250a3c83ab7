// Table-driven tests of the PV controller's pure decisions (binder-logic.ts, volume-match.ts), after the cases of
// kube-controller-manager's binder_test.go / provision_test.go: given claims, volumes and classes, the writes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  syncClaim,
  syncVolume,
  type BinderAction,
  type BinderView,
  EXTERNAL_PROVISIONING_MESSAGE,
} from '../../src/cluster/controllers/binder-logic.ts';
import {
  findBestMatchForClaim,
  listVolumeSource,
  pickDefaultClass,
  ClaimMatchError,
} from '../../src/cluster/controllers/volume-match.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass, Pod, AccessMode } from '../../src/types/k8s.ts';

type ClaimOpts = {
  size?: string;
  cls?: string | null;
  modes?: AccessMode[];
  volumeName?: string;
  ann?: Record<string, string>;
  phase?: 'Pending' | 'Bound' | 'Lost';
  selector?: PersistentVolumeClaim['spec']['selector'];
  mode?: 'Block' | 'Filesystem';
  uid?: string;
};
function pvc(name: string, o: ClaimOpts = {}): PersistentVolumeClaim {
  const c: PersistentVolumeClaim = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'ns', uid: o.uid ?? `uid-${name}`, resourceVersion: '7', annotations: o.ann },
    spec: {
      accessModes: o.modes ?? ['ReadWriteOnce'],
      resources: { requests: { storage: o.size ?? '1Gi' } },
      volumeName: o.volumeName,
      selector: o.selector,
      volumeMode: o.mode,
    },
    status: { phase: o.phase ?? 'Pending' },
  };
  if (o.cls !== null) c.spec.storageClassName = o.cls ?? 'fast';
  return c;
}
type VolumeOpts = {
  size?: string;
  cls?: string;
  modes?: AccessMode[];
  claim?: string;
  claimUid?: string;
  phase?: NonNullable<PersistentVolume['status']>['phase'];
  ann?: Record<string, string>;
  labels?: Record<string, string>;
  policy?: string;
  mode?: 'Block' | 'Filesystem';
  deleting?: boolean;
  csi?: boolean;
};
function pv(name: string, o: VolumeOpts = {}): PersistentVolume {
  const v: PersistentVolume = {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '3',
      annotations: o.ann,
      labels: o.labels,
      deletionTimestamp: o.deleting ? '2026-01-01T00:00:00Z' : undefined,
    },
    spec: {
      capacity: { storage: o.size ?? '1Gi' },
      accessModes: o.modes ?? ['ReadWriteOnce'],
      storageClassName: o.cls ?? 'fast',
      persistentVolumeReclaimPolicy: (o.policy ?? 'Retain') as 'Retain',
      volumeMode: o.mode,
      hostPath: { path: '/tmp/x' },
    },
    status: { phase: o.phase ?? 'Available' },
  };
  if (o.claim)
    v.spec.claimRef = {
      kind: 'PersistentVolumeClaim',
      namespace: 'ns',
      name: o.claim,
      uid: o.claimUid,
      apiVersion: 'v1',
    };
  if (o.csi) v.spec.csi = { driver: 'd', volumeHandle: 'h' };
  return v;
}
function sc(
  name: string,
  o: { provisioner?: string; wffc?: boolean; def?: boolean; created?: string } = {},
): StorageClass {
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    provisioner: o.provisioner ?? 'example.com/p',
    metadata: {
      name,
      creationTimestamp: o.created ?? '2026-01-01T00:00:00Z',
      annotations: o.def ? { 'storageclass.kubernetes.io/is-default-class': 'true' } : undefined,
    },
    volumeBindingMode: o.wffc ? 'WaitForFirstConsumer' : 'Immediate',
  };
}
function view(
  o: { pvs?: PersistentVolume[]; pvcs?: PersistentVolumeClaim[]; classes?: StorageClass[]; pods?: Pod[] } = {},
): BinderView {
  const classes = o.classes ?? [sc('fast')];
  return {
    volumes: listVolumeSource(o.pvs ?? []),
    getVolume: (n) => o.pvs?.find((v) => v.metadata.name === n),
    getClaim: (ns, n) => o.pvcs?.find((c) => c.metadata.namespace === ns && c.metadata.name === n),
    getClass: (n) => classes.find((c) => c.metadata.name === n),
    defaultClass: () => pickDefaultClass(classes),
    podsUsingClaim: () => o.pods ?? [],
  };
}
/** A compact, comparable rendering of an action list. */
function summary(actions: BinderAction[]): string[] {
  return actions.map((a) => {
    switch (a.kind) {
      case 'updateVolume':
        return `pv ${a.volume.metadata.name} claimRef=${a.volume.spec.claimRef ? `${a.volume.spec.claimRef.name}/${a.volume.spec.claimRef.uid ?? ''}` : '-'} bbc=${a.volume.metadata.annotations?.['pv.kubernetes.io/bound-by-controller'] ?? '-'}`;
      case 'updateVolumeStatus':
        return `pv/status ${a.volume.metadata.name} ${a.volume.status?.phase}`;
      case 'updateClaim':
        return `pvc ${a.claim.metadata.name} vol=${a.claim.spec.volumeName ?? '-'} class=${a.claim.spec.storageClassName ?? '-'} ann=${Object.keys(
          a.claim.metadata.annotations ?? {},
        )
          .sort()
          .join(',')}`;
      case 'updateClaimStatus':
        return `pvc/status ${a.claim.metadata.name} ${a.claim.status?.phase} ${a.claim.status?.capacity?.storage ?? '-'} ${(a.claim.status?.accessModes ?? []).join(',') || '-'}`;
      case 'deleteVolume':
        return `delete pv ${a.name}`;
      case 'enqueueClaim':
        return `enqueue ${a.key}`;
      case 'event':
        return `event ${a.on.kind} ${a.type} ${a.reason}`;
    }
  });
}

const BC = 'pv.kubernetes.io/bind-completed';
const BBC = 'pv.kubernetes.io/bound-by-controller';
const BIND_WRITES = (v: string, c: string, size = '1Gi', modes = 'ReadWriteOnce') => [
  `pv ${v} claimRef=${c}/uid-${c} bbc=yes`,
  `pv/status ${v} Bound`,
  `pvc ${c} vol=${v} class=fast ann=${BC},${BBC}`,
  `pvc/status ${c} Bound ${size} ${modes}`,
];

test('syncClaim decisions', () => {
  const cases: Array<{ name: string; claim: PersistentVolumeClaim; v?: Parameters<typeof view>[0]; want: string[] }> = [
    {
      name: 'binds the only matching Available PV in the order of bind()',
      claim: pvc('c'),
      v: { pvs: [pv('v1')] },
      want: BIND_WRITES('v1', 'c'),
    },
    {
      name: 'smallest fit wins',
      claim: pvc('c', { size: '2Gi' }),
      v: { pvs: [pv('big', { size: '10Gi' }), pv('small', { size: '1Gi' }), pv('fit', { size: '3Gi' })] },
      want: BIND_WRITES('fit', 'c', '3Gi'),
    },
    {
      name: 'narrowest access-mode group first',
      claim: pvc('c'),
      v: {
        pvs: [pv('wide', { modes: ['ReadWriteOnce', 'ReadWriteMany'], size: '1Gi' }), pv('narrow', { size: '5Gi' })],
      },
      want: BIND_WRITES('narrow', 'c', '5Gi'),
    },
    {
      name: 'class mismatch: provisions instead',
      claim: pvc('c'),
      v: { pvs: [pv('v1', { cls: 'slow' })] },
      want: [
        'pvc c vol=- class=fast ann=volume.beta.kubernetes.io/storage-provisioner,volume.kubernetes.io/storage-provisioner',
        'event PersistentVolumeClaim Normal ExternalProvisioning',
      ],
    },
    {
      name: 'access mode not offered',
      claim: pvc('c', { modes: ['ReadWriteMany'], cls: '' }),
      v: { pvs: [pv('v1', { cls: '' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'too small',
      claim: pvc('c', { size: '2Gi', cls: '' }),
      v: { pvs: [pv('v1', { cls: '' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'volumeMode differs',
      claim: pvc('c', { mode: 'Block', cls: '' }),
      v: { pvs: [pv('v1', { cls: '' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'selector does not match',
      claim: pvc('c', { cls: '', selector: { matchLabels: { tier: 'gold' } } }),
      v: { pvs: [pv('v1', { cls: '', labels: { tier: 'silver' } })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'selector matches',
      claim: pvc('c', { selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold'] }] } }),
      v: { pvs: [pv('v0'), pv('v1', { labels: { tier: 'gold' } })] },
      want: BIND_WRITES('v1', 'c'),
    },
    {
      name: 'PV not Available is skipped',
      claim: pvc('c', { cls: '' }),
      v: { pvs: [pv('v1', { cls: '', phase: 'Released' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'PV being deleted is skipped',
      claim: pvc('c', { cls: '' }),
      v: { pvs: [pv('v1', { cls: '', deleting: true })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'PV claimed by another claim is skipped',
      claim: pvc('c', { cls: '' }),
      v: { pvs: [pv('v1', { cls: '', claim: 'other' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'provisioner-made PV (claimRef with uid) binds without bound-by-controller on the PV',
      claim: pvc('c'),
      v: {
        pvs: [
          pv('pvc-1', {
            claim: 'c',
            claimUid: 'uid-c',
            phase: 'Pending',
            cls: 'other',
            ann: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' },
          }),
        ],
      },
      want: [
        'pv/status pvc-1 Bound',
        `pvc c vol=pvc-1 class=fast ann=${BC},${BBC}`,
        'pvc/status c Bound 1Gi ReadWriteOnce',
      ],
    },
    {
      name: 'user pre-bound PV without uid: uid filled, no bound-by-controller on the PV',
      claim: pvc('c'),
      v: { pvs: [pv('v1', { claim: 'c', labels: {} })] },
      want: [
        'pv v1 claimRef=c/uid-c bbc=-',
        'pv/status v1 Bound',
        `pvc c vol=v1 class=fast ann=${BC},${BBC}`,
        'pvc/status c Bound 1Gi ReadWriteOnce',
      ],
    },
    {
      name: 'pre-bound PV for a recreated claim (other uid) is not used',
      claim: pvc('c', { cls: '' }),
      v: { pvs: [pv('v1', { cls: '', claim: 'c', claimUid: 'old' })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'missing class: ProvisioningFailed',
      claim: pvc('c', { cls: 'nope' }),
      want: ['event PersistentVolumeClaim Warning ProvisioningFailed'],
    },
    {
      name: 'in-tree provisioner name: ProvisioningFailed',
      claim: pvc('c', { cls: 'local' }),
      v: { classes: [sc('local', { provisioner: 'kubernetes.io/no-provisioner' })] },
      want: ['event PersistentVolumeClaim Warning ProvisioningFailed'],
    },
    {
      name: 'already annotated: only the event',
      claim: pvc('c', { ann: { 'volume.kubernetes.io/storage-provisioner': 'example.com/p' } }),
      want: ['event PersistentVolumeClaim Normal ExternalProvisioning'],
    },
    {
      name: 'no class at all: default class assigned retroactively',
      claim: pvc('c', { cls: null }),
      v: { classes: [sc('old', { def: true }), sc('new', { def: true, created: '2026-02-01T00:00:00Z' })] },
      want: ['pvc c vol=- class=new ann='],
    },
    {
      name: 'explicit "" class is never defaulted',
      claim: pvc('c', { cls: '' }),
      v: { classes: [sc('d', { def: true })] },
      want: ['event PersistentVolumeClaim Normal FailedBinding'],
    },
    {
      name: 'WaitForFirstConsumer without selected node waits',
      claim: pvc('c', { cls: 'late' }),
      v: { classes: [sc('late', { wffc: true })], pvs: [pv('v1', { cls: 'late' })] },
      want: ['event PersistentVolumeClaim Normal WaitForFirstConsumer'],
    },
    {
      name: 'WaitForFirstConsumer with an unscheduled pod',
      claim: pvc('c', { cls: 'late' }),
      v: { classes: [sc('late', { wffc: true })], pods: [{ metadata: { name: 'p1' }, spec: { containers: [] } }] },
      want: ['event PersistentVolumeClaim Normal WaitForPodScheduled'],
    },
    {
      name: 'WaitForFirstConsumer with selected node provisions',
      claim: pvc('c', { cls: 'late', ann: { 'volume.kubernetes.io/selected-node': 'n1' } }),
      v: { classes: [sc('late', { wffc: true })] },
      want: [
        'pvc c vol=- class=late ann=volume.beta.kubernetes.io/storage-provisioner,volume.kubernetes.io/selected-node,volume.kubernetes.io/storage-provisioner',
        'event PersistentVolumeClaim Normal ExternalProvisioning',
      ],
    },
    { name: 'claim names a missing volume: Pending, no event', claim: pvc('c', { volumeName: 'gone' }), want: [] },
    {
      name: 'claim names an unclaimed volume that is too small',
      claim: pvc('c', { volumeName: 'v1', size: '5Gi' }),
      v: { pvs: [pv('v1')] },
      want: ['event PersistentVolumeClaim Warning VolumeMismatch'],
    },
    {
      name: 'claim names an unclaimed fitting volume',
      claim: pvc('c', { volumeName: 'v1' }),
      v: { pvs: [pv('v1')] },
      want: [
        'pv v1 claimRef=c/uid-c bbc=yes',
        'pv/status v1 Bound',
        `pvc c vol=v1 class=fast ann=${BC}`,
        'pvc/status c Bound 1Gi ReadWriteOnce',
      ],
    },
    {
      name: 'claim names a volume bound elsewhere (user pre-bound): FailedBinding, stays Pending',
      claim: pvc('c', { volumeName: 'v1' }),
      v: { pvs: [pv('v1', { claim: 'x', claimUid: 'u' })] },
      want: ['event PersistentVolumeClaim Warning FailedBinding'],
    },
    {
      name: 'same with a stale Bound phase: FailedBinding, then status Pending',
      claim: pvc('c', { volumeName: 'v1', phase: 'Bound' }),
      v: { pvs: [pv('v1', { claim: 'x', claimUid: 'u' })] },
      want: ['event PersistentVolumeClaim Warning FailedBinding', 'pvc/status c Pending - -'],
    },
    {
      name: 'bound claim, everything in place: no writes',
      claim: pvc('c', { volumeName: 'v1', phase: 'Bound', ann: { [BC]: 'yes', [BBC]: 'yes' } }),
      v: { pvs: [pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound', ann: { [BBC]: 'yes' } })] },
      want: ['pvc/status c Bound - ReadWriteOnce'],
    },
    {
      name: 'bound claim whose volume vanished: Lost',
      claim: pvc('c', { volumeName: 'v1', phase: 'Bound', ann: { [BC]: 'yes' } }),
      want: ['pvc/status c Lost - -', 'event PersistentVolumeClaim Warning ClaimLost'],
    },
    {
      name: 'bound claim without volumeName: Lost',
      claim: pvc('c', { phase: 'Bound', ann: { [BC]: 'yes' } }),
      want: ['pvc/status c Lost - -', 'event PersistentVolumeClaim Warning ClaimLost'],
    },
    {
      name: 'misbound claim',
      claim: pvc('c', { volumeName: 'v1', phase: 'Bound', ann: { [BC]: 'yes' } }),
      v: { pvs: [pv('v1', { claim: 'd', claimUid: 'uid-d', phase: 'Bound' })] },
      want: ['pvc/status c Lost - -', 'event PersistentVolumeClaim Warning ClaimMisbound'],
    },
    { name: 'already Lost: nothing', claim: pvc('c', { phase: 'Lost', ann: { [BC]: 'yes' } }), want: [] },
  ];
  for (const c of cases) assert.deepEqual(summary(syncClaim(c.claim, view(c.v))), c.want, c.name);
});

test('syncClaim: ExternalProvisioning message, status clearing, claimRef content', () => {
  const acts = syncClaim(pvc('c'), view());
  const event = acts.find((a) => a.kind === 'event');
  assert.ok(event && event.kind === 'event');
  assert.equal(event.message, EXTERNAL_PROVISIONING_MESSAGE('example.com/p'));
  assert.match(
    event.message,
    /^Waiting for a volume to be created either by the external provisioner 'example\.com\/p' or manually/,
  );
  const update = acts[0];
  assert.ok(update.kind === 'updateClaim' && update.onError?.reason === 'ProvisioningFailed');

  const stale = pvc('c', { cls: '' });
  stale.status = { phase: 'Bound', capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] };
  const cleared = syncClaim(stale, view()).find((a) => a.kind === 'updateClaimStatus');
  assert.ok(cleared && cleared.kind === 'updateClaimStatus');
  assert.deepEqual(cleared.claim.status, { phase: 'Pending' });

  const bindActs = syncClaim(pvc('c'), view({ pvs: [pv('v1')] }));
  assert.ok(bindActs[0].kind === 'updateVolume');
  assert.deepEqual(bindActs[0].volume.spec.claimRef, {
    kind: 'PersistentVolumeClaim',
    namespace: 'ns',
    name: 'c',
    uid: 'uid-c',
    apiVersion: 'v1',
    resourceVersion: '7',
  });
});

test('syncVolume decisions', () => {
  const boundClaim = pvc('c', { volumeName: 'v1', phase: 'Bound', ann: { [BC]: 'yes' } });
  const cases: Array<{ name: string; volume: PersistentVolume; v?: Parameters<typeof view>[0]; want: string[] }> = [
    {
      name: 'new unclaimed volume becomes Available',
      volume: pv('v1', { phase: 'Pending' }),
      want: ['pv/status v1 Available'],
    },
    { name: 'Available stays (no write)', volume: pv('v1'), want: [] },
    {
      name: 'pre-bound without uid is Available',
      volume: pv('v1', { claim: 'c', phase: 'Pending' }),
      want: ['pv/status v1 Available'],
    },
    {
      name: 'claim exists and is bound here: Bound',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Available' }),
      v: { pvcs: [boundClaim] },
      want: ['pv/status v1 Bound'],
    },
    {
      name: 'claim Pending: enqueue it',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Pending' }),
      v: { pvcs: [pvc('c')] },
      want: ['enqueue ns/c'],
    },
    {
      name: 'claim Pending with other volumeMode: VolumeMismatch on both',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', mode: 'Block' }),
      v: { pvcs: [pvc('c')] },
      want: ['event PersistentVolume Warning VolumeMismatch', 'event PersistentVolumeClaim Warning VolumeMismatch'],
    },
    {
      name: 'claim deleted, Retain: Released only',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound' }),
      want: ['pv/status v1 Released'],
    },
    {
      name: 'claim recreated with another uid: Released',
      volume: pv('v1', { claim: 'c', claimUid: 'old', phase: 'Bound' }),
      v: { pvcs: [pvc('c')] },
      want: ['pv/status v1 Released'],
    },
    {
      name: 'claim deleted, Delete, external provisioner: Released, left to it',
      volume: pv('v1', {
        claim: 'c',
        claimUid: 'uid-c',
        phase: 'Bound',
        policy: 'Delete',
        ann: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' },
      }),
      want: ['pv/status v1 Released'],
    },
    {
      name: 'claim deleted, Delete, CSI: left to its driver',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound', policy: 'Delete', csi: true }),
      want: ['pv/status v1 Released'],
    },
    {
      name: 'claim deleted, Delete, nobody owns it: the binder deletes it',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound', policy: 'Delete' }),
      want: ['pv/status v1 Released', 'delete pv v1'],
    },
    {
      name: 'already Released, Delete: delete retried',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Released', policy: 'Delete' }),
      want: ['delete pv v1'],
    },
    {
      name: 'Recycle: Failed',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound', policy: 'Recycle' }),
      want: ['pv/status v1 Released', 'pv/status v1 Failed', 'event PersistentVolume Warning VolumeFailedRecycle'],
    },
    {
      name: 'unknown policy: Failed',
      volume: pv('v1', { claim: 'c', claimUid: 'uid-c', phase: 'Bound', policy: 'Shred' }),
      want: [
        'pv/status v1 Released',
        'pv/status v1 Failed',
        'event PersistentVolume Warning VolumeUnknownReclaimPolicy',
      ],
    },
    {
      name: 'claimRef names a claim that never existed: Released, no event (kcm only logs)',
      volume: pv('v1', { claim: 'ghost', claimUid: 'u1', phase: 'Pending' }),
      want: ['pv/status v1 Released'],
    },
    {
      name: 'second PV for a claim bound elsewhere, bound by controller: unbound',
      volume: pv('v2', { claim: 'c', claimUid: 'uid-c', ann: { [BBC]: 'yes' } }),
      v: { pvcs: [boundClaim] },
      want: ['pv v2 claimRef=- bbc=-'],
    },
    {
      name: 'second PV pre-bound by user: only uid cleared',
      volume: pv('v2', { claim: 'c', claimUid: 'uid-c', phase: 'Bound' }),
      v: { pvcs: [boundClaim] },
      want: ['pv v2 claimRef=c/ bbc=-', 'pv/status v2 Available'],
    },
    {
      name: 'second PV provisioned with Delete: Released for its provisioner',
      volume: pv('v2', {
        claim: 'c',
        claimUid: 'uid-c',
        policy: 'Delete',
        phase: 'Pending',
        ann: { 'pv.kubernetes.io/provisioned-by': 'example.com/p' },
      }),
      v: { pvcs: [boundClaim] },
      want: ['pv/status v2 Released'],
    },
    {
      name: 'unparsable capacity: warned, still Available',
      volume: pv('v1', { size: 'lots', phase: 'Pending' }),
      want: ['event PersistentVolume Warning VolumeMismatch', 'pv/status v1 Available'],
    },
  ];
  for (const c of cases) assert.deepEqual(summary(syncVolume(c.volume, view(c.v))), c.want, c.name);
});

test('matching: pre-bound PV wins regardless of phase/class/selector; delayed binding skips unbound PVs', () => {
  const claim = pvc('c', { selector: { matchLabels: { a: 'b' } } });
  const prebound = pv('pre', { claim: 'c', phase: 'Released', cls: 'other', size: '9Gi' });
  const src = listVolumeSource([pv('avail', { labels: { a: 'b' } }), prebound]);
  assert.equal(findBestMatchForClaim(claim, src, false)?.metadata.name, 'pre');
  assert.equal(findBestMatchForClaim(claim, src, true)?.metadata.name, 'pre');
  assert.equal(findBestMatchForClaim(pvc('c2', { selector: { matchLabels: { a: 'b' } } }), src, true), undefined);
  assert.equal(
    findBestMatchForClaim(pvc('c2', { selector: { matchLabels: { a: 'b' } } }), src, false)?.metadata.name,
    'avail',
  );
  // The pre-bound PV must still be big enough.
  assert.equal(findBestMatchForClaim(pvc('c', { size: '10Gi', cls: 'x' }), src, false), undefined);
  assert.throws(() => findBestMatchForClaim(pvc('c', { size: 'huge' }), src, false), ClaimMatchError);
  assert.throws(
    () =>
      findBestMatchForClaim(
        pvc('c', { selector: { matchExpressions: [{ key: 'a', operator: 'Bogus' as 'In' }] } }),
        listVolumeSource([pv('x')]),
        false,
      ),
    ClaimMatchError,
  );
});

test('pickDefaultClass: newest wins, ties by name, exact "true" only', () => {
  assert.equal(pickDefaultClass([sc('a')]), undefined);
  assert.equal(pickDefaultClass([sc('b', { def: true }), sc('a', { def: true })])?.metadata.name, 'a');
  assert.equal(
    pickDefaultClass([sc('a', { def: true }), sc('z', { def: true, created: '2026-03-01T00:00:00Z' })])?.metadata.name,
    'z',
  );
  const beta = sc('beta');
  beta.metadata.annotations = { 'storageclass.beta.kubernetes.io/is-default-class': 'true' };
  assert.equal(pickDefaultClass([beta])?.metadata.name, 'beta');
  const yes = sc('yes');
  yes.metadata.annotations = { 'storageclass.kubernetes.io/is-default-class': 'True' };
  assert.equal(pickDefaultClass([yes]), undefined);
});

test('decisions never mutate their inputs (they run on shared cache objects)', () => {
  const freeze = <T>(o: T): T => {
    if (o && typeof o === 'object') {
      for (const v of Object.values(o)) freeze(v);
      Object.freeze(o);
    }
    return o;
  };
  const boundClaim = freeze(pvc('c', { volumeName: 'v1', phase: 'Bound', ann: { [BC]: 'yes' } }));
  const inputs: Array<() => unknown> = [
    () => syncClaim(freeze(pvc('c')), view({ pvs: [freeze(pv('v1'))] })),
    () => syncClaim(freeze(pvc('c', { cls: null })), view({ classes: [freeze(sc('d', { def: true }))] })),
    () => syncClaim(freeze(pvc('c')), view()),
    () => syncClaim(boundClaim, view()),
    () => syncVolume(freeze(pv('v2', { claim: 'c', claimUid: 'uid-c', phase: 'Bound' })), view({ pvcs: [boundClaim] })),
    () =>
      syncVolume(
        freeze(pv('v2', { claim: 'c', claimUid: 'uid-c', ann: { [BBC]: 'yes' } })),
        view({ pvcs: [boundClaim] }),
      ),
    () => syncVolume(freeze(pv('v3', { claim: 'gone', claimUid: 'x', policy: 'Recycle' })), view()),
  ];
  for (const run of inputs) assert.doesNotThrow(run);
});
