// The controller's heartbeat: one coordination.k8s.io Lease per running instance (named after the provisioner and
// the host, which in a cluster is the pod), in the leader-election namespace, renewed every heartbeatIntervalMs in
// every leader-election mode, standbys included. From it alone `kube-provisioner explain` tells whether any
// controller serves a provisioner name, when one was last seen, how it retries, and where its backend keeps its
// configuration. The cost is one Lease update per interval per instance, none per claim; the RBAC is the Lease
// verbs leader election already needs (get, create, update) in that one namespace. A graceful stop marks the Lease
// released (no holder), so explain reports "stopped" with the time; a crashed one simply expires. A Lease the
// controller may not write (403) is reported once and the heartbeat stops: provisioning never depends on it.
import { createHash } from 'node:crypto';
import type { Clock } from '../../runtime/clock.ts';
import type { ObjectClient } from '../../runtime/client.ts';
import { ForbiddenError, NotFoundError } from '../../runtime/errors.ts';
import type { Logger } from '../../runtime/logger.ts';
import { leases } from '../../runtime/resources.ts';
import { errorMessage } from '../../types/errors.ts';
import type { Lease } from '../../types/k8s.ts';
import { formatMicroTime } from '../../types/time.ts';
import { leaseNameFor } from '../options/controller-options.ts';

/** Label on every heartbeat Lease (value `"true"`): explain lists them with one label-selected list. */
export const LABEL_HEARTBEAT = 'kube-provisioner.io/heartbeat';
/** Annotation: the provisioner name the instance serves. */
export const ANN_HEARTBEAT_PROVISIONER = 'kube-provisioner.io/provisioner';
/** Annotation: the instance's leader-election mode. */
export const ANN_HEARTBEAT_MODE = 'kube-provisioner.io/leader-election';
/** Annotation: the instance's retry timings (JSON {@link HeartbeatRetry}), so explain can tell when a claim is retried. */
export const ANN_HEARTBEAT_RETRY = 'kube-provisioner.io/retry';
/** Prefix of the annotations a backend adds about itself (e.g. where its configuration lives). */
export const HEARTBEAT_DETAIL_PREFIX = 'detail.kube-provisioner.io/';

/** How long a heartbeat stays valid without renewal, in intervals. */
const EXPIRY_INTERVALS = 3;

/** The retry timings a controller publishes (its `retry` options). */
export interface HeartbeatRetry {
  backoffBaseMs: number;
  backoffMaxMs: number;
  exponentialBackoff: boolean;
  infeasibleDelayMs: number;
}

/** A heartbeat as read back from its Lease. */
export interface HeartbeatRecord {
  provisionerName: string;
  namespace: string;
  name: string;
  /** The controller identity that last renewed it; empty once it stopped. */
  identity: string;
  mode?: string;
  /** Last renewal (ms since epoch). */
  renewedAt: number;
  /** True while it is held and not expired. */
  running: boolean;
  retry?: HeartbeatRetry;
  /** The backend's details (annotation suffix -> value). */
  details: Record<string, string>;
}

/** The Lease name of a heartbeat: the provisioner's Lease name plus a digest of the host (a valid, bounded name). */
export function heartbeatLeaseName(provisionerName: string, host: string): string {
  const digest = createHash('sha256').update(host).digest('hex').slice(0, 10);
  return `${leaseNameFor(provisionerName)
    .slice(0, 200)
    .replace(/[.-]+$/, '')}-heartbeat-${digest}`;
}

function parseRetry(text: string | undefined): HeartbeatRetry | undefined {
  if (!text) return undefined;
  try {
    const r = JSON.parse(text) as Partial<HeartbeatRetry>;
    const ok = [r.backoffBaseMs, r.backoffMaxMs, r.infeasibleDelayMs].every(
      (n) => typeof n === 'number' && Number.isFinite(n) && n >= 0,
    );
    return ok ? (r as HeartbeatRetry) : undefined;
  } catch {
    return undefined;
  }
}

/** Reads a heartbeat Lease (pure); undefined for a Lease that is not one. */
export function parseHeartbeat(lease: Lease, now: number): HeartbeatRecord | undefined {
  const ann = lease.metadata.annotations ?? {};
  const provisionerName = ann[ANN_HEARTBEAT_PROVISIONER];
  if (lease.metadata.labels?.[LABEL_HEARTBEAT] !== 'true' || !provisionerName) return undefined;
  const renewedAt = Date.parse(lease.spec.renewTime ?? '') || 0;
  const identity = lease.spec.holderIdentity ?? '';
  const validMs = (lease.spec.leaseDurationSeconds ?? 0) * 1000;
  const details: Record<string, string> = {};
  for (const [k, v] of Object.entries(ann))
    if (k.startsWith(HEARTBEAT_DETAIL_PREFIX)) details[k.slice(HEARTBEAT_DETAIL_PREFIX.length)] = v;
  return {
    provisionerName,
    namespace: lease.metadata.namespace ?? '',
    name: lease.metadata.name ?? '',
    identity,
    ...(ann[ANN_HEARTBEAT_MODE] ? { mode: ann[ANN_HEARTBEAT_MODE] } : {}),
    renewedAt,
    running: identity !== '' && renewedAt + validMs > now,
    ...(parseRetry(ann[ANN_HEARTBEAT_RETRY]) ? { retry: parseRetry(ann[ANN_HEARTBEAT_RETRY]) } : {}),
    details,
  };
}

/** What a Heartbeat writes and where. */
export interface HeartbeatOptions {
  client: ObjectClient;
  namespace: string;
  provisionerName: string;
  identity: string;
  /** The host (pod) name the Lease is named after: one Lease per host, reused across restarts. */
  host: string;
  intervalMs: number;
  mode: string;
  retry: HeartbeatRetry;
  /** The backend's details, written as `detail.kube-provisioner.io/<key>` annotations. */
  details?: Record<string, string>;
  clock: Clock;
  logger: Logger;
}

/** Writes the heartbeat Lease until the signal aborts. */
export class Heartbeat {
  private current: Lease | undefined;
  readonly name: string;

  constructor(private readonly o: HeartbeatOptions) {
    this.name = heartbeatLeaseName(o.provisionerName, o.host);
  }

  /** Beats now and every interval; on abort, marks the Lease released. Resolves once stopped. */
  async run(signal: AbortSignal): Promise<void> {
    const o = this.o;
    while (!signal.aborted) {
      try {
        await this.beat(signal);
      } catch (err) {
        if (signal.aborted) break;
        if (err instanceof ForbiddenError) {
          o.logger.warn(
            { lease: `${o.namespace}/${this.name}`, err: errorMessage(err) },
            'cannot write the heartbeat Lease (explain will not see this controller); heartbeat stopped',
          );
          return;
        }
        this.current = undefined;
        o.logger.debug(
          { lease: `${o.namespace}/${this.name}`, err: errorMessage(err) },
          'heartbeat failed; trying again next interval',
        );
      }
      await o.clock.sleep(o.intervalMs, signal).catch(() => {});
    }
    await this.release();
  }

  private lease(renewedAt: number, holder: string): Lease {
    const o = this.o;
    const details = Object.fromEntries(
      Object.entries(o.details ?? {}).map(([k, v]) => [`${HEARTBEAT_DETAIL_PREFIX}${k}`, v]),
    );
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...(this.current?.metadata ?? {}),
        name: this.name,
        namespace: o.namespace,
        labels: { ...(this.current?.metadata.labels ?? {}), [LABEL_HEARTBEAT]: 'true' },
        annotations: {
          ...(this.current?.metadata.annotations ?? {}),
          [ANN_HEARTBEAT_PROVISIONER]: o.provisionerName,
          [ANN_HEARTBEAT_MODE]: o.mode,
          [ANN_HEARTBEAT_RETRY]: JSON.stringify(o.retry),
          ...details,
        },
      },
      spec: {
        holderIdentity: holder,
        leaseDurationSeconds: Math.max(1, Math.ceil((EXPIRY_INTERVALS * o.intervalMs) / 1000)),
        renewTime: formatMicroTime(renewedAt),
        acquireTime:
          this.current?.spec.holderIdentity === holder && this.current.spec.acquireTime
            ? this.current.spec.acquireTime
            : formatMicroTime(renewedAt),
      },
    };
  }

  private async beat(signal: AbortSignal): Promise<void> {
    const o = this.o;
    if (!this.current) {
      try {
        this.current = await o.client.get<Lease>(leases, this.name, { namespace: o.namespace, signal });
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        this.current = await o.client.create<Lease>(leases, this.lease(o.clock.now(), o.identity), { signal });
        return;
      }
    }
    this.current = await o.client.update<Lease>(leases, this.lease(o.clock.now(), o.identity), { signal });
  }

  /** Marks the Lease released (no holder, renewed now) if this instance holds it; errors are only logged. */
  private async release(): Promise<void> {
    const o = this.o;
    if (!this.current || this.current.spec.holderIdentity !== o.identity) return;
    try {
      await o.client.update<Lease>(leases, this.lease(o.clock.now(), ''), { signal: AbortSignal.timeout(5_000) });
    } catch (err) {
      o.logger.debug(
        { lease: `${o.namespace}/${this.name}`, err: errorMessage(err) },
        'could not mark the heartbeat released; it expires by itself',
      );
    }
  }
}
