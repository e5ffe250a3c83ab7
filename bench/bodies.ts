// Hostile request bodies under the size limit (3 MiB), issue 20: how long each takes, and how long a GET sent
// meanwhile waits. For every YAML body, side by side in one run:
// - "on the loop": decodeObjectBody called directly, the time the event loop was held before YAML bodies went to
//   the worker thread (and still is for bodies under YAML_WORKER_MIN_BYTES);
// - "request": the POST to the embedded cluster, its body decoded in the worker;
// - "GET max": the slowest of the GETs sent one after another while that POST was worked on (each a new TLS
//   connection), and "loop max": the event loop's longest delay meanwhile (perf_hooks.monitorEventLoopDelay);
//   "loop CPU, longest hold": the most CPU the loop's thread used between two turns of a 10 ms timer (/proc,
//   10 ms ticks), the longest piece of work done in one go, which load does not lengthen as it does the delay.
// The 90k-entry $setElementOrder patch and a JSON body are measured the same way for comparison.
//   npm run bench:bodies                (every body at about 3 MiB)
//   npm run bench:bodies -- --quick     (about 1 MiB)
//   npm run bench:bodies -- --only flow
//   npm run bench:bodies -- --baseline DIR   (also DIR's code, side by side in this run: "before / after";
//                                             DIR is a checkout of main with node_modules, see docs/benchmarks.md)
//   npm run bench:bodies -- --field-validation Warn   (the directive sent; Ignore unless given: Warn, the
//                                        default, also counts a JSON body's keys for repeated ones)
//   npm run bench:bodies -- --cpu       (instead: each request sent alone, and the CPU time it cost the event
//                                        loop's thread and the other threads (the YAML worker, GC helpers), read
//                                        from /proc: CPU time holds still on a loaded machine, wall time does not)
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startEmbeddedCluster } from '../src/cluster/embedded-cluster.ts';
import { MAX_BODY_BYTES } from '../src/cluster/common/json-safety.ts';
import { decodeObjectBody } from '../src/cluster/http/http-io.ts';
import { yamlDecodeCounts } from '../src/cluster/schema/yaml-decode.ts';
import { envelope, msg, str } from '../test/support/protobuf-encoding.ts';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const cpuOnly = args.includes('--cpu');
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const fieldValidation = args.includes('--field-validation') ? args[args.indexOf('--field-validation') + 1] : 'Ignore';
const LIMIT = (quick ? 1024 * 1024 : MAX_BODY_BYTES) - 1024;
// A full collection before each measurement, so that one build's garbage is not collected in the other's time.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const baselineDir = args.includes('--baseline') ? resolve(args[args.indexOf('--baseline') + 1]) : undefined;

const head = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n`;
/** `prefix`, then `unit(i)` for i = 0, 1, ... while the body stays under the limit, then `suffix`. */
function fill(prefix: string, unit: (i: number) => string, suffix = '', limit = LIMIT): string {
  const parts = [prefix];
  let size = prefix.length + suffix.length;
  for (let i = 0; ; i++) {
    const u = unit(i);
    if (size + u.length > limit) break;
    parts.push(u);
    size += u.length;
  }
  parts.push(suffix);
  return parts.join('');
}

interface Body {
  method: 'POST' | 'PATCH';
  contentType: string;
  text: (name: string) => string | Buffer;
}
const yaml = (text: (name: string) => string): Body => ({ method: 'POST', contentType: 'application/yaml', text });
const BODIES: Record<string, Body> = {
  'YAML: one key repeated': yaml((n) => fill(`${head(n)}data:\n`, () => '  k: v\n')),
  'YAML: one key repeated 40,000 times': yaml((n) => `${head(n)}data:\n${'  k: v\n'.repeat(40_000)}`),
  'YAML: a flat map': yaml((n) => fill(`${head(n)}data:\n`, (i) => `  k${i}: v\n`)),
  'YAML: a flat map, its first key repeated at the end': yaml((n) =>
    fill(`${head(n)}data:\n`, (i) => `  k${i}: v\n`, '  k0: v\n'),
  ),
  'YAML: small flow maps': yaml((n) => fill(`${head(n)}data:\n`, (i) => `  k${i}: {a: 1, b: [1, 2]}\n`)),
  'YAML: a flow (JSON) map': yaml((n) => fill(`${head(n)}data: {`, (i) => `"k${i}": "v",`, '"z": "v"}\n')),
  'YAML: a list': yaml((n) => fill(`${head(n)}list:\n`, (i) => `- f${i}\n`)),
  'YAML: a list of small maps': yaml((n) => fill(`${head(n)}list:\n`, (i) => `- {a: ${i}, b: [1, 2]}\n`)),
  'YAML: many top-level fields': yaml((n) => fill(head(n), (i) => `k${i}: v\n`)),
  'YAML: a map three levels down': yaml((n) => fill(`${head(n)}x:\n  y:\n    z:\n`, (i) => `      k${i}: v\n`)),
  'YAML: anchors': yaml((n) => fill(`${head(n)}data:\n`, (i) => `  k${i}: &a${i} v\n`)),
  'YAML: anchors and aliases': yaml((n) =>
    fill(`${head(n)}data:\n`, (i) => (i % 2 ? `  k${i}: *a${i - 1}\n` : `  k${i}: &a${i} v\n`)),
  ),
  'YAML: one long string': yaml((n) => `${head(n)}data:\n  k: ${'a'.repeat(LIMIT - 100)}\n`),
  'JSON: a flat map': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) => fill(`{"metadata":{"name":"${n}"},"data":{`, (i) => `"k${i}":"v",`, '"z":"v"}}'),
  },
  'JSON: a flat map, its first key repeated at the end': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) => fill(`{"metadata":{"name":"${n}"},"data":{`, (i) => `"k${i}":"v",`, '"k0":"v"}}'),
  },
  // Where the slicing of large maps stops: a map three levels down, and maps inside a list.
  'JSON: a large map three levels down': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) => fill(`{"metadata":{"name":"${n}"},"x":{"y":{"z":{`, (i) => `"k${i}":"v",`, '"z":"v"}}}}'),
  },
  'JSON: large maps in a list': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) =>
      fill(
        `{"metadata":{"name":"${n}"},"x":[{`,
        (i) => `"k${i}":"v",${i % 10_000 === 9_999 ? '"z":"v"},{' : ''}`,
        '"z":"v"}]}',
      ),
  },
  'JSON: many top-level fields': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) => fill(`{"metadata":{"name":"${n}"},`, (i) => `"k${i}":"v",`, '"z":"v"}'),
  },
  'JSON: a large map beside a large map inside it': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) =>
      fill(
        `{"metadata":{"name":"${n}"},"x":{"inner":{${'"a":"v",'.repeat(20_000)}"b":"v"},`,
        (i) => `"k${i}":"v",`,
        '"z":"v"}}',
      ),
  },
  // kubectl's create sends protobuf: a ConfigMap of as many entries as fit (decoded in the worker thread).
  'Protobuf: a ConfigMap of many entries': {
    method: 'POST',
    contentType: 'application/vnd.kubernetes.protobuf',
    text: (n) => {
      const parts = [msg(1, str(1, n))];
      for (let i = 0, size = 0; size < LIMIT - 64; i++) {
        const entry = msg(2, str(1, `k${i}`), str(2, 'v'));
        parts.push(entry);
        size += entry.length;
      }
      return envelope('v1', 'ConfigMap', Buffer.concat(parts));
    },
  },
  // The largest such ConfigMap the store accepts (its limit is 1.5 MiB of JSON): a 201, its JSON stored.
  'JSON: a flat map the store accepts': {
    method: 'POST',
    contentType: 'application/json',
    text: (n) =>
      fill(`{"metadata":{"name":"${n}"},"data":{`, (i) => `"k${i}":"v",`, '"z":"v"}}', Math.min(LIMIT, 1_500_000)),
  },
};

/** One build under test: this tree, or the baseline's (its own modules, its own cluster, its own worker). */
interface Build {
  cluster: Awaited<ReturnType<typeof startEmbeddedCluster>>;
  decode: typeof decodeObjectBody;
  counts: typeof yamlDecodeCounts;
}
async function baselineBuild(dir: string): Promise<Build> {
  const load = (path: string) => import(pathToFileURL(`${dir}/src/${path}`).href);
  const [cluster, io, yaml] = await Promise.all([
    load('cluster/embedded-cluster.ts'),
    load('cluster/http/http-io.ts'),
    load('cluster/schema/yaml-decode.ts'),
  ]);
  return {
    cluster: await cluster.startEmbeddedCluster({ controllers: false }),
    decode: io.decodeObjectBody,
    counts: yaml.yamlDecodeCounts,
  };
}
const after: Build = {
  cluster: await startEmbeddedCluster({ controllers: false }),
  decode: decodeObjectBody,
  counts: yamlDecodeCounts,
};
const builds: Build[] = baselineDir ? [await baselineBuild(baselineDir), after] : [after];
let c = after.cluster;
const CMS = '/api/v1/namespaces/default/configmaps';

function request(method: string, path: string, body?: string | Buffer, contentType?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${c.token}` };
    if (body !== undefined) {
      headers['content-type'] = contentType!;
      headers['content-length'] = String(Buffer.byteLength(body));
    }
    const req = https.request(new URL(path, c.url), { method, headers, ca: c.caPem, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** CPU ms this thread (the event loop's: its task id is the process id) and the whole process have used. */
function threadCpuMs(): { loop: number; all: number } {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const u = process.cpuUsage();
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command; clock ticks of 10 ms.
  return { loop: (Number(fields[11]) + Number(fields[12])) * 10, all: (u.user + u.system) / 1000 };
}

/** The request alone: its status, and the CPU it cost the event loop's thread and the other threads. */
async function measureCpu(method: string, path: string, body: string | Buffer, contentType: string) {
  const before = threadCpuMs();
  const status = await request(method, path, body, contentType);
  const after = threadCpuMs();
  const loop = after.loop - before.loop;
  return { status, loop, others: Math.max(0, after.all - before.all - loop) };
}

/**
 * The request with GETs one after another meanwhile: its status and time, the slowest GET, the loop's delay, and
 * the most CPU the event loop's thread used between two turns of a 10 ms timer: the longest piece of work done
 * without a turn, which (unlike the delay) a loaded machine does not lengthen by keeping the thread off a core.
 */
async function measure(method: string, path: string, body: string | Buffer, contentType: string) {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  let holdCpu = 0;
  let lastCpu = threadCpuMs().loop;
  const holds = setInterval(() => {
    const cpu = threadCpuMs().loop;
    holdCpu = Math.max(holdCpu, cpu - lastCpu);
    lastCpu = cpu;
  }, 10);
  let done = false;
  const gets: number[] = [];
  const started = performance.now();
  const main = request(method, path, body, contentType).then((status) => {
    done = true;
    return { status, ms: performance.now() - started };
  });
  while (!done) {
    const t = performance.now();
    await request('GET', `${CMS}?limit=1`);
    gets.push(performance.now() - t);
  }
  const r = await main;
  loop.disable();
  clearInterval(holds);
  return { ...r, getMax: Math.max(0, ...gets), gets: gets.length, loopMax: loop.max / 1e6, holdCpu };
}

const cpuSeconds = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

console.log(
  `bench:bodies ${quick ? '(quick) ' : ''}fieldValidation=${fieldValidation}, bodies up to ${(LIMIT / 1024).toFixed(0)} KiB, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}${baselineDir ? `; each cell "before / after", before = ${baselineDir}` : ''}`,
);
if (cpuOnly) {
  console.log('| Body | Size | Status | Loop thread CPU | Other threads CPU |');
  console.log('|---|---|---|---|---|');
} else {
  console.log(
    '| Body | Size | On the loop (direct decode) | Request | Status | GETs meanwhile | GET max | Loop max delay | Loop CPU, longest hold |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
}
const row = (cells: string[]) => console.log(`| ${cells.join(' | ')} |`);
/** One cell per build, "before / after" with a baseline. */
const cell = (values: string[]) => values.join(' / ');
let seq = 0;
// Warm-up: each build's YAML worker thread started (and its modules loaded) before the first measured body.
for (const build of builds) {
  c = build.cluster;
  await request('POST', `${CMS}?dryRun=All`, `${head('warm-up')}data:\n${'  k: v\n'.repeat(4000)}`, 'application/yaml');
}
const cpuStart = cpuSeconds();
for (const [what, body] of Object.entries(BODIES)) {
  if (only && !what.toLowerCase().includes(only.toLowerCase())) continue;
  const cells: string[][] = [[], [], [], [], [], [], []];
  let size = 0;
  for (const build of builds) {
    c = build.cluster;
    const name = `b${seq++}`;
    const text = body.text(name);
    const raw = Buffer.from(text);
    size = raw.length;
    let direct = 'n/a';
    gc();
    if (cpuOnly) {
      const m = await measureCpu(body.method, `${CMS}?fieldValidation=${fieldValidation}`, text, body.contentType);
      [String(m.status), `${m.loop} ms`, `${m.others.toFixed(0)} ms`].forEach((v, i) => cells[i].push(v));
      continue;
    }
    if (body.contentType === 'application/yaml') {
      const t = performance.now();
      try {
        build.decode(raw, body.contentType);
      } catch {
        // the same answer the request gets
      }
      direct = `${(performance.now() - t).toFixed(0)} ms`;
    }
    const off = build.counts().offThread;
    gc();
    const m = await measure(body.method, `${CMS}?fieldValidation=${fieldValidation}`, text, body.contentType);
    const where = body.contentType === 'application/yaml' && build.counts().offThread > off ? ' (worker)' : '';
    const values = [
      direct,
      `${m.ms.toFixed(0)} ms${where}`,
      String(m.status),
      String(m.gets),
      `${m.getMax.toFixed(0)} ms`,
      `${m.loopMax.toFixed(0)} ms`,
      `${m.holdCpu} ms`,
    ];
    values.forEach((v, i) => cells[i].push(v));
  }
  row([what, `${(size / 1024).toFixed(0)} KiB`, ...cells.slice(0, cpuOnly ? 3 : 7).map(cell)]);
}

// Strategic merge patches of a ConfigMap created empty: issue 20's 90,000 finalizers with $setElementOrder (1.7
// MiB), and a data map of 100,000 keys (1.3 MiB, under the store's limit).
const order = Array.from({ length: 90_000 }, (_, i) => `e.io/f${i}`);
const PATCHES: Record<string, () => string> = {
  'JSON: $setElementOrder patch, 90,000 finalizers': () =>
    JSON.stringify({ metadata: { '$setElementOrder/finalizers': order, finalizers: order } }),
  'JSON: a patch of a 100,000-key data map': () =>
    JSON.stringify({ data: Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 'v'])) }),
};
for (const [what, text] of Object.entries(PATCHES)) {
  if (only && !what.toLowerCase().includes(only.toLowerCase())) continue;
  const patch = text();
  const cells: string[][] = [[], [], [], [], [], []];
  for (const build of builds) {
    c = build.cluster;
    const name = `smp-${seq++}`;
    await request('POST', CMS, JSON.stringify({ metadata: { name } }), 'application/json');
    gc();
    if (cpuOnly) {
      const m = await measureCpu('PATCH', `${CMS}/${name}`, patch, 'application/strategic-merge-patch+json');
      [String(m.status), `${m.loop} ms`, `${m.others.toFixed(0)} ms`].forEach((v, i) => cells[i].push(v));
      continue;
    }
    const m = await measure('PATCH', `${CMS}/${name}`, patch, 'application/strategic-merge-patch+json');
    const values = [
      `${m.ms.toFixed(0)} ms`,
      String(m.status),
      String(m.gets),
      `${m.getMax.toFixed(0)} ms`,
      `${m.loopMax.toFixed(0)} ms`,
      `${m.holdCpu} ms`,
    ];
    values.forEach((v, i) => cells[i].push(v));
  }
  const size = `${(Buffer.byteLength(patch) / 1024).toFixed(0)} KiB`;
  row([what, size, ...(cpuOnly ? cells.slice(0, 3).map(cell) : ['n/a', ...cells.map(cell)])]);
}
console.log(
  `CPU ${(cpuSeconds() - cpuStart).toFixed(1)} s (both threads); load average now ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
);
for (const build of builds) await build.cluster.stop();
