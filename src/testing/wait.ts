// Waiting for an object to reach a state, for tests: waitFor() polls the object (bounded interval, bounded
// time) until a condition (or a plain predicate) holds, and ready-made conditions for what provisioner tests wait
// for. Modelled on kube-rs runtime::wait (await_condition + conditions::*): a condition sees the object, or
// undefined when it does not exist, so "deleted" is a condition like any other. A timeout says where the object
// was: its phase, its status conditions and its last events, which is what a failing test needs first.
import type { KubeClient } from '../runtime/client.ts';
import { NotFoundError } from '../runtime/status-errors.ts';
import { coreEvents, type ApiResource } from '../runtime/resources.ts';
import type { CoreEvent, KubeObject, PersistentVolumeClaim } from '../types/k8s.ts';

/** What a condition may use besides the object: the client (e.g. to read the object's events). */
export interface ConditionContext {
  client: KubeClient;
  namespace?: string;
  name: string;
}

/** A state to wait for. `test` gets the object, or undefined when it does not exist. */
export interface Condition<T extends KubeObject = KubeObject> {
  /** Says what is awaited, for the timeout error (e.g. `claim Bound`). */
  description: string;
  test(obj: T | undefined, ctx: ConditionContext): boolean | Promise<boolean>;
}

/** A plain predicate, for {@link waitFor}: true once the object (undefined: absent) is in the awaited state. */
export type ConditionPredicate<T extends KubeObject = KubeObject> = (
  obj: T | undefined,
  ctx: ConditionContext,
) => boolean | Promise<boolean>;

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Time between two looks (default 50 ms). */
  intervalMs?: number;
  /** The object's namespace (namespaced resources). */
  namespace?: string;
  signal?: AbortSignal;
}

/** The condition did not hold within the timeout; `last` is the object as last seen (undefined = absent). */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';
  constructor(
    message: string,
    readonly last: KubeObject | undefined,
  ) {
    super(message);
  }
}

/**
 * Resolves with the object (undefined when the condition holds for an absent object) once `condition` (a
 * {@link Condition} or a plain predicate) holds; rejects with WaitTimeoutError after `timeoutMs`, naming the
 * object's last phase, conditions and events. Each look is one GET.
 */
export async function waitFor<T extends KubeObject>(
  client: KubeClient,
  resource: ApiResource<T>,
  name: string,
  condition: Condition<T> | ConditionPredicate<T>,
  opts: WaitForOptions = {},
): Promise<T | undefined> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  const ctx: ConditionContext = { client, namespace: opts.namespace, name };
  const test =
    typeof condition === 'function' ? condition : (o: T | undefined, c: ConditionContext) => condition.test(o, c);
  const description = typeof condition === 'function' ? 'in the awaited state' : condition.description;
  let last: T | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    last = await getOrUndefined(client, resource, name, opts.namespace, opts.signal);
    if (await test(last, ctx)) return last;
    if (Date.now() >= deadline) {
      const where = opts.namespace ? `${opts.namespace}/${name}` : name;
      const state = await describeState(last, ctx).catch((err: unknown) => [
        `(its events could not be read: ${(err as Error).message})`,
      ]);
      throw new WaitTimeoutError(
        [`${resource.kind} ${where}: not ${description} after ${timeoutMs} ms`, ...state].join('\n  '),
        last,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** How many of the object's events a timeout error lists (the newest). */
const EVENTS_IN_TIMEOUT = 5;

/** The object's last phase, status conditions and newest events, one per line, for a timeout error. */
async function describeState(obj: KubeObject | undefined, ctx: ConditionContext): Promise<string[]> {
  if (!obj) return ['it does not exist'];
  const status = (
    obj as {
      status?: {
        phase?: string;
        conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
      };
    }
  ).status;
  const lines = [`phase ${status?.phase ?? '(none)'}`];
  for (const c of status?.conditions ?? []) {
    lines.push(
      `condition ${c.type}=${c.status}${c.reason ? ` (${c.reason})` : ''}${c.message ? `: ${c.message}` : ''}`,
    );
  }
  const time = (e: CoreEvent) => Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '') || 0;
  const events = (await eventsOf(obj, ctx)).sort((a, b) => time(a) - time(b)).slice(-EVENTS_IN_TIMEOUT);
  if (events.length === 0) lines.push('no events');
  for (const e of events)
    lines.push(
      `event ${e.type ?? 'Normal'} ${e.reason}${(e.count ?? 1) > 1 ? ` (${e.count}x)` : ''}: ${e.message ?? ''}`,
    );
  return lines;
}

async function getOrUndefined<T extends KubeObject>(
  client: KubeClient,
  r: ApiResource<T>,
  name: string,
  namespace: string | undefined,
  signal?: AbortSignal,
): Promise<T | undefined> {
  try {
    return await client.get(r, name, { namespace, signal });
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}

/** The events whose involvedObject is the object named in `ctx` (same uid when the object exists). */
export async function eventsOf(obj: KubeObject | undefined, ctx: ConditionContext): Promise<CoreEvent[]> {
  const { items } = await ctx.client.list(coreEvents, { namespace: ctx.namespace ?? 'default' });
  return items.filter(
    (e) =>
      e.involvedObject.name === ctx.name &&
      (!obj?.metadata.uid || !e.involvedObject.uid || e.involvedObject.uid === obj.metadata.uid),
  );
}

/** Ready-made conditions (kube-rs `conditions::*`). */
export const conditions = {
  /** The claim's phase is Bound. */
  claimBound(): Condition<PersistentVolumeClaim> {
    return { description: 'claim Bound', test: (c) => c?.status?.phase === 'Bound' };
  },
  /** The claim is Pending and has an event with this reason (e.g. ProvisioningFailed). */
  claimPendingWithEvent(reason: string): Condition<PersistentVolumeClaim> {
    return {
      description: `claim Pending with a ${reason} event`,
      test: async (c, ctx) =>
        (c?.status?.phase ?? 'Pending') === 'Pending' &&
        c !== undefined &&
        (await eventsOf(c, ctx)).some((e) => e.reason === reason),
    };
  },
  /** The object does not exist (or, with `uid`, that incarnation of it is gone). */
  deleted<T extends KubeObject = KubeObject>(uid?: string): Condition<T> {
    return { description: 'deleted', test: (o) => o === undefined || (uid !== undefined && o.metadata.uid !== uid) };
  },
  /** An event with this reason was recorded about the object. */
  eventSeen<T extends KubeObject = KubeObject>(reason: string): Condition<T> {
    return {
      description: `with a ${reason} event`,
      test: async (o, ctx) => (await eventsOf(o, ctx)).some((e) => e.reason === reason),
    };
  },
};
