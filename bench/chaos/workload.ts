// The chaos run's tenants: claims created at a steady rate and deleted after a seeded random lifetime (some
// never), through the same faulty API as the provisioners. Every write is retried until it sticks (an
// AlreadyExists on create or a NotFound on delete means an earlier attempt did), so the harness always knows
// which claims exist. A periodic list notes which claims were seen Bound (for the Retain invariant).
import { KubeClient } from '../../src/runtime/client.ts';
import { AlreadyExistsError, NotFoundError } from '../../src/runtime/status-errors.ts';
import { persistentVolumeClaims } from '../../src/runtime/resources.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';
import type { Prng } from './prng.ts';

export const NAMESPACE = 'chaos';
export const DELETE_CLASS = 'chaos-delete';
export const RETAIN_CLASS = 'chaos-retain';

export interface ClaimRecord {
  name: string;
  className: string;
  uid?: string;
  createdAt?: number;
  /** Planned deletion time (epoch ms); undefined = the claim survives the run. */
  deleteAt?: number;
  deleted: boolean;
  /** The PV it was seen Bound to, if ever. */
  boundTo?: string;
}

export interface WorkloadOptions {
  client: KubeClient;
  prng: Prng;
  claims: number;
  durationMs: number;
  /** Share of claims never deleted. */
  survivorShare: number;
  /** Share of claims in the Retain class. */
  retainShare: number;
  minLifetimeMs: number;
  maxLifetimeMs: number;
  /** Ends the fault phase: no new claims; lifetimes not over yet are left to finish(). */
  phaseSignal: AbortSignal;
  /** Aborts everything (writes still being retried included). */
  signal: AbortSignal;
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects: the chaos loops just stop). */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });

/** Retries `op` until it resolves (errors are expected: faults, restarts); gives up only when `signal` aborts. */
async function persist<T>(op: () => Promise<T>, signal: AbortSignal, onError: () => void): Promise<T | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch {
      onError();
      if (signal.aborted) return undefined;
      await sleep(Math.min(200 * 2 ** attempt, 3_000), signal);
    }
  }
}

export class Workload {
  readonly claims = new Map<string, ClaimRecord>();
  writeErrors = 0;
  readonly #inflight = new Set<Promise<unknown>>();

  constructor(private readonly o: WorkloadOptions) {}

  /** Creates claims until the duration is over; deletions are scheduled as their lifetimes end. */
  async run(): Promise<void> {
    const { prng, claims, durationMs, phaseSignal: signal } = this.o;
    const start = Date.now();
    const interval = durationMs / Math.max(1, claims);
    for (let i = 0; i < claims && !signal.aborted; i++) {
      const due = start + i * interval;
      if (due > Date.now()) await sleep(due - Date.now(), signal);
      if (signal.aborted) break;
      const rec: ClaimRecord = {
        name: `c-${String(i).padStart(6, '0')}`,
        className: prng.chance(this.o.retainShare) ? RETAIN_CLASS : DELETE_CLASS,
        deleted: false,
      };
      const lifetime = prng.chance(this.o.survivorShare)
        ? undefined
        : prng.between(this.o.minLifetimeMs, this.o.maxLifetimeMs);
      this.claims.set(rec.name, rec);
      this.#track(this.#create(rec, lifetime));
    }
  }

  #track(p: Promise<unknown>): void {
    this.#inflight.add(p);
    void p.finally(() => this.#inflight.delete(p));
  }

  async #create(rec: ClaimRecord, lifetime: number | undefined): Promise<void> {
    const { client, signal } = this.o;
    const body: PersistentVolumeClaim = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: rec.name, namespace: NAMESPACE },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Mi' } },
        storageClassName: rec.className,
      },
    };
    const created = await persist(
      async () => {
        try {
          return await client.create<PersistentVolumeClaim>(persistentVolumeClaims, body, {
            namespace: NAMESPACE,
            signal,
          });
        } catch (err) {
          if (err instanceof AlreadyExistsError)
            return client.get<PersistentVolumeClaim>(persistentVolumeClaims, rec.name, {
              namespace: NAMESPACE,
              signal,
            });
          throw err;
        }
      },
      signal,
      () => this.writeErrors++,
    );
    if (!created) return;
    rec.uid = created.metadata.uid;
    rec.createdAt = Date.now();
    if (lifetime === undefined) return;
    rec.deleteAt = rec.createdAt + lifetime;
    await sleep(lifetime, this.o.phaseSignal);
    if (!this.o.phaseSignal.aborted) await this.delete(rec, signal);
  }

  /** Deletes a claim (retried until it is gone). */
  async delete(rec: ClaimRecord, signal: AbortSignal): Promise<void> {
    const done = await persist(
      async () => {
        try {
          await this.o.client.delete(persistentVolumeClaims, rec.name, {
            namespace: NAMESPACE,
            signal,
            preconditions: rec.uid ? { uid: rec.uid } : undefined,
          });
        } catch (err) {
          if (!(err instanceof NotFoundError)) throw err;
        }
        return true;
      },
      signal,
      () => this.writeErrors++,
    );
    if (done) rec.deleted = true;
  }

  /** After the fault phase: every claim whose deletion was planned is deleted now. */
  async finish(signal: AbortSignal): Promise<void> {
    await Promise.all([...this.#inflight]);
    const pending = [...this.claims.values()].filter((r) => r.uid && r.deleteAt !== undefined && !r.deleted);
    for (let i = 0; i < pending.length; i += 32)
      await Promise.all(pending.slice(i, i + 32).map((r) => this.delete(r, signal)));
  }

  /** Records which claims are Bound now (to which PV). */
  async observeBindings(signal: AbortSignal): Promise<void> {
    const { items } = await this.o.client.listAll<PersistentVolumeClaim>(persistentVolumeClaims, {
      namespace: NAMESPACE,
      signal,
    });
    for (const c of items) {
      const rec = this.claims.get(c.metadata.name ?? '');
      if (rec && c.status?.phase === 'Bound' && c.metadata.uid === rec.uid && c.spec.volumeName)
        rec.boundTo = c.spec.volumeName;
    }
  }
}
