// The reference CSI plugin (the hostpath provisioner as a CSI plugin) over its real unix socket, called with the
// library's CsiClient: Identity, every Controller RPC it offers (CreateVolume onto provision() with its path rules
// and idempotency by name, DeleteVolume onto delete() with its identity proof, expansion, capacity, paged
// ListVolumes), and the Node service's bind mount. The bind mount is tried for real when this process may mount
// (root in a container usually may); elsewhere the same test runs with a recording mounter and says so.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CsiClient } from '../../src/csi/csi-client.ts';
import { CsiError } from '../../src/csi/grpc-status.ts';
import type { CsiAccessMode } from '../../src/csi/descriptors.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { HOSTPATH_CSI_DRIVER, systemMounter, type Mounter } from '../../src/cli/csi-hostpath-plugin.ts';
import { startCsiHostPathPlugin, type RunningCsiHostPathPlugin } from '../../src/cli/run-csi-hostpath-plugin.ts';

const NODE = 'node-a';
const KEY = 'kubernetes.io/hostname';
const mountCap = (mode: CsiAccessMode = 'SINGLE_NODE_WRITER') => ({ mount: { fsType: '' }, accessMode: { mode } });

/** Whether this process may bind-mount (root with CAP_SYS_ADMIN, not a rootless sandbox). */
function canBindMount(): boolean {
  if (process.getuid?.() !== 0) return false;
  const d = mkdtempSync(join(tmpdir(), 'csi-mount-probe-'));
  try {
    mkdirSync(join(d, 'a'));
    mkdirSync(join(d, 'b'));
    execFileSync('mount', ['--bind', join(d, 'a'), join(d, 'b')], { stdio: 'ignore' });
    execFileSync('umount', [join(d, 'b')], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
}

/** Records binds and serves isMountPoint from them (for machines where mount is not permitted). */
class RecordingMounter implements Mounter {
  mounts = new Map<string, { source: string; readOnly: boolean }>();
  async bind(source: string, target: string, readOnly: boolean) {
    this.mounts.set(target, { source, readOnly });
  }
  async unmount(target: string) {
    this.mounts.delete(target);
  }
  async isMountPoint(target: string) {
    return this.mounts.has(target);
  }
}

describe('reference CSI plugin (hostpath over CSI)', () => {
  let dir: string;
  let plugin: RunningCsiHostPathPlugin;
  let client: CsiClient;
  const realMount = canBindMount();
  const recording = new RecordingMounter();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'csi-hostpath-plugin-'));
    for (const d of ['shared', 'local', 'small']) mkdirSync(join(dir, d));
    const config = validateHostPathConfig({
      storageClassConfigs: {
        shared: { sharedFileSystemPath: join(dir, 'shared') },
        local: { nodePathMap: [{ node: NODE, paths: [join(dir, 'local')] }] },
        small: { nodePathMap: [{ node: NODE, paths: [{ path: join(dir, 'small'), capacity: '10Mi' }] }] },
      },
    });
    plugin = await startCsiHostPathPlugin({
      endpoint: `unix://${join(dir, 'run', 'csi.sock')}`,
      config: { value: config },
      nodeName: NODE,
      mounter: realMount ? systemMounter : recording,
    });
    client = await CsiClient.connect({ address: plugin.server.address, timeoutMs: 10_000 });
  });
  after(async () => {
    client?.close();
    await plugin?.stop();
    // A failed assertion may leave a real mount behind: never remove a directory through it.
    for (const line of readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
      const target = line.split(' ')[4];
      if (dir && target?.startsWith(`${dir}/`)) execFileSync('umount', [target]);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const codeOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'OK';
    } catch (e) {
      assert.ok(e instanceof CsiError, String(e));
      return e.codeName;
    }
  };

  it('Identity: GetPluginInfo, GetPluginCapabilities (controller, topology, online expansion), Probe ready', async () => {
    assert.equal((await client.call('getPluginInfo', {})).name, HOSTPATH_CSI_DRIVER);
    const caps = (await client.call('getPluginCapabilities', {})).capabilities ?? [];
    assert.deepEqual(
      caps.map((c) => c.service?.type ?? c.volumeExpansion?.type),
      ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS', 'ONLINE'],
    );
    assert.deepEqual(await client.call('probe', {}), { ready: { value: true } });
    const ctrl = (await client.call('controllerGetCapabilities', {})).capabilities?.map((c) => c.rpc?.type);
    assert.deepEqual(ctrl, [
      'CREATE_DELETE_VOLUME',
      'EXPAND_VOLUME',
      'GET_CAPACITY',
      'LIST_VOLUMES',
      'SINGLE_NODE_MULTI_WRITER',
    ]);
  });

  it('CreateVolume on a shared path: a directory named by the class pattern, idempotent by name; DeleteVolume removes it, twice is OK', async () => {
    const req = {
      name: 'pvc-1111',
      capacityRange: { requiredBytes: 1n << 20n },
      volumeCapabilities: [mountCap('MULTI_NODE_MULTI_WRITER')],
      parameters: {
        storageClassConfig: 'shared',
        pathPattern: '${.PVC.namespace}/${.PVC.name}',
        onDelete: 'delete',
        'csi.storage.k8s.io/pvc/name': 'data',
        'csi.storage.k8s.io/pvc/namespace': 'team',
      },
    };
    const first = await client.call('createVolume', req);
    assert.equal(first.volume?.volumeId, 'pvc-1111');
    assert.equal(first.volume?.capacityBytes, 1n << 20n);
    assert.equal(first.volume?.accessibleTopology, undefined, 'a shared volume is reachable from every node');
    assert.ok(existsSync(join(dir, 'shared', 'team', 'data')));
    const again = await client.call('createVolume', req);
    assert.deepEqual(again, first, 'the same name answers the same volume');
    assert.deepEqual(readdirSync(join(dir, 'shared', 'team')), ['data'], 'no second directory');
    await client.call('deleteVolume', { volumeId: 'pvc-1111' });
    assert.ok(!existsSync(join(dir, 'shared', 'team', 'data')));
    assert.equal(
      await codeOf(client.call('deleteVolume', { volumeId: 'pvc-1111' })),
      'OK',
      'DeleteVolume of an absent volume succeeds',
    );
  });

  it("the class's onDelete is kept at CreateVolume and applied at DeleteVolume: archive renames the directory, retain keeps it", async () => {
    const make = (name: string, onDelete: string) =>
      client.call('createVolume', {
        name,
        volumeCapabilities: [mountCap('MULTI_NODE_MULTI_WRITER')],
        parameters: { storageClassConfig: 'shared', pathPattern: name, onDelete },
      });
    await make('pvc-arch', 'archive');
    await make('pvc-keep', 'retain');
    await client.call('deleteVolume', { volumeId: 'pvc-arch' });
    await client.call('deleteVolume', { volumeId: 'pvc-keep' });
    const entries = readdirSync(join(dir, 'shared'));
    assert.ok(!entries.includes('pvc-arch'), 'archived: no longer under its name');
    assert.ok(
      entries.some((e) => e.startsWith('archived-') && e.includes('pvc-arch')),
      `an archived-… directory in ${entries.join(', ')}`,
    );
    assert.ok(entries.includes('pvc-keep'), 'retained');
    const listed = (await client.call('listVolumes', {})).entries?.map((e) => e.volume?.volumeId) ?? [];
    assert.ok(!listed.includes('pvc-arch') && !listed.includes('pvc-keep'), 'both are gone as volumes');
  });

  it('CreateVolume on a node path: accessible_topology names the node; unsafe patterns, block and unknown classes are INVALID_ARGUMENT', async () => {
    const topo = { preferred: [{ segments: { [KEY]: NODE } }], requisite: [{ segments: { [KEY]: NODE } }] };
    const v = await client.call('createVolume', {
      name: 'pvc-2222',
      capacityRange: { requiredBytes: 1024n },
      volumeCapabilities: [mountCap()],
      parameters: { storageClassConfig: 'local' },
      accessibilityRequirements: topo,
    });
    assert.deepEqual(v.volume?.accessibleTopology, [{ segments: { [KEY]: NODE } }]);
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-3333',
          volumeCapabilities: [mountCap()],
          parameters: { storageClassConfig: 'local', pathPattern: '../../etc' },
          accessibilityRequirements: topo,
        }),
      ),
      'InvalidArgument',
    );
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-3334',
          volumeCapabilities: [{ block: {}, accessMode: { mode: 'SINGLE_NODE_WRITER' } }],
          parameters: { storageClassConfig: 'local' },
        }),
      ),
      'InvalidArgument',
    );
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-3335',
          volumeCapabilities: [mountCap()],
          parameters: { storageClassConfig: 'nope' },
        }),
      ),
      'InvalidArgument',
    );
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-3336',
          volumeCapabilities: [mountCap()],
          parameters: { storageClassConfig: 'local', bogus: 'x' },
        }),
      ),
      'InvalidArgument',
    );
  });

  it('capacity: GetCapacity per class and node; a volume larger than the room left is RESOURCE_EXHAUSTED and one larger than the path is OUT_OF_RANGE (as csi-driver-host-path answers); expansion beyond it is OUT_OF_RANGE', async () => {
    const topo = { preferred: [{ segments: { [KEY]: NODE } }] };
    const cap = await client.call('getCapacity', {
      parameters: { storageClassConfig: 'small' },
      accessibleTopology: { segments: { [KEY]: NODE } },
    });
    assert.equal(cap.availableCapacity, 10n << 20n);
    await client.call('createVolume', {
      name: 'pvc-4444',
      capacityRange: { requiredBytes: 4n << 20n },
      volumeCapabilities: [mountCap()],
      parameters: { storageClassConfig: 'small' },
      accessibilityRequirements: topo,
    });
    assert.equal(
      (await client.call('getCapacity', { parameters: { storageClassConfig: 'small' } })).availableCapacity,
      6n << 20n,
    );
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-5555',
          capacityRange: { requiredBytes: 8n << 20n },
          volumeCapabilities: [mountCap()],
          parameters: { storageClassConfig: 'small' },
          accessibilityRequirements: topo,
        }),
      ),
      'ResourceExhausted',
    );
    assert.equal(
      await codeOf(
        client.call('createVolume', {
          name: 'pvc-5556',
          capacityRange: { requiredBytes: 64n << 20n },
          volumeCapabilities: [mountCap()],
          parameters: { storageClassConfig: 'small' },
          accessibilityRequirements: topo,
        }),
      ),
      'OutOfRange',
    );
    const grown = await client.call('controllerExpandVolume', {
      volumeId: 'pvc-4444',
      capacityRange: { requiredBytes: 6n << 20n },
    });
    assert.deepEqual(grown, { capacityBytes: 6n << 20n });
    assert.equal(
      await codeOf(
        client.call('controllerExpandVolume', { volumeId: 'pvc-4444', capacityRange: { requiredBytes: 64n << 20n } }),
      ),
      'OutOfRange',
    );
    assert.equal(
      await codeOf(
        client.call('controllerExpandVolume', { volumeId: 'pvc-nope', capacityRange: { requiredBytes: 1n } }),
      ),
      'NotFound',
    );
  });

  it('ListVolumes pages through every volume with its capacity and topology; a bad token is ABORTED', async () => {
    const first = await client.call('listVolumes', { maxEntries: 1 });
    assert.equal(first.entries?.length, 1);
    assert.equal(first.nextToken, '1');
    const rest = await client.call('listVolumes', { startingToken: first.nextToken });
    const ids = [...(first.entries ?? []), ...(rest.entries ?? [])].map((e) => e.volume?.volumeId);
    assert.deepEqual(ids, ['pvc-2222', 'pvc-4444']);
    assert.equal(rest.nextToken, undefined);
    assert.equal(await codeOf(client.call('listVolumes', { startingToken: 'x' })), 'Aborted');
  });

  it('DeleteVolume never follows a symlink: a volume directory swapped for a symlink to elsewhere leaves elsewhere untouched', async () => {
    const topo = { preferred: [{ segments: { [KEY]: NODE } }] };
    await client.call('createVolume', {
      name: 'pvc-6666',
      volumeCapabilities: [mountCap()],
      parameters: { storageClassConfig: 'local', pathPattern: 'victim' },
      accessibilityRequirements: topo,
    });
    const outside = join(dir, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'keep'), 'x');
    rmSync(join(dir, 'local', 'victim'), { recursive: true });
    symlinkSync(outside, join(dir, 'local', 'victim'));
    await codeOf(client.call('deleteVolume', { volumeId: 'pvc-6666' }));
    assert.equal(readFileSync(join(outside, 'keep'), 'utf8'), 'x');
    rmSync(join(dir, 'local', 'victim'), { force: true });
    await client.call('deleteVolume', { volumeId: 'pvc-6666' });
    assert.equal(
      (await client.call('listVolumes', {})).entries?.some((e) => e.volume?.volumeId === 'pvc-6666'),
      false,
    );
  });

  it(`Node: NodeGetInfo with topology; NodePublishVolume bind-mounts the volume's directory (${realMount ? 'real mount(8): root here may mount' : 'mount is not permitted here: a recording mounter'}), idempotently; NodeUnpublishVolume undoes it`, async () => {
    assert.deepEqual(await client.call('nodeGetInfo', {}), {
      nodeId: NODE,
      accessibleTopology: { segments: { [KEY]: NODE } },
    });
    assert.deepEqual(await client.call('nodeGetCapabilities', {}), {});
    const target = join(dir, 'pods', 'uid-1', 'volumes', 'mount');
    const req = { volumeId: 'pvc-2222', targetPath: target, volumeCapability: mountCap() };
    await client.call('nodePublishVolume', req);
    await client.call('nodePublishVolume', req);
    const source = readdirSync(join(dir, 'local')).filter((n) => !n.startsWith('.'))[0];
    if (realMount) {
      writeFileSync(join(target, 'hello'), 'from the pod');
      assert.equal(
        readFileSync(join(dir, 'local', source, 'hello'), 'utf8'),
        'from the pod',
        'a write through the mount lands in the volume directory',
      );
      const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => l.split(' ')[4] === target);
      assert.equal(mounts.length, 1, 'published once');
    } else {
      assert.deepEqual(recording.mounts.get(target), { source: join(dir, 'local', source), readOnly: false });
    }
    assert.equal(await codeOf(client.call('nodePublishVolume', { ...req, volumeId: 'pvc-nope' })), 'NotFound');
    assert.equal(await codeOf(client.call('nodePublishVolume', { ...req, targetPath: 'relative' })), 'InvalidArgument');
    await client.call('nodeUnpublishVolume', { volumeId: 'pvc-2222', targetPath: target });
    assert.ok(!existsSync(target), 'the target directory is removed');
    assert.ok(existsSync(join(dir, 'local', source)), 'the volume stays');
    await client.call('nodeUnpublishVolume', { volumeId: 'pvc-2222', targetPath: target });
  });
});
