// Reads a V8 .cpuprofile and summarises where the time went: self time per function (name and file; line numbers
// are left out because tsx's transform does not keep them), the idle / GC shares, self time per source file, and
// the inclusive time of the project's own functions (time with the function anywhere on the stack). The benchmarks
// print it next to their figures, and docs/benchmarks.md quotes its top items before and after a change.
//   node --import tsx bench/cpu-profile.ts FILE.cpuprofile [--top 20]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time of one function in a profile. */
export interface ProfileEntry {
  name: string;
  where: string;
  selfMs: number;
  share: number;
}

/** The summary of one profile. */
export interface ProfileSummary {
  totalMs: number;
  idleShare: number;
  gcShare: number;
  functions: ProfileEntry[];
  files: ProfileEntry[];
  /** Functions under src/, by time with the function anywhere on the stack. */
  inclusive: ProfileEntry[];
}

function shortUrl(url: string): string {
  if (!url) return '';
  const at = Math.max(url.indexOf('/src/'), url.indexOf('/dist/'));
  if (at >= 0) return url.slice(at + 1);
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) return url.slice(nm + 1);
  return basename(url);
}

/** Summarises a .cpuprofile file. */
export function summariseProfile(path: string, top = 20): ProfileSummary {
  const p = JSON.parse(readFileSync(path, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<number, number>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = (p.timeDeltas[i] ?? 0) / 1000;
    total += dt;
    self.set(p.samples[i], (self.get(p.samples[i]) ?? 0) + dt);
  }
  const fns = new Map<string, ProfileEntry>();
  const files = new Map<string, ProfileEntry>();
  let idle = 0;
  let gc = 0;
  for (const [id, ms] of self) {
    const f = byId.get(id)!.callFrame;
    const name = f.functionName || '(anonymous)';
    if (name === '(idle)') idle += ms;
    if (name === '(garbage collector)') gc += ms;
    const where = shortUrl(f.url);
    const key = `${name} ${where}`;
    const e = fns.get(key) ?? { name, where, selfMs: 0, share: 0 };
    e.selfMs += ms;
    fns.set(key, e);
    const file = shortUrl(f.url) || name;
    const fe = files.get(file) ?? { name: file, where: '', selfMs: 0, share: 0 };
    fe.selfMs += ms;
    files.set(file, fe);
  }
  const inclusive = new Map<string, ProfileEntry>();
  for (const [id, ms] of self) {
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const f = byId.get(at)!.callFrame;
      if (!f.url.includes('/src/') && !f.url.includes('/dist/')) continue;
      const key = `${f.functionName || '(anonymous)'} ${shortUrl(f.url)}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const e = inclusive.get(key) ?? {
        name: f.functionName || '(anonymous)',
        where: shortUrl(f.url),
        selfMs: 0,
        share: 0,
      };
      e.selfMs += ms;
      inclusive.set(key, e);
    }
  }
  const ranked = (m: Map<string, ProfileEntry>) =>
    [...m.values()]
      .sort((a, b) => b.selfMs - a.selfMs)
      .slice(0, top)
      .map((e) => ({ ...e, selfMs: Math.round(e.selfMs), share: total ? e.selfMs / total : 0 }));
  return {
    totalMs: Math.round(total),
    idleShare: total ? idle / total : 0,
    gcShare: total ? gc / total : 0,
    functions: ranked(fns),
    files: ranked(files),
    inclusive: ranked(inclusive),
  };
}

/** The summary as markdown lines. */
export function formatProfile(title: string, s: ProfileSummary): string[] {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  return [
    `${title}: ${s.totalMs} ms sampled, idle ${pct(s.idleShare)}, GC ${pct(s.gcShare)}`,
    '',
    '| self | share | function | where |',
    '|---:|---:|---|---|',
    ...s.functions.map((e) => `| ${e.selfMs} ms | ${pct(e.share)} | ${e.name} | ${e.where} |`),
    '',
    '| self | share | file |',
    '|---:|---:|---|',
    ...s.files.slice(0, 12).map((e) => `| ${e.selfMs} ms | ${pct(e.share)} | ${e.name} |`),
    '',
    '| inclusive | share | project function | where |',
    '|---:|---:|---|---|',
    ...s.inclusive.map((e) => `| ${e.selfMs} ms | ${pct(e.share)} | ${e.name} | ${e.where} |`),
  ];
}

if (process.argv[1] && import.meta.url.endsWith(basename(process.argv[1]))) {
  const file = process.argv[2];
  if (!file) throw new Error('usage: bench/cpu-profile.ts FILE.cpuprofile [--top N]');
  const topAt = process.argv.indexOf('--top');
  console.log(
    formatProfile(basename(file), summariseProfile(file, topAt > 0 ? Number(process.argv[topAt + 1]) : 20)).join('\n'),
  );
}
