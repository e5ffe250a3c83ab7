// `npm run bench:scale`: issue 21's targets as ratios measured in one run on this machine.
//  1. The ceiling (a bare Node HTTPS server: token, JSON, watch fan-out) and the embedded cluster side by side
//     (server-comparison.ts): PV creates/s with 10 watches (4 connections x 16 pipelined, and an https.Agent with
//     64 requests in flight, the client shape that drives dev below), watch p99, and RSS holding 5,000 PVs.
//  2. `kube-provisioner dev` as shipped (bin -> dist, however it splits itself into processes), driven by an
//     external HTTPS client with 64 requests in flight: 10,000 claims created in three batches (1k, 8k, 1k), each
//     batch timed from its first create to its last claim Bound; then deleted in the same batches, each timed
//     until the last of its PVs is gone (reclaimed by the provisioner). RSS of dev's process tree is sampled
//     throughout.
// It prints every ratio of issue 21 part 2 next to its target, and the command that produced it.
//
//   npm run bench:scale
//   npm run bench:scale -- --claims 2000              (a shorter run: batches of 10% / 80% / 10%)
//   npm run bench:scale -- --rounds 3 --skip-servers  (only the dev run)
//   npm run bench:scale -- --bin /tmp/before/bin/kube-provisioner.js --label before   (another build's dev)
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadKubeConfig } from '../src/runtime/kubeconfig.ts';
import {
  compare,
  comparisonHeader,
  comparisonRows,
  medianOf,
  medianRatio,
  type Scenario,
} from './server-comparison.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const TOTAL = Number(flag('--claims') ?? 10_000);
const ROUNDS = Number(flag('--rounds') ?? 3);
const IN_FLIGHT = Number(flag('--in-flight') ?? 64);
const BATCH_TIMEOUT_S = Number(flag('--batch-timeout') ?? 900);
const SKIP_SERVERS = args.includes('--skip-servers');
const SKIP_DEV = args.includes('--skip-dev');
const BIN = resolve(flag('--bin') ?? 'bin/kube-provisioner.js');
const LABEL = flag('--label') ?? (flag('--bin') ? 'another build' : 'this checkout (dist/)');
const BATCHES = [Math.round(TOTAL * 0.1), TOTAL - 2 * Math.round(TOTAL * 0.1), Math.round(TOTAL * 0.1)];
const log = (line: string) => process.stderr.write(`${line}\n`);

// ---- 1. ceiling vs cluster -------------------------------------------------------------------------------

const CREATES = 'PV creates, 4 connections x 16 pipelined, 10 watches, memory';
/** The client shape that drives dev below: an https.Agent, keep-alive, IN_FLIGHT requests at once, no pipelining. */
const CREATES_AS_DEV = `PV creates, https.Agent keep-alive ${IN_FLIGHT} in flight (the dev client's shape), 10 watches, memory`;
const HOLDING = 'holding 5,000 PVs (server child)';
const serverScenarios: Scenario[] = [
  {
    label: CREATES,
    prefill: { op: 'pipelined', count: 2000, concurrency: 16, watchers: 10, prefix: 'warm' },
    task: { op: 'pipelined', count: 5000, concurrency: 16, watchers: 10, prefix: 'pv' },
  },
  {
    label: CREATES_AS_DEV,
    prefill: { op: 'creates', count: 2000, concurrency: IN_FLIGHT, watchers: 10, prefix: 'warm' },
    task: { op: 'creates', count: 5000, concurrency: IN_FLIGHT, watchers: 10, prefix: 'pv' },
  },
  {
    label: HOLDING,
    memory: true,
    task: { op: 'fill', pvsOnly: true, count: 5000, concurrency: 16, watchers: 0, prefix: 'pv' },
  },
];

// ---- 2. dev, driven over HTTPS ---------------------------------------------------------------------------

interface Api {
  server: string;
  token: string;
  ca: Buffer;
  agent: Agent;
}

function call(api: Api, method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const headers: Record<string, string> = { authorization: `Bearer ${api.token}`, 'user-agent': 'bench-scale' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = request(`${api.server}${path}`, { method, headers, ca: api.ca, agent: api.agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => done({ status: res.statusCode ?? 0, text }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(body);
  });
}

/** A request retried on 429/5xx and connection errors, as a client-go client would (up to 20 tries). */
async function callRetrying(api: Api, method: string, path: string, ok: number[], body?: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    let status = 0;
    let text = '';
    try {
      ({ status, text } = await call(api, method, path, body));
    } catch (err) {
      text = (err as Error).message;
    }
    if (ok.includes(status)) return;
    if (attempt >= 20 || (status >= 400 && status < 500 && status !== 429))
      throw new Error(`${method} ${path}: ${status} ${text.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 100 * (attempt + 1)));
  }
}

type Obj = {
  metadata: { name: string; resourceVersion: string };
  status?: { phase?: string };
  spec?: { claimRef?: { name?: string } };
};

/**
 * A watch that reopens from its last resourceVersion when the server ends it (timeouts), calling `on` per event.
 * Returns a stop function.
 */
function watchForever(api: Api, path: string, rv: string, on: (type: string, o: Obj) => void): () => void {
  let stopped = false;
  let current: ReturnType<typeof request> | undefined;
  const open = () => {
    if (stopped) return;
    const sep = path.includes('?') ? '&' : '?';
    current = request(
      `${api.server}${path}${sep}watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`,
      { headers: { authorization: `Bearer ${api.token}` }, ca: api.ca, agent: false },
      (res) => {
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          buf += d;
          let nl;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (!line) continue;
            const e = JSON.parse(line) as { type: string; object: Obj };
            if (e.type === 'ERROR') continue; // 410: reopened below from the last seen version
            rv = e.object.metadata.resourceVersion;
            if (e.type !== 'BOOKMARK') on(e.type, e.object);
          }
        });
        res.on('end', () => setTimeout(open, 10));
        res.on('error', () => setTimeout(open, 100));
      },
    );
    current.on('error', () => setTimeout(open, 100));
    current.end();
  };
  open();
  return () => {
    stopped = true;
    current?.destroy();
  };
}

/** RSS in bytes of a process and all its descendants (dev may run parts of itself in child processes). */
function treeRss(pid: number): number {
  const parents = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(Number(d), ppid);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const p of parents.keys()) {
    let q: number | undefined = p;
    while (q !== undefined && q !== pid && q > 1) q = parents.get(q);
    if (q !== pid) continue;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}

interface BatchResult {
  n: number;
  done: number;
  seconds: number;
  perSec: number;
  p99Ms?: number;
}

interface DevResult {
  create: BatchResult[];
  remove: BatchResult[];
  rssAtBoundMB: number;
  rssPeakMB: number;
  rssAfterDeleteMB: number;
}

function startDev(dataDir: string): Promise<{ child: ChildProcess; stdout: () => string }> {
  const child = spawn(process.execPath, [BIN, 'dev', '--port', '0', '--data-dir', dataDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err = (err + d).slice(-4000)));
  return new Promise((done, fail) => {
    const t = setInterval(() => {
      if (out.includes('cluster ready at')) {
        clearInterval(t);
        done({ child, stdout: () => out });
      }
    }, 50);
    child.once('exit', (code) => {
      clearInterval(t);
      fail(new Error(`dev exited (${code}) before it was ready: ${out}\n${err}`));
    });
  });
}

const pvcBody = (name: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } }, storageClassName: 'hostpath' },
  });

/** Runs `fn` over `names`, `IN_FLIGHT` at a time. */
async function pool(names: string[], fn: (name: string) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(IN_FLIGHT, names.length) }, async () => {
      while (next < names.length) await fn(names[next++]);
    }),
  );
}

const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] : undefined;

async function runDev(): Promise<DevResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kp-scale-'));
  const { child } = await startDev(dataDir);
  let peak = 0;
  const sampler = setInterval(() => (peak = Math.max(peak, treeRss(child.pid!))), 250);
  const stops: Array<() => void> = [];
  try {
    const { kubeConfig } = loadKubeConfig({ path: join(dataDir, 'kubeconfig') });
    const cluster = kubeConfig.getCurrentCluster()!;
    const api: Api = {
      server: cluster.server,
      token: kubeConfig.getCurrentUser()!.token!,
      ca: Buffer.from(cluster.caData!, 'base64'),
      agent: new Agent({ keepAlive: true, maxSockets: IN_FLIGHT }),
    };
    // Claims are named by their index, so a batch's count of Bound (or gone) claims is kept as events arrive.
    const starts = BATCHES.map((_, b) => BATCHES.slice(0, b).reduce((a, n) => a + n, 0));
    const batchOf = (name: string) => {
      const idx = Number(name.slice('scale-'.length));
      return starts.findLastIndex((s) => idx >= s);
    };
    const boundCount = BATCHES.map(() => 0);
    const goneCount = BATCHES.map(() => 0);
    const createdAt = new Map<string, number>();
    const boundAt = new Map<string, number>();
    const goneAt = new Map<string, number>();
    let wake: (() => void) | undefined;
    const rvOf = async (path: string) =>
      (JSON.parse((await call(api, 'GET', `${path}?limit=1`)).text) as { metadata: { resourceVersion: string } })
        .metadata.resourceVersion;
    stops.push(
      watchForever(
        api,
        '/api/v1/namespaces/default/persistentvolumeclaims',
        await rvOf('/api/v1/namespaces/default/persistentvolumeclaims'),
        (type, o) => {
          if (type !== 'DELETED' && o.status?.phase === 'Bound' && !boundAt.has(o.metadata.name)) {
            boundAt.set(o.metadata.name, performance.now());
            if (o.metadata.name.startsWith('scale-')) boundCount[batchOf(o.metadata.name)]++;
            wake?.();
          }
        },
      ),
      watchForever(api, '/api/v1/persistentvolumes', await rvOf('/api/v1/persistentvolumes'), (type, o) => {
        const claim = o.spec?.claimRef?.name;
        if (type === 'DELETED' && claim && !goneAt.has(claim)) {
          goneAt.set(claim, performance.now());
          if (claim.startsWith('scale-')) goneCount[batchOf(claim)]++;
          wake?.();
        }
      }),
    );
    const waitAll = async (b: number, counts: number[], started: number): Promise<number> => {
      const deadline = started + BATCH_TIMEOUT_S * 1000;
      for (;;) {
        const done = counts[b];
        if (done === BATCHES[b] || performance.now() > deadline) return done;
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 1000);
        });
      }
    };
    const batches: string[][] = [];
    let i = 0;
    for (const n of BATCHES) batches.push(Array.from({ length: n }, () => `scale-${String(i++).padStart(5, '0')}`));

    const create: BatchResult[] = [];
    for (const [b, names] of batches.entries()) {
      const started = performance.now();
      await pool(names, async (name) => {
        createdAt.set(name, performance.now());
        await callRetrying(api, 'POST', '/api/v1/namespaces/default/persistentvolumeclaims', [201], pvcBody(name));
      });
      const done = await waitAll(b, boundCount, started);
      const last = Math.max(...names.map((n) => boundAt.get(n) ?? performance.now()));
      const seconds = (last - started) / 1000;
      const lat = names.filter((n) => boundAt.has(n)).map((n) => boundAt.get(n)! - createdAt.get(n)!);
      create.push({ n: names.length, done, seconds, perSec: done / seconds, p99Ms: pct(lat, 0.99) });
      log(
        `  dev create batch ${b + 1}: ${done}/${names.length} Bound in ${seconds.toFixed(1)} s (${(done / seconds).toFixed(0)}/s), RSS ${(treeRss(child.pid!) / 1e6).toFixed(0)} MB, load ${loadavg()[0].toFixed(1)}`,
      );
    }
    const rssAtBound = treeRss(child.pid!);
    const remove: BatchResult[] = [];
    for (const [b, names] of batches.entries()) {
      const started = performance.now();
      await pool(names, async (name) => {
        await callRetrying(api, 'DELETE', `/api/v1/namespaces/default/persistentvolumeclaims/${name}`, [200, 202, 404]);
      });
      const done = await waitAll(b, goneCount, started);
      const last = Math.max(...names.map((n) => goneAt.get(n) ?? performance.now()));
      const seconds = (last - started) / 1000;
      remove.push({ n: names.length, done, seconds, perSec: done / seconds });
      log(
        `  dev delete batch ${b + 1}: ${done}/${names.length} PVs gone in ${seconds.toFixed(1)} s (${(done / seconds).toFixed(0)}/s), load ${loadavg()[0].toFixed(1)}`,
      );
    }
    const rssAfterDelete = treeRss(child.pid!);
    api.agent.destroy();
    return {
      create,
      remove,
      rssAtBoundMB: Math.round(rssAtBound / 1e6),
      rssPeakMB: Math.round(peak / 1e6),
      rssAfterDeleteMB: Math.round(rssAfterDelete / 1e6),
    };
  } finally {
    clearInterval(sampler);
    for (const stop of stops) stop();
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r(undefined)));
    await rm(dataDir, { recursive: true, force: true });
  }
}

// ---- report ----------------------------------------------------------------------------------------------

const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'missed');
const f2 = (x: number | undefined) => (x === undefined ? '—' : x.toFixed(2));

async function main(): Promise<void> {
  const out: string[] = [
    `Command: npm run bench:scale -- ${args.join(' ')} (dev: ${LABEL}, ${BIN}; ${cpus().length} cores, load average at start ${loadavg()[0].toFixed(1)}, ${new Date().toISOString()})`,
    '',
  ];
  const targets: string[] = [];
  let ceilingCreates: number | undefined;
  let ceilingCreatesAsDev: number | undefined;
  if (!SKIP_SERVERS) {
    out.push(`### Ceiling and cluster side by side (${ROUNDS} rounds)`, '', ...comparisonHeader(false));
    for (const s of serverScenarios) {
      const rounds = await compare(s, { rounds: ROUNDS, log });
      out.push(
        ...comparisonRows(
          s.label,
          rounds,
          s.memory ? ['rssMB', 'heapUsedMB'] : ['createsPerSec', 'watchP50Ms', 'watchP99Ms', 'serverCpuMs'],
        ),
      );
      if (s.label === CREATES) {
        ceilingCreates = medianOf(rounds, 'ceiling', 'createsPerSec');
        const creates = medianRatio(rounds, 'createsPerSec');
        const p99 = medianRatio(rounds, 'watchP99Ms');
        targets.push(
          `| cluster PV creates/s / ceiling's | >= 0.8 | ${f2(creates)} | ${verdict(creates === undefined ? undefined : creates >= 0.8)} |`,
          `| cluster watch p99 / ceiling's | <= 1.5 | ${f2(p99)} | ${verdict(p99 === undefined ? undefined : p99 <= 1.5)} |`,
        );
      } else if (s.label === CREATES_AS_DEV) {
        ceilingCreatesAsDev = medianOf(rounds, 'ceiling', 'createsPerSec');
        const creates = medianRatio(rounds, 'createsPerSec');
        targets.push(`| cluster PV creates/s / ceiling's, the dev client's shape | (>= 0.8) | ${f2(creates)} | |`);
      } else {
        const rss = medianOf(rounds, 'cluster', 'rssMB');
        targets.push(
          `| cluster RSS holding 5,000 PVs (MB) | <= 200 | ${rss ?? '—'} | ${verdict(rss === undefined ? undefined : rss <= 200)} |`,
        );
      }
    }
    out.push('');
  }
  if (!SKIP_DEV) {
    log(`dev: ${TOTAL} claims in batches ${BATCHES.join(', ')}, ${IN_FLIGHT} in flight`);
    const r = await runDev();
    out.push(
      `### dev: ${TOTAL.toLocaleString('en')} claims, ${IN_FLIGHT} requests in flight, batches ${BATCHES.map((n) => n.toLocaleString('en')).join(' / ')}`,
      '',
      '| phase | batch | claims | done | seconds | per second | p99 create -> Bound ms |',
      '|---|---:|---:|---:|---:|---:|---:|',
      ...r.create.map(
        (b, i) =>
          `| create -> Bound | ${i + 1} | ${b.n} | ${b.done} | ${b.seconds.toFixed(1)} | ${b.perSec.toFixed(1)} | ${b.p99Ms?.toFixed(0) ?? ''} |`,
      ),
      ...r.remove.map(
        (b, i) =>
          `| delete -> PV gone | ${i + 1} | ${b.n} | ${b.done} | ${b.seconds.toFixed(1)} | ${b.perSec.toFixed(1)} | |`,
      ),
      '',
      `dev RSS (process tree): ${r.rssAtBoundMB} MB after the create batches (${r.create.reduce((a, b) => a + b.done, 0)} of ${TOTAL} Bound), peak ${r.rssPeakMB} MB, ${r.rssAfterDeleteMB} MB after deleting them`,
      '',
    );
    const allBound = r.create.reduce((a, b) => a + b.done, 0);
    const createSeconds = r.create.reduce((a, b) => a + b.seconds, 0);
    const overall = allBound / createSeconds;
    const flat = r.create[2].perSec / r.create[0].perSec;
    const delFlat = r.remove[2].perSec / r.remove[0].perSec;
    // The ceiling driven as dev is driven (IN_FLIGHT requests over keep-alive connections, no pipelining) is the
    // one to divide by: the pipelined figure measures a client dev never has (docs/benchmarks.md says why both).
    const vsCeiling = ceilingCreatesAsDev ? overall / ceilingCreatesAsDev : undefined;
    const vsPipelined = ceilingCreates ? overall / ceilingCreates : undefined;
    targets.push(
      `| dev claims Bound/s (${allBound}/${TOTAL} in ${createSeconds.toFixed(1)} s = ${overall.toFixed(1)}/s) / ceiling creates/s with the same client (${ceilingCreatesAsDev ?? '—'}) | >= 0.1 | ${vsCeiling === undefined ? '—' : vsCeiling.toFixed(3)} | ${verdict(vsCeiling === undefined ? undefined : vsCeiling >= 0.1 && allBound === TOTAL)} |`,
      `| the same / the pipelined ceiling's creates/s (${ceilingCreates ?? '—'}) | | ${vsPipelined === undefined ? '—' : vsPipelined.toFixed(3)} | |`,
      `| dev last batch bind rate / first batch's | >= 0.8 | ${f2(flat)} | ${verdict(flat >= 0.8)} |`,
      `| dev last batch delete rate / first batch's | >= 0.8 | ${f2(delFlat)} | ${verdict(delFlat >= 0.8)} |`,
      `| dev RSS after creating ${TOTAL.toLocaleString('en')} claims (MB; peak ${r.rssPeakMB}) | <= 350 | ${r.rssAtBoundMB} | ${verdict(r.rssAtBoundMB <= 350)} |`,
    );
  }
  out.push(
    '### Issue 21 targets (ratios from this run)',
    '',
    '| figure | target | measured | |',
    '|---|---|---:|---|',
    ...targets,
    '',
    `Load average at the end: ${loadavg()[0].toFixed(1)}`,
  );
  console.log(out.join('\n'));
}

await main();
