// Benchmark of the embedded API server against the ceiling (bench/ceiling-server.ts: a bare Node HTTPS server
// doing only token check, JSON in and out, a Map and watch fan-out), side by side in one run: PV creates/s with
// 10 watchers and the watch p99 under that load (issue 21's targets: >= 0.8 x and <= 1.5 x the ceiling's), with 1
// watcher, with a client-node-style client, with SQLite, one create at a time (fan-out latency), a list of
// 10,000 PVs, and the RSS holding 5,000 PVs and 10,000 PVs + 10,000 PVCs. Every server and every load generator is
// a fresh child process; rounds alternate which server goes first; medians and per-round ratios are printed.
//   npm run bench:cluster                       (3 rounds of every scenario)
//   npm run bench:cluster -- --quick            (smaller counts, 1 round)
//   npm run bench:cluster -- --rounds 5 --only pipelined
//   npm run bench:cluster -- --profile DIR      (CPU profile of each server child into DIR, summarised)
//   npm run bench:cluster -- --count N          (N creates per measured task instead of 5,000: a longer profile)
//   npm run bench:cluster -- --source           (the cluster from src/ through tsx instead of the build)
//   npm run bench:cluster -- --baseline DIR     (also another build, DIR/dist, e.g. the tree before a change)
// The npm script builds dist/ first: the cluster is measured as `kube-provisioner cluster` runs it.
import { mkdir } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { formatProfile, summariseProfile } from './cpu-profile.ts';
import {
  compare,
  comparisonHeader,
  comparisonRows,
  medianRatio,
  type RoundResult,
  type Scenario,
} from './server-comparison.ts';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const quick = args.includes('--quick');
const rounds = Number(flag('--rounds') ?? (quick ? 1 : 3));
const only = flag('--only');
const profileDir = flag('--profile') ? resolve(flag('--profile')!) : undefined;
const fromSource = args.includes('--source');
const baselineDist = flag('--baseline') ? resolve(flag('--baseline')!, 'dist') : undefined;
const n = Number(flag('--count') ?? (quick ? 1000 : 5000));

/** The scenario whose figures are issue 21's targets. */
export const TARGET_SCENARIO = `PV creates, 4 connections x 16 pipelined, 10 watches, memory`;

/** The same requests first, unmeasured: both servers are measured once their JIT compilers have settled. */
const warmup = (watchers: number): Scenario['prefill'] => ({
  op: 'pipelined',
  count: quick ? 500 : 2000,
  concurrency: 16,
  watchers,
  prefix: 'warm',
});

const scenarios: Scenario[] = [
  {
    label: TARGET_SCENARIO,
    prefill: warmup(10),
    task: { op: 'pipelined', count: n, concurrency: 16, watchers: 10, prefix: 'pv' },
  },
  {
    label: 'PV creates, 4 connections x 16 pipelined, 1 watch, memory',
    prefill: warmup(1),
    task: { op: 'pipelined', count: n, concurrency: 16, watchers: 1, prefix: 'pv' },
  },
  {
    label: 'PV creates, https.Agent keep-alive 16 in flight, 10 watches, memory',
    prefill: warmup(10),
    task: { op: 'creates', count: n, concurrency: 16, watchers: 10, prefix: 'pv' },
  },
  {
    label: 'PV creates, 4 connections x 16 pipelined, 10 watches, cluster on SQLite',
    persistent: true,
    prefill: warmup(10),
    task: { op: 'pipelined', count: n, concurrency: 16, watchers: 10, prefix: 'pv' },
  },
  {
    label: 'one create at a time, 10 watches (fan-out latency)',
    prefill: warmup(10),
    task: { op: 'latency', count: quick ? 300 : 1000, concurrency: 1, watchers: 10, prefix: 'lat' },
  },
  {
    label: `list of ${quick ? '2,000' : '10,000'} PVs`,
    prefill: { op: 'fill', pvsOnly: true, count: quick ? 2000 : 10_000, concurrency: 16, watchers: 0, prefix: 'pv' },
    task: { op: 'list', count: 0, concurrency: 1, watchers: 0, prefix: '' },
  },
  {
    label: 'holding 5,000 PVs (server child)',
    memory: true,
    task: { op: 'fill', pvsOnly: true, count: 5000, concurrency: 16, watchers: 0, prefix: 'pv' },
  },
  {
    label: `holding ${quick ? '2,000 PVs + 2,000 PVCs' : '10,000 PVs + 10,000 PVCs'} (server child)`,
    memory: true,
    task: { op: 'fill', count: quick ? 4000 : 20_000, concurrency: 16, watchers: 0, prefix: 'obj' },
  },
];

async function main(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const started = loadavg()[0];
  const out: string[] = [
    `Command: npm run bench:cluster -- ${args.join(' ')} (cluster from ${fromSource ? 'src/ through tsx' : 'dist/'}${baselineDist ? `, baseline from ${baselineDist}` : ''}; ${cpus().length} cores, load average at start ${started.toFixed(1)})`,
    '',
    ...comparisonHeader(baselineDist !== undefined),
  ];
  const byLabel = new Map<string, RoundResult[]>();
  for (const s of scenarios) {
    if (only && !s.label.includes(only)) continue;
    const dir = profileDir ? join(profileDir, s.label.replace(/[^a-z0-9]+/gi, '-').toLowerCase()) : undefined;
    if (dir) await mkdir(dir, { recursive: true });
    const results = await compare(s, { rounds, profileDir: dir, fromSource, baselineDist, log });
    byLabel.set(s.label, results);
    out.push(
      ...comparisonRows(s.label, results, [
        'createsPerSec',
        'watchP50Ms',
        'watchP99Ms',
        'serverCpuMs',
        'listMedianMs',
        'rssMB',
        'heapUsedMB',
      ]),
    );
  }
  out.push('', `Load average at the end: ${loadavg()[0].toFixed(1)}`);
  const target = byLabel.get(TARGET_SCENARIO);
  if (target) {
    out.push('');
    for (const role of baselineDist ? (['cluster', 'baseline'] as const) : (['cluster'] as const)) {
      const creates = medianRatio(target, 'createsPerSec', role);
      const p99 = medianRatio(target, 'watchP99Ms', role);
      out.push(
        `Target (issue 21): ${role} PV creates/s >= 0.8 x ceiling: ${creates?.toFixed(2)} (${creates !== undefined && creates >= 0.8 ? 'met' : 'missed'})`,
        `Target (issue 21): ${role} watch p99 <= 1.5 x ceiling: ${p99?.toFixed(2)} (${p99 !== undefined && p99 <= 1.5 ? 'met' : 'missed'})`,
      );
    }
  }
  if (profileDir) {
    for (const s of scenarios) {
      if (!byLabel.has(s.label)) continue;
      const dir = join(profileDir, s.label.replace(/[^a-z0-9]+/gi, '-').toLowerCase());
      // The profile of the first round; the others are in the directory.
      for (const role of baselineDist ? ['cluster', 'baseline', 'ceiling'] : ['cluster', 'ceiling']) {
        out.push(
          '',
          ...formatProfile(
            `${role}, ${s.label}, round 1`,
            summariseProfile(join(dir, `${role}-round1.cpuprofile`), 15),
          ),
        );
      }
    }
  }
  console.log(out.join('\n'));
}

await main();
