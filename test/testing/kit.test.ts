// kube-provisioner/testing as an author uses it: startCluster()'s ready client and typed helpers, waitFor() with
// the ready-made conditions against a running ProvisionController, fault rules scoped to a create by the name
// in its body, and the conformance suite failing a provisioner that breaks the contract.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  ProvisionController,
  persistentVolumeClaims,
  persistentVolumes,
  silentLogger,
  storageClasses,
  IgnoredError,
  type PersistentVolume,
  type PersistentVolumeClaim,
  type Provisioner,
  type StorageClass,
} from 'kube-provisioner';
import { ServerError } from 'kube-provisioner/runtime';
import {
  conditions,
  provisionerConformance,
  startCluster,
  waitFor,
  WaitTimeoutError,
  type ConformanceSubject,
  type TestCluster,
} from 'kube-provisioner/testing';
import { DirectoryProvisioner } from '../../examples/directory-provisioner/provisioner.ts';

const NAME = 'directory.example.com/kit';

function claim(name: string, storage: string, className = 'kit'): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage } }, storageClassName: className },
  };
}

describe('test kit against a running controller', () => {
  let cluster: TestCluster;
  let controller: ProvisionController;
  let baseDir: string;

  before(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'kp-kit-'));
    cluster = await startCluster();
    controller = new ProvisionController(
      cluster.client,
      NAME,
      new DirectoryProvisioner({ baseDir, nodeName: 'node-a' }),
      {
        leaderElection: { mode: 'none' },
        retry: { backoffBaseMs: 20 },
        logger: silentLogger,
      },
    );
    void controller.run();
    await cluster.create(storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'kit' },
      provisioner: NAME,
      reclaimPolicy: 'Delete',
    });
  });
  after(async () => {
    await controller.stop();
    await cluster.stop();
    await rm(baseDir, { recursive: true, force: true });
  });

  it('typed create/get, claim Bound, PV deleted after the claim is', async () => {
    const created = await cluster.create(persistentVolumeClaims, claim('data', '10Mi'));
    const bound = await waitFor(cluster.client, persistentVolumeClaims, 'data', conditions.claimBound(), {
      namespace: 'default',
      timeoutMs: 20_000,
    });
    const pvName = bound?.spec.volumeName ?? '';
    assert.equal(pvName, `pvc-${created.metadata.uid}`);
    const pv = await cluster.get(persistentVolumes, pvName); // a PersistentVolume, no cast
    assert.equal(pv.spec.capacity?.storage, '10Mi');
    await cluster.client.delete(persistentVolumeClaims, 'data', { namespace: 'default' });
    assert.equal(
      await waitFor(cluster.client, persistentVolumes, pvName, conditions.deleted(pv.metadata.uid), {
        timeoutMs: 20_000,
      }),
      undefined,
    );
  });

  it('claim Pending with a ProvisioningFailed event; eventSeen; a timeout names what was awaited', async () => {
    await cluster.create(persistentVolumeClaims, claim('too-big', '5Gi'));
    const pending = await waitFor(
      cluster.client,
      persistentVolumeClaims,
      'too-big',
      conditions.claimPendingWithEvent('ProvisioningFailed'),
      { namespace: 'default', timeoutMs: 20_000 },
    );
    assert.equal(pending?.status?.phase ?? 'Pending', 'Pending');
    await waitFor(cluster.client, persistentVolumeClaims, 'too-big', conditions.eventSeen('ProvisioningFailed'), {
      namespace: 'default',
    });
    await assert.rejects(
      waitFor(cluster.client, persistentVolumeClaims, 'too-big', conditions.claimBound(), {
        namespace: 'default',
        timeoutMs: 200,
      }),
      (err: unknown) =>
        err instanceof WaitTimeoutError && /not claim Bound/.test(err.message) && err.last?.metadata.name === 'too-big',
    );
  });

  it('a fault rule naming an object fails the create of that name only (the name is in the body)', async () => {
    cluster.faults.add({ verb: 'create', resource: 'persistentvolumeclaims', name: 'faulty', status: 500, count: 1 });
    await cluster.create(persistentVolumeClaims, claim('unrelated', '1Mi', 'none'));
    await assert.rejects(
      cluster.create(persistentVolumeClaims, claim('faulty', '1Mi', 'none')),
      (err: unknown) => err instanceof ServerError && err.code === 500,
    );
    assert.equal(cluster.store.get('persistentvolumeclaims', 'default', 'faulty'), undefined, 'nothing was stored');
    await cluster.create(persistentVolumeClaims, claim('faulty', '1Mi', 'none')); // the rule was used up
  });
});

/** Runs the suite's cases directly (a runner that collects them) and returns each case's outcome. */
async function runSuite(
  opts: Omit<Parameters<typeof provisionerConformance>[0], 'runner'>,
): Promise<Map<string, unknown>> {
  const tests: Array<[string, () => Promise<void>]> = [];
  provisionerConformance({
    ...opts,
    runner: { describe: (_name, fn) => fn(), it: (name, fn) => tests.push([name, fn]) },
  });
  const results = new Map<string, unknown>();
  for (const [name, fn] of tests)
    results.set(
      name,
      await fn().then(
        () => 'passed',
        (err: unknown) => err,
      ),
    );
  return results;
}

const failedNames = (results: Map<string, unknown>): string[] =>
  [...results]
    .filter(([, r]) => r !== 'passed')
    .map(([name]) => name)
    .sort();

describe('the conformance suite fails a provisioner that breaks the contract', () => {
  const storageClass: StorageClass = { metadata: { name: 'x' }, provisioner: 'x' };

  it('a provisioner that is not idempotent, ignores its AbortSignal, deletes nothing and creates what it refuses', async () => {
    // Its backend is a map of volumes by PV name: provision adds one (a new path each call), delete does nothing.
    const backend = new Map<string, string>();
    let n = 0;
    const broken: Provisioner = {
      provision: async (o) => {
        const path = `/v/${++n}`;
        backend.set(o.pvName, path);
        if (o.selectedNodeName === 'elsewhere') throw new IgnoredError('another node');
        return {
          volume: {
            metadata: { name: o.pvName },
            spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path } },
          },
        };
      },
      delete: async () => {},
    };
    const results = await runSuite({
      make: () => ({ provisioner: broken, storageClass, exists: async (pv) => backend.has(pv.metadata.name ?? '') }),
      ignored: (_s, o) => ({ ...o, selectedNodeName: 'elsewhere' }),
    });
    assert.deepEqual(failedNames(results), [
      'a claim this instance must not serve is refused with IgnoredError, and nothing is created',
      'an aborted signal stops provision and delete before they act',
      'delete removes the volume, and deleting a volume that is already gone succeeds',
      'provision is idempotent for the same pvName',
    ]);
    assert.match(
      String(results.get('delete removes the volume, and deleting a volume that is already gone succeeds')),
      /gone after delete/,
    );
    assert.equal(
      results.get('the PV carries the capacity, access modes and reclaim policy the claim and class ask for'),
      'passed',
    );
  });

  it('a correct in-memory provisioner passes every case', async () => {
    const backend = new Map<string, PersistentVolume>();
    const good: Provisioner = {
      provision: async (o, signal) => {
        signal.throwIfAborted();
        if (o.selectedNodeName === 'elsewhere') throw new IgnoredError('another node');
        const volume: PersistentVolume = backend.get(o.pvName) ?? {
          metadata: { name: o.pvName },
          spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/v/${o.pvName}` } },
        };
        backend.set(o.pvName, volume);
        return { volume };
      },
      delete: async (pv, signal) => {
        signal.throwIfAborted();
        backend.delete(pv.metadata.name ?? '');
      },
    };
    const results = await runSuite({
      make: () => ({ provisioner: good, storageClass, exists: async (pv) => backend.has(pv.metadata.name ?? '') }),
      ignored: (_s, o) => ({ ...o, selectedNodeName: 'elsewhere' }),
    });
    assert.deepEqual(failedNames(results), []);
    assert.equal(results.size, 5);
  });

  it('refuses to run without exists(): every case fails and says why', async () => {
    const noop: Provisioner = {
      provision: async (o) => ({
        volume: {
          metadata: { name: o.pvName },
          spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'] },
        },
      }),
      delete: async () => {},
    };
    // A JavaScript caller (or a cast) can leave exists out; the suite must not then pass a delete that does nothing.
    const results = await runSuite({
      make: () => ({ provisioner: noop, storageClass }) as unknown as ConformanceSubject,
    });
    assert.equal(results.size, 4);
    for (const [name, r] of results) assert.match(String(r), /no exists\(volume\)/, name);
  });
});
