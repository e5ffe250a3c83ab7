// Start-up benchmark (`npm run bench:startup`): `kube-provisioner --help` wall time (median of N runs) and max
// RSS, and the RSS of `run hostpath` idle after it became leader, against an embedded cluster started as a
// separate process. Plain JavaScript so that it measures the command as shipped (bin -> dist) with nothing
// preloaded. Compare another build side by side with `--bin`, e.g. a checkout running sources through tsx.
/* global fetch */
// Run: npm run bench:startup -- [--runs 15] [--idle-ms 5000] [--bin bin/kube-provisioner.js] [--label after]
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const get = (flag, fallback) => {
  const i = args.indexOf(flag);
  return i >= 0 ? args[i + 1] : fallback;
};
const RUNS = Number(get('--runs', '15'));
const IDLE_MS = Number(get('--idle-ms', '5000'));
const BIN = resolve(get('--bin', 'bin/kube-provisioner.js'));
const LABEL = get('--label', BIN);
// Prints the process's peak RSS (the figure /usr/bin/time -f %M gives) and CPU time on exit (stderr, one marked line).
// CPU time is reported next to wall time because on a loaded machine wall time mostly measures the queue.
const PEAK = `data:text/javascript,import{writeSync}from'node:fs';process.on('exit',()=>{const u=process.resourceUsage();writeSync(2,'\\nPEAK_RSS_KB '+u.maxRSS+' CPU_US '+(u.userCPUTime+u.systemCPUTime)+'\\n')})`;

function run(argv, opts = {}) {
  return new Promise((done, fail) => {
    const started = process.hrtime.bigint();
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', fail);
    child.on('exit', (code) => done({ code, out, err, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function helpFigures() {
  const times = [];
  const cpu = [];
  let peakKb = 0;
  for (let i = 0; i < RUNS; i++) {
    const r = await run(['--import', PEAK, BIN, '--help']);
    if (r.code !== 0) throw new Error(`--help exited ${r.code}: ${r.err}`);
    times.push(r.ms);
    peakKb = Math.max(peakKb, Number(/PEAK_RSS_KB (\d+)/.exec(r.err)?.[1] ?? 0));
    cpu.push(Number(/CPU_US (\d+)/.exec(r.err)?.[1] ?? 0) / 1000);
  }
  return { medianMs: median(times), maxMs: Math.max(...times), cpuMs: median(cpu), peakMb: peakKb / 1024 };
}

function rssMb(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

async function until(what, fn, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function hostpathIdle() {
  const dir = await mkdtemp(join(tmpdir(), 'kp-bench-startup-'));
  const procs = [];
  const start = (argv) => {
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const p = { child, out: '' };
    child.stdout.on('data', (d) => (p.out += d));
    child.stderr.on('data', (d) => (p.out += d));
    procs.push(p);
    return p;
  };
  try {
    // The cluster always runs from this checkout's build: only the provisioner is measured.
    const cluster = start([
      resolve('bin/kube-provisioner.js'),
      'cluster',
      '--data-dir',
      join(dir, 'cluster'),
      '--port',
      '0',
    ]);
    await until('the cluster', () => /ready at/.test(cluster.out));
    await mkdir(join(dir, 'shared'));
    await writeFile(join(dir, 'config.json'), JSON.stringify({ sharedFileSystemPath: join(dir, 'shared') }));
    const hp = start([
      BIN,
      'run',
      'hostpath',
      '--kubeconfig',
      join(dir, 'cluster', 'kubeconfig'),
      '--config',
      join(dir, 'config.json'),
      '--leader-election',
      'lease',
      '--leader-election-namespace',
      'default',
      '--health-address',
      '127.0.0.1:0',
      '--log-level',
      'warn',
    ]);
    const health = await until('the health URL', () => /health (http:\/\/[^/\s]+)\/healthz/.exec(hp.out)?.[1]);
    await until('leadership', async () => /is_leader\{[^}]*\} 1/.test(await (await fetch(`${health}/metrics`)).text()));
    await new Promise((r) => setTimeout(r, IDLE_MS));
    return { idleRssMb: rssMb(hp.child.pid) };
  } finally {
    for (const p of procs.reverse()) {
      p.child.kill('SIGTERM');
      await new Promise((r) => (p.child.exitCode !== null ? r() : p.child.once('exit', r)));
    }
    await rm(dir, { recursive: true, force: true });
  }
}

if (!existsSync(BIN)) throw new Error(`${BIN} does not exist (npm run build first?)`);
const help = await helpFigures();
const idle = await hostpathIdle();
console.log(
  `Command: node bench/startup.mjs ${args.join(' ')} (load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')})`,
);
console.log(
  '| build | --help median ms | --help max ms | --help median CPU ms | --help max RSS MB | run hostpath idle RSS MB (leader) |',
);
console.log('|---|---|---|---|---|---|');
console.log(
  `| ${LABEL} | ${help.medianMs.toFixed(0)} | ${help.maxMs.toFixed(0)} | ${help.cpuMs.toFixed(0)} | ${help.peakMb.toFixed(1)} | ${idle.idleRssMb.toFixed(1)} |`,
);
