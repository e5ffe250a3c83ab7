// explainClaim: why a PVC is (not) being provisioned, as data and as text. Runs the same decideClaim the controller
// runs, either on a running controller's caches and failure records, or on objects fetched once with a client
// (for `kube-provisioner explain pvc NS/NAME`, with no controller running).
import type { KubeClient } from '../runtime/client.ts';
import { NotFoundError } from '../runtime/errors.ts';
import { persistentVolumeClaims, persistentVolumes, storageClasses } from '../runtime/resources.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import { parseLockRecord } from './claim-lock.ts';
import type { ControllerShared, ControllerTerm } from './controller-state.ts';
import { claimClassName, claimKey, claimProvisionerName, decideClaim, selectedNodeName, type ClaimDecision } from './decide-claim.ts';
import { decideCachedClaim } from './cached-decisions.ts';
import type { FailureRecord } from './failures.ts';
import { decideResize, resizeFacts, type ResizeDecision } from './decide-resize.ts';
import { ANN_VOLUME_USAGE, parseVolumeUsage } from '../types/volume-usage.ts';
import { formatBytes } from '../types/quantity.ts';
import { resolveOptions, type ProvisionControllerOptions } from './options.ts';
import type { Provisioner } from './provisioner.ts';

export interface ClaimExplanation {
  /** `namespace/name`. */
  claim: string;
  uid: string;
  phase: string;
  /** The provisioner name the decision was made for. */
  provisionerName: string;
  decision: ClaimDecision;
  /** Facts that led to the decision, one per line, in the order the controller checks them. */
  facts: string[];
  failures?: FailureRecord;
  inProgress: boolean;
  /** The resize decision (a running controller whose provisioner implements expand()). */
  resize?: ResizeDecision;
}

export interface ExplainFacts {
  claim: PersistentVolumeClaim;
  provisionerName: string;
  storageClass?: StorageClass;
  volume?: PersistentVolume;
  decision: ClaimDecision;
  failures?: FailureRecord;
  inProgress?: boolean;
}

/** Builds the explanation from a decision and the objects it was made from (pure). */
export function explainDecision(f: ExplainFacts): ClaimExplanation {
  const { claim, decision } = f;
  const ann = claim.metadata.annotations ?? {};
  const facts: string[] = [];
  facts.push(`phase: ${claim.status?.phase ?? 'Pending'}${claim.spec.volumeName ? `, bound to volume ${claim.spec.volumeName}` : ''}`);
  facts.push(`storage-provisioner annotation: ${claimProvisionerName(claim) ?? '(none)'}`);
  const className = claimClassName(claim);
  facts.push(`storage class: ${className || '(none)'}${f.storageClass ? ` (provisioner ${f.storageClass.provisioner}, ${f.storageClass.volumeBindingMode ?? 'Immediate'}, reclaim ${f.storageClass.reclaimPolicy ?? 'Delete'})` : className ? ' (not found)' : ''}`);
  const node = selectedNodeName(claim);
  if (node) facts.push(`selected node: ${node}`);
  if (claim.spec.volumeMode === 'Block') facts.push('volume mode: Block');
  if (claim.spec.selector) facts.push('claim has spec.selector');
  if (decision.pvName) facts.push(`volume name: ${decision.pvName}${f.volume ? ` (exists, claimRef uid ${f.volume.spec.claimRef?.uid ?? 'none'})` : ' (does not exist)'}`);
  const lock = parseLockRecord(claim);
  if (lock?.holderIdentity) facts.push(`per-claim lock held by ${lock.holderIdentity} (renewed ${lock.renewTime})`);
  if (f.inProgress) facts.push('provisioning may still be running in the backend (InBackground)');
  if (f.failures) {
    facts.push(`failed attempts: ${f.failures.failures}${f.failures.lastError ? ` (last: ${f.failures.lastError})` : ''}`);
    if (f.failures.infeasibleUntil) facts.push(`infeasible: next attempt after ${new Date(f.failures.infeasibleUntil).toISOString()}`);
  }
  const boundVolume = claim.spec.volumeName && f.volume?.metadata.name === claim.spec.volumeName ? f.volume : undefined;
  facts.push(...resizeFacts(claim, boundVolume));
  const usage = parseVolumeUsage(boundVolume?.metadata.annotations?.[ANN_VOLUME_USAGE]);
  if (usage) {
    const bound = usage.complete ? '' : 'at least ';
    facts.push(`usage: ${bound}${formatBytes(BigInt(usage.bytes))} of ${boundVolume?.spec.capacity?.storage ?? '?'}, ${bound}${usage.inodes} inodes (measured ${usage.measuredAt})`);
  }
  if (ann['volume.kubernetes.io/storage-resizer']) facts.push(`resizer: ${ann['volume.kubernetes.io/storage-resizer']}`);
  return {
    claim: claimKey(claim),
    uid: claim.metadata.uid ?? '',
    phase: claim.status?.phase ?? 'Pending',
    provisionerName: f.provisionerName,
    decision,
    facts,
    failures: f.failures,
    inProgress: f.inProgress ?? false,
  };
}

/** Human-readable form, for the CLI. */
export function formatExplanation(e: ClaimExplanation): string {
  const lines = [
    `PersistentVolumeClaim ${e.claim} (uid ${e.uid})`,
    `Decision: ${e.decision.action} (${e.decision.code}) for provisioner ${e.provisionerName}`,
    `Why: ${e.decision.reason}`,
  ];
  if (e.resize && e.resize.code !== 'NotBound') lines.push(`Resize: ${e.resize.action} (${e.resize.code}): ${e.resize.reason}`);
  if (e.decision.event) lines.push(`Event: ${e.decision.event.type} ${e.decision.event.reason}: ${e.decision.event.message}`);
  lines.push('Facts:', ...e.facts.map((f) => `  - ${f}`));
  return lines.join('\n');
}

/** Explanation from a running controller's caches and records. */
export function explainCachedClaim(s: ControllerShared, t: ControllerTerm, claim: PersistentVolumeClaim): ClaimExplanation {
  const uid = claim.metadata.uid ?? '';
  const decision = decideCachedClaim(s, t, claim);
  return explainDecision({
    claim,
    provisionerName: s.provisionerName,
    storageClass: decision.storageClass ?? t.classes.get(claimClassName(claim)),
    volume: decision.pvName ? t.volumes.get(decision.pvName) : undefined,
    decision,
    failures: s.claimRecords.get(uid)?.failures,
    inProgress: s.claimRecords.inProgress(uid) !== undefined,
  });
}

async function getOrUndefined<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}

/**
 * Fetches a claim, its class and its would-be PV with `client` and explains the decision a controller named
 * `provisionerName` (default: the provisioner the claim was handed to, else its class's) would make now.
 * Without a running controller there are no failure records. Throws NotFoundError when the claim does not exist.
 */
export async function explainClaim(
  client: KubeClient,
  namespace: string,
  name: string,
  opts: { provisionerName?: string; options?: ProvisionControllerOptions; provisioner?: Pick<Provisioner, 'shouldProvision' | 'supportsBlock'>; signal?: AbortSignal; now?: number } = {},
): Promise<ClaimExplanation> {
  const claim = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, name, { namespace, signal: opts.signal });
  const options = resolveOptions(opts.options ?? {}, {});
  const className = claimClassName(claim);
  const storageClass = className ? await getOrUndefined(client.get<StorageClass>(storageClasses, className, { signal: opts.signal })) : undefined;
  const pvName = options.volumeNameHook(claim);
  const volume = await getOrUndefined(client.get<PersistentVolume>(persistentVolumes, pvName, { signal: opts.signal }));
  const provisionerName = opts.provisionerName ?? claimProvisionerName(claim) ?? storageClass?.provisioner ?? '';
  const bound = claim.spec.volumeName;
  const boundVolume = bound && bound !== pvName ? await getOrUndefined(client.get<PersistentVolume>(persistentVolumes, bound, { signal: opts.signal })) : volume;
  // Without the controller's failure records: what a controller that implements expand() would do next.
  const resize = claim.status?.phase === 'Bound'
    ? decideResize({ claim, volume: boundVolume, storageClass, provisionerName, additionalProvisionerNames: options.additionalProvisionerNames, canExpand: true, threshold: options.failedProvisionThreshold, now: opts.now ?? Date.now() })
    : undefined;
  const decision = decideClaim({
    claim,
    provisionerName,
    options,
    getStorageClass: (n) => (n === className ? storageClass : undefined),
    getVolume: (n) => (n === pvName ? volume : undefined),
    provisioner: opts.provisioner ?? {},
    now: opts.now ?? Date.now(),
  });
  const explanation = explainDecision({ claim, provisionerName, storageClass, volume: boundVolume ?? volume, decision });
  if (resize) explanation.resize = resize;
  return explanation;
}
