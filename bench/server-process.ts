// The server side of the API server benchmarks, one server per child process so that each is measured alone
// (RSS, CPU, a CPU profile of the measured window) and starts from a clean heap: either the embedded cluster (its
// controllers off, in memory or SQLite) or the ceiling server (ceiling-server.ts). The cluster runs as shipped,
// from the compiled dist/ (run `npm run build` first; the bench scripts do), unless `fromSource` asks for the
// sources through tsx, whose transform adds work per closure that the compiled code does not have. The parent
// talks to it over IPC: `ready` with the URL, then `stats` (RSS, heap, CPU), `heapSnapshot` and the profiler.
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { getHeapStatistics, writeHeapSnapshot } from 'node:v8';
import { ensureServingCertificates, randomToken } from '../src/cluster/http/tls.ts';
import { startCeilingServer } from './ceiling-server.ts';

/** Which server a child runs. */
export interface ServerSpec {
  kind: 'ceiling' | 'cluster';
  /** The cluster keeps its objects in SQLite under a temporary directory. */
  persistent?: boolean;
  /** Run the cluster from src/ through tsx instead of the compiled dist/. */
  fromSource?: boolean;
  /** Run the cluster compiled in another checkout's dist/ (a baseline measured side by side). */
  distDir?: string;
}

type EmbeddedClusterModule = typeof import('../src/cluster/embedded-cluster.ts');

/** The embedded cluster's module: compiled (this checkout's dist/, or `distDir`), or the sources. */
export async function loadCluster(
  spec: Pick<ServerSpec, 'fromSource' | 'distDir'> = {},
): Promise<EmbeddedClusterModule> {
  const url = spec.distDir
    ? pathToFileURL(resolve(spec.distDir, 'cluster/embedded-cluster.js'))
    : new URL(
        spec.fromSource ? '../src/cluster/embedded-cluster.ts' : '../dist/cluster/embedded-cluster.js',
        import.meta.url,
      );
  return (await import(url.href)) as EmbeddedClusterModule;
}

/** A running server child. */
export interface ServerChild {
  url: string;
  token: string;
  caPem: string;
  pid: number;
  stats(gc?: boolean): Promise<ServerStats>;
  heapSnapshot(path: string): Promise<void>;
  /** Starts the V8 CPU profiler in the child. */
  profileStart(): Promise<void>;
  /** Stops it and writes the .cpuprofile to `path`. */
  profileStop(path: string): Promise<void>;
  stop(): Promise<void>;
}

/** What a server child reports about itself. */
export interface ServerStats {
  rssBytes: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
  externalBytes: number;
  cpuMs: number;
  mallocedBytes: number;
}

type Request =
  | { type: 'stats'; gc?: boolean }
  | { type: 'heapSnapshot'; path: string }
  | { type: 'profileStart' }
  | { type: 'profileStop'; path: string }
  | { type: 'stop' };

/** Forks a server child; `execArgv` adds node flags. */
export function startServerChild(spec: ServerSpec, execArgv: string[] = []): Promise<ServerChild> {
  const child = fork(new URL(import.meta.url).pathname, ['--server', JSON.stringify(spec)], {
    execArgv: ['--expose-gc', '--import', 'tsx', ...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(req: Request): Promise<T> =>
    new Promise((resolve, reject) => {
      child.once('message', (m) => resolve(m as T));
      child.once('exit', () => reject(new Error(`server child exited during ${req.type}`)));
      child.send(req);
    });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('message', (m) => {
      const ready = m as { url: string; token: string; caPem: string };
      resolve({
        ...ready,
        pid: child.pid!,
        stats: (gc) => ask<ServerStats>({ type: 'stats', gc }),
        heapSnapshot: (path) => ask<void>({ type: 'heapSnapshot', path }),
        profileStart: () => ask<void>({ type: 'profileStart' }),
        profileStop: (path) => ask<void>({ type: 'profileStop', path }),
        stop: async () => {
          const exited = new Promise((r) => child.once('exit', r));
          child.send({ type: 'stop' });
          await exited;
        },
      });
    });
  });
}

async function serve(spec: ServerSpec): Promise<void> {
  let stop: () => Promise<void>;
  let ready: { url: string; token: string; caPem: string };
  if (spec.kind === 'ceiling') {
    const tls = await ensureServingCertificates(undefined, ['localhost']);
    const token = randomToken();
    const server = await startCeilingServer({ token, tls });
    ready = { url: server.url, token, caPem: tls.caPem };
    stop = () => server.close();
  } else {
    const dataDir = spec.persistent ? await mkdtemp(join(tmpdir(), 'kp-bench-')) : undefined;
    const { startEmbeddedCluster } = await loadCluster(spec);
    const cluster = await startEmbeddedCluster({ dataDir, controllers: false });
    ready = { url: cluster.url, token: cluster.token, caPem: cluster.caPem! };
    stop = async () => {
      await cluster.stop();
      if (dataDir) await rm(dataDir, { recursive: true, force: true });
    };
  }
  const session = new Session();
  session.connect();
  process.on('message', (m) => {
    const req = m as Request;
    if (req.type === 'profileStart') {
      void session
        .post('Profiler.enable')
        .then(() => session.post('Profiler.setSamplingInterval', { interval: 250 }))
        .then(() => session.post('Profiler.start'))
        .then(() => process.send!({}));
      return;
    }
    if (req.type === 'profileStop') {
      void session
        .post('Profiler.stop')
        .then(({ profile }) => writeFile(req.path, JSON.stringify(profile)))
        .then(() => process.send!({}));
      return;
    }
    if (req.type === 'stats') {
      if (req.gc) (globalThis as { gc?: () => void }).gc?.();
      const mem = process.memoryUsage();
      const cpu = process.cpuUsage();
      const stats: ServerStats = {
        rssBytes: mem.rss,
        heapUsedBytes: mem.heapUsed,
        heapTotalBytes: mem.heapTotal,
        externalBytes: mem.external,
        cpuMs: (cpu.user + cpu.system) / 1000,
        mallocedBytes: getHeapStatistics().malloced_memory,
      };
      process.send!(stats);
    } else if (req.type === 'heapSnapshot') {
      writeHeapSnapshot(req.path);
      process.send!({});
    } else if (req.type === 'stop') {
      void stop().then(() => process.exit(0));
    }
  });
  process.send!(ready);
}

const at = process.argv.indexOf('--server');
if (at > 0) await serve(JSON.parse(process.argv[at + 1]) as ServerSpec);
