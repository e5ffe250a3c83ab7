// LeaderElector: timing validation, MicroTime, one leader at a time among 2 and 3 candidates, immediate
// takeover after release, failover after a leader stops renewing, step-down on renew failures, health check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeClient } from '../../src/runtime/client.ts';
import {
  LeaderElectionConfigError,
  LeaderElector,
  validateLeaderElectionTimings,
  type LeaderElectorOptions,
} from '../../src/runtime/leader-election.ts';
import { leases } from '../../src/runtime/resources.ts';
import type { Lease } from '../../src/types/k8s.ts';
import { startCluster } from '../../src/testing/index.ts';
import { startFakeApi } from './fake-api.ts';
import { formatMicroTime } from '../../src/types/time.ts';
import { realClock, TestClock } from '../../src/runtime/clock.ts';
import { waitFor } from '../support/wait.ts';

/** Where the electors run: the in-test fake (exact control) or the embedded cluster (real Lease semantics). */
interface Backend {
  client: KubeClient;
  lease(): Promise<Lease>;
  /** Make every Lease update fail with 500 (true) or stop doing so (false). */
  failLeaseUpdates(on: boolean): void;
  /** Number of Lease updates served so far. */
  leaseUpdates(): number;
  /** Number of Lease reads (GET) served so far. */
  leaseReads(): number;
  close(): Promise<void>;
}

async function fakeBackend(): Promise<Backend> {
  const fake = await startFakeApi();
  const client = new KubeClient({ kubeConfig: fake.kubeConfig, qps: 0, retryBaseDelayMs: 1, maxRetries: 0 });
  return {
    client,
    lease: async () => fake.objects.get('leases/default/lock') as Lease,
    failLeaseUpdates: (on) => {
      fake.fault = on ? (method, path) => (method === 'PUT' && path.includes('/leases/') ? 500 : undefined) : undefined;
    },
    leaseUpdates: () => fake.requests.filter((r) => r.startsWith('PUT')).length,
    leaseReads: () => fake.requests.filter((r) => r.startsWith('GET') && r.includes('/leases/')).length,
    close: async () => {
      client.close();
      await fake.close();
    },
  };
}

async function clusterBackend(): Promise<Backend> {
  const cluster = await startCluster({ controllers: false });
  const client = new KubeClient({
    kubeConfig: cluster.kubeConfig,
    qps: 0,
    retryBaseDelayMs: 1,
    maxRetries: 0,
    userAgent: 'elector-test',
  });
  let rule: number | undefined;
  return {
    client,
    lease: () => client.get<Lease>(leases, 'lock', { namespace: 'default' }),
    failLeaseUpdates: (on) => {
      if (rule !== undefined) cluster.faults.remove(rule);
      rule = on ? cluster.faults.add({ verb: 'update', resource: 'leases', status: 500 }) : undefined;
    },
    leaseUpdates: () => cluster.audit.count({ client: 'elector-test', verb: 'update', resource: 'leases' }),
    leaseReads: () => cluster.audit.count({ client: 'elector-test', verb: 'get', resource: 'leases' }),
    close: async () => {
      client.close();
      await cluster.stop();
    },
  };
}

const backends: Array<[string, () => Promise<Backend>]> = [
  ['fake', fakeBackend],
  ['cluster', clusterBackend],
];

/** Polls until `cond` holds (bounded): the shared waitFor with this file's argument order. */
const until = async (cond: () => boolean, what: string, ms = 15_000): Promise<void> => {
  await waitFor(what, cond, ms, 5);
};

/** Every Campaign of the running test: stopped when the test ends, passed or failed, so no elector outlives it. */
const campaigns = new Set<Campaign>();

/** Candidates on one lease, with a monitor asserting that leadership intervals never overlap. */
class Campaign {
  readonly leaders = new Set<string>();
  readonly log: Array<{ id: string; what: 'start' | 'stop'; at: number }> = [];
  overlaps = 0;
  private readonly runs = new Map<string, { ac: AbortController; done: Promise<void>; elector: LeaderElector }>();

  constructor(
    private readonly client: KubeClient,
    private readonly base: Partial<LeaderElectorOptions>,
  ) {
    campaigns.add(this);
  }

  /** The electors' clock (a TestClock when the test passes one), so `log` times are on the same scale. */
  private now(): number {
    return (this.base.clock ?? realClock).now();
  }

  start(id: string, extra: Partial<LeaderElectorOptions> = {}): LeaderElector {
    const ac = new AbortController();
    const elector = new LeaderElector({
      client: this.client,
      namespace: 'default',
      name: 'lock',
      identity: id,
      ...this.base,
      ...extra,
      callbacks: {
        onStartedLeading: () => {
          if (this.leaders.size > 0) this.overlaps++;
          this.leaders.add(id);
          this.log.push({ id, what: 'start', at: this.now() });
        },
        onStoppedLeading: () => {
          this.leaders.delete(id);
          this.log.push({ id, what: 'stop', at: this.now() });
        },
      },
    });
    this.runs.set(id, { ac, done: elector.run(ac.signal), elector });
    return elector;
  }

  async stop(id: string): Promise<void> {
    const run = this.runs.get(id);
    run?.ac.abort();
    await run?.done;
    this.runs.delete(id);
  }

  leader(): string {
    assert.ok(this.leaders.size <= 1, `more than one leader: ${[...this.leaders]}`);
    return [...this.leaders][0] ?? '';
  }

  async stopAll(): Promise<void> {
    for (const id of [...this.runs.keys()]) await this.stop(id);
  }
}

async function withBackend(make: () => Promise<Backend>, fn: (b: Backend) => Promise<void>): Promise<void> {
  const backend = await make();
  try {
    await fn(backend);
  } finally {
    for (const c of campaigns) await c.stopAll();
    campaigns.clear();
    await backend.close();
  }
}

test('timings must satisfy leaseDuration > renewDeadline > 1.2 * retryPeriod', () => {
  assert.throws(() => validateLeaderElectionTimings(10_000, 10_000, 2_000), LeaderElectionConfigError);
  assert.throws(() => validateLeaderElectionTimings(15_000, 2_400, 2_000), LeaderElectionConfigError);
  assert.throws(() => validateLeaderElectionTimings(15_000, 10_000, 0), LeaderElectionConfigError);
  validateLeaderElectionTimings(15_000, 10_000, 2_000);
  assert.throws(
    () =>
      new LeaderElector({
        client: {} as KubeClient,
        namespace: 'd',
        name: 'l',
        identity: 'x',
        leaseDurationMs: 1000,
        renewDeadlineMs: 2000,
      }),
    LeaderElectionConfigError,
  );
});

test('MicroTime has exactly six fractional digits', () => {
  assert.equal(formatMicroTime(Date.UTC(2026, 0, 2, 3, 4, 5, 67)), '2026-01-02T03:04:05.067000Z');
});

for (const [where, make] of backends) {
  test(`[${where}] two then three candidates: exactly one leader; release on stop hands over at once`, () =>
    withBackend(make, async (b) => {
      // A long lease: if release did not work, the takeover below would wait 30 s and the test would time out.
      const c = new Campaign(b.client, { leaseDurationMs: 30_000, renewDeadlineMs: 1_000, retryPeriodMs: 100 });
      c.start('a');
      c.start('b');
      await until(() => c.leaders.size === 1, 'a leader');
      c.start('c');
      const first = c.leader();
      const lease1 = await b.lease();
      assert.equal(lease1.spec.holderIdentity, first);
      assert.equal(lease1.spec.leaseDurationSeconds, 30);
      assert.match(lease1.spec.renewTime ?? '', /\.\d{6}Z$/);
      // Several renew rounds with the standbys polling, counted at the server rather than slept through.
      const [updates, reads] = [b.leaseUpdates(), b.leaseReads()];
      await until(
        () => b.leaseUpdates() >= updates + 3 && b.leaseReads() >= reads + 4,
        'three renewals and four standby reads',
      );
      assert.equal(c.leader(), first, 'leadership is stable while renewed');
      await c.stop(first);
      await until(() => c.leaders.size === 1, 'a new leader after release', 10_000);
      const second = c.leader();
      assert.notEqual(second, first);
      const lease2 = await b.lease();
      assert.equal(lease2.spec.holderIdentity, second);
      assert.equal(lease2.spec.leaseTransitions, (lease1.spec.leaseTransitions ?? 0) + 1);
      await c.stop(second);
      await until(() => c.leaders.size === 1, 'the last candidate leads', 10_000);
      await c.stopAll();
      const released = await b.lease();
      assert.equal(released.spec.holderIdentity, '');
      assert.equal(released.spec.leaseDurationSeconds, 1);
      assert.equal(c.overlaps, 0);
    }));

  test(`[${where}] a leader that stops renewing is replaced after the lease duration, not before`, () =>
    withBackend(make, async (b) => {
      // Every elector runs on one TestClock, without jitter: time moves only in the retry-period steps below, so
      // "not before" and "not much after" are exact, whatever the machine's load.
      const clock = new TestClock();
      const timings = { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 200 };
      const c = new Campaign(b.client, { ...timings, releaseOnCancel: false, clock, random: () => 0 });
      c.start('a');
      await until(() => c.leader() === 'a' && clock.pending === 1, 'a leads and sleeps until its next renewal');
      c.start('b');
      c.start('c');
      await until(() => clock.pending === 3, 'b and c read the lease held by a and sleep');
      await c.stop('a'); // a crashed leader: no release
      const stoppedAt = clock.now();
      assert.equal(clock.pending, 2, 'only the standbys wait');
      while (c.leaders.size === 0 && clock.now() - stoppedAt < 2 * timings.leaseDurationMs) {
        await clock.advance(timings.retryPeriodMs);
        // Both standbys looked at the lease (and one may have taken it): everything waits on the clock again.
        await until(() => clock.pending === 2, `the standbys' round at +${clock.now() - stoppedAt} ms`);
        if (clock.now() - stoppedAt < timings.leaseDurationMs)
          assert.equal(c.leaders.size, 0, `no leader ${clock.now() - stoppedAt} ms after a stopped`);
      }
      const tookOver = c.log.find((e) => e.id !== 'a' && e.what === 'start')?.at ?? Infinity;
      // The standbys saw a's last renewal when a stopped: a full lease after that, at the first look past it.
      assert.ok(
        tookOver - stoppedAt >= timings.leaseDurationMs,
        `took over ${tookOver - stoppedAt} ms after a stopped`,
      );
      assert.ok(
        tookOver - stoppedAt <= timings.leaseDurationMs + timings.retryPeriodMs,
        `took over ${tookOver - stoppedAt} ms after a stopped`,
      );
      assert.equal(c.leaders.size, 1);
      assert.equal(c.overlaps, 0);
      await c.stopAll();
    }));

  test(`[${where}] renewals failing past the renew deadline make the leader step down; healthy() reports late renewals`, () =>
    withBackend(make, async (b) => {
      const c = new Campaign(b.client, { leaseDurationMs: 1_000, renewDeadlineMs: 700, retryPeriodMs: 100 });
      const elector = c.start('a');
      await until(() => c.leader() === 'a', 'a leads');
      assert.equal(elector.healthy(0), true);
      // Starve the event loop past leaseDuration: renewals are now late, and the health check must say so.
      const blockUntil = Date.now() + 1_200;
      while (Date.now() < blockUntil) {
        /* busy */
      }
      assert.equal(elector.healthy(0), false);
      assert.equal(elector.healthy(5_000), true, 'tolerance applies');
      b.failLeaseUpdates(true);
      await until(() => c.leaders.size === 0, 'a steps down', 10_000);
      assert.equal(elector.isLeader(), false);
      assert.equal(elector.healthy(0), true, 'a non-leader is healthy');
      b.failLeaseUpdates(false);
      await c.stopAll();
    }));
}

test('the elector has its own request budget: an exhausted worker bucket does not block renewals', () =>
  withBackend(fakeBackend, async (b) => {
    const workers = b.client.withOptions({ qps: 0.001, burst: 1 });
    await workers.get(leases, 'missing', { namespace: 'default' }).catch(() => {}); // uses the only token
    const c = new Campaign(workers, { leaseDurationMs: 1_000, renewDeadlineMs: 700, retryPeriodMs: 100 });
    c.start('a');
    await until(() => c.leader() === 'a', 'a leads');
    const before = b.leaseUpdates();
    // Two renewals, however slow the machine: through the exhausted bucket (one token per 1,000 s) there would be none.
    await until(() => b.leaseUpdates() >= before + 2, 'renewed twice');
    assert.equal(c.leader(), 'a');
    await c.stopAll();
  }));
