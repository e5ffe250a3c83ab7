// Benchmark of the embedded API server (issue 2): creates/s with 1 and 10 open watches (memory and SQLite),
// list of 10,000 PVs, watch latency to 10 watchers, RSS holding 10k PVs + 10k PVCs.
// The server runs in this process; the load generator runs in a child process over HTTPS with keep-alive.
//   node --import tsx bench/cluster.ts            (all scenarios, prints a markdown table)
//   node --import tsx bench/cluster.ts --quick    (fewer objects)
//   node --import tsx bench/cluster.ts --only pipelined   (scenarios whose label contains the text)
import { fork } from 'node:child_process';
import { Agent, request } from 'node:https';
import { connect } from 'node:tls';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEmbeddedCluster } from '../src/cluster/embedded-cluster.ts';

interface ClientTask {
  url: string;
  token: string;
  caPem: string;
  op: 'creates' | 'pipelined' | 'list' | 'latency' | 'fill';
  count: number;
  concurrency: number;
  watchers: number;
  prefix: string;
}

// ---------------- client (child process) ----------------

function pv(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` }, storageClassName: 'bench' },
  });
}

function pvc(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'bench' },
  });
}

function call(t: ClientTask, agent: Agent, method: string, path: string, body?: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${t.token}`, 'user-agent': 'bench' };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request(new URL(path, t.url), { method, headers, agent, ca: t.caPem }, (res) => {
      let bytes = 0;
      res.on('data', (d: Buffer) => (bytes += d.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Opens `n` watches on PVs; calls onEvent(name, arrivalMs) per ADDED event. */
function openWatches(t: ClientTask, n: number, onEvent: (name: string, at: number) => void): Array<() => void> {
  const closers: Array<() => void> = [];
  for (let i = 0; i < n; i++) {
    const req = request(
      new URL('/api/v1/persistentvolumes?watch=true&resourceVersion=0', t.url),
      { headers: { authorization: `Bearer ${t.token}` }, ca: t.caPem, agent: false },
      (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            const m = /"name":"([^"]+)"/.exec(line);
            if (m && line.startsWith('{"type":"ADDED"')) onEvent(m[1], performance.now());
          }
        });
      },
    );
    req.on('error', () => {});
    req.end();
    closers.push(() => req.destroy());
  }
  return closers;
}

/**
 * Creates over `connections` keep-alive TLS connections with up to `depth` pipelined requests each: measures the
 * server with a client that costs almost nothing (every response carries Content-Length).
 */
async function pipelinedCreates(t: ClientTask, connections: number, depth: number): Promise<number> {
  const url = new URL(t.url);
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: connections }, () =>
      new Promise<void>((resolve, reject) => {
        const sock = connect({ host: url.hostname, port: Number(url.port), ca: t.caPem, servername: 'localhost' });
        let inFlight = 0;
        let buf: Buffer = Buffer.alloc(0);
        const send = () => {
          while (inFlight < depth && next < t.count) {
            const body = pv(`${t.prefix}-${next++}`);
            sock.write(
              `POST /api/v1/persistentvolumes HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${t.token}\r\n` +
                `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
            );
            inFlight++;
          }
          if (inFlight === 0) {
            sock.end();
            resolve();
          }
        };
        sock.on('secureConnect', send);
        sock.on('error', reject);
        sock.on('data', (d: Buffer) => {
          buf = buf.length ? Buffer.concat([buf, d]) : d;
          for (;;) {
            const headerEnd = buf.indexOf('\r\n\r\n');
            if (headerEnd < 0) break;
            const head = buf.subarray(0, headerEnd).toString('latin1');
            const len = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? '0');
            if (buf.length < headerEnd + 4 + len) break;
            if (!head.startsWith('HTTP/1.1 201')) return reject(new Error(`create failed: ${head.split('\r\n')[0]}`));
            buf = buf.subarray(headerEnd + 4 + len);
            inFlight--;
          }
          send();
        });
      }),
    ),
  );
  return performance.now() - start;
}

async function runClient(t: ClientTask): Promise<Record<string, number>> {
  const agent = new Agent({ keepAlive: true, maxSockets: t.concurrency });
  if (t.op === 'list') {
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const start = performance.now();
      const r = await call(t, agent, 'GET', '/api/v1/persistentvolumes');
      if (r.status !== 200) throw new Error(`list: ${r.status}`);
      times.push(performance.now() - start);
    }
    agent.destroy();
    return { listMedianMs: median(times) };
  }
  let received = 0;
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const closers = openWatches(t, t.watchers, (name, at) => {
    received++;
    const s = sentAt.get(name);
    if (s !== undefined) latencies.push(at - s);
  });
  await new Promise((r) => setTimeout(r, 300));
  if (t.op === 'pipelined') {
    const elapsedMs = await pipelinedCreates(t, 4, 16);
    const expectedEvents = t.watchers * t.count;
    const until = Date.now() + 10_000;
    while (received < expectedEvents && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    for (const c of closers) c();
    agent.destroy();
    return { createsPerSec: Math.round((t.count / elapsedMs) * 1000), eventsReceived: received, eventsExpected: expectedEvents };
  }
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= t.count) return;
      const name = `${t.prefix}-${i}`;
      if (t.op === 'latency') sentAt.set(name, performance.now());
      const r = t.op === 'fill' && i % 2 ? await call(t, agent, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', pvc(name)) : await call(t, agent, 'POST', '/api/v1/persistentvolumes', pv(name));
      if (r.status !== 201) throw new Error(`create ${name}: ${r.status}`);
    }
  };
  await Promise.all(Array.from({ length: t.op === 'latency' ? 1 : t.concurrency }, worker));
  const elapsed = performance.now() - start;
  const expected = t.watchers * (t.op === 'fill' ? Math.ceil(t.count / 2) : t.count);
  const deadline = Date.now() + 10_000;
  while (received < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  for (const c of closers) c();
  agent.destroy();
  const out: Record<string, number> = { createsPerSec: Math.round((t.count / elapsed) * 1000), eventsReceived: received, eventsExpected: expected };
  if (t.op === 'latency') {
    latencies.sort((a, b) => a - b);
    out.latencyP50Ms = latencies[Math.floor(latencies.length * 0.5)];
    out.latencyP99Ms = latencies[Math.floor(latencies.length * 0.99)];
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// ---------------- orchestrator (server process) ----------------

function runInChild(task: ClientTask): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const child = fork(new URL(import.meta.url).pathname, ['--client'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (m) => {
      const msg = m as { result?: Record<string, number>; error?: string };
      if (msg.error) reject(new Error(msg.error));
      else resolve(msg.result!);
      child.disconnect();
    });
    child.once('error', reject);
    child.send(task);
  });
}

/** `--only <text>` runs just the scenarios whose label contains the text. */
const onlyIndex = process.argv.indexOf('--only');
const only = onlyIndex > 0 ? process.argv[onlyIndex + 1] : undefined;

async function scenario(label: string, persistent: boolean, fn: (base: Omit<ClientTask, 'op' | 'count' | 'concurrency' | 'watchers' | 'prefix'>) => Promise<Record<string, number>>): Promise<[string, Record<string, number>]> {
  if (only && !label.includes(only)) return [label, {}];
  const dataDir = persistent ? await mkdtemp(join(tmpdir(), 'kp-bench-')) : undefined;
  const cluster = await startEmbeddedCluster({ dataDir, controllers: false });
  try {
    const result = await fn({ url: cluster.url, token: cluster.token, caPem: cluster.caPem! });
    return [label, result];
  } finally {
    await cluster.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const n = quick ? 1000 : 5000;
  const results: Array<[string, Record<string, number>]> = [];
  for (const persistent of [false, true]) {
    for (const watchers of [1, 10]) {
      for (const op of ['creates', 'pipelined'] as const) {
        const how = op === 'creates' ? 'https.Agent keep-alive, 16 in flight' : '4 connections x 16 pipelined';
        results.push(
          await scenario(`creates (${how}), ${watchers} watch(es), ${persistent ? 'SQLite' : 'memory'}`, persistent, (b) =>
            runInChild({ ...b, op, count: n, concurrency: 16, watchers, prefix: 'pv' }),
          ),
        );
      }
    }
  }
  results.push(
    await scenario('watch latency to 10 watchers (memory, sequential creates)', false, (b) =>
      runInChild({ ...b, op: 'latency', count: quick ? 300 : 1000, concurrency: 1, watchers: 10, prefix: 'lat' }),
    ),
  );
  results.push(
    await scenario('list of 10,000 PVs + RSS with 10k PV + 10k PVC (memory)', false, async (b) => {
      const total = quick ? 4000 : 20_000;
      await runInChild({ ...b, op: 'fill', count: total, concurrency: 16, watchers: 0, prefix: 'obj' });
      const list = await runInChild({ ...b, op: 'list', count: 0, concurrency: 1, watchers: 0, prefix: '' });
      const gc = (globalThis as { gc?: () => void }).gc;
      gc?.();
      return { ...list, rssMB: Math.round(process.memoryUsage().rss / 1e6), heapUsedMB: Math.round(process.memoryUsage().heapUsed / 1e6) };
    }),
  );
  console.log('| scenario | result |\n|---|---|');
  for (const [label, r] of results) if (Object.keys(r).length) console.log(`| ${label} | ${Object.entries(r).map(([k, v]) => `${k}=${v}`).join(', ')} |`);
}

if (process.argv.includes('--client')) {
  process.once('message', (task) => {
    runClient(task as ClientTask).then(
      (result) => process.send!({ result }),
      (err: unknown) => process.send!({ error: String(err instanceof Error ? err.stack : err) }),
    );
  });
} else {
  await main();
}
