// `kube-provisioner dev` as a whole, driven from outside (`npm run bench:dev`): builds dist/, starts the compiled
// CLI (`node bin/kube-provisioner.js dev --port 0`) on a fresh data directory, and creates claims over HTTPS from
// this process in batches (64 in flight, class `hostpath`, real directories), each batch waiting until all its
// claims are Bound. Prints per batch claims/s and the ratio to the first batch, dev's CPU use (cores: CPU seconds
// of the process, every thread, over wall seconds), its RSS (peak and at the end, all threads: one process), and
// how long SIGINT takes to stop it. With `--cluster-thread worker,main` both process shapes run one after the
// other in the same invocation, so their figures can be compared as ratios; `--baseline DIR[,DIR...]` runs each
// DIR's build (DIR/bin/kube-provisioner.js, e.g. a `git worktree` of an older commit, built) before this one's, in
// each shape, and `--variant-env NAME=VALUE` (repeatable) runs this checkout's build once more per flag with that
// variable set (several at once: NAME=VALUE,NAME2=VALUE2). Each run prints CPU ms per claim (dev's CPU seconds, every thread, over the claims Bound).
// Run: node --import tsx bench/dev.ts [--batches 1000,8000,1000] [--concurrency 64]
//        [--cluster-thread worker,main] [--baseline DIR[,DIR]] [--variant-env NAME=VALUE]
//        [--cpu-prof DIR] [--heap-snapshot DIR] [--json FILE] [--rounds N]
// --cpu-prof writes one .cpuprofile per thread of dev (main and cluster worker); --heap-snapshot writes one per
// thread of dev (main, and the cluster worker's) when the last batch is Bound. At the end of each run a node
// diagnostic report gives each thread's V8 heap, committed and used: what dev's RSS holds beyond live objects. Its
// new space is printed committed and reserved: the reservation (memorySize) is the young generation's maximum
// (2 x 16 MB unless limited), not what it holds; earlier figures of "new space 32" were that reservation.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDemo, type DemoResult } from '../src/cli/demo.ts';
import type { ClusterThread } from '../src/cli/dev-cluster.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { loadKubeConfig } from '../src/runtime/kubeconfig.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const argv = process.argv.slice(2);
const get = (flag: string): string | undefined => {
  const i = argv.indexOf(flag);
  return i >= 0 ? argv[i + 1] : undefined;
};
const batches = (get('--batches') ?? '1000,8000,1000').split(',').map(Number);
const concurrency = Number(get('--concurrency') ?? 64);
const shapes = (get('--cluster-thread') ?? 'worker').split(',') as ClusterThread[];
const cpuProf = get('--cpu-prof');
const heapSnapshot = get('--heap-snapshot');
const jsonOut = get('--json');
const rounds = Number(get('--rounds') ?? 1);
const baselines = (get('--baseline') ?? '').split(',').filter((d) => d !== '');
const variantEnvs = argv.flatMap((a, i) => (a === '--variant-env' && argv[i + 1] ? [argv[i + 1]] : []));
/** The builds to run: each baseline's, then this checkout's, then this checkout's again per --variant-env. */
const builds: Array<{ label: string; bin: string; env?: Record<string, string> }> = [
  ...baselines.map((dir) => ({ label: `baseline ${dir}`, bin: join(resolve(dir), 'bin', 'kube-provisioner.js') })),
  {
    label: baselines.length > 0 || variantEnvs.length > 0 ? 'this checkout' : '',
    bin: join(ROOT, 'bin', 'kube-provisioner.js'),
  },
  // One variant per flag; a flag may set several variables at once: NAME=VALUE,NAME2=VALUE2.
  ...variantEnvs.map((nvs) => {
    const env: Record<string, string> = {};
    for (const nv of nvs.split(',')) {
      const eq = nv.indexOf('=');
      if (eq <= 0) throw new Error(`--variant-env ${nvs}: expected NAME=VALUE[,NAME=VALUE]`);
      env[nv.slice(0, eq)] = nv.slice(eq + 1);
    }
    return { label: `this checkout ${nvs}`, bin: join(ROOT, 'bin', 'kube-provisioner.js'), env };
  }),
];

/** CPU seconds (user + system, every thread) and RSS of one process, from /proc. */
function sample(pid: number): { cpuS: number; rssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuS = (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuS, rssMb: rss ? Number(rss[1]) / 1024 : 0 };
}

interface BatchResult {
  claims: number;
  bound: number;
  seconds: number;
  claimsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** dev's CPU seconds over wall seconds during the batch. */
  cores: number;
  /** dev's CPU milliseconds (every thread) per claim Bound in the batch. */
  cpuMsPerClaim: number;
}

interface ShapeResult {
  clusterThread: ClusterThread;
  /** Which build ran (empty without --baseline). */
  build: string;
  batches: BatchResult[];
  startupMs: number;
  peakRssMb: number;
  endRssMb: number;
  idleRssMb: number;
  sigintExitMs: number;
  exitCode: number | string;
  /** Where dev's RSS goes at the end (a node diagnostic report): each thread's V8 heap, committed and used. */
  heaps: string;
}

/** Committed / used MB of each V8 heap in a node diagnostic report (main thread, then each worker). */
function heapsOfReport(file: string): string {
  interface Heap {
    totalMemory: number;
    usedMemory: number;
    heapSpaces: Record<string, { memorySize: number; committedMemory: number; used: number }>;
  }
  const report = JSON.parse(readFileSync(file, 'utf8')) as {
    javascriptHeap: Heap;
    workers: Array<{ javascriptHeap: Heap }>;
  };
  const mb = (b: number) => (b / 1048576).toFixed(0);
  const one = (name: string, h: Heap) =>
    `${name} heap ${mb(h.totalMemory)} committed / ${mb(h.usedMemory)} used (new space ${mb(h.heapSpaces.new_space?.committedMemory ?? 0)} committed of ${mb(h.heapSpaces.new_space?.memorySize ?? 0)} reserved, old ${mb(h.heapSpaces.old_space?.memorySize ?? 0)} / ${mb(h.heapSpaces.old_space?.used ?? 0)})`;
  return [
    one('main', report.javascriptHeap),
    ...report.workers.map((w, i) => one(`worker ${i}`, w.javascriptHeap)),
  ].join('; ');
}

async function runShape(where: ClusterThread, build: (typeof builds)[number]): Promise<ShapeResult> {
  const dataDir = await mkdtemp(join(tmpdir(), 'kp-bench-dev-'));
  const nodeArgs: string[] = [];
  if (cpuProf) nodeArgs.push('--cpu-prof', '--cpu-prof-dir', resolve(cpuProf, where));
  if (heapSnapshot) nodeArgs.push('--heapsnapshot-signal=SIGUSR2');
  // A diagnostic report at the end: each thread's heap, committed and used (what RSS holds beyond live objects).
  const reportDir = await mkdtemp(join(tmpdir(), 'kp-bench-dev-report-'));
  // Through NODE_OPTIONS, not the command line: dev's cluster worker thread takes the process's execArgv, and node
  // refuses a Worker given the process-wide --report-* flags ("Initiated Worker with invalid execArgv flags").
  const reportOptions = ['--report-on-signal', '--report-signal=SIGWINCH', `--report-directory=${reportDir}`];
  if (heapSnapshot) mkdirSync(resolve(heapSnapshot), { recursive: true });
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [...nodeArgs, build.bin, 'dev', '--port', '0', '--data-dir', dataDir, '--cluster-thread', where],
    {
      cwd: heapSnapshot ? resolve(heapSnapshot) : dataDir,
      env: {
        ...process.env,
        ...build.env,
        NODE_OPTIONS: [process.env.NODE_OPTIONS ?? '', ...reportOptions].join(' ').trim(),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const exited = new Promise<number | string>((r) => child.on('exit', (code, sig) => r(code ?? sig ?? 'unknown')));
  let out = '';
  await new Promise<void>((ready, fail) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('Ctrl-C to stop')) ready();
    });
    void exited.then((code) => fail(new Error(`dev exited (${code}) before it was ready:\n${out}`)));
  });
  const startupMs = performance.now() - started;
  const pid = child.pid!;
  let peakRssMb = 0;
  const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, sample(pid).rssMb)), 200);
  const idleRssMb = sample(pid).rssMb;

  const { kubeConfig } = loadKubeConfig({ path: join(dataDir, 'kubeconfig') });
  const client = new KubeClient({ kubeConfig, qps: 0, userAgent: 'bench-dev-creator' });
  const results: BatchResult[] = [];
  const sink = { write: () => {} };
  try {
    for (const count of batches) {
      const before = sample(pid);
      const t0 = performance.now();
      const r: DemoResult = await runDemo({
        client,
        count,
        storageClassName: 'hostpath',
        concurrency,
        timeoutMs: Math.max(120_000, count * 60),
        progress: sink,
      });
      const wallS = (performance.now() - t0) / 1000;
      const after = sample(pid);
      const b: BatchResult = {
        claims: count,
        bound: r.bound,
        seconds: r.elapsedMs / 1000,
        claimsPerSecond: r.claimsPerSecond,
        p50Ms: r.p50Ms,
        p99Ms: r.p99Ms,
        cores: (after.cpuS - before.cpuS) / wallS,
        cpuMsPerClaim: ((after.cpuS - before.cpuS) * 1000) / Math.max(1, r.bound),
      };
      results.push(b);
      console.error(
        `[${where}${build.label ? ` ${build.label}` : ''}] batch ${results.length}: ${b.bound}/${count} Bound in ${b.seconds.toFixed(1)} s, ${b.claimsPerSecond.toFixed(0)} claims/s, ` +
          `p50 ${Math.round(b.p50Ms)} ms, p99 ${Math.round(b.p99Ms)} ms, dev ${b.cores.toFixed(2)} cores, ${b.cpuMsPerClaim.toFixed(1)} CPU ms/claim, RSS ${after.rssMb.toFixed(0)} MB, loadavg ${loadavg()[0].toFixed(1)}`,
      );
    }
  } finally {
    client.close();
  }
  const endRssMb = sample(pid).rssMb;
  peakRssMb = Math.max(peakRssMb, endRssMb);
  clearInterval(sampler);
  child.kill('SIGWINCH');
  let heaps = 'no report';
  for (let i = 0; i < 60; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const file = readdirSync(reportDir).find((f) => f.endsWith('.json'));
    if (!file) continue;
    try {
      heaps = heapsOfReport(join(reportDir, file));
      break;
    } catch {
      // still being written
    }
  }
  await rm(reportDir, { recursive: true, force: true });
  console.error(`[${where}${build.label ? ` ${build.label}` : ''}] RSS ${endRssMb.toFixed(0)} MB at the end: ${heaps}`);
  if (heapSnapshot) {
    const dir = resolve(heapSnapshot);
    const before = new Set(readdirSync(dir));
    child.kill('SIGUSR2');
    // Written by dev's main thread and, in the worker shape, by dev for its cluster thread (renamed from
    // .partial when complete): wait until each new file appears and its size settles.
    const expected = where === 'worker' ? 2 : 1;
    const files: string[] = [];
    for (let last = -1; ;) {
      await new Promise((r) => setTimeout(r, 1000));
      for (const f of readdirSync(dir))
        if (!before.has(f) && f.endsWith('.heapsnapshot') && !files.includes(f)) files.push(f);
      if (files.length < expected) continue;
      const size = files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
      if (size === last && size > 0) break;
      last = size;
    }
    for (const f of files)
      console.error(`[${where}${build.label ? ` ${build.label}` : ''}] heap snapshot: ${join(dir, f)}`);
  }
  const stopAt = performance.now();
  child.kill('SIGINT');
  const exitCode = await exited;
  const sigintExitMs = performance.now() - stopAt;
  await rm(dataDir, { recursive: true, force: true });
  return {
    clusterThread: where,
    build: build.label,
    batches: results,
    startupMs,
    peakRssMb,
    endRssMb,
    idleRssMb,
    sigintExitMs,
    exitCode,
    heaps,
  };
}

function table(rs: ShapeResult[]): string {
  const rows = [
    '| dev cluster thread | batch | claims | Bound | s | claims/s | ratio to batch 1 | p50 ms | p99 ms | dev cores | CPU ms/claim |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rs) {
    r.batches.forEach((b, i) => {
      rows.push(
        `| ${r.clusterThread}${r.build ? ` (${r.build})` : ''} | ${i + 1} | ${b.claims} | ${b.bound} | ${b.seconds.toFixed(1)} | ${b.claimsPerSecond.toFixed(0)} | ${(b.claimsPerSecond / r.batches[0].claimsPerSecond).toFixed(2)} | ` +
          `${Math.round(b.p50Ms)} | ${Math.round(b.p99Ms)} | ${b.cores.toFixed(2)} | ${b.cpuMsPerClaim.toFixed(1)} |`,
      );
    });
  }
  rows.push(
    '',
    '| dev cluster thread | claims/s overall | CPU ms/claim overall | RSS MB idle / peak / end | ready ms | SIGINT to exit ms (code) |',
    '|---|---:|---:|---:|---:|---:|',
  );
  for (const r of rs) {
    const claims = r.batches.reduce((s, b) => s + b.bound, 0);
    const seconds = r.batches.reduce((s, b) => s + b.seconds, 0);
    const cpuMs = r.batches.reduce((s, b) => s + b.cpuMsPerClaim * b.bound, 0);
    rows.push(
      `| ${r.clusterThread}${r.build ? ` (${r.build})` : ''} | ${(claims / seconds).toFixed(0)} | ${(cpuMs / Math.max(1, claims)).toFixed(1)} | ${r.idleRssMb.toFixed(0)} / ${r.peakRssMb.toFixed(0)} / ${r.endRssMb.toFixed(0)} | ${Math.round(r.startupMs)} | ${Math.round(r.sigintExitMs)} (${r.exitCode}) |`,
    );
  }
  rows.push('', 'V8 heaps at the end (node diagnostic report), MB:');
  for (const r of rs) rows.push(`- ${r.clusterThread}${r.build ? ` (${r.build})` : ''}: ${r.heaps}`);
  return rows.join('\n');
}

async function main(): Promise<void> {
  const build = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')],
    { stdio: 'inherit' },
  );
  if (build.status !== 0) throw new Error('npm run build failed');
  const results: ShapeResult[] = [];
  // --rounds N: every shape and build again, interleaved (A B C A B C), so a machine whose load drifts moves each alike.
  for (let round = 0; round < rounds; round++)
    for (const where of shapes) for (const build of builds) results.push(await runShape(where, build));
  console.log(
    `\n## dev benchmark (${new Date().toISOString()}, node ${process.version}, loadavg ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})\n`,
  );
  console.log(`Command: npm run bench:dev -- ${argv.join(' ')}`);
  console.log(
    `Batches ${batches.join(', ')}, ${concurrency} creates in flight from a separate process, class hostpath (real directories).\n`,
  );
  console.log(table(results));
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(results, null, 2));
}

await main();
