// Flags of `run hostpath`: defaults, environment fallbacks (flag wins over env), durations, and the checks of
// flag combinations, through the same commander definition the command uses.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONTROLLER_OPTIONS } from '../../src/controller/options/option-table.ts';
import { flatRows } from '../../src/controller/options/option-spec.ts';
import { ConfigurationError, DEFAULTS, resolveOptions } from '../../src/controller/options/controller-options.ts';
import { CliOptionError } from '../../src/cli/flags.ts';
import { DEFAULT_PROVISIONER_NAME, parseConfigMapRef, parseRunHostPathArgs } from '../../src/cli/hostpath-options.ts';
import { parseDuration } from '../../src/controller/options/option-format.ts';
import { controllerFlagRows, envName } from '../../src/controller/options/option-parse.ts';

describe('run hostpath flags', () => {
  it('defaults match the controller defaults', () => {
    const o = parseRunHostPathArgs(['--config', '/etc/kp/config.json']);
    assert.equal(o.provisionerName, DEFAULT_PROVISIONER_NAME);
    assert.equal(o.mode, 'deployment');
    assert.equal(o.configFile, '/etc/kp/config.json');
    assert.equal(o.healthAddress, ':8080');
    assert.equal(o.metricsAddress, ':8080', 'metrics default to the health address');
    assert.equal(o.logLevel, 'info');
    assert.equal(o.kubeApiQps, 20);
    assert.equal(o.kubeApiBurst, 30);
    assert.equal(o.kubeApiTimeoutMs, 30_000);
    // Every flag has the row's default, so the controller options the flags give resolve to the library defaults.
    assert.deepEqual(
      { ...resolveOptions(o.controller, {}), volumeNameHook: null },
      { ...DEFAULTS, volumeNameHook: null },
    );
    assert.deepEqual(
      o.controller.volumeSave,
      { mode: 'retry', retryCount: 5, intervalMs: 10_000 },
      "the mode's own rows only",
    );
    assert.equal(
      o.controller.leaderElection?.namespace,
      undefined,
      'left to resolveOptions ($POD_NAMESPACE, service account, default)',
    );
  });

  it("nfs-subdir's environment: NFS_SERVER and NFS_PATH replace a configuration; both or neither; --other-node-claims", () => {
    const o = parseRunHostPathArgs([], {
      NFS_SERVER: '10.3.243.101',
      NFS_PATH: '/ifs/kubernetes',
      PROVISIONER_NAME: 'k8s-sigs.io/nfs-subdir-external-provisioner',
    });
    assert.deepEqual(o.nfs, { server: '10.3.243.101', path: '/ifs/kubernetes' });
    assert.equal(o.nfsMountPath, '/persistentvolumes');
    assert.equal(o.configFile, undefined);
    assert.equal(o.provisionerName, 'k8s-sigs.io/nfs-subdir-external-provisioner');
    assert.equal(o.otherNodeClaims, 'refuse');
    assert.equal(
      parseRunHostPathArgs([
        '--nfs-server',
        's',
        '--nfs-path',
        '/e',
        '--config',
        'c.json',
        '--other-node-claims',
        'ignore',
      ]).otherNodeClaims,
      'ignore',
    );
    const refused: Array<[string[], Record<string, string>, string]> = [
      [['--nfs-server', 's'], {}, '--nfs-path'],
      [[], { NFS_PATH: '/e' }, '--nfs-server'],
      [['--nfs-server', 's', '--nfs-path', 'relative'], {}, '--nfs-server'],
      [['--nfs-server', 's', '--nfs-path', '/e', '--nfs-mount-path', '/'], {}, '--nfs-mount-path'],
      [[], {}, '--config'],
    ];
    for (const [args, env, flag] of refused) {
      assert.throws(
        () => parseRunHostPathArgs(args, env),
        (e: unknown) => e instanceof CliOptionError && e.flag === flag,
        `${args.join(' ')} ${JSON.stringify(env)}`,
      );
    }
  });

  it('every controller option row with a flag is a flag of run hostpath, at its path', () => {
    const rows = flatRows(CONTROLLER_OPTIONS);
    assert.ok(rows.length >= 30, `${rows.length} rows`);
    const withFlag = rows.filter((r) => r.row.flag);
    assert.deepEqual(
      withFlag.map((r) => r.path),
      controllerFlagRows().map((r) => r.path),
    );
    // A row's help is optional (StorageClass parameters have no --help), but a flag without it would show blank.
    assert.deepEqual(
      withFlag.filter((r) => !r.row.help).map((r) => r.path),
      [],
      'every flag row has its --help line',
    );
    // Rows without a flag are library-only by design (a hook, the background save queue's delays).
    assert.deepEqual(
      rows.filter((r) => !r.row.flag).map((r) => r.path),
      ['volumeSave.baseDelayMs', 'volumeSave.maxDelayMs', 'volumeNameHook'],
    );
  });

  it('every flag is read; environment variables fill what the command line leaves out', () => {
    const o = parseRunHostPathArgs(
      [
        '--config-map',
        'kp/cfg',
        '--config-key',
        'shared.json',
        '--mode',
        'daemonset',
        '--worker-threads',
        '8',
        '--resync-period',
        '1m30s',
        '--failed-provision-threshold',
        '0',
        '--leader-election',
        'per-claim',
        '--lease-duration',
        '20s',
        '--renew-deadline',
        '15s',
        '--retry-period',
        '3s',
        '--exponential-backoff=false',
        '--volume-save',
        'background',
        '--additional-provisioner-names',
        'a.io/x, b.io/y',
        '--add-finalizer',
        '--leak-inventory',
        '--delete-leaked',
        '--health-address',
        '127.0.0.1:0',
        '--metrics-address',
        'off',
        '--kube-api-qps',
        '0',
        '--provision-timeout',
        '2m',
      ],
      {
        NODE_NAME: 'node-7',
        PROVISIONER_NAME: 'example.com/hp',
        KUBE_PROVISIONER_LOG_LEVEL: 'debug',
        KUBE_PROVISIONER_WORKER_THREADS: '99',
      },
    );
    assert.equal(o.nodeName, 'node-7');
    assert.equal(o.provisionerName, 'example.com/hp');
    assert.equal(o.logLevel, 'debug');
    assert.equal(o.controller.threadiness, 8, 'the flag wins over the environment');
    assert.deepEqual(o.configMap, { namespace: 'kp', name: 'cfg', key: 'shared.json' });
    assert.equal(o.mode, 'daemonset');
    assert.equal(o.controller.resyncPeriodMs, 90_000);
    assert.equal(o.controller.retry?.failedProvisionThreshold, 0);
    assert.equal(o.controller.leaderElection?.mode, 'per-claim');
    assert.equal(o.controller.leaderElection?.leaseDurationMs, 20_000);
    assert.equal(o.controller.retry?.exponentialBackoff, false);
    assert.deepEqual(o.controller.volumeSave, { mode: 'background' });
    assert.deepEqual(o.controller.additionalProvisionerNames, ['a.io/x', 'b.io/y']);
    assert.equal(o.controller.addFinalizer, true);
    assert.deepEqual(o.controller.leakInventory, {
      enabled: true,
      intervalMs: 600_000,
      gracePeriodMs: 3_600_000,
      deleteLeaked: true,
    });
    assert.equal(o.healthAddress, '127.0.0.1:0');
    assert.equal(o.metricsAddress, undefined);
    assert.equal(o.kubeApiQps, 0);
    assert.equal(o.controller.provisionTimeoutMs, 120_000);
  });

  it('switches take an optional value, so FOO=false in the environment means false', () => {
    const fromEnv = parseRunHostPathArgs(['--config', 'a'], {
      KUBE_PROVISIONER_ADD_FINALIZER: 'false',
      KUBE_PROVISIONER_LEAK_INVENTORY: 'true',
      KUBE_PROVISIONER_EXPONENTIAL_BACKOFF: 'no',
    });
    assert.equal(fromEnv.controller.addFinalizer, false);
    assert.equal(fromEnv.controller.leakInventory?.enabled, true);
    assert.equal(fromEnv.controller.retry?.exponentialBackoff, false);
    const fromFlags = parseRunHostPathArgs(['--add-finalizer', '--config', 'a', '--leak-inventory=false'], {
      KUBE_PROVISIONER_LEAK_INVENTORY: 'true',
    });
    assert.equal(fromFlags.controller.addFinalizer, true);
    assert.equal(fromFlags.controller.leakInventory?.enabled, false, 'the flag wins');
    assert.throws(() => parseRunHostPathArgs(['--config', 'a'], { KUBE_PROVISIONER_ADD_FINALIZER: 'maybe' }));
  });

  it('refuses contradictory or incomplete combinations', () => {
    assert.throws(
      () => parseRunHostPathArgs([]),
      (e: unknown) => e instanceof CliOptionError && e.flag === '--config',
    );
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--config-map', 'b/c']), CliOptionError);
    assert.throws(
      () => parseRunHostPathArgs(['--config', 'a', '--mode', 'daemonset']),
      (e: unknown) => e instanceof CliOptionError && e.flag === '--node-name',
    );
    assert.throws(
      () => parseRunHostPathArgs(['--config', 'a', '--provisioner-name', 'kubernetes.io/x']),
      ConfigurationError,
    );
    // commander's own per-flag checks
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--mode', 'sometimes']));
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--worker-threads', '0']));
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--resync-period', '15']));
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--health-address', 'localhost']));
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--no-such-flag']));
  });

  it("checks each flag against its row: bounds of durations (a timer's limit too), and a mode's flags under another mode", () => {
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--provision-timeout', '600h']), /2147483647/);
    assert.throws(() => parseRunHostPathArgs(['--config', 'a', '--lease-duration', '0']), /lease-duration/);
    for (const flag of ['--kube-api-timeout', '--volume-usage-interval'])
      assert.throws(() => parseRunHostPathArgs(['--config', 'a', flag, '600h']), /2147483647/, flag);
    assert.equal(
      parseRunHostPathArgs(['--config', 'a', '--leak-inventory-grace-period', '2000h']).controller.leakInventory
        ?.gracePeriodMs,
      2000 * 3_600_000,
    );
    assert.throws(
      () => parseRunHostPathArgs(['--config', 'a', '--volume-save', 'background', '--volume-save-retries', '3']),
      (e: unknown) => e instanceof CliOptionError && e.flag === '--volume-save-retries' && /background/.test(e.message),
    );
    assert.throws(
      () =>
        parseRunHostPathArgs(['--config', 'a', '--volume-save', 'background'], {
          KUBE_PROVISIONER_VOLUME_SAVE_INTERVAL: '1s',
        }),
      (e: unknown) => e instanceof CliOptionError && e.flag === '--volume-save-interval',
    );
    // The mode's own defaults are not "given": background alone is fine, and retry takes its flags.
    assert.deepEqual(parseRunHostPathArgs(['--config', 'a', '--volume-save', 'background']).controller.volumeSave, {
      mode: 'background',
    });
    assert.deepEqual(parseRunHostPathArgs(['--config', 'a', '--volume-save-retries', '2']).controller.volumeSave, {
      mode: 'retry',
      retryCount: 2,
      intervalMs: 10_000,
    });
  });

  it('durations, ConfigMap references and env names', () => {
    assert.equal(parseDuration('250ms'), 250);
    assert.equal(parseDuration('1h2m3s'), 3_723_000);
    assert.equal(parseDuration('1.5s'), 1500);
    assert.equal(parseDuration('0'), 0);
    for (const bad of ['', '15', 's', '1d', '1s junk', '-1s']) assert.throws(() => parseDuration(bad), bad);
    assert.deepEqual(parseConfigMapRef('cfg', 'config.json', { POD_NAMESPACE: 'kp' }), {
      namespace: 'kp',
      name: 'cfg',
      key: 'config.json',
    });
    assert.deepEqual(parseConfigMapRef('cfg', 'config.json', {}), {
      namespace: 'default',
      name: 'cfg',
      key: 'config.json',
    });
    assert.throws(() => parseConfigMapRef('a/b/c', 'k', {}), CliOptionError);
    assert.throws(() => parseConfigMapRef('a/b', 'bad key', {}), CliOptionError);
    assert.equal(envName('worker-threads'), 'KUBE_PROVISIONER_WORKER_THREADS');
  });
});
