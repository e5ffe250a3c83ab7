// Waiting for an object to reach a state, for tests: waitFor() polls the object (bounded interval, bounded
// time) until a condition holds, and ready-made conditions for what provisioner tests wait for. Modelled on
// kube-rs runtime::wait (await_condition + conditions::*): a condition sees the object, or undefined when it
// does not exist, so "deleted" is a condition like any other.
import type { KubeClient } from '../runtime/client.ts';
import { NotFoundError } from '../runtime/errors.ts';
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
  constructor(message: string, readonly last: KubeObject | undefined) {
    super(message);
  }
}

/**
 * Resolves with the object (undefined when the condition holds for an absent object) once `condition` holds;
 * rejects with WaitTimeoutError after `timeoutMs`. Each look is one GET.
 */
export async function waitFor<T extends KubeObject>(
  client: KubeClient,
  resource: ApiResource<T>,
  name: string,
  condition: Condition<T>,
  opts: WaitForOptions = {},
): Promise<T | undefined> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const intervalMs = opts.intervalMs ?? 50;
  const deadline = Date.now() + timeoutMs;
  const ctx: ConditionContext = { client, namespace: opts.namespace, name };
  let last: T | undefined;
  for (;;) {
    opts.signal?.throwIfAborted();
    last = await getOrUndefined(client, resource, name, opts.namespace, opts.signal);
    if (await condition.test(last, ctx)) return last;
    if (Date.now() >= deadline) {
      const where = opts.namespace ? `${opts.namespace}/${name}` : name;
      throw new WaitTimeoutError(`${resource.kind} ${where}: not ${condition.description} after ${timeoutMs} ms`, last);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

async function getOrUndefined<T extends KubeObject>(client: KubeClient, r: ApiResource<T>, name: string, namespace: string | undefined, signal?: AbortSignal): Promise<T | undefined> {
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
  return items.filter((e) => e.involvedObject.name === ctx.name && (!obj?.metadata.uid || !e.involvedObject.uid || e.involvedObject.uid === obj.metadata.uid));
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
      test: async (c, ctx) => (c?.status?.phase ?? 'Pending') === 'Pending' && c !== undefined && (await eventsOf(c, ctx)).some((e) => e.reason === reason),
    };
  },
  /** The object does not exist (or, with `uid`, that incarnation of it is gone). */
  deleted<T extends KubeObject = KubeObject>(uid?: string): Condition<T> {
    return { description: 'deleted', test: (o) => o === undefined || (uid !== undefined && o.metadata.uid !== uid) };
  },
  /** An event with this reason was recorded about the object. */
  eventSeen<T extends KubeObject = KubeObject>(reason: string): Condition<T> {
    return { description: `with a ${reason} event`, test: async (o, ctx) => (await eventsOf(o, ctx)).some((e) => e.reason === reason) };
  },
};
