// The lock of Lease-based leader election (client-go's LeaseLock): the LeaderElectionRecord stored in the spec of a
// coordination.k8s.io/v1 Lease, written with optimistic concurrency on the Lease's resourceVersion.
import type { Lease } from '../types/k8s.ts';
import { formatMicroTime } from '../types/time.ts';
import type { ObjectClient } from './client.ts';
import type { LockRecord, ResourceLock } from './resource-lock.ts';
import { leases } from './resources.ts';

function toRecord(spec: Lease['spec']): LockRecord {
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: spec.acquireTime ?? '',
    renewTime: spec.renewTime ?? '',
    leaderTransitions: spec.leaseTransitions ?? 0,
  };
}

function toSpec(r: LockRecord): Lease['spec'] {
  return {
    holderIdentity: r.holderIdentity,
    leaseDurationSeconds: r.leaseDurationSeconds,
    acquireTime: r.acquireTime,
    renewTime: r.renewTime,
    leaseTransitions: r.leaderTransitions,
  };
}

/** A lock on the Lease `namespace/name`. */
export class LeaseLock implements ResourceLock {
  /** The Lease as last read or written (events are recorded on it). */
  current: Lease | undefined;

  constructor(
    private readonly client: ObjectClient,
    private readonly namespace: string,
    private readonly name: string,
  ) {}

  async get(signal: AbortSignal): Promise<LockRecord | undefined> {
    this.current = await this.client.get<Lease>(leases, this.name, { namespace: this.namespace, signal });
    return toRecord(this.current.spec);
  }

  async create(record: LockRecord, signal: AbortSignal): Promise<void> {
    const lease: Lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.name, namespace: this.namespace },
      spec: toSpec(record),
    };
    this.current = await this.client.create<Lease>(leases, lease, { signal });
  }

  async update(record: LockRecord, signal: AbortSignal): Promise<void> {
    if (!this.current) throw new Error(`Lease ${this.namespace}/${this.name} updated before it was read`);
    const lease = structuredClone(this.current);
    lease.spec = { ...lease.spec, ...toSpec(record) };
    this.current = await this.client.update<Lease>(leases, lease, { signal });
  }

  formatTime(ms: number): string {
    return formatMicroTime(ms);
  }
}
