// Capacity publishing's pure parts, named after external-provisioner's pkg/capacity behaviours: which (class x
// segment) combinations are wanted, the segments of the node topology, the decision per key (poll, create,
// update, delete stale and duplicates), the object it writes, and the owner per --capacity-ownerref-level.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { after, done } from '../../src/controller/next.ts';
import {
  CapacityController,
  capacityKey,
  capacityParameters,
  decideCapacity,
  desiredItems,
  keyOfObject,
  ownerReferenceFor,
  segmentsOf,
  LABEL_DRIVER_NAME,
  LABEL_MANAGED_BY,
  type CapacityInput,
} from '../../src/csi/capacity-publisher.ts';
import type { CSINode } from '../../src/csi/kinds.ts';
import type { KubeClient } from '../../src/runtime/client.ts';
import type { KubeObject, Node, StorageClass } from '../../src/types/k8s.ts';
import type { CSIStorageCapacity } from '../../src/types/storage-objects.ts';

const DRIVER = 'd.example.com';
const LABELS = { [LABEL_DRIVER_NAME]: DRIVER, [LABEL_MANAGED_BY]: 'external-provisioner' };
const sc = (name: string, mode: 'Immediate' | 'WaitForFirstConsumer', provisioner = DRIVER): StorageClass => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'StorageClass',
  metadata: { name },
  provisioner,
  volumeBindingMode: mode,
});
const csiNode = (name: string, keys: string[] | undefined, driver = DRIVER): CSINode => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'CSINode',
  metadata: { name },
  spec: { drivers: [{ name: driver, nodeID: name, ...(keys ? { topologyKeys: keys } : {}) }] },
});
const node = (name: string, labels: Record<string, string>): Node =>
  ({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels } }) as Node;
const object = (
  name: string,
  className: string,
  segment: Record<string, string>,
  capacity: string,
  created = '2026-01-01T00:00:00Z',
): CSIStorageCapacity => ({
  apiVersion: 'storage.k8s.io/v1',
  kind: 'CSIStorageCapacity',
  metadata: { name, namespace: 'ns', labels: { ...LABELS }, creationTimestamp: created },
  storageClassName: className,
  nodeTopology: { matchLabels: segment },
  capacity,
});
const input = (over: Partial<CapacityInput>): CapacityInput => ({
  item: { className: 'wffc', segment: { zone: 'a' } },
  existing: [],
  now: 10_000,
  pollIntervalMs: 60_000,
  namespace: 'ns',
  labels: LABELS,
  ...over,
});

describe('capacity: the wanted combinations (onSCAddOrUpdate, onTopologyChanges)', () => {
  it('WaitForFirstConsumer classes of this driver x every segment; Immediate ones only with --capacity-for-immediate-binding', () => {
    const classes = [
      sc('wffc', 'WaitForFirstConsumer'),
      sc('imm', 'Immediate'),
      sc('other', 'WaitForFirstConsumer', 'other.example.com'),
    ];
    const segments = [{ zone: 'a' }, { zone: 'b' }];
    assert.deepEqual(
      [...desiredItems(classes, segments, DRIVER, false).keys()],
      [capacityKey('wffc', { zone: 'a' }), capacityKey('wffc', { zone: 'b' })],
    );
    assert.equal(desiredItems(classes, segments, DRIVER, true).size, 4);
  });

  it("nodeTopology: segments from the CSINodes' topology keys valued by the Nodes' labels; incomplete nodes and other drivers left out; duplicates once", () => {
    const nodes = new Map([
      ['n1', node('n1', { zone: 'a', rack: '1' })],
      ['n2', node('n2', { rack: '1', zone: 'a' })],
      ['n3', node('n3', { zone: 'b' })],
      ['n4', node('n4', { zone: 'c' })],
    ]);
    const segments = segmentsOf(
      [
        csiNode('n1', ['zone', 'rack']),
        csiNode('n2', ['zone', 'rack']),
        csiNode('n3', ['zone', 'rack']),
        csiNode('n4', ['zone'], 'other'),
        csiNode('n5', ['zone']),
      ],
      (n) => nodes.get(n),
      DRIVER,
    );
    assert.deepEqual(segments, [{ zone: 'a', rack: '1' }]);
  });

  it('an object belongs to the key of its class and nodeTopology matchLabels (key order does not matter)', () => {
    assert.equal(
      keyOfObject(object('x', 'wffc', { rack: '1', zone: 'a' }, '1Gi')),
      capacityKey('wffc', { zone: 'a', rack: '1' }),
    );
  });

  it('GetCapacity gets the class parameters without the csi.storage.k8s.io/ keys', () => {
    assert.deepEqual(capacityParameters({ type: 'ssd', 'csi.storage.k8s.io/fstype': 'xfs' }), { type: 'ssd' });
  });
});

describe('capacity: syncCapacity decisions', () => {
  it('no reading yet, or one older than the poll interval: poll GetCapacity', () => {
    assert.deepEqual(decideCapacity(input({})), { action: 'poll' });
    assert.deepEqual(decideCapacity(input({ reading: { capacity: 1n, at: 0 }, now: 60_000 })), { action: 'poll' });
  });

  it('creates csisc-… with the labels, the segment as matchLabels, capacity and maximumVolumeSize as quantities, and the owner', () => {
    const owner = { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'csi', uid: 'u1', controller: true };
    const d = decideCapacity(
      input({ reading: { capacity: 10n << 30n, maximumVolumeSize: 1536n << 20n, at: 5_000 }, owner }),
    );
    assert.equal(d.action, 'create');
    assert.deepEqual(d.action === 'create' && d.object, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'CSIStorageCapacity',
      metadata: { generateName: 'csisc-', namespace: 'ns', labels: LABELS, ownerReferences: [owner] },
      storageClassName: 'wffc',
      nodeTopology: { matchLabels: { zone: 'a' } },
      capacity: '10Gi',
      maximumVolumeSize: '1536Mi',
    });
  });

  it('POD_NAME absent: no owner references', () => {
    const d = decideCapacity(input({ reading: { capacity: 1000n, at: 5_000 } }));
    assert.ok(d.action === 'create' && d.object.metadata.ownerReferences === undefined);
    assert.ok(d.action === 'create' && d.object.capacity === '1000');
  });

  it('the same capacity: nothing to write, next poll when the reading is a poll interval old; a different one: update', () => {
    const existing = [object('csisc-1', 'wffc', { zone: 'a' }, '10Gi')];
    assert.deepEqual(decideCapacity(input({ existing, reading: { capacity: 10n << 30n, at: 5_000 } })), {
      action: 'none',
      nextPollMs: 55_000,
    });
    const d = decideCapacity(input({ existing, reading: { capacity: 3n << 30n, at: 5_000 } }));
    assert.ok(d.action === 'update' && d.object.metadata.name === 'csisc-1' && d.object.capacity === '3Gi');
  });

  it('stale objects: a combination no longer wanted loses every object; duplicates beyond the oldest are deleted', () => {
    const old = object('csisc-old', 'wffc', { zone: 'a' }, '1Gi', '2026-01-01T00:00:00Z');
    const dup = object('csisc-dup', 'wffc', { zone: 'a' }, '1Gi', '2026-01-02T00:00:00Z');
    assert.deepEqual(decideCapacity(input({ item: undefined, existing: [old, dup] })), {
      action: 'delete',
      names: ['csisc-old', 'csisc-dup'],
    });
    assert.deepEqual(decideCapacity(input({ existing: [old, dup], reading: { capacity: 1n << 30n, at: 5_000 } })), {
      action: 'delete',
      names: ['csisc-dup'],
    });
    assert.deepEqual(decideCapacity(input({ item: undefined })), { action: 'none', nextPollMs: 0 });
  });
});

describe('capacity: --capacity-ownerref-level', () => {
  const objects: Record<string, KubeObject> = {
    'pods/csi-abc': {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'csi-abc',
        uid: 'pod-uid',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'csi-rs', uid: 'rs-uid', controller: true },
        ],
      },
    },
    'replicasets/csi-rs': {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'csi-rs',
        uid: 'rs-uid',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'Deployment', name: 'csi', uid: 'dep-uid', controller: true }],
      },
    },
    'pods/lone': { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'lone', uid: 'lone-uid' } },
  };
  const client = {
    get: async (r: { resource: string }, name: string) => objects[`${r.resource}/${name}`],
  } as unknown as KubeClient;

  it("0 is the pod, 1 its controller, 2 the ReplicaSet's Deployment; each as a controller reference", async () => {
    assert.deepEqual(await ownerReferenceFor(client, 'ns', 'csi-abc', 0), {
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'csi-abc',
      uid: 'pod-uid',
      controller: true,
    });
    assert.deepEqual(await ownerReferenceFor(client, 'ns', 'csi-abc', 1), {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      name: 'csi-rs',
      uid: 'rs-uid',
      controller: true,
    });
    assert.deepEqual(await ownerReferenceFor(client, 'ns', 'csi-abc', 2), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'csi',
      uid: 'dep-uid',
      controller: true,
    });
  });

  it('a pod without a controller cannot name level 1', async () => {
    await assert.rejects(ownerReferenceFor(client, 'ns', 'lone', 1), /has no controller/);
  });
});

describe('capacity: a standby (not the Lease holder)', () => {
  it('parks its keys instead of looking again every 5 s, and the election event (onActive) puts them back', async () => {
    let leading = false;
    const listeners: Array<() => void> = [];
    const calls: string[] = [];
    const c = new CapacityController({
      client: {} as KubeClient,
      csi: {
        call: (async (method: string) => {
          calls.push(method);
          throw new Error('not reached');
        }) as never,
      },
      driverName: DRIVER,
      namespace: 'ns',
      active: () => leading,
      onActive: (listener) => {
        listeners.push(listener);
        return () => listeners.splice(listeners.indexOf(listener), 1);
      },
    });
    const signal = new AbortController().signal;
    assert.deepEqual(await c.sync('k1', signal), done, 'no timed recheck');
    assert.deepEqual(await c.sync('k2', signal), done);
    assert.deepEqual(c.standbyKeys(), ['k1', 'k2']);
    assert.deepEqual(calls, [], 'a standby asks the plugin nothing');
    leading = true;
    // Without a running queue the keys stay parked (run() subscribes and queues them on the event).
    c.wake();
    assert.deepEqual(c.standbyKeys(), ['k1', 'k2']);
  });

  it('without onActive (a library user passing active only) it still looks again after standbyRecheckMs', async () => {
    const c = new CapacityController({
      client: {} as KubeClient,
      csi: { call: (async () => ({})) as never },
      driverName: DRIVER,
      namespace: 'ns',
      active: () => false,
      standbyRecheckMs: 1234,
    });
    assert.deepEqual(await c.sync('k', new AbortController().signal), after(1234));
    assert.deepEqual(c.standbyKeys(), []);
  });
});
