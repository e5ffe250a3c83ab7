// Assembles a running embedded cluster: store (in memory, or SQLite under dataDir), TLS material, bearer
// token, HTTPS API server, kubeconfig file, the default namespaces, and the cluster's own controllers.
// Used by `kube-provisioner cluster` and by the public test harness (src/testing).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeObject } from '../types/k8s.ts';
import { Audit } from './http/audit.ts';
import { ClusterApiError } from './common/api-errors.ts';
import { Faults } from './http/faults.ts';
import { openSqliteBackend } from './storage/persistence.ts';
import type { SqliteDriverName } from './storage/sqlite.ts';
import { resolveLimits, type ServerLimits } from './http/request-limits.ts';
import { startApiServer, type ApiServer } from './http/api-server.ts';
import { ClusterStore } from './writes/cluster-store.ts';
import { buildKubeconfig, ensureServingCertificates } from './http/tls.ts';
import {
  startClusterControllers,
  type ClusterControllers,
  type ClusterControllersOptions,
} from './controllers/index.ts';

export interface EmbeddedClusterOptions {
  /** Keep objects (SQLite), certificates, token and kubeconfig here; without it, everything is in memory. */
  dataDir?: string;
  /** Default 0 (a free port). */
  port?: number;
  /** Bind address, default 127.0.0.1. */
  host?: string;
  /** Serve plain HTTP (debugging only). */
  insecureHttp?: boolean;
  /**
   * Run the cluster's controllers (PV binder, protection, default class, scheduler stand-in); default true. The
   * object form sets their resync period and a counter of the cached objects they examine.
   */
  controllers?: boolean | Pick<ClusterControllersOptions, 'resyncMs' | 'readCounter'>;
  /** Watch cache events retained per resource (default 10,000). */
  watchCacheSize?: number;
  /** BOOKMARK interval (default 60 s). */
  bookmarkIntervalMs?: number;
  /** Called with unexpected server errors. */
  onError?: (err: unknown) => void;
  /** Events older than this (by their last timestamp) are deleted, like kube-apiserver's --event-ttl (default 1 h). */
  eventTtlMs?: number;
  /** Bounds on what clients can make the cluster hold (defaults in request-limits.ts). */
  limits?: Partial<ServerLimits>;
}

export interface EmbeddedCluster {
  url: string;
  kubeconfigPath: string;
  token: string;
  /** PEM of the CA that signed the serving certificate (undefined with insecureHttp). */
  caPem: string | undefined;
  store: ClusterStore;
  faults: Faults;
  audit: Audit;
  server: ApiServer;
  /** The cluster's own controllers (undefined with controllers: false). */
  controllers: ClusterControllers | undefined;
  /**
   * Where the objects are kept: SQLite under dataDir, or memory (no dataDir; or no SQLite driver could be loaded,
   * `unavailable` says why, and nothing is kept across a restart).
   */
  persistence: { kind: 'sqlite'; driver: SqliteDriverName } | { kind: 'memory'; unavailable?: string };
  /** Stops controllers and server, ends watches, closes the database, removes temporary files. */
  stop(): Promise<void>;
}

/** Namespaces every cluster starts with. */
export const DEFAULT_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** The last time an Event was recorded: the newest of its timestamps. */
function eventLastSeen(obj: KubeObject): number {
  const series = obj.series as { lastObservedTime?: string } | undefined;
  const stamps = [obj.lastTimestamp, obj.eventTime, series?.lastObservedTime, obj.metadata.creationTimestamp];
  let latest = 0;
  for (const s of stamps) if (typeof s === 'string') latest = Math.max(latest, Date.parse(s) || 0);
  return latest;
}

/**
 * Deletes expired Events every minute (and once at start, for a restarted cluster). The store queues each Event by
 * when it was last seen, so a sweep reads only the expired ones.
 */
function startEventExpiry(store: ClusterStore, ttlMs: number): () => void {
  store.trackExpiry('events', eventLastSeen);
  const sweep = () => {
    for (const e of store.takeExpired('events', Date.now() - ttlMs)) {
      const { namespace, name } = e.obj.metadata;
      try {
        store.deleteEntry('events', namespace, name!);
      } catch {
        // already gone
      }
    }
  };
  sweep();
  const timer = setInterval(sweep, Math.min(60_000, ttlMs));
  timer.unref();
  return () => clearInterval(timer);
}

async function readOrCreateToken(dataDir: string | undefined): Promise<string> {
  const fresh = randomBytes(32).toString('base64url');
  if (!dataDir) return fresh;
  const file = join(dataDir, 'token');
  try {
    const existing = (await readFile(file, 'utf8')).trim();
    if (existing) return existing;
  } catch {
    // first start: fall through and write a new token
  }
  await writeFile(file, `${fresh}\n`, { mode: 0o600 });
  return fresh;
}

function ensureNamespaces(store: ClusterStore): void {
  for (const name of DEFAULT_NAMESPACES) {
    if (store.getEntry('namespaces', undefined, name)) continue;
    try {
      store.createEntry('namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    } catch (err) {
      if (!(err instanceof ClusterApiError && err.code === 409)) throw err;
    }
  }
}

/** Starts an embedded cluster and resolves once it serves. */
export async function startEmbeddedCluster(opts: EmbeddedClusterOptions = {}): Promise<EmbeddedCluster> {
  const host = opts.host ?? '127.0.0.1';
  const dataDir = opts.dataDir;
  const limits = resolveLimits(opts.limits);
  if (dataDir) {
    // The data dir holds every Secret, the token and the CA key: owner only, also when an older version made it.
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700);
  }
  const workDir = dataDir ?? (await mkdtemp(join(tmpdir(), 'kube-provisioner-cluster-')));
  const sqlite = dataDir ? openSqliteBackend(join(dataDir, 'cluster.db')) : undefined;
  const persistence: EmbeddedCluster['persistence'] = sqlite?.backend
    ? { kind: 'sqlite', driver: sqlite.driver }
    : { kind: 'memory', ...(sqlite ? { unavailable: sqlite.unavailable } : {}) };
  const store = new ClusterStore({
    backend: sqlite?.backend,
    watchCacheSize: opts.watchCacheSize,
    onWatcherError: opts.onError,
    limits: { maxObjectBytes: limits.maxObjectBytes, maxJsonDepth: limits.maxJsonDepth },
  });
  const cleanups: Array<() => Promise<void> | void> = [() => store.close()];
  if (!dataDir) cleanups.push(() => rm(workDir, { recursive: true, force: true }));
  const runCleanups = async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  try {
    ensureNamespaces(store);
    cleanups.push(startEventExpiry(store, opts.eventTtlMs ?? 3_600_000));
    const token = await readOrCreateToken(dataDir);
    const clientHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
    const tls = opts.insecureHttp
      ? undefined
      : await ensureServingCertificates(dataDir ? join(dataDir, 'pki') : undefined, [
          ...new Set([clientHost, 'localhost', '127.0.0.1']),
        ]);
    const faults = new Faults();
    const audit = new Audit({ maxClients: limits.maxAuditClients, maxClientNameLength: limits.maxClientNameLength });
    const server = await startApiServer({
      store,
      token,
      host,
      port: opts.port,
      tls,
      faults,
      audit,
      bookmarkIntervalMs: opts.bookmarkIntervalMs,
      onError: opts.onError,
      limits,
    });
    cleanups.push(() => server.close());
    const url = `${opts.insecureHttp ? 'http' : 'https'}://${clientHost.includes(':') ? `[${clientHost}]` : clientHost}:${server.port}`;
    const kubeconfigPath = join(workDir, 'kubeconfig');
    await writeFile(
      kubeconfigPath,
      buildKubeconfig({ server: url, caPem: tls?.caPem, token, insecure: opts.insecureHttp }),
      { mode: 0o600 },
    );
    let controllers: ClusterControllers | undefined;
    if (opts.controllers !== false) {
      controllers = startClusterControllers(store, typeof opts.controllers === 'object' ? opts.controllers : {});
      cleanups.push(() => controllers!.stop());
    }
    let stopping: Promise<void> | undefined;
    return {
      url,
      kubeconfigPath,
      token,
      caPem: tls?.caPem,
      store,
      faults,
      audit,
      server,
      controllers,
      persistence,
      stop: () => (stopping ??= runCleanups()),
    };
  } catch (err) {
    await runCleanups();
    throw err;
  }
}
