// Fault injection for tests and chaos runs: rules that make matching API requests fail with a chosen status
// (500, 429 + Retry-After, 409, 504...) by count or probability, or add latency; plus hooks to close every open
// watch and to compact the watch cache. Used through this class or the authenticated /admin/ endpoints.
import { conflict, internalError, serverTimeout, serviceUnavailable, statusError, STALE_OBJECT_CAUSE, tooManyRequests, type ApiError } from './errors.ts';

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
}

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
  error: ApiError | undefined;
}

/** Active fault rules and the admin hooks of one cluster. */
export class Faults {
  readonly #rules = new Map<number, FaultRule & { remaining?: number }>();
  #nextId = 1;
  readonly #random: () => number;
  readonly #closeWatchHooks = new Set<() => void>();
  readonly #compactHooks = new Set<() => void>();

  constructor(opts: { random?: () => number } = {}) {
    this.#random = opts.random ?? Math.random;
  }

  /** Adds a rule; returns its id (for remove). */
  add(rule: FaultRule): number {
    const id = this.#nextId++;
    this.#rules.set(id, { ...rule, remaining: rule.count });
    return id;
  }

  remove(id: number): void {
    this.#rules.delete(id);
  }

  /** Removes every rule. */
  clear(): void {
    this.#rules.clear();
  }

  /** The active rules with their ids (count = failures left). */
  list(): Array<FaultRule & { id: number }> {
    return [...this.#rules].map(([id, r]) => {
      const { remaining, ...rule } = r;
      return { id, ...rule, ...(remaining !== undefined ? { count: remaining } : {}) };
    });
  }

  /** Decides what happens to a request: added latency and an optional error (first matching failing rule wins). */
  decide(t: FaultTarget, onlyNamed = false): FaultDecision | undefined {
    if (this.#rules.size === 0) return undefined;
    let latencyMs = 0;
    let error: ApiError | undefined;
    for (const [id, r] of this.#rules) {
      if (!matches(r, t) || (onlyNamed && r.name === undefined)) continue;
      if (r.probability !== undefined && this.#random() >= r.probability) continue;
      if (r.remaining !== undefined) {
        if (r.remaining <= 0) continue;
        r.remaining--;
        if (r.remaining <= 0) this.#rules.delete(id);
      }
      latencyMs += r.latencyMs ?? 0;
      if (r.status !== undefined && !error) error = faultError(r, t);
    }
    return latencyMs || error ? { latencyMs, error } : undefined;
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
    for (const hook of [...this.#closeWatchHooks]) hook();
  }

  /** Drops the watch history: resumes from an older resourceVersion get 410 Expired. */
  compact(): void {
    for (const hook of [...this.#compactHooks]) hook();
  }

  /** For the server: registers what closeWatches()/compact() act on; returns the unregister function. */
  onCloseWatches(hook: () => void): () => void {
    this.#closeWatchHooks.add(hook);
    return () => this.#closeWatchHooks.delete(hook);
  }

  onCompact(hook: () => void): () => void {
    this.#compactHooks.add(hook);
    return () => this.#compactHooks.delete(hook);
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

function faultError(r: FaultRule, t: FaultTarget): ApiError {
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
      return serverTimeout('Timeout: request did not complete within the allowed duration (injected fault)', { retryAfterSeconds: retry });
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
    if (typeof o[k] !== 'number' || !Number.isFinite(o[k]) || o[k] < 0) throw new Error(`${k} must be a non-negative number`);
    rule[k] = o[k];
  }
  if (rule.status !== undefined && (rule.status < 400 || rule.status > 599)) throw new Error('status must be an HTTP error code (400-599)');
  if (rule.probability !== undefined && rule.probability > 1) throw new Error('probability must be between 0 and 1');
  if (rule.status === undefined && !rule.latencyMs) throw new Error('a fault rule needs a status or a latencyMs');
  return rule;
}
