// Table tests of decideVolume: the Go library's isProvisionerForVolume, handleProtectionFinalizer and shouldDelete,
// the Go library's TestShouldDelete, TestShouldDeleteWithFinalizer,
// TestIsProvisionerForVolume and TestController's volume rows, plus the defects we fix.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideVolume,
  finalizerChange,
  type VolumeAction,
  type VolumeDecisionCode,
} from '../../src/controller/volume/decide-volume.ts';
import { recordFailure, volumeFingerprint, type FailureRecord } from '../../src/controller/failures.ts';
import { resolveOptions, type ProvisionControllerOptions } from '../../src/controller/options/controller-options.ts';
import type { Provisioner } from '../../src/controller/provisioner.ts';
import {
  ANN_DYNAMICALLY_PROVISIONED,
  ANN_MIGRATED_TO,
  FINALIZER_EXTERNAL_PROVISIONER as FIN,
} from '../../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import { newCSIVolume, newClaim, newVolume } from './fixtures.ts';

const TS = '2026-01-01T00:00:00Z';
const ours = { [ANN_DYNAMICALLY_PROVISIONED]: 'foo.bar/baz' };
const theirs = { [ANN_DYNAMICALLY_PROVISIONED]: 'abc.def/ghi' };

interface Row {
  name: string;
  provisionerName?: string;
  options?: ProvisionControllerOptions;
  volume: PersistentVolume;
  claims?: PersistentVolumeClaim[];
  provisioner?: Pick<Provisioner, 'shouldDelete'>;
  failures?: (v: PersistentVolume) => FailureRecord;
  backendDeleted?: boolean;
  action: VolumeAction;
  code?: VolumeDecisionCode;
  finalizer?: 'add' | 'remove';
}

function withClaimRef(pv: PersistentVolume, uid: string): PersistentVolume {
  return {
    ...pv,
    spec: { ...pv.spec, claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'claim-1', uid } },
  };
}

const rows: Row[] = [
  // TestShouldDelete
  {
    name: 'should delete',
    volume: newVolume('volume-1', 'Released', 'Delete', ours),
    action: 'delete',
    code: 'Delete',
  },
  {
    name: "failed: shouldn't delete",
    volume: newVolume('volume-1', 'Failed', 'Delete', ours),
    action: 'ignore',
    code: 'NotReleased',
  },
  {
    name: 'volume still bound',
    volume: newVolume('volume-1', 'Bound', 'Delete', ours),
    action: 'ignore',
    code: 'NotReleased',
  },
  {
    name: 'non-delete reclaim policy',
    volume: newVolume('volume-1', 'Released', 'Retain', ours),
    action: 'ignore',
    code: 'NotDeletePolicy',
  },
  {
    name: 'non-nil deletion timestamp',
    volume: newVolume('volume-1', 'Released', 'Delete', ours, undefined, TS),
    action: 'ignore',
    code: 'BeingDeleted',
  },
  {
    name: 'migrated to',
    provisionerName: 'csi.driver',
    volume: newVolume('volume-1', 'Released', 'Delete', { ...ours, [ANN_MIGRATED_TO]: 'csi.driver' }),
    action: 'delete',
    code: 'Delete',
  },
  // TestController volume rows
  {
    name: 'delete volume-2 is not ours',
    volume: newVolume('volume-2', 'Released', 'Delete', theirs),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  // TestIsProvisionerForVolume (through decideVolume: not ours => NotOurVolume)
  {
    name: 'known dynamically provisioned in-tree volume',
    volume: newVolume('v', 'Released', 'Delete', ours),
    action: 'delete',
  },
  {
    name: 'known dynamically provisioned in-tree migrated volume',
    volume: newVolume('v', 'Released', 'Delete', { ...ours, [ANN_MIGRATED_TO]: 'foo.bar/baz' }),
    action: 'delete',
  },
  {
    name: 'unknown dynamically provisioned in-tree volume',
    provisionerName: 'foo.bar1/baz1',
    volume: newVolume('v', 'Released', 'Delete', ours),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'unknown dynamically provisioned in-tree migrated volume',
    provisionerName: 'foo.bar1/baz1',
    volume: newVolume('v', 'Released', 'Delete', { ...ours, [ANN_MIGRATED_TO]: 'foo.bar/baz' }),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'known dynamically provisioned csi volume',
    volume: newCSIVolume('v', 'Released', 'Delete', ours, undefined, 'foo.bar/baz'),
    action: 'delete',
  },
  {
    name: 'unknown dynamically provisioned csi volume',
    provisionerName: 'foo.bar1/baz1',
    volume: newCSIVolume('v', 'Released', 'Delete', ours, undefined, 'foo.bar/baz'),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'known statically provisioned csi volume',
    volume: newCSIVolume('v', 'Released', 'Delete', undefined, undefined, 'foo.bar/baz'),
    action: 'delete',
  },
  {
    name: 'unknown statically provisioned csi volume',
    provisionerName: 'foo.bar1/baz1',
    volume: newCSIVolume('v', 'Released', 'Delete', undefined, undefined, 'foo.bar/baz'),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'statically provisioned in-tree volume is never ours',
    volume: newVolume('v', 'Released', 'Delete', undefined),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'known statically provisioned in-tree migrated volume',
    volume: newVolume('v', 'Released', 'Delete', { [ANN_MIGRATED_TO]: 'foo.bar/baz' }),
    action: 'delete',
  },
  {
    name: 'unknown statically provisioned in-tree migrated volume',
    provisionerName: 'foo.bar1/baz1',
    volume: newVolume('v', 'Released', 'Delete', { [ANN_MIGRATED_TO]: 'foo.bar/baz' }),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'provisioned-by one of the additional names',
    provisionerName: 'csi.com/mock',
    options: { additionalProvisionerNames: ['foo.bar/baz'] },
    volume: newVolume('v', 'Released', 'Delete', ours),
    action: 'delete',
  },
  // TestShouldDeleteWithFinalizer
  {
    name: 'finalizer present, no deletionTimestamp: delete',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Released', 'Delete', ours, [FIN]),
    action: 'delete',
  },
  {
    name: 'finalizer present, with deletionTimestamp: delete',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Released', 'Delete', ours, [FIN], TS),
    action: 'delete',
  },
  {
    name: 'finalizer present, still bound: keep',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Delete', ours, [FIN]),
    action: 'ignore',
    code: 'NotReleased',
  },
  {
    name: 'finalizer mode, Retain: no delete',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Released', 'Retain', ours, []),
    action: 'ignore',
    code: 'NotDeletePolicy',
  },
  // TestController finalizer rows
  {
    name: 'finalizer removed when addFinalizer is false',
    volume: newVolume('v', 'Bound', 'Delete', ours, [FIN]),
    action: 'ignore',
    code: 'NotReleased',
    finalizer: 'remove',
  },
  {
    name: 'finalizer removed on Retain even with addFinalizer',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Retain', ours, [FIN]),
    action: 'ignore',
    finalizer: 'remove',
  },
  {
    name: 'finalizer removed on Recycle even with addFinalizer',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Recycle', ours, [FIN]),
    action: 'ignore',
    finalizer: 'remove',
  },
  {
    name: 'Retain PV being deleted drops our finalizer (never stuck Terminating)',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Released', 'Retain', ours, [FIN, 'other'], TS),
    action: 'ignore',
    finalizer: 'remove',
  },
  {
    name: 'finalizer not added while under deletion, and not deleted',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Released', 'Delete', ours, undefined, TS),
    action: 'ignore',
    code: 'BeingDeleted',
  },
  {
    name: 'finalizer added on Bound Delete PV',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Delete', ours),
    action: 'ignore',
    finalizer: 'add',
  },
  {
    name: 'finalizer added on statically provisioned, migrated, in-tree volumes',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Delete', { [ANN_MIGRATED_TO]: 'foo.bar/baz' }),
    action: 'ignore',
    finalizer: 'add',
  },
  {
    name: 'finalizer added on statically provisioned CSI volumes',
    options: { addFinalizer: true },
    volume: newCSIVolume('v', 'Bound', 'Delete', undefined, undefined, 'foo.bar/baz'),
    action: 'ignore',
    finalizer: 'add',
  },
  {
    name: 'finalizer not added on Available PV',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Available', 'Delete', ours),
    action: 'ignore',
  },
  {
    name: "finalizer not added on someone else's PV",
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Delete', theirs),
    action: 'ignore',
    code: 'NotOurVolume',
  },
  {
    name: 'PV deleted before its claim (HonorPVReclaimPolicy): kept while Bound',
    options: { addFinalizer: true },
    volume: newVolume('v', 'Bound', 'Delete', ours, [FIN], TS),
    action: 'ignore',
    code: 'NotReleased',
  },
  {
    name: 'leftover finalizer without finalizer mode, Released and being deleted: remove, then nothing to delete',
    volume: newVolume('v', 'Released', 'Delete', ours, [FIN], TS),
    action: 'ignore',
    code: 'BeingDeleted',
    finalizer: 'remove',
  },
  // DeletionGuard
  {
    name: 'DeletionGuard says no',
    provisioner: { shouldDelete: () => false },
    volume: newVolume('v', 'Released', 'Delete', ours),
    action: 'ignore',
    code: 'DeletionGuard',
  },
  {
    name: 'DeletionGuard says yes',
    provisioner: { shouldDelete: () => true },
    volume: newVolume('v', 'Released', 'Delete', ours),
    action: 'delete',
  },
  // Claim still exists
  {
    name: 'Released but the claim with the same uid still exists: do not delete',
    volume: withClaimRef(newVolume('v', 'Released', 'Delete', ours), 'uid-1'),
    claims: [newClaim('claim-1', 'uid-1', 'class-1', '', '')],
    action: 'ignore',
    code: 'ClaimStillExists',
  },
  {
    name: 'Released and a new claim with the same name but another uid exists: delete',
    volume: withClaimRef(newVolume('v', 'Released', 'Delete', ours), 'uid-1'),
    claims: [newClaim('claim-1', 'uid-2', 'class-1', '', '')],
    action: 'delete',
  },
  // Dedup and thresholds
  {
    name: 'backend already deleted: only finish (delete() is never called twice)',
    volume: newVolume('v', 'Released', 'Delete', ours, [FIN], TS),
    options: { addFinalizer: true },
    backendDeleted: true,
    action: 'finishDelete',
    code: 'BackendDeleted',
  },
  {
    name: 'failures reached the threshold: give up',
    volume: newVolume('v', 'Released', 'Delete', ours),
    failures: (v) =>
      Array.from({ length: 15 }).reduce<FailureRecord | undefined>(
        (r) => recordFailure(r, volumeFingerprint(v), 'boom'),
        undefined,
      ) as FailureRecord,
    action: 'giveUp',
    code: 'GivenUp',
  },
  {
    name: 'threshold 0: never give up',
    options: { retry: { failedDeleteThreshold: 0 } },
    volume: newVolume('v', 'Released', 'Delete', ours),
    failures: (v) => ({ failures: 100, fingerprint: volumeFingerprint(v) }),
    action: 'delete',
  },
  {
    name: 'given up, then the volume changed: delete again',
    volume: newVolume('v', 'Released', 'Delete', ours),
    failures: () => ({ failures: 100, fingerprint: 'older' }),
    action: 'delete',
  },
];

describe('decideVolume', () => {
  for (const row of rows) {
    it(row.name, () => {
      const claims = row.claims ?? [];
      const d = decideVolume({
        volume: row.volume,
        provisionerName: row.provisionerName ?? 'foo.bar/baz',
        options: resolveOptions(row.options ?? {}, {}),
        provisioner: row.provisioner ?? {},
        getClaim: (ns, name) => claims.find((c) => c.metadata.namespace === ns && c.metadata.name === name),
        failures: row.failures?.(row.volume),
        backendDeleted: row.backendDeleted,
      });
      assert.equal(d.action, row.action, `action (reason: ${d.reason})`);
      if (row.code) assert.equal(d.code, row.code);
      assert.equal(d.finalizer, row.finalizer);
      assert.ok(d.reason.length > 0);
    });
  }

  it('finalizerChange matches handleProtectionFinalizer', () => {
    assert.equal(finalizerChange(newVolume('v', 'Bound', 'Delete', ours), true), 'add');
    assert.equal(finalizerChange(newVolume('v', 'Bound', 'Delete', ours, [FIN]), true), undefined);
    assert.equal(finalizerChange(newVolume('v', 'Bound', 'Delete', ours, [FIN]), false), 'remove');
    assert.equal(finalizerChange(newVolume('v', 'Bound', 'Delete', ours), false), undefined);
    assert.equal(finalizerChange(newVolume('v', 'Released', 'Delete', ours), true), undefined);
  });
});
