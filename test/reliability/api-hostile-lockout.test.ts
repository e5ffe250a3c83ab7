// Admission that an attacker without a token cannot turn against legitimate clients: one process holds 1,000
// token-less connections (idle TCP, half a TLS record, slow headers, a replayed complete ClientHello that never
// answers the server's flight) and re-opens each as soon as it is closed, while fresh authenticated clients keep
// connecting. The header and handshake timeouts are set far beyond the test's length, so a legitimate request that
// succeeds was admitted at once, never after waiting for an attacker's connection to time out.
//
// What made legitimate clients slow (issue 20 #7): past the unauthenticated cap each new connection closed the
// attacker's oldest, the attacker re-opened it at once, and the ~750 connections it kept beyond the cap queued in
// the listen backlog ahead of every legitimate connection; a re-opened slow-headers or ClientHello connection also
// cost the server a TLS key exchange. The legitimate TLS handshake waited 1-4.6 s. The default cap now holds such
// an attacker's connections (they cost 4-18 KB each) instead of churning them; the second suite keeps a small cap
// to show that churn past it still lets legitimate clients through.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startEmbeddedCluster, type EmbeddedCluster } from '../../src/cluster/embedded-cluster.ts';
import type { ServerLimits } from '../../src/cluster/http/request-limits.ts';
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
  ready: number;
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

const overOneSecond = (m: Measured) => m.latencies.filter((ms) => ms > 1000).length;

/**
 * A cluster, the same requests measured before the attack (unless told not to), and the attacker process with its
 * reported counts.
 */
function underAttack(limits: Partial<ServerLimits>, kinds: string, opts: { baseline: boolean } = { baseline: true }) {
  const state = {
    c: undefined as unknown as EmbeddedCluster,
    baseline: undefined as unknown as Measured,
    counts: { opened: 0, closed: 0, open: 0, ready: 0 } as AttackCounts,
  };
  let attacker: ChildProcess | undefined;
  before(async () => {
    // No attacker connection times out while the test runs: admission must not depend on it.
    state.c = await startEmbeddedCluster({
      controllers: false,
      limits: { headersTimeoutMs: 600_000, requestTimeoutMs: 600_000, ...limits },
    });
    const { c } = state;
    // The same requests before the attack: how fast this machine answers them right now.
    if (opts.baseline) state.baseline = await freshRequests({ url: c.url, token: c.token, caPem: c.caPem });
    const { hostname, port } = new URL(c.url);
    attacker = spawn(
      process.execPath,
      ['--import', 'tsx', ATTACKER, hostname, port, String(ATTACK_CONNECTIONS), kinds],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let pending = '';
    attacker.stdout?.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      const last = lines.filter((l) => l.trim()).pop();
      if (last) state.counts = JSON.parse(last) as AttackCounts;
    });
  });
  after(async () => {
    if (attacker && attacker.exitCode === null) {
      const exited = new Promise((r) => attacker!.once('exit', r));
      attacker.kill('SIGTERM');
      await exited;
    }
    await state.c?.stop();
  });
  return state;
}

describe('admission under a token-less connection flood, default limits', () => {
  const s = underAttack({}, 'idle,half-hello,slow-headers,hello');

  it(`>= 99% of ${FRESH_REQUESTS} fresh authenticated requests succeed, each within 1 s, while ${ATTACK_CONNECTIONS} token-less connections are held and re-opened`, async (t) => {
    const { c } = s;
    const e: Endpoint = { url: c.url, token: c.token, caPem: c.caPem };
    // The attack is at full strength: every connection in its holding state (handshakes done), or the server
    // closing the attacker's connections as fast as they come back.
    await waitFor(
      'the attacker to hold its connections',
      () =>
        s.counts.ready >= ATTACK_CONNECTIONS ||
        (s.counts.opened >= ATTACK_CONNECTIONS && s.counts.closed >= ATTACK_CONNECTIONS),
      60_000,
    );
    const before = s.counts;
    const { ok, failures, latencies } = await freshRequests(e);
    const during = { opened: s.counts.opened - before.opened, closed: s.counts.closed - before.closed };
    t.diagnostic(
      `succeeded ${ok}/${FRESH_REQUESTS}; attacker connections opened ${during.opened}, closed by the server ${during.closed} meanwhile`,
    );
    t.diagnostic(
      `latency ms: median ${latencies[latencies.length >> 1]?.toFixed(0)}, p99 ${latencies[Math.floor(latencies.length * 0.99)]?.toFixed(0)}, max ${latencies[latencies.length - 1]?.toFixed(0)}; without the attack: median ${s.baseline.latencies[s.baseline.latencies.length >> 1]?.toFixed(0)}, max ${s.baseline.latencies[s.baseline.latencies.length - 1]?.toFixed(0)}`,
    );
    assert.equal(ok + failures.length, FRESH_REQUESTS, 'every request completed');
    assert.ok(
      ok >= FRESH_REQUESTS * 0.99,
      `only ${ok}/${FRESH_REQUESTS} succeeded: ${failures.slice(0, 5).join('; ')}`,
    );
    // Each answered within 1 s. A 2-core machine busy with other work can starve any request past 1 s, attack
    // or not: the requests measured just before the attack say how many it did, and the attack may add at most
    // 1% to that. Before the fix the attack alone put 9-200 of 200 past 1 s (p99 2-4.7 s).
    const slow = overOneSecond({ ok, failures, latencies });
    const slowWithout = overOneSecond(s.baseline);
    t.diagnostic(`past 1 s: ${slow}/${FRESH_REQUESTS} under the attack, ${slowWithout}/${FRESH_REQUESTS} before it`);
    assert.ok(
      slow <= slowWithout + FRESH_REQUESTS * 0.01,
      `${slow}/${FRESH_REQUESTS} took longer than 1 s (${slowWithout} without the attack): max ${latencies[latencies.length - 1]?.toFixed(0)} ms`,
    );
    // Nothing closed the attacker's connections: held, they cost memory, not a re-opened handshake each.
    assert.ok(c.server.stats().unauthenticatedConnections >= ATTACK_CONNECTIONS, 'the attack is held');
  });
});

describe('admission under a token-less connection flood past the unauthenticated cap', () => {
  const CAP = 256;
  const s = underAttack({ maxUnauthenticatedConnections: CAP }, 'idle,half-hello,slow-headers');

  it(`>= 99% of ${FRESH_REQUESTS} fresh authenticated requests succeed while ${ATTACK_CONNECTIONS} token-less connections churn through a cap of ${CAP}`, async (t) => {
    const { c, baseline } = s;
    const e: Endpoint = { url: c.url, token: c.token, caPem: c.caPem };
    // The attack is at full strength: every connection opened, the server at its cap and closing the attacker's.
    await waitFor(
      'the attacker to hold its connections and the server to push back',
      () => s.counts.opened >= ATTACK_CONNECTIONS && s.counts.closed >= ATTACK_CONNECTIONS,
      60_000,
    );
    const before = s.counts;
    const evictedBefore = c.server.stats().evictedConnections;
    const { ok, failures, latencies } = await freshRequests(e);
    const during = { opened: s.counts.opened - before.opened, closed: s.counts.closed - before.closed };
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
    // Churn queues the attacker's re-opened connections in the listen backlog ahead of ours, so past the cap the
    // latency is relative: a quarter of the requests more past 1 s than without the attack (measured under npm
    // test at load ~20: 158-200 of 200 within 1 s).
    const withinOneSecond = FRESH_REQUESTS - overOneSecond({ ok, failures, latencies });
    const baselineWithin = FRESH_REQUESTS - overOneSecond(baseline);
    t.diagnostic(
      `answered within 1 s: ${withinOneSecond}/${FRESH_REQUESTS} under the attack, ${baselineWithin}/${FRESH_REQUESTS} before it`,
    );
    assert.ok(
      withinOneSecond >= Math.min(FRESH_REQUESTS * 0.9, baselineWithin - FRESH_REQUESTS * 0.25),
      `only ${withinOneSecond}/${FRESH_REQUESTS} answered within 1 s (${baselineWithin} without the attack)`,
    );
    // The attack kept going during the measurement: the server evicted the attacker's connections, not ours.
    assert.ok(c.server.stats().evictedConnections > evictedBefore, 'the attacker was still being pushed back');
    // The cap holds in each stage: before the ClientHello, and past it.
    assert.ok(c.server.stats().unauthenticatedConnections <= 2 * CAP);
  });
});

describe('eviction past the cap spares connections whose TLS handshake the server already paid for', () => {
  const CAP = 256;
  const HELLOS = 200;
  const IDLE = 800;
  // 200 connections that sent a complete ClientHello (each cost the server a key exchange) and 800 idle ones
  // that sent nothing, against a cap of 256: the churn must come from the idle ones.
  const s = underAttack(
    { maxUnauthenticatedConnections: CAP },
    [...Array<string>(HELLOS).fill('hello'), ...Array<string>(IDLE).fill('idle')].join(','),
    { baseline: false },
  );

  it('the re-opened connections are the idle ones: no key exchange is paid again while the attack churns', async (t) => {
    const { c } = s;
    const e: Endpoint = { url: c.url, token: c.token, caPem: c.caPem };
    await waitFor(
      'the attacker to be pushed back',
      () => s.counts.opened >= ATTACK_CONNECTIONS && c.server.stats().evictedConnections >= ATTACK_CONNECTIONS * 2,
      60_000,
    );
    const handshakesBefore = c.server.stats().tlsHandshakes;
    const evictedBefore = c.server.stats().evictedConnections;
    const { ok, failures } = await freshRequests(e);
    const handshakes = c.server.stats().tlsHandshakes - handshakesBefore;
    const evicted = c.server.stats().evictedConnections - evictedBefore;
    t.diagnostic(
      `fresh requests ${ok}/${FRESH_REQUESTS} ok; meanwhile ${evicted} evictions, ${handshakes} TLS handshakes`,
    );
    assert.ok(
      ok >= FRESH_REQUESTS * 0.99,
      `only ${ok}/${FRESH_REQUESTS} succeeded: ${failures.slice(0, 5).join('; ')}`,
    );
    assert.ok(evicted >= FRESH_REQUESTS, 'the attack churned during the measurement');
    // One handshake per fresh request and none for the attacker: its ClientHello connections stay held while the
    // idle ones take the evictions (one cap for all re-opened a fifth of them: 5,517 handshakes in 27,180
    // evictions).
    assert.ok(
      handshakes <= FRESH_REQUESTS * 1.05,
      `${handshakes} handshakes for ${FRESH_REQUESTS} fresh requests during ${evicted} evictions`,
    );
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
