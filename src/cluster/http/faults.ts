// Fault injection for tests and chaos runs: rules that make matching API requests fail with a chosen status
// (500, 429 + Retry-After, 409, 504...) by count or probability, lose the response of a request that was applied
// (504 or a reset connection, as real clusters do behind load balancers), or add latency; plus hooks to close
// every open watch and to compact the watch cache. Probability draws come from a seeded generator so a chaos run
// can be replayed. Used through this class or the authenticated /admin/ endpoints.
import { seededRandom } from '../common/seeded-random.ts';
import {
  conflict,
  internalError,
  serverTimeout,
  serviceUnavailable,
  statusError,
  STALE_OBJECT_CAUSE,
  tooManyRequests,
  type ClusterApiError,
} from '../common/api-errors.ts';

/** A fault rule; unset match fields match everything. */
export interface FaultRule {
  /** get, list, watch, create, update, patch, delete, deletecollection. */
  verb?: string;
  /** Resource plural, e.g. persistentvolumeclaims. */
  resource?: string;
  /** Subresource, e.g. status; unset matches requests with or without one. */
  subresource?: string;
  namespace?: string;
  /** The object's name: the URL's, or for creates the one in the request body (`metadata.name`). */
  name?: string;
  /** HTTP status to answer with; unset = latency only. */
  status?: number;
  /** Retry-After for 429/503/504 (default 1). */
  retryAfterSeconds?: number;
  /** Fail only this many matching requests, then the rule retires. */
  count?: number;
  /** Fail each matching request with this probability (0..1). */
  probability?: number;
  /** Delay before the request is handled (or fails). */
  latencyMs?: number;
  /**
   * Apply the request, then lose its response: `timeout` answers 504 instead, `reset` destroys the connection.
   * Ignored for watches. A rule has either this or a status.
   */
  lostResponse?: LostResponse;
}

/** How an applied request's response is lost. */
export type LostResponse = 'timeout' | 'reset';

/** A request as the fault matcher sees it. */
export interface FaultTarget {
  verb: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export interface FaultDecision {
  latencyMs: number;
  error: ClusterApiError | undefined;
  /** Set when the request must be applied and its response lost. */
  lostResponse?: LostResponse;
}

/** Active fault rules and the admin hooks of one cluster. */
export class Faults {
  private readonly rules = new Map<number, FaultRule & { remaining?: number }>();
  private nextId = 1;
  private random: () => number;
  private readonly closeWatchHooks = new Set<() => void>();
  private readonly compactHooks = new Set<() => void>();

  /** `seed` makes the probability draws reproducible; `random` replaces the generator altogether. */
  constructor(opts: { random?: () => number; seed?: number } = {}) {
    this.random = opts.random ?? (opts.seed !== undefined ? seededRandom(opts.seed) : Math.random);
  }

  /** Restarts the probability draws from `seed` (a chaos run passes its run seed, so a run can be replayed). */
  reseed(seed: number): void {
    this.random = seededRandom(seed);
  }

  /** Adds a rule; returns its id (for remove). */
  add(rule: FaultRule): number {
    const id = this.nextId++;
    this.rules.set(id, { ...rule, remaining: rule.count });
    return id;
  }

  remove(id: number): void {
    this.rules.delete(id);
  }

  /** Removes every rule. */
  clear(): void {
    this.rules.clear();
  }

  /** The active rules with their ids (count = failures left). */
  list(): Array<FaultRule & { id: number }> {
    return [...this.rules].map(([id, r]) => {
      const { remaining, ...rule } = r;
      return { id, ...rule, ...(remaining !== undefined ? { count: remaining } : {}) };
    });
  }

  /** Decides what happens to a request: added latency and an optional error (first matching failing rule wins). */
  decide(t: FaultTarget, onlyNamed = false): FaultDecision | undefined {
    if (this.rules.size === 0) return undefined;
    let latencyMs = 0;
    let error: ClusterApiError | undefined;
    let lostResponse: LostResponse | undefined;
    for (const [id, r] of this.rules) {
      if (!matches(r, t) || (onlyNamed && r.name === undefined)) continue;
      if (r.probability !== undefined && this.random() >= r.probability) continue;
      if (r.remaining !== undefined) {
        if (r.remaining <= 0) continue;
        r.remaining--;
        if (r.remaining <= 0) this.rules.delete(id);
      }
      latencyMs += r.latencyMs ?? 0;
      if (r.status !== undefined && !error) error = faultError(r, t);
      if (r.lostResponse !== undefined) lostResponse ??= r.lostResponse;
    }
    // A request that fails outright is not applied, so it has no response to lose.
    if (error) lostResponse = undefined;
    return latencyMs || error || lostResponse
      ? { latencyMs, error, ...(lostResponse ? { lostResponse } : {}) }
      : undefined;
  }

  /**
   * The second look at a create, once its body is read: the rules naming an object, matched against the
   * body's `metadata.name` (decide() saw no name on a create's URL, so these rules did not count there).
   */
  decideCreate(t: FaultTarget & { name: string }): FaultDecision | undefined {
    return this.decide(t, true);
  }

  /** Closes every open watch stream (clients see the body end and re-watch). */
  closeWatches(): void {
    for (const hook of [...this.closeWatchHooks]) hook();
  }

  /** Drops the watch history: resumes from an older resourceVersion get 410 Expired. */
  compact(): void {
    for (const hook of [...this.compactHooks]) hook();
  }

  /** For the server: registers what closeWatches()/compact() act on; returns the unregister function. */
  onCloseWatches(hook: () => void): () => void {
    this.closeWatchHooks.add(hook);
    return () => this.closeWatchHooks.delete(hook);
  }

  onCompact(hook: () => void): () => void {
    this.compactHooks.add(hook);
    return () => this.compactHooks.delete(hook);
  }
}

function matches(r: FaultRule, t: FaultTarget): boolean {
  return (
    (r.verb === undefined || r.verb === t.verb) &&
    (r.resource === undefined || r.resource === t.resource) &&
    (r.subresource === undefined || r.subresource === t.subresource) &&
    (r.namespace === undefined || r.namespace === t.namespace) &&
    (r.name === undefined || r.name === t.name)
  );
}

function faultError(r: FaultRule, t: FaultTarget): ClusterApiError {
  const retry = r.retryAfterSeconds ?? 1;
  const ref = { group: '', resource: t.resource, kind: t.resource };
  switch (r.status) {
    case 429:
      return tooManyRequests(retry);
    case 409:
      return conflict(ref, t.name ?? '', STALE_OBJECT_CAUSE);
    case 500:
      return internalError('injected fault');
    case 503:
      return serviceUnavailable('injected fault: the server is currently unable to handle the request');
    case 504:
      return serverTimeout('Timeout: request did not complete within the allowed duration (injected fault)', {
        retryAfterSeconds: retry,
      });
    default:
      return statusError(r.status ?? 500, 'InternalError', `injected fault (${r.status})`);
  }
}

/** Validates an admin request body into a FaultRule. @throws Error with a message for the 400 answer. */
export function parseFaultRule(v: unknown): FaultRule {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('a fault rule must be a JSON object');
  const o = v as Record<string, unknown>;
  const rule: FaultRule = {};
  for (const k of ['verb', 'resource', 'subresource', 'namespace', 'name'] as const) {
    if (o[k] === undefined) continue;
    if (typeof o[k] !== 'string') throw new Error(`${k} must be a string`);
    rule[k] = o[k];
  }
  for (const k of ['status', 'retryAfterSeconds', 'count', 'probability', 'latencyMs'] as const) {
    if (o[k] === undefined) continue;
    if (typeof o[k] !== 'number' || !Number.isFinite(o[k]) || o[k] < 0)
      throw new Error(`${k} must be a non-negative number`);
    rule[k] = o[k];
  }
  if (o.lostResponse !== undefined) {
    if (o.lostResponse !== 'timeout' && o.lostResponse !== 'reset')
      throw new Error('lostResponse must be "timeout" or "reset"');
    rule.lostResponse = o.lostResponse;
  }
  if (rule.status !== undefined && (rule.status < 400 || rule.status > 599))
    throw new Error('status must be an HTTP error code (400-599)');
  if (rule.status !== undefined && rule.lostResponse !== undefined)
    throw new Error('a fault rule has either a status or a lostResponse');
  if (rule.probability !== undefined && rule.probability > 1) throw new Error('probability must be between 0 and 1');
  if (rule.status === undefined && rule.lostResponse === undefined && !rule.latencyMs)
    throw new Error('a fault rule needs a status, a lostResponse or a latencyMs');
  return rule;
}
