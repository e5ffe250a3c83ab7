// resolveOptions: the reference's defaults table, and a typed ConfigurationError (never an exit) for bad input.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  leaseNameFor,
  resolveOptions,
  validateProvisionerName,
  type ProvisionControllerOptions,
} from '../../src/controller/options.ts';
import { newClaim } from './fixtures.ts';

describe('resolveOptions', () => {
  it('applies the Go library defaults', () => {
    const o = resolveOptions({}, {});
    assert.equal(o.resyncPeriodMs, 15 * 60_000);
    assert.equal(o.threadiness, 4);
    assert.equal(o.exponentialBackoffOnError, true);
    assert.equal(o.backoffBaseMs, 15_000);
    assert.equal(o.backoffMaxMs, 1_000_000);
    assert.equal(o.queueQps, 10);
    assert.equal(o.queueBurst, 100);
    assert.equal(o.failedProvisionThreshold, 15);
    assert.equal(o.failedDeleteThreshold, 15);
    assert.deepEqual(o.volumeSave, { mode: 'retry', retryCount: 5, intervalMs: 10_000 });
    assert.equal(o.leaderElection, 'lease');
    assert.equal(o.leaderElectionNamespace, 'default');
    assert.equal(o.leaseDurationMs, 15_000);
    assert.equal(o.renewDeadlineMs, 10_000);
    assert.equal(o.retryPeriodMs, 2_000);
    assert.equal(o.provisionTimeoutMs, 0);
    assert.equal(o.deletionTimeoutMs, 0);
    assert.deepEqual(o.additionalProvisionerNames, []);
    assert.equal(o.addFinalizer, false);
    assert.equal(o.retryIntervalMaxMs, 5 * 60_000);
    assert.equal(o.selectorPolicy, 'reject');
    assert.equal(o.leakInventory.enabled, false);
    assert.equal(o.shutdownTimeoutMs, 30_000);
    assert.equal(o.nodeCache, false);
    assert.equal(o.volumeNameHook(newClaim('c', 'uid-7', 'x', '', '')), 'pvc-uid-7');
  });

  it('takes the leader-election namespace from POD_NAMESPACE, then the service account file', () => {
    assert.equal(resolveOptions({}, { podNamespace: 'a', serviceAccountNamespace: 'b' }).leaderElectionNamespace, 'a');
    assert.equal(resolveOptions({}, { serviceAccountNamespace: 'b' }).leaderElectionNamespace, 'b');
    assert.equal(resolveOptions({ leaderElectionNamespace: 'c' }, { podNamespace: 'a' }).leaderElectionNamespace, 'c');
  });

  it('background save mode has its own defaults', () => {
    const o = resolveOptions({ volumeSave: { mode: 'background' } }, {});
    assert.equal(o.volumeSave.mode, 'background');
  });

  const bad: Array<[string, ProvisionControllerOptions, string]> = [
    ['threadiness 0', { threadiness: 0 }, 'threadiness'],
    ['fractional threadiness', { threadiness: 1.5 }, 'threadiness'],
    ['negative threshold', { failedProvisionThreshold: -1 }, 'failedProvisionThreshold'],
    ['negative resync', { resyncPeriodMs: -5 }, 'resyncPeriodMs'],
    ['NaN timeout', { provisionTimeoutMs: Number.NaN }, 'provisionTimeoutMs'],
    ['lease <= renew', { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }, 'leaseDurationMs'],
    ['renew <= 1.2 retry', { renewDeadlineMs: 2_000, retryPeriodMs: 2_000 }, 'renewDeadlineMs'],
    ['unknown leader election mode', { leaderElection: 'raft' as 'lease' }, 'leaderElection'],
    ['background mode with retryCount', { volumeSave: { mode: 'background', retryCount: 3 } as never }, 'volumeSave'],
    ['retry mode with zero attempts', { volumeSave: { mode: 'retry', retryCount: 0 } }, 'volumeSave.retryCount'],
    ['backoff cap below base', { backoffBaseMs: 10, backoffMaxMs: 5 }, 'backoffMaxMs'],
    ['bad additional name', { additionalProvisionerNames: ['has space'] }, 'additionalProvisionerNames[0]'],
    ['deleteLeaked without inventory', { leakInventory: { deleteLeaked: true } }, 'leakInventory.deleteLeaked'],
    ['bad selector policy', { selectorPolicy: 'maybe' as 'reject' }, 'selectorPolicy'],
    ['bad namespace', { leaderElectionNamespace: 'Not_A_Namespace' }, 'leaderElectionNamespace'],
  ];
  for (const [name, partial, option] of bad) {
    it(`throws ConfigurationError: ${name}`, () => {
      assert.throws(
        () => resolveOptions(partial, {}),
        (e: unknown) => e instanceof ConfigurationError && e.option === option,
      );
    });
  }

  it('lease timing is not checked when leader election is off', () => {
    assert.doesNotThrow(() => resolveOptions({ leaderElection: 'none', leaseDurationMs: 1, renewDeadlineMs: 5 }, {}));
  });

  it('validates provisioner names', () => {
    assert.doesNotThrow(() => validateProvisionerName('example.com/hostpath'));
    assert.doesNotThrow(() => validateProvisionerName('ebs.csi.aws.com'));
    assert.throws(() => validateProvisionerName(''), ConfigurationError);
    assert.throws(() => validateProvisionerName('kubernetes.io/aws-ebs'), ConfigurationError);
    assert.doesNotThrow(() => validateProvisionerName('kubernetes.io/aws-ebs', 'x', true));
    assert.throws(() => validateProvisionerName('a/b/c'), ConfigurationError);
  });

  it('derives the Lease name from the provisioner name', () => {
    assert.equal(leaseNameFor('example.com/nfs'), 'example.com-nfs');
  });
});
