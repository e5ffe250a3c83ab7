// provisionerConformance(): one suite any Provisioner runs to show it keeps the contract the controller relies
// on (idempotent provision, delete of a gone volume, IgnoredError/InfeasibleError, AbortSignal, the PV it
// returns). `exists` is required: without a look at the backend, a delete that does nothing would pass "delete
// removes the volume", so the suite refuses to run without it. The cases are a table run against every subject, as Hono runs one router suite against every
// router, so a new contract item (e.g. expansion) is one more row. Registers node:test suites by default; pass
// `runner` to use another describe/it (vitest, mocha).
import { randomUUID } from 'node:crypto';
import { deepStrictEqual, equal, ok, rejects } from 'node:assert/strict';
import { describe as nodeDescribe, it as nodeIt } from 'node:test';
import { IgnoredError, InfeasibleError, type Provisioner, type ProvisionOptions } from '../controller/provisioner.ts';
import type { AccessMode, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { parseQuantity } from '../types/quantity.ts';

/** One provisioner set up for the suite; `make` builds a fresh one per case. */
export interface ConformanceSubject {
  provisioner: Provisioner;
  /** The StorageClass the provisioner serves (its parameters and reclaimPolicy are passed to provision()). */
  storageClass: StorageClass;
  /** Added to every provision() call, e.g. `{ selectedNodeName }` for node-local backends. */
  options?: Partial<Pick<ProvisionOptions, 'selectedNodeName' | 'selectedNode'>>;
  /**
   * Whether the backend holds the volume (for a PV that was never returned, only `metadata.name` is set: the
   * pvName asked for). Required: it is how the suite checks that delete removed the volume, that a refused claim
   * created nothing and that an aborted delete left it in place; a subject without it fails every case.
   */
  exists(volume: PersistentVolume): Promise<boolean>;
}

/** One contract item, run against a fresh subject. A case whose `applies` is false is not registered. */
export interface ConformanceCase {
  name: string;
  applies?(suite: ConformanceSuiteOptions): boolean;
  run(s: ConformanceSubject, suite: ConformanceSuiteOptions): Promise<void>;
}

/** The describe/it pair the suite registers with (node:test's by default). */
export interface TestRunner {
  describe(name: string, fn: () => void): unknown;
  it(name: string, fn: () => Promise<void>): unknown;
}

/** Options of {@link provisionerConformance}. */
export interface ConformanceSuiteOptions {
  /** Suite title (default `provisioner conformance`). */
  name?: string;
  make(): ConformanceSubject | Promise<ConformanceSubject>;
  /** Called after every case with the subject it used (remove temp dirs, close clients). */
  cleanup?(s: ConformanceSubject): void | Promise<void>;
  runner?: TestRunner;
  /** Turns valid options into ones the subject must refuse with IgnoredError (e.g. another node); omit if none. */
  ignored?(s: ConformanceSubject, valid: ProvisionOptions): ProvisionOptions;
  /** Turns valid options into ones that can never succeed (InfeasibleError, e.g. an impossible size); omit if none. */
  infeasible?(s: ConformanceSubject, valid: ProvisionOptions): ProvisionOptions;
  /** Extra cases appended to CONFORMANCE_CASES (a backend's own contract items). */
  extraCases?: ConformanceCase[];
}

/** A claim for the suite: namespace `conformance`, a fresh uid, 1Gi ReadWriteOnce unless overridden. */
export function conformanceClaim(
  opts: { name?: string; storage?: string; accessModes?: AccessMode[]; className?: string } = {},
): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: opts.name ?? `claim-${randomUUID().slice(0, 8)}`, namespace: 'conformance', uid: randomUUID() },
    spec: {
      accessModes: opts.accessModes ?? ['ReadWriteOnce'],
      resources: { requests: { storage: opts.storage ?? '1Gi' } },
      storageClassName: opts.className,
    },
  };
}

/** Valid provision() options for a subject: a fresh claim of its class and `pvc-<uid>` as pvName. */
export function conformanceOptions(
  s: ConformanceSubject,
  claim = conformanceClaim({ className: s.storageClass.metadata.name }),
): ProvisionOptions {
  return { storageClass: s.storageClass, claim, pvName: `pvc-${claim.metadata.uid ?? randomUUID()}`, ...s.options };
}

const live = () => new AbortController().signal;

function aborted(): AbortSignal {
  const ac = new AbortController();
  ac.abort();
  return ac.signal;
}

/** The contract items every provisioner is checked against. */
export const CONFORMANCE_CASES: readonly ConformanceCase[] = [
  {
    name: 'the PV carries the capacity, access modes and reclaim policy the claim and class ask for',
    async run(s) {
      const o = conformanceOptions(
        s,
        conformanceClaim({ className: s.storageClass.metadata.name, storage: '1Gi', accessModes: ['ReadWriteOnce'] }),
      );
      const { volume } = await s.provisioner.provision(o, live());
      const capacity = volume.spec.capacity?.storage;
      ok(
        capacity !== undefined && parseQuantity(capacity) >= parseQuantity('1Gi'),
        `capacity ${String(capacity)} is at least the 1Gi asked`,
      );
      deepStrictEqual(volume.spec.accessModes, ['ReadWriteOnce']);
      const policy = volume.spec.persistentVolumeReclaimPolicy;
      // Unset is allowed: the controller then takes the class's.
      ok(
        policy === undefined || policy === (s.storageClass.reclaimPolicy ?? 'Delete'),
        `reclaim policy ${String(policy)} is the class's`,
      );
      await s.provisioner.delete(volume, live());
    },
  },
  {
    name: 'provision is idempotent for the same pvName',
    async run(s) {
      const o = conformanceOptions(s);
      const first = await s.provisioner.provision(o, live());
      const again = await s.provisioner.provision(o, live());
      deepStrictEqual(again.volume.spec, first.volume.spec, 'the same volume is described twice');
      await s.provisioner.delete(first.volume, live());
    },
  },
  {
    name: 'delete removes the volume, and deleting a volume that is already gone succeeds',
    async run(s) {
      const { volume } = await s.provisioner.provision(conformanceOptions(s), live());
      ok(await s.exists(volume), 'the volume exists after provision');
      await s.provisioner.delete(volume, live());
      equal(await s.exists(volume), false, 'the volume is gone after delete');
      await s.provisioner.delete(volume, live());
      equal(await s.exists(volume), false, 'the volume is still gone after the second delete');
    },
  },
  {
    name: 'a claim this instance must not serve is refused with IgnoredError, and nothing is created',
    applies: (suite) => suite.ignored !== undefined,
    async run(s, suite) {
      const o = (suite.ignored as NonNullable<typeof suite.ignored>)(s, conformanceOptions(s));
      await rejects(s.provisioner.provision(o, live()), (err: unknown) => err instanceof IgnoredError);
      equal(await s.exists({ metadata: { name: o.pvName }, spec: {} }), false, 'nothing was created');
    },
  },
  {
    name: 'a claim that can never be provisioned is refused with InfeasibleError',
    applies: (suite) => suite.infeasible !== undefined,
    async run(s, suite) {
      const o = (suite.infeasible as NonNullable<typeof suite.infeasible>)(s, conformanceOptions(s));
      await rejects(s.provisioner.provision(o, live()), (err: unknown) => err instanceof InfeasibleError);
    },
  },
  {
    name: 'an aborted signal stops provision and delete before they act',
    async run(s) {
      const o = conformanceOptions(s);
      await rejects(
        s.provisioner.provision(o, aborted()),
        (err: unknown) => err instanceof Error && err.name === 'AbortError',
      );
      equal(await s.exists({ metadata: { name: o.pvName }, spec: {} }), false, 'an aborted provision created nothing');
      const { volume } = await s.provisioner.provision(o, live());
      await rejects(
        s.provisioner.delete(volume, aborted()),
        (err: unknown) => err instanceof Error && err.name === 'AbortError',
      );
      ok(await s.exists(volume), 'an aborted delete left the volume in place');
      await s.provisioner.delete(volume, live());
    },
  },
];

/**
 * Registers the conformance suite: one test per contract item, each on a fresh subject from `make`, with
 * `cleanup` after it. Call it at the top level of a test file. A subject without `exists` fails every case.
 */
export function provisionerConformance(opts: ConformanceSuiteOptions): void {
  const runner: TestRunner = opts.runner ?? { describe: nodeDescribe, it: nodeIt };
  const cases = [...CONFORMANCE_CASES, ...(opts.extraCases ?? [])];
  runner.describe(opts.name ?? 'provisioner conformance', () => {
    for (const c of cases.filter((x) => !x.applies || x.applies(opts))) {
      runner.it(c.name, async () => {
        const subject = await opts.make();
        try {
          if (typeof (subject as Partial<ConformanceSubject>).exists !== 'function') {
            throw new TypeError(
              'provisionerConformance: the subject from make() has no exists(volume): the suite cannot check that delete ' +
                'removes the volume, that a refused claim creates nothing, or that an aborted delete leaves it in place',
            );
          }
          await c.run(subject, opts);
        } finally {
          await opts.cleanup?.(subject);
        }
      });
    }
  });
}
