// What `dev` prints about provisioning while it serves: one concise line per claim outcome (provisioned, or why
// not) from the claims' ProvisioningSucceeded / ProvisioningFailed events recorded after start. The JSON logs stay
// at warn; these lines are for the person at the terminal who just ran `kubectl apply`.
import type { KubeClient } from '../runtime/client.ts';
import { Informer } from '../runtime/informer.ts';
import { coreEvents } from '../runtime/resources.ts';
import type { CoreEvent } from '../types/k8s.ts';

const REASONS = new Set(['ProvisioningSucceeded', 'ProvisioningFailed', 'ProvisioningGivenUp']);
// A long session must not grow without bound: forget what was printed after this many lines.
const MAX_REMEMBERED = 10_000;

/**
 * The events the printer watches: about claims, without the two every claim gets and no outcome is
 * (ExternalProvisioning from the binder, Provisioning from the provisioner), which were two thirds of its cache
 * (20,000 of 30,000 events after 10,000 claims; field selectors cannot say "one of", so the rest is filtered here).
 */
export const OUTCOME_FIELD_SELECTOR =
  'involvedObject.kind=PersistentVolumeClaim,reason!=ExternalProvisioning,reason!=Provisioning';

/** The line for one event, or undefined when it is not a provisioning outcome. */
export function outcomeLine(e: CoreEvent): string | undefined {
  if (e.involvedObject.kind !== 'PersistentVolumeClaim' || !REASONS.has(e.reason ?? '')) return undefined;
  const claim = `${e.involvedObject.namespace ?? ''}/${e.involvedObject.name ?? ''}`;
  if (e.reason === 'ProvisioningSucceeded') return `claim ${claim}: ${e.message ?? 'provisioned'}`;
  return `claim ${claim}: ${e.reason === 'ProvisioningGivenUp' ? 'given up' : 'not provisioned'}: ${e.message ?? ''}`;
}

/** FNV-1a of a string's UTF-16 code units, as 8 hex digits. */
function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** When an event was last recorded (ms since epoch; NaN without a timestamp). */
function eventTime(e: CoreEvent): number {
  return Date.parse(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '');
}

/**
 * What the outcome printer's informer keeps of an event: its identity, and for a provisioning outcome recorded
 * at or after `sinceMs` the fields of its line. Every other event (Provisioning, ExternalProvisioning, outcomes
 * from before the start) is kept as its name and resourceVersion alone. Keeping whole events cost 113 MB of
 * `dev`'s heap after 10,000 claims (30,000 events; docs/benchmarks.md).
 */
export function outcomeEventTransform(sinceMs: number): (e: CoreEvent) => CoreEvent {
  return (e) => {
    // No uid: the store would index it, and nothing here looks an event up by uid.
    const { name, namespace, resourceVersion } = e.metadata;
    const slim = {
      apiVersion: e.apiVersion,
      kind: e.kind,
      metadata: { name, namespace, resourceVersion },
    } as CoreEvent;
    if (!(eventTime(e) >= Math.floor(sinceMs / 1000) * 1000) || outcomeLine(e) === undefined) return slim;
    const { kind, namespace: ns, name: claim, uid: claimUid } = e.involvedObject;
    return {
      ...slim,
      involvedObject: { kind, namespace: ns, name: claim, uid: claimUid },
      reason: e.reason,
      message: e.message,
      lastTimestamp: e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp,
    };
  };
}

/**
 * Prints each provisioning outcome recorded at or after `sinceMs` once (a repeat of the same message, which the
 * event correlator aggregates into a count, is not printed again). Runs until `signal` aborts. The lines of one
 * event-loop turn reach `out` as one string, joined by newlines, after the turn's I/O (and before this returns):
 * stdout to a pipe or a terminal is a synchronous write per call, and one per line was 2.7% of `dev`'s provisioner
 * thread at 10,000 claims (docs/benchmarks.md, "`dev` CPU per claim (session 32, H2)").
 */
export async function printProvisioningOutcomes(
  client: KubeClient,
  sinceMs: number,
  out: (lines: string) => void,
  signal: AbortSignal,
): Promise<void> {
  let pending: string[] = [];
  let flushing: NodeJS.Immediate | undefined;
  const flush = () => {
    flushing = undefined;
    if (pending.length === 0) return;
    const lines = pending.join('\n');
    pending = [];
    out(lines);
  };
  const print = (line: string) => {
    pending.push(line);
    flushing ??= setImmediate(flush);
  };
  const printed = new Set<string>();
  const seen = (e: CoreEvent) => {
    if (!e.involvedObject) return; // slimmed by the transform: not an outcome to print
    const at = eventTime(e);
    // Timestamps have second precision: an outcome in the start's second counts as after start.
    if (!(at >= Math.floor(sinceMs / 1000) * 1000)) return;
    const line = outcomeLine(e);
    if (!line) return;
    // The claim's uid and a hash of the line, not the line itself: 10,000 remembered lines of ~150 characters
    // were 2.4 MB of dev's heap. A collision only leaves one line unprinted.
    const key = `${e.involvedObject.uid ?? ''}|${fnv1a(line)}`;
    if (printed.has(key)) return;
    if (printed.size >= MAX_REMEMBERED) printed.clear();
    printed.add(key);
    print(line);
  };
  const informer = new Informer<CoreEvent>({
    client,
    resource: coreEvents,
    fieldSelector: OUTCOME_FIELD_SELECTOR,
    transform: outcomeEventTransform(sinceMs),
    handlers: { onAdd: seen, onUpdate: (_old, e) => seen(e) },
  });
  informer.start(signal);
  await new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await informer.stop();
  if (flushing) clearImmediate(flushing);
  flush();
}
