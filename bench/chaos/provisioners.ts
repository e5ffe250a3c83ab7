// The provisioner replicas of a chaos run: N `kube-provisioner run hostpath` processes with the chaos preload,
// each logging (JSON) to its own file across restarts. Finds the Lease leader through each replica's metrics,
// kills replicas with SIGKILL, and restarts any replica that died (killed by us or by an injected crash).
import path from 'node:path';
import { startCli, stopProcess, waitUntil, type CliProcess } from './processes.ts';

export interface ProvisionerPoolOptions {
  count: number;
  kubeconfigPath: string;
  provisionerName: string;
  configFile: string;
  mode: 'lease' | 'per-claim';
  logDir: string;
  /** Chaos preload settings (KP_CHAOS_*), applied to starts while chaos is on. */
  chaosEnv: Record<string, string>;
  seed: number;
  /** Extra `run hostpath` flags. */
  extraArgs?: string[];
}

interface Replica {
  index: number;
  proc: CliProcess | undefined;
  healthUrl: string | undefined;
  starts: number;
  /** Stopped on purpose: not restarted by the watchdog until `restartAt`. */
  restartAt: number;
}

export class ProvisionerPool {
  readonly #replicas: Replica[];
  #chaos = true;
  #watchdog: NodeJS.Timeout | undefined;
  kills = 0;
  crashRestarts = 0;

  constructor(private readonly o: ProvisionerPoolOptions) {
    this.#replicas = Array.from({ length: o.count }, (_, index) => ({
      index,
      proc: undefined,
      healthUrl: undefined,
      starts: 0,
      restartAt: 0,
    }));
  }

  logFile(index: number): string {
    return path.join(this.o.logDir, `provisioner-${index}.log`);
  }

  logFiles(): string[] {
    return this.#replicas.map((r) => this.logFile(r.index));
  }

  #start(r: Replica): void {
    r.starts++;
    const args = [
      'run',
      'hostpath',
      '--kubeconfig',
      this.o.kubeconfigPath,
      '--provisioner-name',
      this.o.provisionerName,
      '--config',
      this.o.configFile,
      '--mode',
      'deployment',
      '--leader-election',
      this.o.mode,
      '--leader-election-namespace',
      'default',
      '--lease-duration',
      '4s',
      '--renew-deadline',
      '3s',
      '--retry-period',
      '1s',
      '--backoff-base',
      '200ms',
      '--backoff-max',
      '5s',
      '--volume-save-interval',
      '200ms',
      '--retry-interval-max',
      '10s',
      '--kube-api-qps',
      '200',
      '--kube-api-burst',
      '400',
      '--kube-api-timeout',
      '10s',
      '--leak-inventory',
      '--delete-leaked',
      '--leak-inventory-interval',
      '5s',
      '--leak-inventory-grace-period',
      '20s',
      '--health-address',
      '127.0.0.1:0',
      '--log-level',
      'info',
      ...(this.o.extraArgs ?? []),
    ];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      KP_CHAOS_SEED: String(this.o.seed * 1000 + r.index * 100 + r.starts),
    };
    if (this.#chaos) Object.assign(env, this.o.chaosEnv);
    r.proc = startCli(args, {
      env,
      logFile: this.logFile(r.index),
      nodeArgs: ['--import', './bench/chaos/preload.ts'],
      maxBuffered: 20_000,
    });
    r.healthUrl = undefined;
  }

  /** Starts every replica and a watchdog that restarts dead ones (after their planned pause). */
  start(): void {
    for (const r of this.#replicas) this.#start(r);
    this.#watchdog = setInterval(() => {
      const now = Date.now();
      for (const r of this.#replicas) {
        if (r.proc && !r.proc.done()) continue;
        if (now < r.restartAt) continue;
        if (r.restartAt === 0) this.crashRestarts++;
        r.restartAt = 0;
        this.#start(r);
      }
    }, 250);
  }

  async #health(r: Replica): Promise<string | undefined> {
    if (!r.proc || r.proc.done()) return undefined;
    r.healthUrl ??= /health (http:\/\/[^/\s]+)\/healthz/.exec(r.proc.stdout())?.[1];
    return r.healthUrl;
  }

  /** Replicas whose metrics say they lead (lease mode: at most one, unless a term is ending). */
  async leaders(): Promise<number[]> {
    const out: number[] = [];
    await Promise.all(
      this.#replicas.map(async (r) => {
        const url = await this.#health(r);
        if (!url) return;
        const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2_000) })
          .then((res) => res.text())
          .catch(() => '');
        if (/^controller_leader_election_is_leader\{[^}]*\} 1$/m.test(text)) out.push(r.index);
      }),
    );
    return out.sort();
  }

  /** Indexes of the replicas running now. */
  alive(): number[] {
    return this.#replicas.filter((r) => r.proc && !r.proc.done()).map((r) => r.index);
  }

  /** SIGKILL a replica; the watchdog restarts it after `pauseMs`. */
  async kill(index: number, pauseMs: number): Promise<void> {
    const r = this.#replicas[index];
    if (!r.proc || r.proc.done()) return;
    r.restartAt = Date.now() + Math.max(1, pauseMs);
    r.proc.child.kill('SIGKILL');
    await r.proc.exited;
    this.kills++;
  }

  /** SIGUSR2 to every replica (the preload turns its faults off); later starts get no chaos settings. */
  disableChaos(): void {
    this.#chaos = false;
    for (const r of this.#replicas) if (r.proc && !r.proc.done()) r.proc.child.kill('SIGUSR2');
  }

  /** Waits until every replica runs and answers its health endpoint. */
  async waitAllUp(timeoutMs = 60_000): Promise<void> {
    await waitUntil(
      'every provisioner replica up',
      async () => {
        for (const r of this.#replicas) {
          const url = await this.#health(r);
          if (!url) return false;
          const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) })
            .then((res) => res.ok)
            .catch(() => false);
          if (!ok) return false;
        }
        return true;
      },
      timeoutMs,
      250,
    );
  }

  /** Stops the watchdog and every replica (SIGTERM, graceful). */
  async stop(): Promise<void> {
    if (this.#watchdog) clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    await Promise.all(this.#replicas.map((r) => (r.proc ? stopProcess(r.proc, 10_000) : undefined)));
  }
}
