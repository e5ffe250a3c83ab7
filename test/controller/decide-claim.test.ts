// Table tests of decideClaim: every row of the Go library's shouldProvision / provisionClaimOperation
// (sig-storage-lib-external-provisioner's controller.go) and the applicable scenarios of the Go library's controller_test.go
// (TestShouldProvision, TestCanProvision, TestController's "don't provision" rows, TestInfeasibleRetry).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideClaim,
  type ClaimDecisionInput,
  type ClaimAction,
  type ClaimDecisionCode,
} from '../../src/controller/claim/decide-claim.ts';
import { claimFingerprint, recordFailure, type FailureRecord } from '../../src/controller/failures.ts';
import { resolveOptions, type ProvisionControllerOptions } from '../../src/controller/options/controller-options.ts';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import {
  ANN_BETA_STORAGE_CLASS,
  ANN_BETA_STORAGE_PROVISIONER,
  ANN_CONTROL_PLANE_LEADER,
  ANN_SELECTED_NODE,
  ANN_STORAGE_PROVISIONER,
} from '../../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';
import { newClaim, newProvisionedVolume, newStorageClass } from './fixtures.ts';

const NOW = Date.UTC(2026, 0, 1);
const wffc = { volumeBindingMode: 'WaitForFirstConsumer' as const };

interface Row {
  name: string;
  provisionerName?: string;
  options?: ProvisionControllerOptions;
  classes?: StorageClass[];
  volumes?: PersistentVolume[];
  claim: PersistentVolumeClaim;
  provisioner?: Pick<Provisioner, 'shouldProvision' | 'supportsBlock'>;
  failures?: (claim: PersistentVolumeClaim, cls: StorageClass | undefined) => FailureRecord;
  inProgress?: boolean;
  action: ClaimAction;
  code: ClaimDecisionCode;
  eventReason?: string;
  eventMessage?: RegExp;
  check?: (d: ReturnType<typeof decideClaim>) => void;
}

function run(row: Row) {
  const options = resolveOptions(row.options ?? {}, {});
  const classes = row.classes ?? [newStorageClass('class-1', 'foo.bar/baz')];
  const cls = classes.find((c) => c.metadata.name === row.claim.spec.storageClassName);
  const input: ClaimDecisionInput = {
    claim: row.claim,
    provisionerName: row.provisionerName ?? 'foo.bar/baz',
    options,
    getStorageClass: (n) => classes.find((c) => c.metadata.name === n),
    getVolume: (n) => (row.volumes ?? []).find((v) => v.metadata.name === n),
    provisioner: row.provisioner ?? {},
    failures: row.failures?.(row.claim, cls),
    inProgress: row.inProgress,
    now: NOW,
  };
  return decideClaim(input);
}

function failuresOf(n: number, extra: Partial<FailureRecord> = {}) {
  return (claim: PersistentVolumeClaim, cls: StorageClass | undefined): FailureRecord => {
    let rec: FailureRecord | undefined;
    for (let i = 0; i < n; i++) rec = recordFailure(rec, claimFingerprint(claim, cls), 'mock error');
    return { ...(rec as FailureRecord), ...extra };
  };
}

const rows: Row[] = [
  // TestShouldProvision
  {
    name: 'should provision based on provisionerName',
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'should provision based on additionalProvisionerNames',
    provisionerName: 'csi.com/mock-csi',
    options: { additionalProvisionerNames: ['foo.bar/baz', 'foo.xyz/baz'] },
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'claim already bound',
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', 'foo'),
    action: 'ignore',
    code: 'AlreadyBound',
  },
  {
    name: 'no such class: wait (with an event), provisioning starts when the class appears',
    claim: newClaim('claim-1', '1-1', 'class-2', 'foo.bar/baz', ''),
    action: 'wait',
    code: 'StorageClassNotFound',
    eventReason: 'ProvisioningFailed',
    eventMessage: /storageclass.storage.k8s.io "class-2" not found/,
  },
  {
    name: "not this provisioner's job",
    classes: [newStorageClass('class-1', 'abc.def/ghi')],
    claim: newClaim('claim-1', '1-1', 'class-1', 'abc.def/ghi', ''),
    action: 'ignore',
    code: 'OtherProvisioner',
  },
  {
    name: 'unknown provisioner annotation (beta)',
    claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [ANN_BETA_STORAGE_PROVISIONER]: 'abc.def/ghi' }),
    action: 'ignore',
    code: 'OtherProvisioner',
  },
  {
    name: 'no provisioner annotation',
    claim: newClaim('claim-1', '1-1', 'class-1', '', ''),
    action: 'ignore',
    code: 'NoProvisionerAnnotation',
  },
  {
    name: 'unknown provisioner annotation (GA)',
    claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [ANN_STORAGE_PROVISIONER]: 'abc.def/ghi' }),
    action: 'ignore',
    code: 'OtherProvisioner',
  },
  {
    name: 'GA annotation wins over beta',
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', { [ANN_STORAGE_PROVISIONER]: 'abc.def/ghi' }),
    action: 'ignore',
    code: 'OtherProvisioner',
  },
  {
    name: 'GA annotation alone is enough',
    claim: newClaim('claim-1', '1-1', 'class-1', '', '', { [ANN_STORAGE_PROVISIONER]: 'foo.bar/baz' }),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'qualifier says no',
    provisioner: { shouldProvision: () => false },
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'ignore',
    code: 'NotQualified',
  },
  {
    name: 'qualifier says yes, should provision',
    provisioner: { shouldProvision: () => true },
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'delay binding mode: wait while selected-node is not set',
    classes: [newStorageClass('class-1', 'foo.bar/baz', wffc)],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'wait',
    code: 'WaitForFirstConsumer',
  },
  {
    name: 'delay binding mode: provision once selected-node is set (beta provisioner annotation)',
    classes: [newStorageClass('class-1', 'foo.bar/baz', wffc)],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', { [ANN_SELECTED_NODE]: 'node1' }),
    action: 'provision',
    code: 'Provision',
    check: (d) => assert.equal(d.selectedNodeName, 'node1'),
  },
  {
    name: 'delay binding mode: provision once selected-node is set (GA provisioner annotation)',
    classes: [newStorageClass('class-1', 'foo.bar/baz', wffc)],
    claim: newClaim('claim-1', '1-1', 'class-1', '', '', {
      [ANN_STORAGE_PROVISIONER]: 'foo.bar/baz',
      [ANN_SELECTED_NODE]: 'node1',
    }),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'delay binding mode: the alpha selected-node key counts too (the Go library ignored the alpha key)',
    classes: [newStorageClass('class-1', 'foo.bar/baz', wffc)],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', {
      'volume.alpha.kubernetes.io/selected-node': 'node2',
    }),
    action: 'provision',
    code: 'Provision',
    check: (d) => assert.equal(d.selectedNodeName, 'node2'),
  },
  {
    name: 'delay binding mode: an empty selected-node is no node',
    classes: [newStorageClass('class-1', 'foo.bar/baz', wffc)],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', { [ANN_SELECTED_NODE]: '' }),
    action: 'wait',
    code: 'WaitForFirstConsumer',
  },
  {
    name: 'Immediate class with a selected node: provision and pass the node',
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', { [ANN_SELECTED_NODE]: 'node1' }),
    action: 'provision',
    code: 'Provision',
    check: (d) => assert.equal(d.selectedNodeName, 'node1'),
  },
  // Class resolution
  {
    name: 'the beta class annotation wins over spec.storageClassName',
    classes: [newStorageClass('class-1', 'abc.def/ghi'), newStorageClass('legacy', 'foo.bar/baz')],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '', { [ANN_BETA_STORAGE_CLASS]: 'legacy' }),
    action: 'provision',
    code: 'Provision',
    check: (d) => {
      assert.equal(d.className, 'legacy');
      assert.equal(d.storageClass?.metadata.name, 'legacy');
    },
  },
  {
    name: 'claim with no class at all is rejected',
    claim: newClaim('claim-1', '1-1', '', 'foo.bar/baz', ''),
    action: 'reject',
    code: 'NoStorageClass',
    eventReason: 'ProvisioningFailed',
  },
  {
    name: 'class names another provisioner than the annotation (class recreated): reject with event',
    classes: [newStorageClass('class-1', 'abc.def/ghi')],
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'reject',
    code: 'ClassProvisionerMismatch',
    eventReason: 'ProvisioningFailed',
    eventMessage: /abc.def\/ghi/,
  },
  {
    name: 'class provisioner is one of the additional names',
    provisionerName: 'csi.com/mock-csi',
    options: { additionalProvisionerNames: ['foo.bar/baz'] },
    claim: newClaim('claim-1', '1-1', 'class-1', 'csi.com/mock-csi', ''),
    action: 'provision',
    code: 'Provision',
  },
  // TestCanProvision (block volumes)
  ...(['Filesystem', undefined] as const).flatMap((mode) =>
    [undefined, false, true].map((supports): Row => ({
      name: `${mode ?? 'undefined'} volumeMode with supportsBlock ${String(supports)}: provision`,
      provisioner: supports === undefined ? {} : { supportsBlock: () => supports },
      claim: {
        ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
        spec: { ...newClaim('c', '1', 'class-1', '', '').spec, ...(mode ? { volumeMode: mode } : {}) },
      },
      action: 'provision',
      code: 'Provision',
    })),
  ),
  ...[undefined, false].map((supports): Row => ({
    name: `Block volumeMode with supportsBlock ${String(supports)}: reject with the Go message`,
    provisioner: supports === undefined ? {} : { supportsBlock: () => supports },
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      spec: { ...newClaim('c', '1', 'class-1', '', '').spec, volumeMode: 'Block' },
    },
    action: 'reject',
    code: 'BlockNotSupported',
    eventReason: 'ProvisioningFailed',
    eventMessage: /^foo\.bar\/baz does not support block volume provisioning$/,
  })),
  {
    name: 'Block volumeMode with supportsBlock true: provision',
    provisioner: { supportsBlock: () => true },
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      spec: { ...newClaim('c', '1', 'class-1', '', '').spec, volumeMode: 'Block' },
    },
    action: 'provision',
    code: 'Provision',
  },
  // Selector policy
  {
    name: 'selector with the default policy: reject with a clear event',
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      spec: { ...newClaim('c', '1', 'class-1', '', '').spec, selector: { matchLabels: { a: 'b' } } },
    },
    action: 'reject',
    code: 'SelectorNotSupported',
    eventReason: 'ProvisioningFailed',
    eventMessage: /claim Selector is not supported/,
  },
  {
    name: "selector with policy 'allow': provision (the provisioner honours it)",
    options: { selectorPolicy: 'allow' },
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      spec: { ...newClaim('c', '1', 'class-1', '', '').spec, selector: { matchLabels: { a: 'b' } } },
    },
    action: 'provision',
    code: 'Provision',
  },
  // TestController: "don't provision, volume already exists"
  {
    name: 'volume already exists for this claim uid: nothing to do',
    volumes: [
      newProvisionedVolume(
        newStorageClass('class-1', 'foo.bar/baz'),
        newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
      ),
    ],
    claim: newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'ignore',
    code: 'AlreadyProvisioned',
  },
  {
    name: 'volume already exists for this claim uid even though the class is gone',
    classes: [],
    volumes: [
      newProvisionedVolume(
        newStorageClass('class-1', 'foo.bar/baz'),
        newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
      ),
    ],
    claim: newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'ignore',
    code: 'AlreadyProvisioned',
  },
  {
    name: 'a PV with our name belongs to another claim: conflict event, no provisioning (Go issue #55)',
    options: { volumeNameHook: (c) => `${c.metadata.namespace}-${c.metadata.name}` },
    volumes: [
      {
        ...newProvisionedVolume(
          newStorageClass('class-1', 'foo.bar/baz'),
          newClaim('claim-1', 'old-uid', 'class-1', 'foo.bar/baz', ''),
        ),
        metadata: { name: 'default-claim-1' },
      },
    ],
    claim: newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'reject',
    code: 'VolumeNameConflict',
    eventReason: 'ProvisioningFailed',
    eventMessage: /default-claim-1 already exists and belongs to claim default\/claim-1 \(uid old-uid\)/,
  },
  {
    name: 'volumeNameHook decides the PV name',
    options: { volumeNameHook: (c) => `vol-${c.metadata.name}` },
    claim: newClaim('claim-1', 'uid-1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
    check: (d) => assert.equal(d.pvName, 'vol-claim-1'),
  },
  // Deletion
  {
    name: 'claim being deleted and nothing in progress: ignore',
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      metadata: {
        ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '').metadata,
        deletionTimestamp: '2026-01-01T00:00:00Z',
      },
    },
    action: 'ignore',
    code: 'ClaimDeleting',
  },
  {
    name: 'claim being deleted with provisioning in background: carry on',
    inProgress: true,
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      metadata: {
        ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '').metadata,
        deletionTimestamp: '2026-01-01T00:00:00Z',
      },
    },
    action: 'provision',
    code: 'Provision',
  },
  // Thresholds
  {
    name: 'failures below the threshold: provision again',
    failures: failuresOf(14),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'failures reached the threshold: give up',
    failures: failuresOf(15),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'giveUp',
    code: 'GivenUp',
    check: (d) => assert.match(d.reason, /15 failed attempts \(last error: mock error\)/),
  },
  {
    name: 'threshold 0 means retry forever',
    options: { retry: { failedProvisionThreshold: 0 } },
    failures: failuresOf(1000),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'given up, but InBackground: never give up an operation that may still run (no leak)',
    failures: failuresOf(15),
    inProgress: true,
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'given up, then the claim spec changed: provision again',
    failures: (claim, cls) =>
      failuresOf(15)({ ...claim, spec: { ...claim.spec, resources: { requests: { storage: '2Mi' } } } }, cls),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'given up, then an annotation was added: provision again',
    failures: (claim, cls) => failuresOf(15)({ ...claim, metadata: { ...claim.metadata, annotations: {} } }, cls),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'given up, then the class changed (resourceVersion): provision again',
    failures: (claim, cls) =>
      failuresOf(15)(claim, cls && { ...cls, metadata: { ...cls.metadata, resourceVersion: '0' } }),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'given up, only resourceVersion / status / our lock annotation changed: still given up',
    failures: failuresOf(15),
    claim: {
      ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
      metadata: {
        ...newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', '').metadata,
        resourceVersion: '99',
        annotations: {
          [ANN_BETA_STORAGE_PROVISIONER]: 'foo.bar/baz',
          [ANN_CONTROL_PLANE_LEADER]: '{"holderIdentity":"x"}',
        },
      },
      status: { phase: 'Pending', conditions: [{ type: 'Resizing' }] },
    },
    action: 'giveUp',
    code: 'GivenUp',
  },
  // TestInfeasibleRetry
  {
    name: 'infeasible error: slow retry, no provisioning before retryIntervalMax',
    failures: failuresOf(1, { infeasibleUntil: NOW + 60_000 }),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'wait',
    code: 'InfeasibleBackoff',
    check: (d) => assert.equal(d.retryAfterMs, 60_000),
  },
  {
    name: 'infeasible error: provision again once retryIntervalMax passed',
    failures: failuresOf(1, { infeasibleUntil: NOW }),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
  {
    name: 'infeasible error: provision again at once when the claim changed',
    failures: (claim, cls) =>
      failuresOf(1, { infeasibleUntil: NOW + 60_000 })(
        { ...claim, spec: { ...claim.spec, accessModes: ['ReadWriteMany'] } },
        cls,
      ),
    claim: newClaim('claim-1', '1-1', 'class-1', 'foo.bar/baz', ''),
    action: 'provision',
    code: 'Provision',
  },
];

describe('decideClaim', () => {
  for (const row of rows) {
    it(row.name, () => {
      const d = run(row);
      assert.equal(d.action, row.action, `action (reason: ${d.reason})`);
      assert.equal(d.code, row.code);
      assert.ok(d.reason.length > 0);
      if (row.eventReason) {
        assert.equal(d.event?.reason, row.eventReason);
        assert.equal(d.event?.type, 'Warning');
        if (row.eventMessage) assert.match(d.event?.message ?? '', row.eventMessage);
      } else if (row.action !== 'wait' || row.code !== 'StorageClassNotFound') {
        assert.equal(d.event, undefined, 'no event expected');
      }
      row.check?.(d);
    });
  }

  it('provision decisions carry everything provision() needs', () => {
    const d = run({
      name: '',
      claim: newClaim('claim-1', 'uid-9', 'class-1', 'foo.bar/baz', ''),
      action: 'provision',
      code: 'Provision',
    });
    assert.equal(d.pvName, 'pvc-uid-9');
    assert.equal(d.className, 'class-1');
    assert.equal(d.storageClass?.provisioner, 'foo.bar/baz');
    assert.equal(typeof d.fingerprint, 'string');
  });

  it('is pure: the same input gives the same decision and is not mutated', () => {
    const claim = newClaim('claim-1', 'uid-9', 'class-1', 'foo.bar/baz', '');
    const before = JSON.stringify(claim);
    const a = run({ name: '', claim, action: 'provision', code: 'Provision' });
    const b = run({ name: '', claim, action: 'provision', code: 'Provision' });
    assert.deepEqual(a, b);
    assert.equal(JSON.stringify(claim), before);
  });
});
