// CSI benchmark (`npm run bench:csi`): dev's setup (the embedded cluster on SQLite, the in-process hostpath
// provisioner as `dev` wires it, then `kube-provisioner run csi-hostpath-plugin` and `kube-provisioner run csi` with
// `dev --csi`'s flags, each a process of its own, so the sidecar's memory is its own), in one run:
// - N claims (default 1,000) Bound through the in-process hostpath provisioner, then N through the sidecar and the
//   plugin: claims/s of each and their ratio (target >= 0.5);
// - API requests per claim of each (the cluster's audit counter, by the client's User-Agent) and CSI calls per
//   claim of the sidecar (its csi_sidecar_operations_seconds counts);
// - the sidecar's RSS (/proc VmRSS, and its peak) at N and at V volumes (default 10,000; target <= 150 MB).
// Run: npm run build && node --import tsx bench/csi.ts [--claims 1000] [--volumes 10000] [--workers 16] [--concurrency 32] [--timeout-s 3600] [--tsx] [--sidecar-log-level info]
// (`npm run bench:csi` does both; --tsx runs the sidecar from the sources instead of dist/.)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedCluster } from '../src/cluster/embedded-cluster.ts';
import { localNodeName } from '../src/cluster/controllers/index.ts';
import { HOSTPATH_CSI_DRIVER } from '../src/cli/csi-hostpath-plugin.ts';
import { runDemo, type DemoResult } from '../src/cli/demo.ts';
import {
  devCsiConfig,
  devCsiSidecarArgs,
  devCsiStorageClasses,
  registerCsiDriver,
  DEV_CSI_CLASSES,
} from '../src/cli/dev-csi.ts';
import { devConfig, devStorageClasses, DEV_CLASSES } from '../src/cli/dev.ts';
import { startHostPathService } from '../src/cli/hostpath-service.ts';
import { DEFAULT_PROVISIONER_NAME } from '../src/cli/hostpath-options.ts';
import { userAgent } from '../src/cli/version.ts';
import { KubeClient } from '../src/runtime/client.ts';
import { loadKubeConfig } from '../src/runtime/kubeconfig.ts';
import { silentLogger } from '../src/runtime/logger.ts';
import { storageClasses } from '../src/runtime/resources.ts';

const argv = process.argv.slice(2);
const arg = (flag: string, fallback: number) => {
  const i = argv.indexOf(flag);
  const n = i >= 0 ? Number(argv[i + 1]) : fallback;
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag}: expected a positive integer`);
  return n;
};
const CLAIMS = arg('--claims', 1000);
const VOLUMES = Math.max(arg('--volumes', 10_000), CLAIMS);
const WORKERS = arg('--workers', 16);
const CONCURRENCY = arg('--concurrency', 32);
/** How long each phase may wait for its claims (a loaded machine binds a few claims per second). */
const TIMEOUT_S = arg('--timeout-s', 3600);
const TSX = argv.includes('--tsx');
const SIDECAR_LOG_LEVEL = argv.includes('--sidecar-log-level')
  ? argv[argv.indexOf('--sidecar-log-level') + 1]
  : 'error';
/** The audit counter's name for the sidecar: `run csi`'s User-Agent. */
const SIDECAR_CLIENT = userAgent('csi');
const COMMAND = `npm run bench:csi${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
const quiet = { write: () => {} };
const MB = 1024 * 1024;

type AuditLike = { records(): Iterable<{ client: string; count: number; verb: string; resource: string }> };

function requestsOf(audit: AuditLike, client: string): number {
  let n = 0;
  for (const r of audit.records()) if (r.client === client) n += r.count;
  return n;
}

/** Requests per claim by verb and resource (`get nodes 1.00, …`). */
function breakdown(audit: AuditLike, client: string, claims: number): string {
  const by = new Map<string, number>();
  for (const r of audit.records())
    if (r.client === client) by.set(`${r.verb} ${r.resource}`, (by.get(`${r.verb} ${r.resource}`) ?? 0) + r.count);
  return [...by]
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${(v / claims).toFixed(2)}`)
    .join(', ');
}

/** Resolves with the first stdout line of `child` that contains `marker`. */
function readyLine(child: ChildProcess, marker: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const line = out.split('\n').find((l) => l.includes(marker));
      if (line) resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`${child.spawnargs.slice(2, 5).join(' ')} exited (${code})`)));
  });
}

class SidecarChild {
  readonly ready: Promise<void>;
  private metricsUrl = '';
  constructor(readonly child: ChildProcess) {
    this.ready = readyLine(child, 'kube-provisioner run csi: driver ').then((line) => {
      this.metricsUrl = /metrics (\S+)/.exec(line)?.[1] ?? '';
    });
  }
  /** CSI calls so far by method, from the sidecar's csi_sidecar_operations_seconds_count. */
  async csiCalls(): Promise<Map<string, number>> {
    const text = await (await fetch(this.metricsUrl)).text();
    const out = new Map<string, number>();
    for (const m of text.matchAll(/^csi_sidecar_operations_seconds_count\{([^}]*)\} (\d+)/gm)) {
      const method = /method_name="[^"]*\/([^"/]+)"/.exec(m[1])?.[1] ?? '?';
      out.set(method, (out.get(method) ?? 0) + Number(m[2]));
    }
    return out;
  }
  /** VmRSS and VmHWM (peak) from /proc: what the process holds, no GC forced. */
  memory(): { rssBytes: number; peakBytes: number } {
    const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
    const kb = (field: string) =>
      Number(/^\S+:\s+(\d+) kB$/m.exec(status.split('\n').find((l) => l.startsWith(`${field}:`)) ?? '')?.[1] ?? NaN) *
      1024;
    return { rssBytes: kb('VmRSS'), peakBytes: kb('VmHWM') };
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-csi-'));
  const cluster = await startEmbeddedCluster({ dataDir, port: 0 });
  const kubeConfig = loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig;
  const creator = new KubeClient({ kubeConfig, qps: 0, userAgent: 'bench-csi-creator' });
  const nodeName = localNodeName();
  const lines: string[] = [];
  const out = (line: string) => {
    lines.push(line);
    process.stdout.write(`${line}\n`);
  };
  let sidecar: SidecarChild | undefined;
  let plugin: ChildProcess | undefined;
  try {
    // 1. The in-process hostpath provisioner, as dev runs it.
    const volumesDir = join(dataDir, 'volumes');
    for (const d of ['shared', 'local', 'csi-shared', 'csi-local']) mkdirSync(join(volumesDir, d), { recursive: true });
    const configFile = join(dataDir, 'hostpath-config.json');
    writeFileSync(configFile, JSON.stringify(devConfig(volumesDir)));
    for (const sc of devStorageClasses(DEFAULT_PROVISIONER_NAME)) await creator.create(storageClasses, sc);
    const hostpathClient = new KubeClient({ kubeConfig, qps: 0, userAgent: 'bench-hostpath' });
    const stopHostpath = new AbortController();
    const service = await startHostPathService(
      {
        client: hostpathClient,
        provisionerName: DEFAULT_PROVISIONER_NAME,
        mode: 'deployment',
        nodeName,
        config: { file: configFile },
        freeSpaceCapacity: true,
        controller: { leaderElection: { mode: 'none' }, threadiness: WORKERS, shutdownTimeoutMs: 3000 },
        volumeUsageIntervalMs: 0,
        logger: silentLogger,
      },
      stopHostpath.signal,
    );
    const demo = { client: creator, timeoutMs: TIMEOUT_S * 1000, progress: quiet, concurrency: CONCURRENCY };
    const hp = await runDemo({ ...demo, count: CLAIMS, storageClassName: DEV_CLASSES.shared });
    const hpRequests = requestsOf(cluster.audit, 'bench-hostpath');
    stopHostpath.abort();
    await service.done;
    hostpathClient.close();

    // 2. The reference plugin and the sidecar, each a process of its own (`kube-provisioner run csi-hostpath-plugin`,
    // `kube-provisioner run csi`), from dist/ (`npm run build` runs first) as the installed command runs; --tsx runs
    // the sources instead. In one process with the SQLite cluster, the plugin's replies waited behind the cluster's
    // synchronous writes during a burst of creates, past the sidecar's 10 s deadline.
    const main = TSX
      ? ['--import', 'tsx', fileURLToPath(new URL('../src/cli/main.ts', import.meta.url))]
      : [fileURLToPath(new URL('../bin/kube-provisioner.js', import.meta.url))];
    const pluginConfig = join(dataDir, 'csi-hostpath-config.json');
    writeFileSync(pluginConfig, JSON.stringify(devCsiConfig(volumesDir)));
    const endpoint = `unix://${join(dataDir, 'csi', 'csi.sock')}`;
    plugin = spawn(
      process.execPath,
      [
        ...main,
        'run',
        'csi-hostpath-plugin',
        '--endpoint',
        endpoint,
        '--config',
        pluginConfig,
        '--node-name',
        nodeName,
        '--log-level',
        'warn',
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await readyLine(plugin, 'listening on ');
    await registerCsiDriver(creator, HOSTPATH_CSI_DRIVER, nodeName);
    for (const sc of devCsiStorageClasses(HOSTPATH_CSI_DRIVER)) await creator.create(storageClasses, sc);
    sidecar = new SidecarChild(
      spawn(
        process.execPath,
        [
          ...main,
          'run',
          'csi',
          '--kubeconfig',
          cluster.kubeconfigPath,
          ...devCsiSidecarArgs(endpoint, WORKERS),
          '--metrics-address',
          '127.0.0.1:0',
          '--log-level',
          SIDECAR_LOG_LEVEL,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      ),
    );
    await sidecar.ready;
    const startupCalls = await sidecar.csiCalls();
    const csi: DemoResult = await runDemo({ ...demo, count: CLAIMS, storageClassName: DEV_CSI_CLASSES.shared });
    const csiRequests = requestsOf(cluster.audit, SIDECAR_CLIENT);
    const rssAtClaims = sidecar.memory();
    const perClaimCalls = [...(await sidecar.csiCalls())]
      .map(([k, v]) => [k, v - (startupCalls.get(k) ?? 0)] as const)
      .filter(([, v]) => v > 0);

    const ratio = hp.claimsPerSecond > 0 ? csi.claimsPerSecond / hp.claimsPerSecond : 0;
    const mark = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    out(`# CSI benchmark (${COMMAND}); ${WORKERS} workers each, ${CONCURRENCY} creates in flight`);
    out(
      `in-process hostpath: ${hp.bound}/${CLAIMS} Bound in ${(hp.elapsedMs / 1000).toFixed(1)} s, ${hp.claimsPerSecond.toFixed(1)} claims/s, p50 ${Math.round(hp.p50Ms)} ms, p99 ${Math.round(hp.p99Ms)} ms`,
    );
    out(
      `CSI (run csi + run csi-hostpath-plugin, one process each): ${csi.bound}/${CLAIMS} Bound in ${(csi.elapsedMs / 1000).toFixed(1)} s, ${csi.claimsPerSecond.toFixed(1)} claims/s, p50 ${Math.round(csi.p50Ms)} ms, p99 ${Math.round(csi.p99Ms)} ms`,
    );
    out(`${mark(ratio >= 0.5)} CSI / in-process claims/s ratio ${ratio.toFixed(2)} (target >= 0.5)`);
    out(
      `API requests per claim: in-process hostpath ${(hpRequests / CLAIMS).toFixed(2)}, CSI sidecar ${(csiRequests / CLAIMS).toFixed(2)} (start-up included)`,
    );
    out(`  in-process hostpath: ${breakdown(cluster.audit, 'bench-hostpath', CLAIMS)}`);
    out(`  CSI sidecar: ${breakdown(cluster.audit, SIDECAR_CLIENT, CLAIMS)}`);
    out(`CSI calls per claim: ${perClaimCalls.map(([k, v]) => `${k} ${(v / CLAIMS).toFixed(2)}`).join(', ')}`);
    out(
      `sidecar RSS at ${CLAIMS} volumes: ${(rssAtClaims.rssBytes / MB).toFixed(1)} MB (peak ${(rssAtClaims.peakBytes / MB).toFixed(1)} MB)${TSX ? ' (sources through tsx)' : ''}`,
    );

    // 3. Up to V volumes through the sidecar, then its memory.
    if (VOLUMES > CLAIMS) {
      const more = await runDemo({ ...demo, count: VOLUMES - CLAIMS, storageClassName: DEV_CSI_CLASSES.shared });
      if (more.bound < VOLUMES - CLAIMS) out(`(only ${more.bound + CLAIMS} of ${VOLUMES} volumes Bound)`);
      const rss = sidecar.memory();
      out(
        `${mark(rss.rssBytes <= 150 * MB)} sidecar RSS with ${more.bound + csi.bound} volumes: ${(rss.rssBytes / MB).toFixed(1)} MB, peak ${(rss.peakBytes / MB).toFixed(1)} MB (target <= 150 MB)${TSX ? ' (sources through tsx)' : ''}`,
      );
    }
  } finally {
    sidecar?.child.kill('SIGKILL');
    plugin?.kill('SIGKILL');
    creator.close();
    await cluster.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
