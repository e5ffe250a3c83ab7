// The embedded cluster as a separate `kube-provisioner cluster` process on a fixed data dir and port, so it can
// be killed and restarted under the provisioners (same URL, CA and token: their kubeconfig stays valid). Also
// the authenticated admin endpoints (faults, close-watches, compact, audit), with audit counters summed across
// restarts (each process starts from zero).
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { startCli, stopProcess, waitUntil, type CliProcess } from './processes.ts';

/** A free TCP port on 127.0.0.1 (the cluster keeps it across restarts). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export interface AuditTotal {
  verb: string;
  resource: string;
  code: number;
  count: number;
}

export class ClusterProcess {
  readonly kubeconfigPath: string;
  #proc: CliProcess | undefined;
  #ca: Buffer | undefined;
  #token = '';
  #url = '';
  /** `verb resource code` -> count, from the processes already stopped. */
  readonly #audit = new Map<string, AuditTotal>();
  restarts = 0;

  constructor(
    readonly dataDir: string,
    readonly port: number,
    private readonly logFile: string,
  ) {
    this.kubeconfigPath = path.join(dataDir, 'kubeconfig');
  }

  get url(): string {
    return this.#url;
  }

  get running(): boolean {
    return this.#proc !== undefined && !this.#proc.done();
  }

  /** Starts the process and waits until it serves. */
  async start(): Promise<void> {
    const proc = startCli(['cluster', '--data-dir', this.dataDir, '--port', String(this.port)], {
      logFile: this.logFile,
    });
    this.#proc = proc;
    this.#url = await waitUntil(
      'the cluster to be ready',
      () => {
        if (proc.done()) throw new Error(`cluster exited: ${proc.stderr().slice(-2000)}`);
        return /ready at (https:\/\/\S+)/.exec(proc.stdout())?.[1];
      },
      60_000,
    );
    if (!this.#ca) {
      const { kubeConfig } = loadKubeConfig({ path: this.kubeconfigPath });
      this.#ca = Buffer.from(kubeConfig.getCurrentCluster()?.caData ?? '', 'base64');
      this.#token = kubeConfig.getCurrentUser()?.token ?? '';
    }
  }

  /** Stops it (SIGTERM: graceful; SIGKILL: crash), first saving its audit counters when it still answers. */
  async stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const proc = this.#proc;
    if (!proc || proc.done()) return;
    await this.collectAudit().catch(() => {});
    if (signal === 'SIGKILL') {
      proc.child.kill('SIGKILL');
      await proc.exited;
    } else {
      await stopProcess(proc, 15_000);
    }
  }

  /** Stops and starts it again (up to 3 start attempts: a start can fail while the tree is being edited). */
  async restart(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    await this.stop(signal);
    this.restarts++;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.start();
        return;
      } catch (err) {
        if (attempt >= 3) throw err;
        await new Promise((r) => setTimeout(r, 5_000));
      }
    }
  }

  /** One admin request; resolves with the parsed JSON answer. */
  admin<T = unknown>(method: string, pathname: string, body?: unknown): Promise<T> {
    const url = new URL(pathname, this.#url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = https.request(
        url,
        {
          method,
          ca: this.#ca,
          agent: false,
          timeout: 10_000,
          headers: {
            Authorization: `Bearer ${this.#token}`,
            'X-Client-Name': 'chaos-harness-admin',
            ...(payload ? { 'Content-Type': 'application/json' } : {}),
          },
        },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            if ((res.statusCode ?? 0) >= 300)
              reject(new Error(`${method} ${pathname}: ${res.statusCode} ${text.slice(0, 300)}`));
            else resolve(JSON.parse(text) as T);
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${pathname}: timeout`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Adds the running process's audit counters to the totals and resets them there. */
  async collectAudit(): Promise<void> {
    const { items } = await this.admin<{
      items: Array<{ client: string; verb: string; resource: string; code: number; count: number }>;
    }>('GET', '/admin/audit');
    await this.admin('DELETE', '/admin/audit');
    for (const r of items) {
      if (r.client === 'chaos-harness-admin') continue;
      const key = `${r.verb} ${r.resource} ${r.code}`;
      const t = this.#audit.get(key) ?? { verb: r.verb, resource: r.resource, code: r.code, count: 0 };
      t.count += r.count;
      this.#audit.set(key, t);
    }
  }

  auditTotals(): AuditTotal[] {
    return [...this.#audit.values()];
  }

  get proc(): CliProcess | undefined {
    return this.#proc;
  }
}
