// Where a CPU profile's time goes: reads one or more .cpuprofile files (node --cpu-prof; one per thread) and
// prints, as markdown, the self time by area (our folders, node's internals, dependencies, GC, idle) and the
// functions with the most self time. Used for the profiles in docs/benchmarks.md.
// Run: node --import tsx bench/profile-summary.ts FILE.cpuprofile [MORE.cpuprofile] [--top 25]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** The area a frame's time is counted under: a folder of ours, a dependency, node itself, or a V8 pseudo-frame. */
export function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    return `native: ${functionName || '(anonymous)'}`;
  }
  const ours = /\/(src|bench|dist)\/([^/]+)\/(?:([^/]+)\/)?/.exec(url);
  if (ours && !url.includes('/node_modules/')) {
    const [, , folder, sub] = ours;
    const top = folder === 'cluster' && sub && !sub.includes('.') ? `cluster/${sub}` : folder;
    return `ours: ${top}`;
  }
  const dep = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (dep) return `dependency: ${dep[1]}`;
  if (url.startsWith('node:')) {
    const mod = url
      .slice('node:'.length)
      .replace(/^internal\//, '')
      .split('/')[0];
    return `node: ${mod}`;
  }
  return `other: ${basename(url)}`;
}

function summarize(files: string[], top: number): string {
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let totalMs = 0;
  let wallMs = 0;
  for (const file of files) {
    const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
    wallMs = Math.max(wallMs, (p.endTime - p.startTime) / 1000);
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    // Self time per node from the sample stream (timeDeltas are µs before each sample), hitCount as a fallback.
    const selfUs = new Map<number, number>();
    if (p.samples && p.timeDeltas) {
      for (let i = 0; i < p.samples.length; i++) {
        const next = p.timeDeltas[i + 1] ?? 0;
        selfUs.set(p.samples[i], (selfUs.get(p.samples[i]) ?? 0) + Math.max(0, next));
      }
    } else {
      const interval =
        (p.endTime - p.startTime) /
        Math.max(
          1,
          p.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0),
        );
      for (const n of p.nodes) selfUs.set(n.id, (n.hitCount ?? 0) * interval);
    }
    for (const [id, us] of selfUs) {
      const n = byId.get(id);
      if (!n) continue;
      const ms = us / 1000;
      const { functionName, url, lineNumber } = n.callFrame;
      const area = areaOf(url, functionName);
      byArea.set(area, (byArea.get(area) ?? 0) + ms);
      const where = url ? `${url.replace(/^.*\/(src|bench|dist|node_modules)\//, '$1/')}:${lineNumber + 1}` : '';
      const key = `${functionName || '(anonymous)'}${where ? ` (${where})` : ''}`;
      byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
      totalMs += ms;
    }
  }
  const busyMs = totalMs - (byArea.get('idle') ?? 0);
  const pct = (ms: number, of: number) => `${((100 * ms) / of).toFixed(1)}%`;
  const lines = [
    `Profiles: ${files.map((f) => basename(f)).join(', ')}; ${(wallMs / 1000).toFixed(1)} s wall (longest), ` +
      `${(totalMs / 1000).toFixed(1)} s sampled, ${(busyMs / 1000).toFixed(1)} s busy (not idle), summed over the threads.`,
    '',
    '| area | self ms | share of busy |',
    '|---|---:|---:|',
  ];
  for (const [area, ms] of [...byArea]
    .filter(([a]) => a !== 'idle')
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    lines.push(`| ${area} | ${ms.toFixed(0)} | ${pct(ms, busyMs)} |`);
  }
  lines.push('', '| function (file:line) | self ms | share of busy |', '|---|---:|---:|');
  for (const [fn, ms] of [...byFunction]
    .filter(([f]) => !f.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)) {
    lines.push(`| ${fn.replace(/\|/g, '\\|')} | ${ms.toFixed(0)} | ${pct(ms, busyMs)} |`);
  }
  return lines.join('\n');
}

const argv = process.argv.slice(2);
const topAt = argv.indexOf('--top');
const topN = topAt >= 0 ? Number(argv[topAt + 1]) : 25;
const files = argv.filter((a, i) => a !== '--top' && (topAt < 0 || i !== topAt + 1));
if (files.length === 0) {
  console.error('usage: node --import tsx bench/profile-summary.ts FILE.cpuprofile [MORE.cpuprofile] [--top N]');
  process.exitCode = 2;
} else {
  console.log(summarize(files, topN));
}
