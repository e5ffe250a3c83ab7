// Integration: each provisioning state and error type against the embedded cluster: Finished errors retried,
// NoChange, InBackground carried on after the claim is deleted (then reclaimed), Reschedule removing
// selected-node, IgnoredError (silent), InfeasibleError (slow retry until the claim changes), and failure
// thresholds that hold across resyncs until the claim changes.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  IgnoredError,
  InfeasibleError,
  ProvisioningError,
  type ProvisionOptions,
  type ProvisionResult,
} from '../../src/controller/provisioner.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { PersistentVolume, PersistentVolumeClaim } from '../../src/types/k8s.ts';
import {
  claim,
  createClaim,
  eventsFor,
  getPV,
  getPVC,
  MemoryProvisioner,
  reasons,
  storageClass,
  useController,
  waitFor,
} from './harness.ts';

/** A MemoryProvisioner that refuses one claim name with IgnoredError on every call (after counting the call). */
class WitnessIgnoringProvisioner extends MemoryProvisioner {
  constructor(private readonly witness: string) {
    super();
  }

  override async provision(o: ProvisionOptions, signal: AbortSignal): Promise<ProvisionResult> {
    if (o.claim.metadata.name !== this.witness) return super.provision(o, signal);
    this.provisionCalls.push(o.pvName);
    throw new IgnoredError('the resync witness is never provisioned');
  }
}

describe('ProvisionController: provisioning states and failures', () => {
  /** Per claim name: what provision() should do on each call (index = call number), default succeed. */
  const script = new Map<string, Array<() => never | undefined>>();
  /**
   * A claim whose provision() always throws IgnoredError: every resync asks about it once more, so its call count
   * counts resyncs. "Nothing happened across resyncs" is then checked after N more of its calls, not after a sleep.
   */
  const WITNESS = 'resync-witness';
  const f = useController({
    // In the backend itself, not in onProvision, which a test below replaces.
    backend: () => new WitnessIgnoringProvisioner(WITNESS),
    setup: (backend) => {
      backend.onProvision = (o) => {
        const steps = script.get(o.claim.metadata.name ?? '');
        const step = steps?.shift();
        step?.();
        return undefined;
      };
    },
    options: {
      resyncPeriodMs: 100,
      retry: { failedProvisionThreshold: 3, infeasibleDelayMs: 60_000 },
    },
    classes: [storageClass('std'), storageClass('wffc', { volumeBindingMode: 'WaitForFirstConsumer' })],
  });
  const calls = (name: string) => f.backend.provisionCalls.filter((n) => n === name).length;
  let witnessPv = '';
  before(async () => {
    const w = await createClaim(f.env, claim(WITNESS, 'std'));
    witnessPv = `pvc-${w.metadata.uid}`;
  });
  /** Resolves once the witness was asked `n` more times, i.e. `n` more resyncs ran (n - 1 of them completely). */
  const resyncs = async (n: number) => {
    const start = calls(witnessPv);
    await waitFor(`${n} more resyncs`, () => calls(witnessPv) >= start + n);
  };
  /** Rate-limited re-adds of the claim queue (WorkQueue.addRateLimited: the backoff retries). */
  const backoffRetries = async () =>
    Number(/workqueue_retries_total\{name="claims"\} (\d+)/.exec(await f.registry.metrics())?.[1]);

  const fail = (err: Error) => () => {
    throw err;
  };

  it('retries a Finished error with backoff and succeeds', async () => {
    script.set('finished', [fail(new Error('backend busy')), fail(new Error('backend busy'))]);
    const c = await createClaim(f.env, claim('finished', 'std'));
    await waitFor('PV', () => getPV(f.env, `pvc-${c.metadata.uid}`));
    assert.equal(calls(`pvc-${c.metadata.uid}`), 3);
    await waitFor('failure and success events', () => {
      const r = reasons(f.env, 'finished');
      return r.includes('ProvisioningFailed') && r.includes('ProvisioningSucceeded');
    });
  });

  it('retries a NoChange error', async () => {
    script.set('nochange', [fail(new ProvisioningError('unreachable', 'NoChange'))]);
    const c = await createClaim(f.env, claim('nochange', 'std'));
    await waitFor('PV', () => getPV(f.env, `pvc-${c.metadata.uid}`));
    assert.equal(f.ctrl.claimsInProgress().includes(c.metadata.uid ?? ''), false);
  });

  it('carries an InBackground claim on after the PVC is deleted, then the volume is reclaimed', async () => {
    let release!: () => void;
    const deleted = new Promise<void>((r) => (release = r));
    let first = true;
    const c = await (async () => {
      f.backend.onProvision = async (o) => {
        if (o.claim.metadata.name !== 'background') {
          const steps = script.get(o.claim.metadata.name ?? '');
          steps?.shift()?.();
          return undefined;
        }
        if (first) {
          first = false;
          throw new ProvisioningError('timeout, still creating', 'InBackground');
        }
        await deleted;
        return undefined;
      };
      return createClaim(f.env, claim('background', 'std'));
    })();
    const uid = c.metadata.uid ?? '';
    await waitFor('claim in progress', () => f.ctrl.claimsInProgress().includes(uid));
    await f.env.client.delete(persistentVolumeClaims, 'background', { namespace: 'default' });
    await waitFor('claim gone', () => !getPVC(f.env, 'default', 'background'));
    release();
    const pv = await waitFor('PV saved for the deleted claim', () => getPV(f.env, `pvc-${uid}`));
    assert.equal(pv.spec.claimRef?.uid, uid);
    await waitFor('no longer in progress', () => !f.ctrl.claimsInProgress().includes(uid));
    // The PV controller releases a PV whose claim is gone; the controller then deletes the backend volume.
    f.env.cluster.store.update('persistentvolumes', { ...pv, status: { phase: 'Released' } } as PersistentVolume, {
      subresource: 'status',
    });
    await waitFor('PV reclaimed', () => !getPV(f.env, `pvc-${uid}`));
    assert.equal(f.backend.volumes.has(`pvc-${uid}`), false);
  });

  it('Reschedule removes selected-node, and provisions on the next node chosen', async () => {
    script.set('resched', [fail(new ProvisioningError('node-1 is full', 'Reschedule'))]);
    const c = await createClaim(f.env, claim('resched', 'wffc', { annotations: { [ANN_SELECTED_NODE]: 'node-1' } }));
    await waitFor(
      'selected-node removed',
      () => getPVC(f.env, 'default', 'resched')?.metadata.annotations?.[ANN_SELECTED_NODE] === undefined,
    );
    assert.equal(getPV(f.env, `pvc-${c.metadata.uid}`), undefined);
    const current = getPVC(f.env, 'default', 'resched') as PersistentVolumeClaim;
    await f.env.client.update(
      persistentVolumeClaims,
      {
        ...current,
        metadata: {
          ...current.metadata,
          annotations: { ...current.metadata.annotations, [ANN_SELECTED_NODE]: 'node-2' },
        },
      },
      { namespace: 'default' },
    );
    const pv = await waitFor('PV on node-2', () => getPV(f.env, `pvc-${c.metadata.uid}`));
    assert.equal(pv.spec.nodeAffinity?.required?.nodeSelectorTerms[0]?.matchExpressions?.[0]?.values?.[0], 'node-2');
  });

  it('IgnoredError: no failure event, no metric, no PV, no backoff retry (resync asks again, as in Go)', async () => {
    const ignore = fail(new IgnoredError('another shard owns it'));
    script.set(
      'ignored',
      Array.from({ length: 100 }, () => ignore),
    );
    const metricsBefore = await f.registry.metrics();
    const retriesBefore = await backoffRetries();
    assert.ok(Number.isFinite(retriesBefore), 'the claim queue reports workqueue_retries_total');
    const c = await createClaim(f.env, claim('ignored', 'std'));
    // Asked three times: once when created, then by two resyncs (the only way back for an ignored claim).
    await waitFor('provision called by two resyncs', () => calls(`pvc-${c.metadata.uid}`) >= 3);
    assert.equal(
      await backoffRetries(),
      retriesBefore,
      'no backoff retry: the claim queue re-added nothing rate-limited',
    );
    assert.equal(getPV(f.env, `pvc-${c.metadata.uid}`), undefined);
    assert.deepEqual(
      reasons(f.env, 'ignored').filter((r) => r !== 'Provisioning'),
      [],
    );
    const failedCount = (text: string) =>
      Number(
        /controller_persistentvolumeclaim_provision_failed_total\{class="std",source=""\} (\d+)/.exec(text)?.[1] ?? 0,
      );
    assert.equal(
      failedCount(await f.registry.metrics()),
      failedCount(metricsBefore),
      'IgnoredError is not counted as a failure',
    );
  });

  it('InfeasibleError: slow retry that resync does not shorten, retried at once when the claim changes', async () => {
    script.set('infeasible', [fail(new InfeasibleError('size 1Mi below the minimum'))]);
    const c = await createClaim(f.env, claim('infeasible', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor('infeasible event', () => reasons(f.env, 'infeasible').includes('ProvisioningFailed'));
    await resyncs(4);
    assert.equal(calls(pvName), 1, 'no retry before retryIntervalMax, across three resyncs');
    const current = getPVC(f.env, 'default', 'infeasible') as PersistentVolumeClaim;
    await f.env.client.update(
      persistentVolumeClaims,
      { ...current, metadata: { ...current.metadata, labels: { fixed: 'yes' } } },
      { namespace: 'default' },
    );
    await waitFor('PV after the claim changed', () => getPV(f.env, pvName));
    const ev = eventsFor(f.env, 'infeasible').find((e) => e.reason === 'ProvisioningFailed');
    assert.match(
      ev?.message ?? '',
      /^Volume provisioning failed with infeasible error\. Retries will be delayed\. size 1Mi below the minimum$/,
    );
  });

  it('gives up after failedProvisionThreshold failures with an event and a metric, holds across resyncs, retries when the claim changes', async () => {
    const always = fail(new Error('quota exceeded'));
    script.set('doomed', [always, always, always, always, always, always]);
    const c = await createClaim(f.env, claim('doomed', 'std'));
    const pvName = `pvc-${c.metadata.uid}`;
    await waitFor('given-up event', () => reasons(f.env, 'doomed').includes('ProvisioningGivenUp'));
    assert.equal(calls(pvName), 3);
    await resyncs(4);
    assert.equal(calls(pvName), 3, 'three resyncs do not retry a given-up claim');
    assert.match(
      await f.registry.metrics(),
      /controller_persistentvolumeclaim_provision_given_up_total\{class="std",source=""\} 1/,
    );
    script.set('doomed', []);
    const current = getPVC(f.env, 'default', 'doomed') as PersistentVolumeClaim;
    await f.env.client.update(
      persistentVolumeClaims,
      {
        ...current,
        metadata: { ...current.metadata, annotations: { ...current.metadata.annotations, 'example.com/retry': '1' } },
      },
      { namespace: 'default' },
    );
    await waitFor('PV after the claim changed', () => getPV(f.env, pvName));
    assert.equal(calls(pvName), 4);
  });
});
