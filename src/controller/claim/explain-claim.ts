// explainClaim: why a PVC is (not) being provisioned, as data and as text. Runs the same decideClaim the controller
// runs, then the backend's own pure checks (the Provisioner's checkClaim hook, the ones provision() runs), either on
// a running controller's caches and failure records, or on objects fetched once with a client (for
// `kube-provisioner explain pvc NS/NAME`, with no controller running). The decision names the first reason that
// blocks provisioning; the claim's last provisioning events and the next retry, when known, come with it. From the
// cluster alone it also says whether any controller serves the provisioner name (explain-presence.ts), and derives
// the next retry from the last ProvisioningFailed event and the retry timings the controller's heartbeat publishes.
import type { KubeClient } from '../../runtime/client.ts';
import { undefinedIfNotFound } from '../../runtime/errors.ts';
import {
  coreEvents,
  nodes,
  persistentVolumeClaims,
  persistentVolumes,
  pods,
  storageClasses,
} from '../../runtime/resources.ts';
import type { CoreEvent, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '../../types/k8s.ts';
import { parseLockRecord } from '../claim-lock.ts';
import type { ControllerShared, ControllerTerm } from '../controller-state.ts';
import {
  claimClassName,
  claimKey,
  claimProvisionerName,
  decideClaim,
  selectedNodeName,
  type ClaimDecision,
  type ClaimDecisionCode,
} from './decide-claim.ts';
import { decideCachedClaim } from './decide-cached-claim.ts';
import type { FailureRecord } from '../failures.ts';
import { decideResize, resizeFacts, type ResizeDecision } from '../resize/decide-resize.ts';
import { ANN_VOLUME_USAGE, parseVolumeUsage } from '../../types/volume-usage.ts';
import { formatBytes } from '../../types/quantity.ts';
import { resolveOptions, type ProvisionControllerOptions } from '../options/controller-options.ts';
import type { ClaimCheckResult, Provisioner } from '../provisioner.ts';
import { INFEASIBLE_EVENT_PREFIX } from './claim-provision.ts';
import { judgePresence, readControllerPresence } from '../presence/explain-presence.ts';
import type { HeartbeatRecord, HeartbeatRetry } from '../presence/heartbeat.ts';

/**
 * Codes explain adds to the controller's: the backend's own checks refused the claim (`BackendInfeasible`: it
 * would fail with an infeasible error; `BackendReschedule`: not on the selected node; `BackendIgnored`: another
 * instance's claim); `NoController`: no controller serving the provisioner name is running (from the cluster's
 * heartbeat and leader-election Leases).
 */
export type ExplainDecisionCode =
  ClaimDecisionCode | 'BackendInfeasible' | 'BackendReschedule' | 'BackendIgnored' | 'NoController';

/** A decision as explain reports it: the controller's, or the first backend check that blocks it. */
export type ExplainedDecision = Omit<ClaimDecision, 'code'> & { code: ExplainDecisionCode };

/** One provisioning event recorded on the claim. */
export interface ClaimEventSummary {
  type: string;
  reason: string;
  message: string;
  count: number;
  /** ISO time of its last occurrence. */
  lastSeen?: string;
}

/** Why a claim is (not) being provisioned: the decision, the facts behind it, its last events and next retry. */
export interface ClaimExplanation {
  /** `namespace/name`. */
  claim: string;
  uid: string;
  phase: string;
  /** The provisioner name the decision was made for (never empty). */
  provisionerName: string;
  decision: ExplainedDecision;
  /** Facts that led to the decision, one per line, in the order the controller checks them. */
  facts: string[];
  failures?: FailureRecord;
  inProgress: boolean;
  /** The resize decision (a running controller whose provisioner implements expand()). */
  resize?: ResizeDecision;
  /** The claim's last ProvisioningFailed and ProvisioningSucceeded events, when any. */
  lastFailed?: ClaimEventSummary;
  lastSucceeded?: ClaimEventSummary;
  /** When the next attempt is due (ISO), when known. */
  nextRetryAt?: string;
  /** How the next attempt comes, in words, when known. */
  nextRetry?: string;
  /** The heartbeats of controllers serving this provisioner name, live first (cluster-only explain). */
  controllers?: HeartbeatRecord[];
}

/** What explainDecision builds an explanation from. */
export interface ExplainFacts {
  claim: PersistentVolumeClaim;
  provisionerName: string;
  storageClass?: StorageClass;
  volume?: PersistentVolume;
  decision: ExplainedDecision;
  failures?: FailureRecord;
  inProgress?: boolean;
  /** The claim's events (any order); the last provisioning outcomes are picked from them. */
  events?: CoreEvent[];
  /** Extra facts (backend checks, consumers), appended in order. */
  extraFacts?: string[];
  /** The controller's retry timings (from its heartbeat, else the defaults), to say when the next attempt is due. */
  retry?: HeartbeatRetry;
  now?: number;
}

/** Builds the explanation from a decision and the objects it was made from (pure). */
export function explainDecision(f: ExplainFacts): ClaimExplanation {
  const { claim, decision } = f;
  const ann = claim.metadata.annotations ?? {};
  const facts: string[] = [];
  facts.push(
    `phase: ${claim.status?.phase ?? 'Pending'}${claim.spec.volumeName ? `, bound to volume ${claim.spec.volumeName}` : ''}`,
  );
  facts.push(`storage-provisioner annotation: ${claimProvisionerName(claim) ?? '(none)'}`);
  const className = claimClassName(claim);
  facts.push(
    `storage class: ${className || '(none)'}${f.storageClass ? ` (provisioner ${f.storageClass.provisioner}, ${f.storageClass.volumeBindingMode ?? 'Immediate'}, reclaim ${f.storageClass.reclaimPolicy ?? 'Delete'})` : className ? ' (not found)' : ''}`,
  );
  const node = selectedNodeName(claim);
  if (node) facts.push(`selected node: ${node}`);
  if (claim.spec.volumeMode === 'Block') facts.push('volume mode: Block');
  if (claim.spec.selector) facts.push('claim has spec.selector');
  if (decision.pvName)
    facts.push(
      `volume name: ${decision.pvName}${f.volume ? ` (exists, claimRef uid ${f.volume.spec.claimRef?.uid ?? 'none'})` : ' (does not exist)'}`,
    );
  const lock = parseLockRecord(claim);
  if (lock?.holderIdentity) facts.push(`per-claim lock held by ${lock.holderIdentity} (renewed ${lock.renewTime})`);
  if (f.inProgress) facts.push('provisioning may still be running in the backend (InBackground)');
  if (f.failures) {
    facts.push(
      `failed attempts: ${f.failures.failures}${f.failures.lastError ? ` (last: ${f.failures.lastError})` : ''}`,
    );
    if (f.failures.infeasibleUntil)
      facts.push(`infeasible: next attempt after ${new Date(f.failures.infeasibleUntil).toISOString()}`);
  }
  const boundVolume = claim.spec.volumeName && f.volume?.metadata.name === claim.spec.volumeName ? f.volume : undefined;
  facts.push(...resizeFacts(claim, boundVolume));
  const usage = parseVolumeUsage(boundVolume?.metadata.annotations?.[ANN_VOLUME_USAGE]);
  if (usage) {
    const bound = usage.complete ? '' : 'at least ';
    facts.push(
      `usage: ${bound}${formatBytes(BigInt(usage.bytes))} of ${boundVolume?.spec.capacity?.storage ?? '?'}, ${bound}${usage.inodes} inodes (measured ${usage.measuredAt})`,
    );
  }
  if (ann['volume.kubernetes.io/storage-resizer'])
    facts.push(`resizer: ${ann['volume.kubernetes.io/storage-resizer']}`);
  facts.push(...(f.extraFacts ?? []));
  const lastFailed = lastEvent(f.events, claim, 'ProvisioningFailed');
  const lastSucceeded = lastEvent(f.events, claim, 'ProvisioningSucceeded');
  const retry = nextRetry(f, lastFailed, lastSucceeded);
  return {
    claim: claimKey(claim),
    uid: claim.metadata.uid ?? '',
    phase: claim.status?.phase ?? 'Pending',
    provisionerName: f.provisionerName,
    decision,
    facts,
    failures: f.failures,
    inProgress: f.inProgress ?? false,
    ...(lastFailed ? { lastFailed } : {}),
    ...(lastSucceeded ? { lastSucceeded } : {}),
    ...retry,
  };
}

function eventTime(e: CoreEvent): number {
  const t = Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '');
  return Number.isNaN(t) ? 0 : t;
}

function lastEvent(
  events: CoreEvent[] | undefined,
  claim: PersistentVolumeClaim,
  reason: string,
): ClaimEventSummary | undefined {
  const mine = (events ?? []).filter(
    (e) =>
      e.reason === reason &&
      e.involvedObject.kind === 'PersistentVolumeClaim' &&
      (!e.involvedObject.uid || e.involvedObject.uid === claim.metadata.uid),
  );
  const last = mine.sort((a, b) => eventTime(a) - eventTime(b)).at(-1);
  if (!last) return undefined;
  const at = eventTime(last);
  return {
    type: last.type ?? 'Normal',
    reason,
    message: last.message ?? '',
    count: last.count ?? 1,
    ...(at ? { lastSeen: new Date(at).toISOString() } : {}),
  };
}

// From the controller's record (a running controller's explain), or from the last ProvisioningFailed event and the
// controller's retry timings: the event's time plus the slow infeasible delay, or plus the backoff its count reached.
function nextRetry(
  f: ExplainFacts,
  lastFailed: ClaimEventSummary | undefined,
  lastSucceeded: ClaimEventSummary | undefined,
): Pick<ClaimExplanation, 'nextRetryAt' | 'nextRetry'> {
  const code = f.decision.code;
  const how = "at once if the claim, its class or the provisioner's configuration changes";
  if (f.failures?.infeasibleUntil !== undefined && code === 'InfeasibleBackoff') {
    return {
      nextRetryAt: new Date(f.failures.infeasibleUntil).toISOString(),
      nextRetry: `slow retry after an infeasible error; ${how}`,
    };
  }
  const waiting = code === 'Provision' || code === 'BackendInfeasible' || code === 'InfeasibleBackoff';
  const failedAt = lastFailed?.lastSeen ? Date.parse(lastFailed.lastSeen) : NaN;
  if (
    !waiting ||
    !f.retry ||
    !lastFailed ||
    Number.isNaN(failedAt) ||
    (lastSucceeded?.lastSeen && Date.parse(lastSucceeded.lastSeen) >= failedAt)
  )
    return {};
  const infeasible = code === 'BackendInfeasible' || lastFailed.message.startsWith(INFEASIBLE_EVENT_PREFIX);
  const r = f.retry;
  const backoff = r.exponentialBackoff
    ? Math.min(r.backoffBaseMs * 2 ** Math.min(Math.max(lastFailed.count - 1, 0), 40), r.backoffMaxMs)
    : r.backoffBaseMs;
  const due = failedAt + (infeasible ? r.infeasibleDelayMs : backoff);
  const late = f.now !== undefined && due < f.now ? ' (due now)' : '';
  const what = infeasible
    ? 'slow retry after an infeasible error'
    : `backoff after ${lastFailed.count} failed attempt${lastFailed.count === 1 ? '' : 's'}`;
  return { nextRetryAt: new Date(due).toISOString(), nextRetry: `${what}${late}; ${how}` };
}

/** Human-readable form, for the CLI. */
export function formatExplanation(e: ClaimExplanation): string {
  const lines = [
    `PersistentVolumeClaim ${e.claim} (uid ${e.uid})`,
    `Decision: ${e.decision.action} (${e.decision.code}) for provisioner ${e.provisionerName}`,
    `Why: ${e.decision.reason}`,
  ];
  if (e.resize && e.resize.code !== 'NotBound')
    lines.push(`Resize: ${e.resize.action} (${e.resize.code}): ${e.resize.reason}`);
  if (e.decision.event)
    lines.push(`Event: ${e.decision.event.type} ${e.decision.event.reason}: ${e.decision.event.message}`);
  const ev = (x: ClaimEventSummary) =>
    `${x.type} ${x.reason}${x.count > 1 ? ` (${x.count}x)` : ''}${x.lastSeen ? ` at ${x.lastSeen}` : ''}: ${x.message}`;
  if (e.lastFailed) lines.push(`Last failure: ${ev(e.lastFailed)}`);
  if (e.lastSucceeded) lines.push(`Last success: ${ev(e.lastSucceeded)}`);
  if (e.nextRetry) lines.push(`Next retry: ${e.nextRetryAt ? `${e.nextRetryAt}, ` : ''}${e.nextRetry}`);
  lines.push('Facts:', ...e.facts.map((f) => `  - ${f}`));
  return lines.join('\n');
}

/** Explanation from a running controller's caches and records. */
export function explainCachedClaim(
  s: ControllerShared,
  t: ControllerTerm,
  claim: PersistentVolumeClaim,
): ClaimExplanation {
  const uid = claim.metadata.uid ?? '';
  const storageClass = t.classes.get(claimClassName(claim));
  const refined = refineDecision({
    claim,
    storageClass,
    decision: decideCachedClaim(s, t, claim),
    check: s.provisioner.checkClaim?.bind(s.provisioner),
  });
  const decision = refined.decision;
  return explainDecision({
    claim,
    provisionerName: s.provisionerName,
    extraFacts: refined.facts,
    storageClass: decision.storageClass ?? storageClass,
    volume: decision.pvName ? t.volumes.get(decision.pvName) : undefined,
    decision,
    failures: s.claimRecords.get(uid)?.failures,
    inProgress: s.claimRecords.inProgress(uid) !== undefined,
  });
}

/** What refineDecision looks at beyond the controller's decision. */
export interface RefineInput {
  claim: PersistentVolumeClaim;
  storageClass?: StorageClass;
  decision: ClaimDecision;
  /** The backend's pure checks (Provisioner.checkClaim), when available. */
  check?: Provisioner['checkClaim'];
  /** Pods in the claim's namespace that use it (undefined: not known). */
  consumers?: Pod[];
  /** Nodes a WaitForFirstConsumer claim could be scheduled to (undefined: not known). */
  nodes?: Node[];
}

const CHECK_CODES: Record<
  Extract<ClaimCheckResult, { ok: false }>['kind'],
  { code: ExplainDecisionCode; action: ClaimDecision['action'] }
> = {
  infeasible: { code: 'BackendInfeasible', action: 'reject' },
  reschedule: { code: 'BackendReschedule', action: 'wait' },
  ignored: { code: 'BackendIgnored', action: 'ignore' },
};

function consumersText(consumers: Pod[] | undefined, className: string): string {
  if (consumers === undefined)
    return `StorageClass "${className}" is WaitForFirstConsumer: provisioning starts when a pod that uses the claim is scheduled`;
  if (consumers.length === 0)
    return `waiting for first consumer: no pod uses this claim yet, and StorageClass "${className}" is WaitForFirstConsumer; create a pod that mounts it`;
  const names = consumers
    .map((p) => p.metadata.name ?? '')
    .slice(0, 3)
    .join(', ');
  return `waiting for first consumer: pod ${names} uses this claim but is not scheduled to a node yet (StorageClass "${className}" is WaitForFirstConsumer)`;
}

/**
 * The first reason that blocks provisioning, for explain (pure): the controller's decision, made precise where it
 * only says "not handed to a provisioner yet" (a missing class, a WaitForFirstConsumer claim with no consumer),
 * then the backend's own checks for a claim the controller would provision. Returns extra facts too.
 */
export function refineDecision(r: RefineInput): { decision: ExplainedDecision; facts: string[] } {
  const { claim, storageClass, decision } = r;
  const className = claimClassName(claim);
  const facts: string[] = [];
  if (r.consumers !== undefined)
    facts.push(
      `pods using the claim: ${r.consumers.length === 0 ? 'none' : r.consumers.map((p) => `${p.metadata.name}${p.spec?.nodeName ? ` (on ${p.spec.nodeName})` : ' (not scheduled)'}`).join(', ')}`,
    );
  const waitingForConsumer =
    storageClass?.volumeBindingMode === 'WaitForFirstConsumer' && selectedNodeName(claim) === undefined;
  if (decision.code === 'NoProvisionerAnnotation' && className && !storageClass) {
    return {
      decision: {
        ...decision,
        action: 'wait',
        code: 'StorageClassNotFound',
        reason: `StorageClass "${className}" not found: no provisioner is asked for a volume until it exists`,
      },
      facts,
    };
  }
  if ((decision.code === 'NoProvisionerAnnotation' || decision.code === 'WaitForFirstConsumer') && waitingForConsumer) {
    // Would any node do, once one is selected? If the backend refuses the claim on every node, that is the truth.
    if (r.check && storageClass && r.nodes && r.nodes.length > 0) {
      const verdicts = r.nodes
        .slice(0, 50)
        .map((n) => r.check!({ claim, storageClass, selectedNodeName: n.metadata.name, selectedNode: n }));
      const first = verdicts[0];
      if (verdicts.every((v) => !v.ok && v.kind === 'infeasible') && first && !first.ok) {
        facts.push('backend checks: infeasible on every node');
        return {
          decision: {
            ...decision,
            ...CHECK_CODES.infeasible,
            className,
            storageClass,
            reason: `the provisioner would refuse it on any node: ${first.message}`,
          },
          facts,
        };
      }
    }
    return {
      decision: {
        ...decision,
        action: 'wait',
        code: 'WaitForFirstConsumer',
        className,
        storageClass,
        reason: consumersText(r.consumers, className),
      },
      facts,
    };
  }
  if (decision.action !== 'provision' || !decision.storageClass) return { decision, facts };
  if (!r.check) {
    facts.push('backend checks: not run (the provisioner has no checkClaim hook, or its configuration was not given)');
    return { decision, facts };
  }
  const verdict = r.check({
    claim,
    storageClass: decision.storageClass,
    pvName: decision.pvName,
    selectedNodeName: decision.selectedNodeName,
  });
  if (verdict.ok) {
    facts.push('backend checks: passed (parameters, configuration, access modes, node)');
    return { decision, facts };
  }
  facts.push(`backend checks: ${verdict.kind}`);
  return { decision: { ...decision, ...CHECK_CODES[verdict.kind], reason: verdict.message }, facts };
}

/** Options of explainClaim. */
export interface ExplainClaimOptions {
  /** Explain for this provisioner (default: the claim's, else its class's, else defaultProvisionerName). */
  provisionerName?: string;
  /** The name shown when neither the claim nor an existing class names a provisioner. */
  defaultProvisionerName?: string;
  options?: ProvisionControllerOptions;
  provisioner?: Pick<Provisioner, 'shouldProvision' | 'supportsBlock' | 'checkClaim'>;
  signal?: AbortSignal;
  now?: number;
}

/** Decisions a missing controller overrides: those that wait for the controller itself to act. */
const NEEDS_CONTROLLER: ReadonlySet<ExplainDecisionCode> = new Set([
  'Provision',
  'BackendInfeasible',
  'BackendReschedule',
  'InfeasibleBackoff',
  'BlockNotSupported',
  'SelectorNotSupported',
]);

async function orEmpty<T>(p: Promise<{ items: T[] }>): Promise<T[] | undefined> {
  try {
    return (await p).items;
  } catch {
    // Not allowed to list them (RBAC) or not served: explain without.
    return undefined;
  }
}

/**
 * Fetches a claim, its class, its would-be PV, its events, the pods that use it (and the nodes, for a
 * WaitForFirstConsumer claim) with `client`, and explains the decision a controller named `provisionerName` would
 * make now, checked against the backend's own checks when `provisioner.checkClaim` is given. Without a running
 * controller there are no failure records. Throws NotFoundError when the claim does not exist.
 */
export async function explainClaim(
  client: KubeClient,
  namespace: string,
  name: string,
  opts: ExplainClaimOptions = {},
): Promise<ClaimExplanation> {
  const signal = opts.signal;
  const claim = await client.get<PersistentVolumeClaim>(persistentVolumeClaims, name, { namespace, signal });
  const options = resolveOptions(opts.options ?? {}, {});
  const className = claimClassName(claim);
  const storageClass = className
    ? await undefinedIfNotFound(client.get<StorageClass>(storageClasses, className, { signal }))
    : undefined;
  const pvName = options.volumeNameHook(claim);
  const volume = await undefinedIfNotFound(client.get<PersistentVolume>(persistentVolumes, pvName, { signal }));
  const provisionerName =
    opts.provisionerName ??
    claimProvisionerName(claim) ??
    storageClass?.provisioner ??
    opts.defaultProvisionerName ??
    '(none: the claim names no existing class)';
  const now = opts.now ?? Date.now();
  const bound = claim.spec.volumeName;
  const boundVolume =
    bound && bound !== pvName
      ? await undefinedIfNotFound(client.get<PersistentVolume>(persistentVolumes, bound, { signal }))
      : volume;
  // Without the controller's failure records: what a controller that implements expand() would do next.
  const resize =
    claim.status?.phase === 'Bound'
      ? decideResize({
          claim,
          volume: boundVolume,
          storageClass,
          provisionerName,
          additionalProvisionerNames: options.additionalProvisionerNames,
          canExpand: true,
          threshold: options.retry.failedProvisionThreshold,
          now,
        })
      : undefined;
  const decision = decideClaim({
    claim,
    provisionerName,
    options,
    getStorageClass: (n) => (n === className ? storageClass : undefined),
    getVolume: (n) => (n === pvName ? volume : undefined),
    provisioner: opts.provisioner ?? {},
    now,
  });
  const events = await orEmpty(
    client.list<CoreEvent>(coreEvents, { namespace, fieldSelector: `involvedObject.name=${name}`, signal }),
  );
  const podList =
    claim.status?.phase === 'Bound' ? undefined : await orEmpty(client.list<Pod>(pods, { namespace, signal }));
  const consumers = podList?.filter((p) =>
    (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === name),
  );
  const wantsNodes =
    storageClass?.volumeBindingMode === 'WaitForFirstConsumer' &&
    selectedNodeName(claim) === undefined &&
    opts.provisioner?.checkClaim;
  const nodeList = wantsNodes ? await orEmpty(client.list<Node>(nodes, { signal })) : undefined;
  const refined = refineDecision({
    claim,
    storageClass,
    decision,
    check: opts.provisioner?.checkClaim?.bind(opts.provisioner),
    consumers,
    nodes: nodeList,
  });
  // Is anything running that would act on it? Only asked when the decision waits for a controller of this name.
  let final = refined.decision;
  const facts = refined.facts;
  let retry: HeartbeatRetry = { ...options.retry };
  let controllers: HeartbeatRecord[] | undefined;
  if (NEEDS_CONTROLLER.has(final.code) && claim.status?.phase !== 'Bound') {
    const presence = judgePresence(
      await readControllerPresence(client, provisionerName, now, signal),
      provisionerName,
      claim,
      now,
    );
    facts.push(...presence.facts);
    controllers = presence.mine;
    if (presence.retry) retry = presence.retry;
    else facts.push('retry timings: the defaults (no heartbeat of this provisioner publishes its own)');
    if (presence.running === false && presence.reason)
      final = { ...final, action: 'wait', code: 'NoController', reason: presence.reason };
  }
  const explanation = explainDecision({
    claim,
    provisionerName,
    storageClass,
    volume: boundVolume ?? volume,
    decision: final,
    events,
    extraFacts: facts,
    retry,
    now,
  });
  if (controllers) explanation.controllers = controllers;
  if (resize) explanation.resize = resize;
  return explanation;
}
