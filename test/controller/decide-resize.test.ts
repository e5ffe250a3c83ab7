// decideResize row by row: which claims are resized, what size is asked for (RecoverVolumeExpansionFailure), when
// only the claim's status is left to write, and the infeasible / given-up / node-pending waits. Pure, no server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideResize,
  mayNeedResize,
  resizeFingerprint,
  type ResizeDecisionInput,
} from '../../src/controller/resize/decide-resize.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/types/k8s.ts';

const NAME = 'example.com/p';
const NOW = 1_000_000;

function input(
  o: {
    request?: string;
    claimCapacity?: string;
    pvCapacity?: string;
    status?: Record<string, string>;
    allocated?: string;
    conditions?: string[];
    phase?: 'Bound' | 'Pending';
    provisionedBy?: string;
    allow?: boolean;
    canExpand?: boolean;
    failures?: ResizeDecisionInput['failures'];
  } = {},
): ResizeDecisionInput {
  const claim: PersistentVolumeClaim = {
    metadata: { name: 'c', namespace: 'ns', uid: 'uid-1' },
    spec: { volumeName: 'pv-1', storageClassName: 'sc', resources: { requests: { storage: o.request ?? '2Gi' } } },
    status: {
      phase: o.phase ?? 'Bound',
      capacity: { storage: o.claimCapacity ?? '1Gi' },
      ...(o.status ? { allocatedResourceStatuses: o.status } : {}),
      ...(o.allocated ? { allocatedResources: { storage: o.allocated } } : {}),
      ...(o.conditions ? { conditions: o.conditions.map((type) => ({ type, status: 'True' })) } : {}),
    },
  };
  const volume: PersistentVolume = {
    metadata: { name: 'pv-1', annotations: { 'pv.kubernetes.io/provisioned-by': o.provisionedBy ?? NAME } },
    spec: { capacity: { storage: o.pvCapacity ?? '1Gi' }, claimRef: { uid: 'uid-1', namespace: 'ns', name: 'c' } },
  };
  const storageClass: StorageClass = {
    metadata: { name: 'sc', uid: 'sc-uid', resourceVersion: '1' },
    provisioner: NAME,
    allowVolumeExpansion: o.allow ?? true,
  };
  return {
    claim,
    volume,
    storageClass,
    provisionerName: NAME,
    additionalProvisionerNames: [],
    canExpand: o.canExpand ?? true,
    failures: o.failures,
    threshold: 3,
    now: NOW,
  };
}

describe('decideResize', () => {
  const rows: Array<[string, Parameters<typeof input>[0], string, string, string?]> = [
    ['grows a Bound claim', {}, 'expand', 'Expand', '2Gi'],
    ['pending claim', { phase: 'Pending' }, 'ignore', 'NotBound'],
    ['static or foreign PV', { provisionedBy: 'other.example.com/x' }, 'ignore', 'NotOurs'],
    ['no expand()', { canExpand: false }, 'ignore', 'ExpandNotSupported'],
    ['class without expansion', { allow: false }, 'wait', 'ExpansionNotAllowed'],
    ['settled', { request: '1Gi' }, 'ignore', 'UpToDate'],
    ['PV grown, claim not recorded', { pvCapacity: '2Gi' }, 'finish', 'RecordCapacity', '2Gi'],
    [
      'PV grown, resize status left over',
      { request: '2Gi', pvCapacity: '2Gi', claimCapacity: '2Gi', status: { storage: 'ControllerResizeInProgress' } },
      'finish',
      'RecordCapacity',
      '2Gi',
    ],
    [
      'node resize pending',
      { pvCapacity: '2Gi', status: { storage: 'NodeResizePending' } },
      'wait',
      'NodeResizePending',
    ],
    [
      'in progress to a larger allocated size: finish that first',
      { request: '2Gi', allocated: '5Gi', status: { storage: 'ControllerResizeInProgress' } },
      'expand',
      'Expand',
      '5Gi',
    ],
    [
      'infeasible, request lowered: the smaller size',
      { request: '2Gi', allocated: '5Gi', status: { storage: 'ControllerResizeInfeasible' } },
      'expand',
      'Expand',
      '2Gi',
    ],
  ];
  for (const [title, o, action, code, target] of rows) {
    it(title, () => {
      const d = decideResize(input(o));
      assert.equal(d.action, action, d.reason);
      assert.equal(d.code, code);
      if (target) assert.equal(d.targetSize, target);
    });
  }

  it('slow retry after an infeasible error, until the request or the class changes', () => {
    const i = input();
    const fingerprint = resizeFingerprint(i.claim, i.storageClass, '2Gi');
    const failures = { failures: 1, fingerprint, infeasibleUntil: NOW + 5_000, lastError: 'no room' };
    const d = decideResize({ ...i, failures });
    assert.equal(d.code, 'InfeasibleBackoff');
    assert.equal(d.retryAfterMs, 5_000);
    assert.match(d.reason, /no room/);
    assert.equal(decideResize(input({ request: '3Gi', failures })).code, 'Expand');
  });

  it('gives up at the threshold, and a changed request starts over', () => {
    const i = input();
    const failures = { failures: 3, fingerprint: resizeFingerprint(i.claim, i.storageClass, '2Gi'), lastError: 'boom' };
    const givenUp = decideResize({ ...i, failures });
    assert.deepEqual([givenUp.action, givenUp.code], ['giveUp', 'GivenUp']);
    assert.equal(decideResize(input({ request: '3Gi', failures })).code, 'Expand');
  });

  it('shouldExpand false: another instance expands it', () => {
    const d = decideResize({ ...input(), shouldExpand: (v) => v.metadata.name !== 'pv-1' });
    assert.equal(d.action, 'ignore');
    assert.equal(d.code, 'NotQualified');
  });

  it('mayNeedResize filters informer events cheaply', () => {
    assert.equal(mayNeedResize(input().claim), true);
    assert.equal(mayNeedResize(input({ request: '1Gi' }).claim), false);
    assert.equal(mayNeedResize(input({ phase: 'Pending' }).claim), false);
    assert.equal(mayNeedResize(input({ request: '1Gi', conditions: ['Resizing'] }).claim), true);
  });
});
