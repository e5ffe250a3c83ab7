// Side-by-side runs of the ceiling server and the embedded cluster under the same load, shared by bench:cluster
// and bench:scale. Each round starts a fresh server child of each kind (alternating which goes first, so a drift
// in the machine's load falls on both), runs the same load task against it from a fresh client child, and keeps
// both results; the figures printed are medians over the rounds and the median of the per-round ratios.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { runLoadInChild, type LoadResult, type LoadTask } from './load-client.ts';
import { startServerChild, type ServerChild, type ServerSpec, type ServerStats } from './server-process.ts';

/** One scenario: a load task (without the server's address) and what to run before it on each server. */
export interface Scenario {
  label: string;
  task: Omit<LoadTask, 'url' | 'token' | 'caPem'>;
  /** Objects created before the measured task (not measured), e.g. a warm-up of the same requests so that both servers are measured after their JIT compilers settled. */
  prefill?: Omit<LoadTask, 'url' | 'token' | 'caPem'>;
  /** The cluster's storage (the ceiling always keeps a Map). */
  persistent?: boolean;
  /** Also report each server's RSS / heap after the task (after a forced GC). */
  memory?: boolean;
}

/** One server's figures in one round. */
export type Figures = LoadResult & { rssMB?: number; heapUsedMB?: number; serverCpuMs?: number };

/** Every server's figures in one round (the baseline only with a baseline build). */
export interface RoundResult {
  ceiling: Figures;
  cluster: Figures;
  baseline?: Figures;
}

/** The servers a round runs: the ceiling, this checkout's cluster, and optionally another build of it. */
export type ServerRole = keyof RoundResult;

/** How to run the rounds. */
export interface ComparisonOptions {
  rounds: number;
  /** Write a CPU profile of each server during the measured task (not the prefill) to DIR/KIND-roundN.cpuprofile. */
  profileDir?: string;
  /** Run the cluster from src/ through tsx instead of dist/. */
  fromSource?: boolean;
  /** Another build's dist/ (e.g. the code before a change), run as a third server in every round. */
  baselineDist?: string;
  /** Called after each server's run, before it stops (e.g. for a heap snapshot). */
  inspect?: (role: ServerRole, server: ServerChild, round: number) => Promise<void>;
  log?: (line: string) => void;
}

async function runOn(
  role: ServerRole,
  spec: ServerSpec,
  s: Scenario,
  round: number,
  o: ComparisonOptions,
): Promise<Figures> {
  const server = await startServerChild(spec);
  try {
    const address = { url: server.url, token: server.token, caPem: server.caPem };
    if (s.prefill) await runLoadInChild({ ...address, ...s.prefill });
    if (o.profileDir) await server.profileStart();
    const before: ServerStats = await server.stats();
    const result: Figures = await runLoadInChild({ ...address, ...s.task });
    const after = await server.stats(s.memory);
    if (o.profileDir) await server.profileStop(join(o.profileDir, `${role}-round${round + 1}.cpuprofile`));
    result.serverCpuMs = Math.round(after.cpuMs - before.cpuMs);
    if (s.memory) {
      result.rssMB = Math.round(after.rssBytes / 1e6);
      result.heapUsedMB = Math.round(after.heapUsedBytes / 1e6);
    }
    await o.inspect?.(role, server, round);
    return result;
  } finally {
    await server.stop();
  }
}

/** Runs a scenario `rounds` times on both servers. */
export async function compare(s: Scenario, o: ComparisonOptions): Promise<RoundResult[]> {
  const rounds: RoundResult[] = [];
  const roles: ServerRole[] = o.baselineDist ? ['ceiling', 'cluster', 'baseline'] : ['ceiling', 'cluster'];
  for (let i = 0; i < o.rounds; i++) {
    // Each round starts with a different server, so a change in the machine's load does not fall on one of them.
    const order = [...roles.slice(i % roles.length), ...roles.slice(0, i % roles.length)];
    const r: Partial<RoundResult> = {};
    for (const role of order) {
      const spec: ServerSpec =
        role === 'ceiling'
          ? { kind: 'ceiling' }
          : {
              kind: 'cluster',
              persistent: s.persistent,
              fromSource: o.fromSource,
              distDir: role === 'baseline' ? o.baselineDist : undefined,
            };
      r[role] = await runOn(role, spec, s, i, o);
    }
    rounds.push(r as RoundResult);
    o.log?.(
      `  ${s.label}, round ${i + 1}/${o.rounds} (load ${loadavg()[0].toFixed(1)}): ${roles.map((role) => `${role} ${fmt(r[role]!)}`).join(' | ')}`,
    );
  }
  return rounds;
}

function fmt(f: Figures): string {
  return Object.entries(f)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
}

/** The median of some numbers (the lower middle for an even count). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}

/** Median over rounds of one figure for one server, undefined when it was not measured. */
export function medianOf(rounds: RoundResult[], role: ServerRole, key: keyof Figures): number | undefined {
  const xs = rounds.map((r) => r[role]?.[key]).filter((v): v is number => typeof v === 'number');
  return xs.length ? median(xs) : undefined;
}

/** Each round's ratio of one figure, `role` over the ceiling (measured side by side in that round). */
export function ratios(rounds: RoundResult[], key: keyof Figures, role: ServerRole = 'cluster'): number[] {
  return rounds
    .map((r) => [r[role]?.[key], r.ceiling[key]])
    .filter((p): p is [number, number] => typeof p[0] === 'number' && typeof p[1] === 'number' && p[1] !== 0)
    .map(([a, b]) => a / b);
}

/** Median over rounds of `role`/ceiling for one figure. */
export function medianRatio(
  rounds: RoundResult[],
  key: keyof Figures,
  role: ServerRole = 'cluster',
): number | undefined {
  const xs = ratios(rounds, key, role);
  return xs.length ? median(xs) : undefined;
}

const ratioCell = (xs: number[]) =>
  xs.length ? `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})` : '';

/** A markdown row per figure: medians of each server, and the median (range) of the per-round ratios to the ceiling. */
export function comparisonRows(label: string, rounds: RoundResult[], keys: Array<keyof Figures>): string[] {
  const withBaseline = rounds.some((r) => r.baseline);
  const rows: string[] = [];
  for (const key of keys) {
    const c = medianOf(rounds, 'ceiling', key);
    const k = medianOf(rounds, 'cluster', key);
    if (c === undefined && k === undefined) continue;
    const cells = [label, String(key), String(c ?? ''), String(k ?? ''), ratioCell(ratios(rounds, key))];
    if (withBaseline)
      cells.push(String(medianOf(rounds, 'baseline', key) ?? ''), ratioCell(ratios(rounds, key, 'baseline')));
    rows.push(`| ${cells.join(' | ')} |`);
  }
  return rows;
}

/** The header of comparisonRows' table. */
export function comparisonHeader(withBaseline: boolean): string[] {
  const cols = [
    'scenario',
    'figure',
    'ceiling (median)',
    'cluster (median)',
    'cluster / ceiling: median of rounds (range)',
  ];
  if (withBaseline) cols.push('baseline (median)', 'baseline / ceiling: median (range)');
  return [`| ${cols.join(' | ')} |`, `|${cols.map((_, i) => (i < 2 ? '---' : '---:')).join('|')}|`];
}
