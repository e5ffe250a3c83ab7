// resolveOptions: the reference's defaults table, and a typed ConfigurationError (never an exit) for bad input.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  ConfigurationError,
  DEFAULTS,
  leaseNameFor,
  mergeOptions,
  resolveOptions,
  validateProvisionerName,
  type ProvisionControllerOptions,
} from '../../src/controller/options/controller-options.ts';
import { newClaim } from './fixtures.ts';

describe('resolveOptions', () => {
  it('applies the Go library defaults', () => {
    const o = resolveOptions({}, {});
    assert.equal(o.resyncPeriodMs, 15 * 60_000);
    assert.equal(o.threadiness, 4);
    assert.deepEqual(o.retry, {
      failedProvisionThreshold: 15,
      failedDeleteThreshold: 15,
      backoffBaseMs: 15_000,
      backoffMaxMs: 1_000_000,
      exponentialBackoff: true,
      qps: 10,
      burst: 100,
      infeasibleDelayMs: 5 * 60_000,
    });
    assert.deepEqual(o.volumeSave, { mode: 'retry', retryCount: 5, intervalMs: 10_000 });
    assert.deepEqual(o.leaderElection, {
      mode: 'lease',
      namespace: 'default',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    });
    assert.equal(o.provisionTimeoutMs, 0);
    assert.equal(o.deletionTimeoutMs, 0);
    assert.deepEqual(o.additionalProvisionerNames, []);
    assert.equal(o.addFinalizer, false);
    assert.equal(o.selectorPolicy, 'reject');
    assert.deepEqual(o.leakInventory, {
      enabled: false,
      intervalMs: 600_000,
      gracePeriodMs: 3_600_000,
      deleteLeaked: false,
    });
    assert.equal(o.shutdownTimeoutMs, 30_000);
    assert.equal(o.nodeCache, false);
    assert.equal(o.volumeNameHook(newClaim('c', 'uid-7', 'x', '', '')), 'pvc-uid-7');
  });

  it('fills the rest of a group from the defaults, and copies lists', () => {
    const names = ['a.io/x'];
    const o = resolveOptions(
      { retry: { backoffBaseMs: 20 }, leaderElection: { mode: 'none' }, additionalProvisionerNames: names },
      {},
    );
    assert.equal(o.retry.backoffBaseMs, 20);
    assert.equal(o.retry.backoffMaxMs, 1_000_000);
    assert.equal(o.leaderElection.leaseDurationMs, 15_000);
    names.push('b.io/y');
    assert.deepEqual(o.additionalProvisionerNames, ['a.io/x']);
  });

  it('takes the leader-election namespace from POD_NAMESPACE, then the service account file', () => {
    assert.equal(resolveOptions({}, { podNamespace: 'a', serviceAccountNamespace: 'b' }).leaderElection.namespace, 'a');
    assert.equal(resolveOptions({}, { serviceAccountNamespace: 'b' }).leaderElection.namespace, 'b');
    assert.equal(
      resolveOptions({ leaderElection: { namespace: 'c' } }, { podNamespace: 'a' }).leaderElection.namespace,
      'c',
    );
  });

  it('background save mode has its own defaults', () => {
    assert.deepEqual(resolveOptions({ volumeSave: { mode: 'background' } }, {}).volumeSave, {
      mode: 'background',
      baseDelayMs: 5,
      maxDelayMs: 1_000_000,
    });
  });

  const bad: Array<[string, unknown, string]> = [
    ['threadiness 0', { threadiness: 0 }, 'threadiness'],
    ['fractional threadiness', { threadiness: 1.5 }, 'threadiness'],
    ['negative threshold', { retry: { failedProvisionThreshold: -1 } }, 'retry.failedProvisionThreshold'],
    ['negative resync', { resyncPeriodMs: -5 }, 'resyncPeriodMs'],
    ['NaN timeout', { provisionTimeoutMs: Number.NaN }, 'provisionTimeoutMs'],
    ['a string for a number', { threadiness: '4' }, 'threadiness'],
    ['a string for a boolean', { addFinalizer: 'true' }, 'addFinalizer'],
    [
      'lease <= renew',
      { leaderElection: { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 } },
      'leaderElection.leaseDurationMs',
    ],
    [
      'renew <= 1.2 retry',
      { leaderElection: { renewDeadlineMs: 2_000, retryPeriodMs: 2_000 } },
      'leaderElection.renewDeadlineMs',
    ],
    ['unknown leader election mode', { leaderElection: { mode: 'raft' } }, 'leaderElection.mode'],
    ['background mode with retryCount', { volumeSave: { mode: 'background', retryCount: 3 } }, 'volumeSave'],
    ['retry mode with zero attempts', { volumeSave: { mode: 'retry', retryCount: 0 } }, 'volumeSave.retryCount'],
    ['unknown save mode', { volumeSave: { mode: 'sometimes' } }, 'volumeSave.mode'],
    [
      'background cap below base',
      { volumeSave: { mode: 'background', baseDelayMs: 10, maxDelayMs: 5 } },
      'volumeSave.maxDelayMs',
    ],
    ['backoff cap below base', { retry: { backoffBaseMs: 10, backoffMaxMs: 5 } }, 'retry.backoffMaxMs'],
    ['bad additional name', { additionalProvisionerNames: ['has space'] }, 'additionalProvisionerNames[0]'],
    ['additional names not a list', { additionalProvisionerNames: 'a.io/x' }, 'additionalProvisionerNames'],
    ['deleteLeaked without inventory', { leakInventory: { deleteLeaked: true } }, 'leakInventory.deleteLeaked'],
    ['bad selector policy', { selectorPolicy: 'maybe' }, 'selectorPolicy'],
    ['bad namespace', { leaderElection: { namespace: 'Not_A_Namespace' } }, 'leaderElection.namespace'],
    ['a hook that is not a function', { volumeNameHook: 'pvc-x' }, 'volumeNameHook'],
    ['a group that is not an object', { retry: 5 }, 'retry'],
    ['a misspelt option', { threadyness: 2 }, 'threadyness'],
    ['a misspelt option in a group', { retry: { backofBaseMs: 2 } }, 'retry.backofBaseMs'],
  ];
  for (const [name, partial, option] of bad) {
    it(`throws ConfigurationError: ${name}`, () => {
      assert.throws(
        () => resolveOptions(partial as ProvisionControllerOptions, {}),
        (e: unknown) => e instanceof ConfigurationError && e.option === option,
      );
    });
  }

  it('refuses the flat names from before the grouping like any unknown option (no compatibility layer)', () => {
    const flat = [
      'leaseDurationMs',
      'renewDeadlineMs',
      'retryPeriodMs',
      'leaderElectionNamespace',
      'backoffBaseMs',
      'backoffMaxMs',
      'exponentialBackoffOnError',
      'queueQps',
      'queueBurst',
      'failedProvisionThreshold',
      'failedDeleteThreshold',
      'retryIntervalMaxMs',
    ];
    for (const option of flat) {
      assert.throws(
        () => resolveOptions({ [option]: 1 } as ProvisionControllerOptions, {}),
        (e: unknown) =>
          e instanceof ConfigurationError && e.option === option && e.message.includes('unknown option (known: '),
        option,
      );
    }
    // The old string form of leaderElection is refused as a group that is not an object.
    assert.throws(
      () => resolveOptions({ leaderElection: 'none' } as unknown as ProvisionControllerOptions, {}),
      (e: unknown) =>
        e instanceof ConfigurationError && e.option === 'leaderElection' && /expected an object$/.test(e.message),
    );
  });

  it("keeps the keys the caller names (the controller's dependencies) and ignores undefined values", () => {
    assert.doesNotThrow(() =>
      resolveOptions({ logger: {}, threadiness: undefined } as ProvisionControllerOptions, {}, new Set(['logger'])),
    );
    assert.throws(() => resolveOptions({ logger: {} } as ProvisionControllerOptions, {}), ConfigurationError);
  });

  it('refuses keys inherited from Object.prototype, and merges __proto__ as plain data', () => {
    for (const key of ['constructor', 'toString', 'hasOwnProperty']) {
      assert.throws(
        () => resolveOptions(JSON.parse(`{"${key}": 1}`) as ProvisionControllerOptions, {}),
        (e: unknown) => e instanceof ConfigurationError && e.option === key,
        key,
      );
      assert.throws(
        () => resolveOptions(JSON.parse(`{"retry": {"${key}": 1}}`) as ProvisionControllerOptions, {}),
        (e: unknown) => e instanceof ConfigurationError && e.option === `retry.${key}`,
        key,
      );
      assert.throws(
        () =>
          resolveOptions(
            JSON.parse(`{"volumeSave": {"mode": "retry", "${key}": 1}}`) as ProvisionControllerOptions,
            {},
          ),
        (e: unknown) => e instanceof ConfigurationError && e.option === `volumeSave.${key}`,
        key,
      );
    }
    const merged = mergeOptions(
      { threadiness: 2 },
      JSON.parse('{"__proto__": {"threadiness": 9}}') as ProvisionControllerOptions,
    );
    assert.equal(Object.getPrototypeOf(merged), Object.prototype, 'the prototype is not replaced');
    assert.ok(Object.hasOwn(merged, '__proto__'), 'kept as an own key');
    assert.throws(
      () => resolveOptions(merged, {}),
      (e: unknown) => e instanceof ConfigurationError && e.option === '__proto__',
    );
  });

  it('refuses durations a timer cannot hold (Node fires a timer over 2^31-1 ms after 1 ms), except plain comparisons', () => {
    for (const partial of [
      { provisionTimeoutMs: 2 ** 31 },
      { resyncPeriodMs: 2 ** 31 },
      { retry: { backoffMaxMs: 2 ** 31 } },
      { leakInventory: { intervalMs: 2 ** 31 } },
    ]) {
      assert.throws(
        () => resolveOptions(partial, {}),
        (e: unknown) => e instanceof ConfigurationError && /2147483647/.test(e.message),
        JSON.stringify(partial),
      );
    }
    assert.equal(resolveOptions({ provisionTimeoutMs: 2 ** 31 - 1 }, {}).provisionTimeoutMs, 2 ** 31 - 1);
    // The leak inventory's grace period is compared with a directory's age, never used as a timer.
    assert.equal(
      resolveOptions({ leakInventory: { gracePeriodMs: 90 * 24 * 3_600_000 } }, {}).leakInventory.gracePeriodMs,
      90 * 24 * 3_600_000,
    );
  });

  it("names the option in every refusal: the whole object, a variant's unknown key, a list entry", () => {
    for (const whole of [null, [], 'x']) {
      assert.throws(
        () => resolveOptions(whole as unknown as ProvisionControllerOptions, {}),
        (e: unknown) => e instanceof ConfigurationError && e.option === 'options',
        String(whole),
      );
    }
    assert.throws(
      () =>
        resolveOptions({ volumeSave: { mode: 'retry', retryCont: 3 } } as unknown as ProvisionControllerOptions, {}),
      (e: unknown) => e instanceof ConfigurationError && e.option === 'volumeSave.retryCont',
    );
    assert.throws(
      () => resolveOptions({ additionalProvisionerNames: [null] } as unknown as ProvisionControllerOptions, {}),
      (e: unknown) => e instanceof ConfigurationError && e.message.includes('[null]'),
    );
  });

  it('DEFAULTS is frozen all the way down', () => {
    assert.throws(() => {
      (DEFAULTS.retry as { qps: number }).qps = 1;
    }, TypeError);
    assert.throws(() => (DEFAULTS.additionalProvisionerNames as string[]).push('x.io/y'), TypeError);
    assert.equal(resolveOptions({}, {}).retry.qps, 10);
    resolveOptions({}, {}).additionalProvisionerNames.push('a.io/b'); // a resolved copy stays the caller's to change
  });

  it('treats null like an absent value, for a group too', () => {
    assert.equal(
      resolveOptions({ retry: null, threadiness: null } as unknown as ProvisionControllerOptions, {}).retry
        .backoffBaseMs,
      15_000,
    );
  });

  it('mergeOptions merges groups field by field and replaces everything else', () => {
    const merged = mergeOptions<ProvisionControllerOptions>(
      {
        retry: { backoffBaseMs: 20 },
        volumeSave: { mode: 'retry', retryCount: 3 },
        additionalProvisionerNames: ['a.io/x'],
      },
      {
        retry: { failedProvisionThreshold: 2 },
        volumeSave: { mode: 'background' },
        additionalProvisionerNames: ['b.io/y'],
      },
      undefined,
    );
    assert.deepEqual(merged, {
      retry: { backoffBaseMs: 20, failedProvisionThreshold: 2 },
      volumeSave: { mode: 'background' },
      additionalProvisionerNames: ['b.io/y'],
    });
  });

  it('lease timing is not checked when leader election is off', () => {
    assert.doesNotThrow(() =>
      resolveOptions({ leaderElection: { mode: 'none', leaseDurationMs: 1, renewDeadlineMs: 5 } }, {}),
    );
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
