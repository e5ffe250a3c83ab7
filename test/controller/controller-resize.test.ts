// Resize end to end through the embedded cluster (its binder and resize admission): a Bound claim grows, the PV
// and the claim get the new capacity with Kubernetes 1.32's status fields, conditions and events; node-side
// resize stops at FileSystemResizePending; infeasible, then recovered by lowering the request; a failed PV write
// is retried without a second expand(); a leader change in the middle of expand() finishes on the new leader.
import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { explainClaim, formatExplanation } from '../../src/controller/claim/explain-claim.ts';
import { ProvisionController } from '../../src/controller/provision-controller.ts';
import { InfeasibleError, type ExpandResult, type Provisioner } from '../../src/controller/provisioner.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import {
  createClaim,
  createClass,
  FAST,
  getPV,
  getPVC,
  MemoryProvisioner,
  PROVISIONER,
  reasons,
  startEnv,
  storageClass,
  useController,
  waitFor,
  type Env,
} from './harness.ts';

/** The memory backend with expand(): records calls; `onExpand` may throw or block. */
class ExpandingProvisioner extends MemoryProvisioner {
  expandCalls: Array<{ pv: string; size: string }> = [];
  onExpand:
    | ((
        v: PersistentVolume,
        size: string,
        signal: AbortSignal,
      ) => Promise<ExpandResult | undefined> | ExpandResult | undefined)
    | undefined;
  async expand(v: PersistentVolume, size: string, signal: AbortSignal): Promise<ExpandResult> {
    this.expandCalls.push({ pv: v.metadata.name ?? '', size });
    return (await this.onExpand?.(v, size, signal)) ?? { capacity: size };
  }
}

function plainClaim(name: string, className: string, size = '1Mi'): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: className },
  };
}

async function requestSize(env: Env, name: string, size: string): Promise<void> {
  await env.client.patch(
    persistentVolumeClaims,
    name,
    { spec: { resources: { requests: { storage: size } } } },
    { namespace: 'default', type: 'merge' },
  );
}

async function boundClaim(env: Env, name: string, className: string): Promise<string> {
  await createClaim(env, plainClaim(name, className));
  const c = await waitFor(
    `${name} Bound`,
    () => getPVC(env, 'default', name)?.status?.phase === 'Bound' && getPVC(env, 'default', name),
  );
  return c.spec.volumeName ?? '';
}

const conditionTypes = (c: PersistentVolumeClaim | undefined) => (c?.status?.conditions ?? []).map((x) => x.type);

describe('resize with the cluster controllers', () => {
  const f = useController({
    env: { controllers: true },
    backend: () => new ExpandingProvisioner(),
    options: { retry: { infeasibleDelayMs: 60_000, failedProvisionThreshold: 3 } },
    classes: [storageClass('grow', { allowVolumeExpansion: true })],
  });
  afterEach(() => {
    f.backend.onExpand = undefined;
  });

  it('grows a Bound claim: InProgress + Resizing while expand() runs, then PV and claim capacity, status cleared', async () => {
    const pvName = await boundClaim(f.env, 'grow-me', 'grow');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    f.backend.onExpand = async () => {
      await gate;
      return undefined;
    };
    await requestSize(f.env, 'grow-me', '2Mi');
    const during = await waitFor('resize in progress', () => {
      const c = getPVC(f.env, 'default', 'grow-me');
      return c?.status?.allocatedResourceStatuses?.storage === 'ControllerResizeInProgress' && c;
    });
    assert.equal(during.status?.allocatedResources?.storage, '2Mi');
    assert.ok(conditionTypes(during).includes('Resizing'));
    // explain reads the controller's cache, which may be a moment behind the store.
    const explained = await waitFor('explain shows the resize', () => {
      const e = f.ctrl.explain('default', 'grow-me');
      return e?.facts.some((fact) => fact.includes('resize status: ControllerResizeInProgress, allocated 2Mi')) && e;
    });
    assert.equal(explained.resize?.action, 'expand');
    assert.ok(
      explained.facts.some((fact) => fact.startsWith('condition Resizing=True')),
      explained.facts.join('\n'),
    );
    release();
    const done = await waitFor(
      'claim capacity 2Mi',
      () =>
        getPVC(f.env, 'default', 'grow-me')?.status?.capacity?.storage === '2Mi' && getPVC(f.env, 'default', 'grow-me'),
    );
    assert.equal(getPV(f.env, pvName)?.spec.capacity?.storage, '2Mi');
    assert.equal(done.status?.allocatedResourceStatuses?.storage, undefined);
    assert.equal(done.status?.allocatedResources?.storage, '2Mi');
    assert.deepEqual(conditionTypes(done), []);
    await waitFor(
      'events',
      () =>
        ['ExternalExpanding', 'Resizing', 'VolumeResizeSuccessful'].every((r) =>
          reasons(f.env, 'grow-me').includes(r),
        ) || undefined,
    );
    assert.deepEqual(
      f.backend.expandCalls.filter((c) => c.pv === pvName),
      [{ pv: pvName, size: '2Mi' }],
    );
  });

  it('a backend that needs the node stops at FileSystemResizePending, capacity unchanged', async () => {
    const pvName = await boundClaim(f.env, 'fs-pending', 'grow');
    f.backend.onExpand = (_v, size) => ({ capacity: size, nodeExpansionRequired: true });
    await requestSize(f.env, 'fs-pending', '3Mi');
    const c = await waitFor(
      'FileSystemResizePending',
      () =>
        conditionTypes(getPVC(f.env, 'default', 'fs-pending')).includes('FileSystemResizePending') &&
        getPVC(f.env, 'default', 'fs-pending'),
    );
    assert.equal(c.status?.allocatedResourceStatuses?.storage, 'NodeResizePending');
    assert.equal(c.status?.capacity?.storage, '1Mi');
    assert.equal(getPV(f.env, pvName)?.spec.capacity?.storage, '3Mi');
    assert.ok(!conditionTypes(c).includes('Resizing'));
    await waitFor('FileSystemResizeRequired event', () =>
      reasons(f.env, 'fs-pending').includes('FileSystemResizeRequired'),
    );
    assert.equal(f.ctrl.explain('default', 'fs-pending')?.resize?.code, 'NodeResizePending');
  });

  it('infeasible: ControllerResizeInfeasible and VolumeResizeFailed; lowering the request recovers', async () => {
    const pvName = await boundClaim(f.env, 'too-big', 'grow');
    f.backend.onExpand = (_v, size) => {
      if (size === '100Mi') throw new InfeasibleError('only 50Mi left');
      return undefined;
    };
    await requestSize(f.env, 'too-big', '100Mi');
    await waitFor(
      'infeasible status',
      () =>
        getPVC(f.env, 'default', 'too-big')?.status?.allocatedResourceStatuses?.storage ===
        'ControllerResizeInfeasible',
    );
    await waitFor('VolumeResizeFailed', () => reasons(f.env, 'too-big').includes('VolumeResizeFailed'));
    const explained = f.ctrl.explain('default', 'too-big');
    assert.equal(explained?.resize?.code, 'InfeasibleBackoff');
    assert.match(explained?.resize?.reason ?? '', /only 50Mi left/);
    // `kube-provisioner explain` (objects from the API, no controller records) shows the status and the next step.
    const text = formatExplanation(await explainClaim(f.env.client, 'default', 'too-big'));
    assert.match(text, /resize status: ControllerResizeInfeasible, allocated 100Mi/);
    assert.match(text, /Resize: expand \(Expand\): the claim asks for 100Mi, the volume has 1Mi/);
    // The slow retry (60 s here) is not waited for: lowering the request is a new attempt at once.
    await requestSize(f.env, 'too-big', '4Mi');
    const c = await waitFor(
      'capacity 4Mi',
      () =>
        getPVC(f.env, 'default', 'too-big')?.status?.capacity?.storage === '4Mi' && getPVC(f.env, 'default', 'too-big'),
    );
    assert.equal(c.status?.allocatedResourceStatuses?.storage, undefined);
    assert.equal(getPV(f.env, pvName)?.spec.capacity?.storage, '4Mi');
    assert.deepEqual(
      f.backend.expandCalls.filter((x) => x.pv === pvName).map((x) => x.size),
      ['100Mi', '4Mi'],
    );
  });

  it('a failed PV capacity write is retried without calling expand() again', async () => {
    const pvName = await boundClaim(f.env, 'pv-write', 'grow');
    const rule = f.env.cluster.faults.add({
      verb: 'patch',
      resource: 'persistentvolumes',
      name: pvName,
      status: 500,
      count: 2,
    });
    try {
      await requestSize(f.env, 'pv-write', '5Mi');
      await waitFor('capacity 5Mi', () => getPVC(f.env, 'default', 'pv-write')?.status?.capacity?.storage === '5Mi');
    } finally {
      f.env.cluster.faults.remove(rule);
    }
    assert.equal(getPV(f.env, pvName)?.spec.capacity?.storage, '5Mi');
    assert.deepEqual(
      f.backend.expandCalls.filter((x) => x.pv === pvName),
      [{ pv: pvName, size: '5Mi' }],
    );
  });

  it('a failed claim status write after the PV write: the retry only records the capacity (no second expand())', async () => {
    const pvName = await boundClaim(f.env, 'status-write', 'grow');
    let rule: number | undefined;
    f.backend.onExpand = () => {
      // After the claim was marked in progress: the next status writes (the final one) fail twice.
      rule = f.env.cluster.faults.add({
        verb: 'patch',
        resource: 'persistentvolumeclaims',
        subresource: 'status',
        name: 'status-write',
        status: 500,
        count: 2,
      });
      return undefined;
    };
    try {
      await requestSize(f.env, 'status-write', '8Mi');
      await waitFor(
        'capacity 8Mi',
        () => getPVC(f.env, 'default', 'status-write')?.status?.capacity?.storage === '8Mi',
      );
    } finally {
      if (rule !== undefined) f.env.cluster.faults.remove(rule);
    }
    assert.equal(getPV(f.env, pvName)?.spec.capacity?.storage, '8Mi');
    assert.deepEqual(
      f.backend.expandCalls.filter((x) => x.pv === pvName),
      [{ pv: pvName, size: '8Mi' }],
    );
    assert.deepEqual(conditionTypes(getPVC(f.env, 'default', 'status-write')), []);
  });

  it('transient failures back off, then give up at the threshold with the status infeasible', async () => {
    const pvName = await boundClaim(f.env, 'always-fails', 'grow');
    f.backend.onExpand = () => {
      throw new Error('backend unreachable');
    };
    await requestSize(f.env, 'always-fails', '6Mi');
    await waitFor('given up', () => f.ctrl.explain('default', 'always-fails')?.resize?.code === 'GivenUp');
    await waitFor(
      'status infeasible',
      () =>
        getPVC(f.env, 'default', 'always-fails')?.status?.allocatedResourceStatuses?.storage ===
        'ControllerResizeInfeasible',
    );
    assert.equal(f.backend.expandCalls.filter((x) => x.pv === pvName).length, 3);
  });
});

describe('resize with per-claim election', () => {
  const f = useController({
    env: { controllers: true },
    backend: () => new ExpandingProvisioner(),
    options: {
      leaderElection: { mode: 'per-claim', leaseDurationMs: 2_000, renewDeadlineMs: 1_000, retryPeriodMs: 100 },
    },
    replicas: [{ options: { identity: 'replica-a' } }, { options: { identity: 'replica-b' } }],
    classes: [storageClass('grow', { allowVolumeExpansion: true })],
  });

  it('two active replicas: expand() runs once, under the PV lock', async () => {
    const pvName = await boundClaim(f.env, 'shared-work', 'grow');
    await requestSize(f.env, 'shared-work', '9Mi');
    await waitFor('capacity 9Mi', () => getPVC(f.env, 'default', 'shared-work')?.status?.capacity?.storage === '9Mi');
    assert.deepEqual(f.backend.expandCalls, [{ pv: pvName, size: '9Mi' }]);
    assert.match(
      getPV(f.env, pvName)?.metadata.annotations?.['control-plane.alpha.kubernetes.io/leader'] ?? '',
      /"holderIdentity":"replica-[ab]"/,
      'expanded under the PV lock',
    );
  });
});

describe('resize across a leader change', () => {
  it('the new leader calls expand() again with the same size and finishes', async () => {
    const env = await startEnv({ controllers: true });
    const backend = new ExpandingProvisioner();
    const timing = {
      leaderElection: {
        mode: 'lease' as const,
        namespace: 'default',
        leaseDurationMs: 1_000,
        renewDeadlineMs: 600,
        retryPeriodMs: 100,
      },
    };
    const seen: string[] = [];
    const via = (who: string): Provisioner => ({
      provision: (o, s) => backend.provision(o, s),
      delete: (v) => backend.delete(v),
      expand: (v, size, s) => {
        seen.push(who);
        return backend.expand(v, size, s);
      },
    });
    const a = new ProvisionController(env.client, PROVISIONER, via('a'), { ...FAST, ...timing, identity: 'ctrl-a' });
    let b: ProvisionController | undefined;
    try {
      void a.run();
      await createClass(env, storageClass('grow', { allowVolumeExpansion: true }));
      const pvName = await boundClaim(env, 'handover', 'grow');
      // a's expand() hangs until its term ends (stop aborts the signal).
      backend.onExpand = (_v, _size, signal) =>
        seen.length === 1
          ? new Promise((_, reject) =>
              signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
            )
          : undefined;
      await requestSize(env, 'handover', '7Mi');
      await waitFor('a is expanding', () => seen.length === 1);
      b = new ProvisionController(env.client, PROVISIONER, via('b'), { ...FAST, ...timing, identity: 'ctrl-b' });
      void b.run();
      await a.stop();
      await waitFor(
        'capacity 7Mi',
        () => getPVC(env, 'default', 'handover')?.status?.capacity?.storage === '7Mi',
        15_000,
      );
      assert.deepEqual(seen, ['a', 'b']);
      assert.deepEqual(
        backend.expandCalls.map((x) => x.size),
        ['7Mi', '7Mi'],
      );
      assert.equal(getPV(env, pvName)?.spec.capacity?.storage, '7Mi');
    } finally {
      await a.stop();
      await b?.stop();
      await env.stop();
    }
  });
});
