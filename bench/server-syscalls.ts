// What a PV create costs each server in CPU, write system calls and bytes written (Linux /proc/PID/io), for the
// target scenario of bench:cluster (4 connections x 16 pipelined creates, 10 watches): where `serverCpuMs` says
// how much, this says whether the difference is in the number of writes, their size, or the work around them.
// Servers run one after another, in the order given, each in a fresh child after a warm-up of 2,000 creates:
//   node --expose-gc --import tsx bench/server-syscalls.ts [--count N] [--watches N] ceiling cluster DIR ...
// `cluster` is this checkout's dist/ (run `npm run build` first), DIR another checkout's build (DIR/dist). Repeat
// the names (`ceiling cluster DIR ceiling cluster DIR`) for rounds; the machine's load changes between servers.
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { runLoadInChild } from './load-client.ts';
import { startServerChild, type ServerSpec } from './server-process.ts';

const args = process.argv.slice(2);
const flag = (name: string): string | undefined => {
  const i = args.indexOf(name);
  if (i < 0) return undefined;
  const value = args[i + 1];
  args.splice(i, 2);
  return value;
};
const count = Number(flag('--count') ?? 20_000);
const watchers = Number(flag('--watches') ?? 10);
if (args.length === 0) throw new Error('name the servers to measure: ceiling, cluster or a checkout directory');

/** Write/read system calls and bytes written by a process so far. */
function io(pid: number): { syscw: number; wchar: number } {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const get = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(text)?.[1]);
  return { syscw: get('syscw'), wchar: get('wchar') };
}

/** CPU ms of this process's children that have exited (the load clients): utime + stime of /proc/self/stat. */
function exitedChildrenCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

console.log(`${count} creates per server, ${watchers} watches; load average ${loadavg()[0].toFixed(1)}`);
for (const name of args) {
  const spec: ServerSpec =
    name === 'ceiling'
      ? { kind: 'ceiling' }
      : { kind: 'cluster', distDir: name === 'cluster' ? undefined : resolve(name, 'dist') };
  const server = await startServerChild(spec);
  try {
    const address = { url: server.url, token: server.token, caPem: server.caPem };
    await runLoadInChild({ ...address, op: 'pipelined', count: 2000, concurrency: 16, watchers, prefix: 'warm' });
    const ioBefore = io(server.pid);
    const cpuBefore = (await server.stats()).cpuMs;
    const clientBefore = exitedChildrenCpuMs();
    const r = await runLoadInChild({ ...address, op: 'pipelined', count, concurrency: 16, watchers, prefix: 'pv' });
    const cpu = (await server.stats()).cpuMs - cpuBefore;
    const client = exitedChildrenCpuMs() - clientBefore;
    const ioAfter = io(server.pid);
    const per = (x: number, digits: number) => (x / count).toFixed(digits);
    console.log(
      `${name}: ${r.createsPerSec} creates/s, server CPU ${per(cpu * 1000, 1)} us/create, ` +
        `${per(ioAfter.syscw - ioBefore.syscw, 2)} write calls/create, ${per(ioAfter.wchar - ioBefore.wchar, 0)} bytes/create, ` +
        `watch p99 ${r.watchP99Ms} ms, load client CPU ${per(client * 1000, 1)} us/create (load ${loadavg()[0].toFixed(1)})`,
    );
  } finally {
    await server.stop();
  }
}
