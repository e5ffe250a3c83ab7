// Who is running, for explain, from the cluster alone: the heartbeat Leases every ProvisionController renews (any
// mode), the leader-election Lease named after the provisioner (ours, and the Go library's in lease mode), and the
// claim's per-claim lock. The reads are two label- or field-selected Lease lists across namespaces; a reader that
// may not list Leases gets "unknown", never a wrong "not running". The judgement is a pure function.
import type { KubeClient } from '../../runtime/client.ts';
import { leases } from '../../runtime/resources.ts';
import type { Lease, PersistentVolumeClaim } from '../../types/k8s.ts';
import { parseLockRecord } from '../claim-lock.ts';
import { LABEL_HEARTBEAT, parseHeartbeat, type HeartbeatRecord, type HeartbeatRetry } from './heartbeat.ts';
import { leaseNameFor } from '../options/controller-options.ts';

/** What the cluster says about running controllers; undefined lists could not be read (RBAC, not served). */
export interface ControllerPresence {
  heartbeats: HeartbeatRecord[] | undefined;
  /** Leases named after the provisioner (leader election), any namespace. */
  electionLeases: Lease[] | undefined;
}

async function listOrUndefined(p: Promise<{ items: Lease[] }>): Promise<Lease[] | undefined> {
  try {
    return (await p).items;
  } catch {
    return undefined;
  }
}

/** Reads the heartbeats and the provisioner's leader-election Leases (two lists, across namespaces). */
export async function readControllerPresence(
  client: KubeClient,
  provisionerName: string,
  now: number,
  signal?: AbortSignal,
): Promise<ControllerPresence> {
  const [beats, election] = await Promise.all([
    listOrUndefined(client.list<Lease>(leases, { labelSelector: `${LABEL_HEARTBEAT}=true`, signal })),
    listOrUndefined(
      client.list<Lease>(leases, { fieldSelector: `metadata.name=${leaseNameFor(provisionerName)}`, signal }),
    ),
  ]);
  const heartbeats = beats?.map((l) => parseHeartbeat(l, now)).filter((h): h is HeartbeatRecord => h !== undefined);
  return { heartbeats, electionLeases: election };
}

/** The verdict: running or not (undefined: unknown), the facts that say why, and a live controller's retry timings. */
export interface PresenceVerdict {
  running: boolean | undefined;
  /** The "no controller" reason, when not running. */
  reason?: string;
  facts: string[];
  retry?: HeartbeatRetry;
  /** The heartbeats of this provisioner, live first, then the most recently seen. */
  mine: HeartbeatRecord[];
}

function heldUntil(
  holder: string | null | undefined,
  renewTime: string | null | undefined,
  durationSeconds: number | undefined,
): number {
  if (!holder) return 0;
  return (Date.parse(renewTime ?? '') || 0) + (durationSeconds ?? 0) * 1000;
}

/** Judges whether a controller serves `provisionerName` (pure). */
export function judgePresence(
  p: ControllerPresence,
  provisionerName: string,
  claim: PersistentVolumeClaim,
  now: number,
): PresenceVerdict {
  const facts: string[] = [];
  const mine = (p.heartbeats ?? [])
    .filter((h) => h.provisionerName === provisionerName)
    .sort((a, b) => Number(b.running) - Number(a.running) || b.renewedAt - a.renewedAt);
  const live = mine.filter((h) => h.running);
  const election = (p.electionLeases ?? []).find(
    (l) => heldUntil(l.spec.holderIdentity, l.spec.renewTime, l.spec.leaseDurationSeconds) > now,
  );
  const lock = parseLockRecord(claim);
  const lockLive =
    lock !== undefined && heldUntil(lock.holderIdentity, lock.renewTime, lock.leaseDurationSeconds) > now;
  const others = [
    ...new Set(
      (p.heartbeats ?? [])
        .filter((h) => h.running && h.provisionerName !== provisionerName)
        .map((h) => h.provisionerName),
    ),
  ].sort();
  if (live.length > 0)
    facts.push(
      `controllers serving ${provisionerName}: ${live.length} running (${live
        .map((h) => `${h.identity} in ${h.namespace}, ${h.mode ?? '?'} mode`)
        .slice(0, 3)
        .join('; ')})`,
    );
  if (election)
    facts.push(
      `leader-election Lease ${election.metadata.namespace}/${election.metadata.name} held by ${election.spec.holderIdentity}`,
    );
  if (lockLive) facts.push(`per-claim lock is live (held by ${lock.holderIdentity})`);
  const retry = live[0]?.retry ?? mine[0]?.retry;
  if (live.length > 0 || election || lockLive) return { running: true, facts, mine, ...(retry ? { retry } : {}) };
  if (p.heartbeats === undefined) {
    facts.push('running controllers: unknown (Leases cannot be listed with these credentials)');
    return { running: undefined, facts, mine };
  }
  const last = mine[0];
  const seen = last
    ? `last seen ${new Date(last.renewedAt).toISOString()}, ${last.identity ? 'heartbeat expired' : 'stopped'}`
    : 'never seen: no heartbeat or leader-election Lease names it';
  const elsewhere =
    others.length > 0
      ? `controllers running here serve ${others.join(', ')}`
      : 'no controller of kube-provisioner is running here';
  const reason = `No controller for provisioner ${provisionerName} is running (${seen}); ${elsewhere}`;
  facts.push(
    `running controllers: none for ${provisionerName}${others.length > 0 ? `; others serve ${others.join(', ')}` : ''}`,
  );
  return { running: false, reason, facts, mine, ...(retry ? { retry } : {}) };
}
