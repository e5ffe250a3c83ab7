// Admission that an attacker without a token cannot turn against legitimate clients: one process holds 1,000
// token-less connections (idle TCP, half a TLS record, slow headers) and re-opens each as soon as it is closed,
// while fresh authenticated clients keep connecting. The header and handshake timeouts are set far beyond the
// test's length, so a legitimate request that succeeds was admitted at once (by evicting an attacker's connection),
// never after waiting for one to time out.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import { waitFor } from '../support/wait.ts';
import { call, closedFlag, type Endpoint } from './raw-http.ts';

const ATTACKER = new URL('./lockout-attacker.ts', import.meta.url).pathname;
const ATTACK_CONNECTIONS = 1000;
const FRESH_REQUESTS = 200;
const CONCURRENCY = 4;

interface AttackCounts {
  opened: number;
  closed: number;
  open: number;
}

interface Measured {
  ok: number;
  failures: string[];
  /** Milliseconds per request, sorted. */
  latencies: number[];
}

/** FRESH_REQUESTS GETs, CONCURRENCY at a time, each on a fresh connection. */
async function freshRequests(e: Endpoint): Promise<Measured> {
  let next = 0;
  let ok = 0;
  const failures: string[] = [];
  const latencies: number[] = [];
  const worker = async () => {
    while (next < FRESH_REQUESTS) {
      next++;
      const started = performance.now();
      try {
        const res = await call(e, 'GET', '/api/v1/namespaces/default/configmaps');
        if (res.status === 200) ok++;
        else failures.push(`status ${res.status}`);
      } catch (err) {
        failures.push((err as Error).message);
      }
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  latencies.sort((a, b) => a - b);
  return { ok, failures, latencies };
}

describe('admission under a token-less connection flood', () => {
  let c: EmbeddedCluster;
  let attacker: ChildProcess;
  let counts: AttackCounts = { opened: 0, closed: 0, open: 0 };
  let baseline: Measured;
  before(async () => {
    // No attacker connection times out while the test runs: admission must not depend on it.
    c = await startEmbeddedCluster({
      controllers: false,
      limits: { headersTimeoutMs: 600_000, requestTimeoutMs: 600_000 },
    });
    // The same requests before the attack: how fast this machine answers them right now.
    baseline = await freshRequests({ url: c.url, token: c.token, caPem: c.caPem });
    const { hostname, port } = new URL(c.url);
    attacker = spawn(process.execPath, ['--import', 'tsx', ATTACKER, hostname, port, String(ATTACK_CONNECTIONS)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let pending = '';
    attacker.stdout?.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      const last = lines.filter((l) => l.trim()).pop();
      if (last) counts = JSON.parse(last) as AttackCounts;
    });
  });
  after(async () => {
    if (attacker.exitCode === null) {
      const exited = new Promise((r) => attacker.once('exit', r));
      attacker.kill('SIGTERM');
      await exited;
    }
    await c.stop();
  });

  it(`>= 99% of ${FRESH_REQUESTS} fresh authenticated requests succeed while ${ATTACK_CONNECTIONS} token-less connections churn`, async (t) => {
    const e: Endpoint = { url: c.url, token: c.token, caPem: c.caPem };
    // The attack is at full strength: every connection opened, the server at its cap and closing the attacker's.
    await waitFor(
      'the attacker to hold its connections and the server to push back',
      () => counts.opened >= ATTACK_CONNECTIONS && counts.closed >= ATTACK_CONNECTIONS,
      60_000,
    );
    const before = counts;
    const evictedBefore = c.server.stats().evictedConnections;
    const { ok, failures, latencies } = await freshRequests(e);
    const during = { opened: counts.opened - before.opened, closed: counts.closed - before.closed };
    t.diagnostic(
      `succeeded ${ok}/${FRESH_REQUESTS}; attacker connections opened ${during.opened}, closed by the server ${during.closed} meanwhile`,
    );
    t.diagnostic(
      `latency ms: median ${latencies[latencies.length >> 1]?.toFixed(0)}, p99 ${latencies[Math.floor(latencies.length * 0.99)]?.toFixed(0)}, max ${latencies[latencies.length - 1]?.toFixed(0)}`,
    );
    assert.equal(ok + failures.length, FRESH_REQUESTS, 'every request completed');
    assert.ok(
      ok >= FRESH_REQUESTS * 0.99,
      `only ${ok}/${FRESH_REQUESTS} succeeded: ${failures.slice(0, 5).join('; ')}`,
    );
    // Answered within 1 s, counted against the same requests just before the attack: a busy 2-core machine slows
    // both alike, while the old admission failed them outright or left them to TCP's 1 s / 3 s retransmission.
    // Generous, since the attacker process competes for the same two cores: a quarter of the requests more past
    // 1 s than without the attack (measured under npm test at load ~20: 158-200 of 200 within 1 s).
    const withinOneSecond = latencies.filter((ms) => ms <= 1000).length;
    const baselineWithin = baseline.latencies.filter((ms) => ms <= 1000).length;
    t.diagnostic(
      `answered within 1 s: ${withinOneSecond}/${FRESH_REQUESTS} under the attack, ${baselineWithin}/${FRESH_REQUESTS} before it`,
    );
    assert.ok(
      withinOneSecond >= Math.min(FRESH_REQUESTS * 0.9, baselineWithin - FRESH_REQUESTS * 0.25),
      `only ${withinOneSecond}/${FRESH_REQUESTS} answered within 1 s (${baselineWithin} without the attack)`,
    );
    // The attack kept going during the measurement: the server evicted the attacker's connections, not ours.
    assert.ok(c.server.stats().evictedConnections > evictedBefore, 'the attacker was still being pushed back');
    assert.ok(c.server.stats().unauthenticatedConnections <= 256);
  });
});

describe('the unauthenticated share of a source address', () => {
  let c: EmbeddedCluster;
  before(async () => {
    c = await startEmbeddedCluster({ controllers: false, limits: { maxUnauthenticatedConnections: 4 } });
  });
  after(() => c.stop());

  it('past the cap, the oldest connection of the address holding the most is closed, not the newest', async () => {
    const { port } = new URL(c.url);
    // Every 127.0.0.0/8 address is loopback on Linux: two clients with two source addresses.
    const open = (localAddress: string) =>
      new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ host: '127.0.0.1', port: Number(port), localAddress }, () => resolve(s));
        s.once('error', reject);
      });
    const heavy: Array<{ socket: net.Socket; closed: () => boolean }> = [];
    const track = async (localAddress: string) => {
      const socket = await open(localAddress);
      return { socket, closed: closedFlag(socket) };
    };
    for (let i = 0; i < 4; i++) heavy.push(await track('127.0.0.2'));
    await waitFor('four unauthenticated connections', () => c.server.stats().unauthenticatedConnections === 4);
    const light = await track('127.0.0.3');
    await waitFor("the heavy address's oldest to be closed", () => heavy[0]!.closed());
    for (let i = 0; i < 3; i++) {
      heavy.push(await track('127.0.0.2'));
      await waitFor('the cap to hold', () => c.server.stats().unauthenticatedConnections <= 4);
    }
    await waitFor('the heavy address to have paid for its own connections', () =>
      heavy.slice(0, 4).every((h) => h.closed()),
    );
    assert.equal(light.closed(), false, 'the other address keeps its connection');
    assert.deepEqual(
      heavy.slice(4).map((h) => h.closed()),
      [false, false, false],
      'the newest connections are kept',
    );
    for (const h of [light, ...heavy]) h.socket.destroy();
  });
});
