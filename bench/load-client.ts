// The load generator of the API server benchmarks, run as a child process (`--client`) so that its CPU is not the
// server's. It speaks plain HTTPS to whatever server it is given (the embedded cluster or the ceiling server) and
// measures from the client's side: creates/s, the time from a create request being written to its ADDED event
// arriving at each watcher (watch p50/p99), list time. Tasks arrive over IPC; the result goes back the same way.
import { fork } from 'node:child_process';
import { Agent, request } from 'node:https';
import { connect } from 'node:tls';

/** One load task. */
export interface LoadTask {
  url: string;
  token: string;
  caPem: string;
  /**
   * pipelined: PV creates over 4 keep-alive TLS connections x 16 pipelined requests (a client that costs almost
   * nothing, so the server is measured); creates: https.Agent keep-alive, `concurrency` in flight; latency: one
   * create at a time; list: 5 lists of PVs; fill: creates alternating PVs and PVCs (PVs only with `pvsOnly`).
   */
  op: 'pipelined' | 'creates' | 'latency' | 'list' | 'fill';
  count: number;
  concurrency: number;
  /** Watches on PVs opened (from the current resourceVersion) before the creates; each event's arrival is timed. */
  watchers: number;
  prefix: string;
  pvsOnly?: boolean;
}

/** What a task measured (absent figures were not measured by that op). */
export interface LoadResult {
  createsPerSec?: number;
  watchP50Ms?: number;
  watchP99Ms?: number;
  eventsReceived?: number;
  eventsExpected?: number;
  listMedianMs?: number;
  listBytes?: number;
}

export function pvBody(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      hostPath: { path: `/tmp/${name}` },
      storageClassName: 'bench',
    },
  });
}

function pvcBody(name: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: 'bench' },
  });
}

function call(
  t: LoadTask,
  agent: Agent,
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; bytes: number }> {
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

const NAME_FIELD = '"name":"';

/** The resourceVersion of the PV list now: watches start from it, so objects created earlier are not replayed. */
async function currentResourceVersion(t: LoadTask): Promise<string> {
  const agent = new Agent({ keepAlive: false });
  try {
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(
        new URL('/api/v1/persistentvolumes?limit=1', t.url),
        { headers: { authorization: `Bearer ${t.token}` }, ca: t.caPem, agent },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (text += d));
          res.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end();
    });
    return (JSON.parse(body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  } finally {
    agent.destroy();
  }
}

/** Opens `n` watches on PVs from the current resourceVersion; calls onAdded(name, arrivalMs) per ADDED event. */
async function openWatches(
  t: LoadTask,
  n: number,
  onAdded: (name: string, at: number) => void,
): Promise<Array<() => void>> {
  if (n === 0) return [];
  const rv = await currentResourceVersion(t);
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<() => void>((resolve, reject) => {
          const req = request(
            new URL(`/api/v1/persistentvolumes?watch=true&resourceVersion=${rv}`, t.url),
            { headers: { authorization: `Bearer ${t.token}` }, ca: t.caPem, agent: false },
            (res) => {
              let buf = '';
              res.setEncoding('utf8');
              res.on('data', (d: string) => {
                const at = performance.now();
                buf += d;
                let start = 0;
                for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n', start)) {
                  if (buf.startsWith('{"type":"ADDED"', start)) {
                    const i = buf.indexOf(NAME_FIELD, start) + NAME_FIELD.length;
                    onAdded(buf.slice(i, buf.indexOf('"', i)), at);
                  }
                  start = nl + 1;
                }
                buf = buf.slice(start);
              });
              resolve(() => req.destroy());
            },
          );
          req.on('error', reject);
          req.end();
        }),
    ),
  );
}

/** Creates over `connections` keep-alive TLS connections with up to `depth` pipelined requests each. */
async function pipelinedCreates(
  t: LoadTask,
  connections: number,
  depth: number,
  sentAt: Map<string, number>,
): Promise<number> {
  const url = new URL(t.url);
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from(
      { length: connections },
      () =>
        new Promise<void>((resolve, reject) => {
          const sock = connect({ host: url.hostname, port: Number(url.port), ca: t.caPem, servername: 'localhost' });
          let inFlight = 0;
          let buf: Buffer = Buffer.alloc(0);
          const send = () => {
            while (inFlight < depth && next < t.count) {
              const name = `${t.prefix}-${next++}`;
              const body = pvBody(name);
              sentAt.set(name, performance.now());
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

function percentileOf(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** Runs one task in this process. */
export async function runLoad(t: LoadTask): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: Math.max(1, t.concurrency) });
  try {
    if (t.op === 'list') {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < 5; i++) {
        const start = performance.now();
        const r = await call(t, agent, 'GET', '/api/v1/persistentvolumes');
        if (r.status !== 200) throw new Error(`list: ${r.status}`);
        times.push(performance.now() - start);
        bytes = r.bytes;
      }
      times.sort((a, b) => a - b);
      return { listMedianMs: round2(times[2]), listBytes: bytes };
    }
    let received = 0;
    const sentAt = new Map<string, number>();
    const latencies: number[] = [];
    const closers = await openWatches(t, t.watchers, (name, at) => {
      received++;
      const s = sentAt.get(name);
      if (s !== undefined) latencies.push(at - s);
    });
    const expected = t.watchers * (t.op === 'fill' && !t.pvsOnly ? Math.ceil(t.count / 2) : t.count);
    let elapsed: number;
    if (t.op === 'pipelined') {
      elapsed = await pipelinedCreates(t, 4, 16, sentAt);
    } else {
      let next = 0;
      const start = performance.now();
      const worker = async () => {
        for (;;) {
          const i = next++;
          if (i >= t.count) return;
          const name = `${t.prefix}-${i}`;
          sentAt.set(name, performance.now());
          const claim = t.op === 'fill' && !t.pvsOnly && i % 2 === 1;
          const r = claim
            ? await call(t, agent, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', pvcBody(name))
            : await call(t, agent, 'POST', '/api/v1/persistentvolumes', pvBody(name));
          if (r.status !== 201) throw new Error(`create ${name}: ${r.status}`);
        }
      };
      await Promise.all(Array.from({ length: t.op === 'latency' ? 1 : t.concurrency }, worker));
      elapsed = performance.now() - start;
    }
    const deadline = Date.now() + 20_000;
    while (received < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    for (const c of closers) c();
    latencies.sort((a, b) => a - b);
    const out: LoadResult = { createsPerSec: Math.round((t.count / elapsed) * 1000) };
    if (t.watchers > 0) {
      Object.assign(out, {
        watchP50Ms: round2(percentileOf(latencies, 0.5)),
        watchP99Ms: round2(percentileOf(latencies, 0.99)),
        eventsReceived: received,
        eventsExpected: expected,
      });
    }
    return out;
  } finally {
    agent.destroy();
  }
}

/** Runs a task in a fresh child process (this file with `--client`). */
export function runLoadInChild(task: LoadTask): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = fork(new URL(import.meta.url).pathname, ['--client'], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.once('message', (m) => {
      const msg = m as { result?: LoadResult; error?: string };
      if (msg.error) reject(new Error(msg.error));
      else resolve(msg.result!);
      child.disconnect();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code) reject(new Error(`load client exited with ${code}`));
    });
    child.send(task);
  });
}

if (process.argv.includes('--client')) {
  process.once('message', (task) => {
    runLoad(task as LoadTask).then(
      (result) => process.send!({ result }),
      (err: unknown) => process.send!({ error: String(err instanceof Error ? err.stack : err) }),
    );
  });
}
