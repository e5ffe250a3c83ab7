// external-provisioner's and csi-lib-utils' pure rules, each named after the upstream function it follows: volume
// names, reserved parameters, fstype, access modes, secret references and templates, topology requirements and
// node affinity, and the two gRPC code tables (checkError, external-resizer's IsFinalError/IsInfeasibleError).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toCsiAccessMode, volumeCapabilities } from '../../src/csi/access-modes.ts';
import { CsiError, GRPC_CODES, provisioningStateOf, resizeFailureOf } from '../../src/csi/grpc-status.ts';
import { makeVolumeName, VolumeNameError } from '../../src/csi/volume-names.ts';
import { fsTypeOf, removePrefixedParameters } from '../../src/csi/parameters.ts';
import { resolveTemplate, secretReference } from '../../src/csi/secrets.ts';
import {
  accessibilityRequirements,
  claimNameHash,
  TopologyError,
  TopologyNotFoundError,
  volumeNodeAffinity,
  type TopologyInput,
} from '../../src/csi/topology.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import { FakeCluster } from './fake-cluster.ts';

const DRIVER = 'stub.csi.kube-provisioner.io';
const signal = new AbortController().signal;
const claim = (annotations: Record<string, string> = {}) => ({
  metadata: { name: 'data-0', namespace: 'team-a', annotations },
});

describe('makeVolumeName', () => {
  const uid = '5c9d1a0e-7b6f-4d3a-9e2b-0a1b2c3d4e5f';
  it('is <prefix>-<whole uid> by default (--volume-name-uuid-length -1)', () => {
    assert.equal(makeVolumeName({ prefix: 'pvc', uuidLength: -1 }, uid), `pvc-${uid}`);
  });
  it('drops the dashes and truncates with --volume-name-uuid-length', () => {
    assert.equal(makeVolumeName({ prefix: 'csi', uuidLength: 8 }, uid), 'csi-5c9d1a0e');
    assert.equal(makeVolumeName({ prefix: 'csi', uuidLength: 12 }, uid), 'csi-5c9d1a0e7b6f');
  });
  it('refuses an empty prefix and a claim without uid', () => {
    assert.throws(() => makeVolumeName({ prefix: '', uuidLength: -1 }, uid), VolumeNameError);
    assert.throws(() => makeVolumeName({ prefix: 'pvc', uuidLength: -1 }, ''), /missing UID/);
  });
});

describe('removePrefixedParameters and fstype', () => {
  it('strips the known csi.storage.k8s.io/ keys, keeps the others (deprecated csi* keys included)', () => {
    const out = removePrefixedParameters({
      type: 'ssd',
      'csi.storage.k8s.io/fstype': 'xfs',
      'csi.storage.k8s.io/provisioner-secret-name': 's',
      'csi.storage.k8s.io/provisioner-secret-namespace': 'ns',
      csiProvisionerSecretName: 'old',
    });
    assert.deepEqual(out, { type: 'ssd', csiProvisionerSecretName: 'old' });
  });
  it('an unknown key with the reserved prefix is final (InfeasibleError), naming the key', () => {
    assert.throws(
      () => removePrefixedParameters({ 'csi.storage.k8s.io/fs-type': 'xfs' }),
      (e: unknown) => e instanceof InfeasibleError && /csi.storage.k8s.io\/fs-type/.test(e.message),
    );
  });
  it('fstype from csi.storage.k8s.io/fstype or fstype, both is an error, else --default-fstype', () => {
    assert.equal(fsTypeOf({ 'csi.storage.k8s.io/fstype': 'xfs' }, 'ext4'), 'xfs');
    assert.equal(fsTypeOf({ FsType: 'btrfs' }, 'ext4'), 'btrfs');
    assert.equal(fsTypeOf({}, 'ext4'), 'ext4');
    assert.equal(fsTypeOf({}, ''), '');
    assert.throws(() => fsTypeOf({ fstype: 'a', 'csi.storage.k8s.io/fstype': 'b' }, ''), InfeasibleError);
  });
});

describe('accessmodes.ToCSIAccessMode', () => {
  it('maps each PVC mode to one capability, with the SINGLE_NODE_MULTI_WRITER variants when the plugin has it', () => {
    const table: Array<[string, string, string]> = [
      ['ReadWriteOnce', 'SINGLE_NODE_WRITER', 'SINGLE_NODE_MULTI_WRITER'],
      ['ReadOnlyMany', 'MULTI_NODE_READER_ONLY', 'MULTI_NODE_READER_ONLY'],
      ['ReadWriteMany', 'MULTI_NODE_MULTI_WRITER', 'MULTI_NODE_MULTI_WRITER'],
      ['ReadWriteOncePod', 'SINGLE_NODE_WRITER', 'SINGLE_NODE_SINGLE_WRITER'],
    ];
    for (const [mode, plain, snmw] of table) {
      assert.equal(toCsiAccessMode([mode as 'ReadWriteOnce'], false), plain, mode);
      assert.equal(toCsiAccessMode([mode as 'ReadWriteOnce'], true), snmw, `${mode} with SINGLE_NODE_MULTI_WRITER`);
    }
  });
  it('refuses ReadWriteOncePod with another mode, and ReadOnlyMany with ReadWriteOnce', () => {
    assert.throws(() => toCsiAccessMode(['ReadWriteOncePod', 'ReadWriteOnce'], false), InfeasibleError);
    assert.throws(() => toCsiAccessMode(['ReadOnlyMany', 'ReadWriteOnce'], false), InfeasibleError);
    assert.throws(() => toCsiAccessMode([], false), InfeasibleError);
  });
  it('one capability per claim mode: mount with fstype and the class mount options, or block', () => {
    assert.deepEqual(volumeCapabilities(['ReadWriteOnce', 'ReadOnlyMany'], 'Filesystem', 'ext4', ['noatime'], false), [
      { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
      { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'MULTI_NODE_READER_ONLY' } },
    ]);
    assert.deepEqual(volumeCapabilities(['ReadWriteOnce'], 'Block', 'ext4', ['noatime'], false), [
      { block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
    ]);
  });
});

describe('getSecretReference', () => {
  const P = 'csi.storage.k8s.io/provisioner-secret-';
  it('resolves ${pvc.name}, ${pvc.namespace}, ${pv.name} and ${pvc.annotations[...]} in the name, ${pvc.namespace} and ${pv.name} in the namespace', () => {
    const params = {
      [`${P}name`]: "${pvc.name}-${pvc.annotations['team/key']}-${pv.name}",
      [`${P}namespace`]: '${pvc.namespace}',
    };
    assert.deepEqual(secretReference('provisioner', params, 'pvc-1', claim({ 'team/key': 'k1' })), {
      name: 'data-0-k1-pvc-1',
      namespace: 'team-a',
    });
  });
  it('the namespace cannot use ${pvc.name} (invalid tokens)', () => {
    assert.throws(
      () => secretReference('provisioner', { [`${P}name`]: 's', [`${P}namespace`]: '${pvc.name}' }, 'pv', claim()),
      /invalid tokens: \["pvc.name"\]/,
    );
  });
  it('falls back to csi.storage.k8s.io/secret-name and -namespace', () => {
    const params = { 'csi.storage.k8s.io/secret-name': 'shared', 'csi.storage.k8s.io/secret-namespace': 'kube-system' };
    assert.deepEqual(secretReference('nodeStage', params, 'pv', claim()), { name: 'shared', namespace: 'kube-system' });
    assert.equal(secretReference('provisioner', {}, 'pv', claim()), undefined);
  });
  it('reads the deprecated csiProvisionerSecretName keys, but not both spellings at once', () => {
    assert.deepEqual(
      secretReference(
        'provisioner',
        { csiProvisionerSecretName: 'a', csiProvisionerSecretNamespace: 'b' },
        'pv',
        claim(),
      ),
      { name: 'a', namespace: 'b' },
    );
    assert.throws(
      () =>
        secretReference(
          'provisioner',
          { csiProvisionerSecretName: 'a', [`${P}name`]: 'a', [`${P}namespace`]: 'b' },
          'pv',
          claim(),
        ),
      /both "csi" and/,
    );
  });
  it('a name without a namespace, an empty value, or a resolved name that is not a DNS name is refused', () => {
    assert.throws(() => secretReference('provisioner', { [`${P}name`]: 'a' }, 'pv', claim()), /Both must be specified/);
    assert.throws(
      () => secretReference('provisioner', { [`${P}name`]: '', [`${P}namespace`]: 'b' }, 'pv', claim()),
      /empty/,
    );
    assert.throws(
      () =>
        secretReference(
          'provisioner',
          { [`${P}name`]: "${pvc.annotations['x']}", [`${P}namespace`]: 'b' },
          'pv',
          claim({ x: 'Not_A_Name' }),
        ),
      /not a valid secret name/,
    );
  });
  it('templates follow os.Expand: $name without braces, a lone $ stays', () => {
    assert.equal(resolveTemplate('a-$x-$', { x: '1' }), 'a-1-$');
    assert.throws(() => resolveTemplate('${y}', {}), /invalid tokens/);
  });
});

describe('GenerateAccessibilityRequirements', () => {
  const cluster = () =>
    new FakeCluster()
      .node('n1', { zone: 'z1', rack: 'r1' }, ['zone'])
      .node('n2', { zone: 'z2' }, ['zone'])
      .node('n3', { zone: 'z3' }, ['zone'])
      .node('other', { unrelated: 'x' });
  const input = (o: Partial<TopologyInput> = {}): TopologyInput => ({
    driverName: DRIVER,
    claimName: 'data',
    allowedTopologies: undefined,
    selectedNodeName: 'n2',
    strictTopology: false,
    immediateTopology: true,
    ...o,
  });
  const zones = (ts: Array<{ segments?: Record<string, string> }> | undefined) =>
    (ts ?? []).map((t) => t.segments?.zone);

  it("keys from the selected node's CSINode, values from Node labels; requisite = all nodes with the keys; preferred starts at the selected node", async () => {
    const r = await accessibilityRequirements(input(), cluster(), signal);
    assert.deepEqual(zones(r?.requisite), ['z1', 'z2', 'z3']);
    assert.deepEqual(zones(r?.preferred), ['z2', 'z3', 'z1']);
    assert.deepEqual(r?.requisite?.[0].segments, { zone: 'z1' }, 'only the CSINode keys, not every label');
  });
  it('allowedTopologies are flattened into the requisite', async () => {
    const allowed = [{ matchLabelExpressions: [{ key: 'zone', values: ['z2', 'z3'] }] }];
    const r = await accessibilityRequirements(input({ allowedTopologies: allowed }), cluster(), signal);
    assert.deepEqual(zones(r?.requisite), ['z2', 'z3']);
    assert.deepEqual(zones(r?.preferred), ['z2', 'z3']);
  });
  it("--strict-topology: only the selected node's segment; a node outside allowedTopologies is an error", async () => {
    const r = await accessibilityRequirements(input({ strictTopology: true }), cluster(), signal);
    assert.deepEqual(zones(r?.requisite), ['z2']);
    assert.deepEqual(zones(r?.preferred), ['z2']);
    const allowed = [{ matchLabelExpressions: [{ key: 'zone', values: ['z1'] }] }];
    await assert.rejects(
      accessibilityRequirements(input({ strictTopology: true, allowedTopologies: allowed }), cluster(), signal),
      TopologyError,
    );
  });
  it('--immediate-topology=false: no requirement for a claim without a selected node; true: all segments, rotated by the StatefulSet hash', async () => {
    assert.equal(
      await accessibilityRequirements(
        input({ selectedNodeName: undefined, immediateTopology: false }),
        cluster(),
        signal,
      ),
      undefined,
    );
    const r = await accessibilityRequirements(
      input({ selectedNodeName: undefined, claimName: 'www-web-1' }),
      cluster(),
      signal,
    );
    const { hash, index } = claimNameHash('www-web-1');
    assert.equal(index, 1);
    const start = ((hash + index) >>> 0) % 3;
    assert.deepEqual(zones(r?.preferred), [...['z1', 'z2', 'z3'].slice(start), ...['z1', 'z2', 'z3'].slice(0, start)]);
  });
  it('StatefulSet claims hash the set name and offset by the ordinal (FNV-1 32)', () => {
    assert.deepEqual(claimNameHash('www-web-0'), { hash: claimNameHash('x-web-7').hash, index: 0 });
    assert.equal(claimNameHash('www-web-7').index, 7);
    assert.equal(claimNameHash('a').hash, 0x050c5d7e); // FNV-1 32 of "a" (offset 0x811c9dc5 * prime, xor 0x61)
  });
  it('a missing CSINode or Node is TopologyNotFoundError (the provisioner answers Reschedule)', async () => {
    const c = cluster();
    c.csiNodes.delete('n2');
    await assert.rejects(accessibilityRequirements(input(), c, signal), TopologyNotFoundError);
    const d = cluster();
    d.nodes.delete('n2');
    await assert.rejects(accessibilityRequirements(input(), d, signal), TopologyNotFoundError);
  });
  it("a selected node without the key's label, or a driver without keys, is an error", async () => {
    const c = cluster().node('n2', { rack: 'r2' }, ['zone']);
    await assert.rejects(accessibilityRequirements(input(), c, signal), /does not match topology keys/);
    const d = cluster().node('n2', { zone: 'z2' }, []);
    await assert.rejects(accessibilityRequirements(input(), d, signal), /no topology key found/);
  });
  it('GenerateVolumeNodeAffinity: one term per accessible topology, key In [value]', () => {
    assert.deepEqual(volumeNodeAffinity([{ segments: { zone: 'z1', rack: 'r1' } }, { segments: { zone: 'z2' } }]), {
      required: {
        nodeSelectorTerms: [
          {
            matchExpressions: [
              { key: 'rack', operator: 'In', values: ['r1'] },
              { key: 'zone', operator: 'In', values: ['z1'] },
            ],
          },
          { matchExpressions: [{ key: 'zone', operator: 'In', values: ['z2'] }] },
        ],
      },
    });
    assert.equal(volumeNodeAffinity([]), undefined);
  });
});

describe("checkError (external-provisioner) and the resizer's code table", () => {
  const err = (code: keyof typeof GRPC_CODES) => new CsiError('/csi.v1.Controller/CreateVolume', GRPC_CODES[code], 'x');
  it('checkError: CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE, ABORTED and non-gRPC errors are in background', () => {
    for (const c of ['Canceled', 'DeadlineExceeded', 'Unavailable', 'Aborted'] as const)
      assert.equal(provisioningStateOf(err(c), true), 'InBackground', c);
    assert.equal(provisioningStateOf(new Error('socket closed'), false), 'InBackground');
  });
  it('checkError: RESOURCE_EXHAUSTED is Reschedule with topology and a selected node, else Finished', () => {
    assert.equal(provisioningStateOf(err('ResourceExhausted'), true), 'Reschedule');
    assert.equal(provisioningStateOf(err('ResourceExhausted'), false), 'Finished');
  });
  it('checkError: every other code is final', () => {
    for (const c of [
      'InvalidArgument',
      'NotFound',
      'AlreadyExists',
      'PermissionDenied',
      'FailedPrecondition',
      'OutOfRange',
      'Unimplemented',
      'Internal',
      'Unknown',
      'DataLoss',
      'Unauthenticated',
    ] as const) {
      assert.equal(provisioningStateOf(err(c), true), 'Finished', c);
    }
  });
  it('IsInfeasibleError: INVALID_ARGUMENT, OUT_OF_RANGE, NOT_FOUND; inUseError: FAILED_PRECONDITION; RESOURCE_EXHAUSTED retryable', () => {
    for (const c of ['InvalidArgument', 'OutOfRange', 'NotFound'] as const)
      assert.equal(resizeFailureOf(err(c)), 'infeasible', c);
    assert.equal(resizeFailureOf(err('FailedPrecondition')), 'inUse');
    for (const c of ['Canceled', 'DeadlineExceeded', 'Unavailable', 'ResourceExhausted', 'Aborted'] as const)
      assert.equal(resizeFailureOf(err(c)), 'retry', c);
    assert.equal(resizeFailureOf(err('Internal')), 'final');
    assert.equal(resizeFailureOf(new Error('not grpc')), 'retry');
  });
});
