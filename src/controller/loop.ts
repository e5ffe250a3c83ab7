// The shape every control loop declares (claim, volume, resize; the CSI capacity loop has the same parts): its key,
// its pure decision on the term's caches, a sync that returns a Next, its records in the books, its metrics and its
// informer hooks. The ProvisionController wires any list of loops the same way (one queue and `threadiness` workers
// each, hooks on the term's informers), so a new loop is one folder that declares these parts.
import type { InformerHandlers } from '../runtime/informer.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../types/k8s.ts';
import type { ControllerTerm } from './controller-state.ts';
import type { Next } from './next.ts';
import type { Records } from './object-records.ts';

/** What informer hooks do to a loop's work queue (a WorkQueue fits): they only add and forget keys. */
export interface KeyQueue {
  add(key: string): void;
  forget(key: string): void;
}

/** The informer events a loop listens to, by informer of the term. */
export interface LoopHooks {
  claims?: InformerHandlers<PersistentVolumeClaim>;
  volumes?: InformerHandlers<PersistentVolume>;
  classes?: InformerHandlers<StorageClass>;
}

/**
 * One control loop. `Obj` is the object a key names, `Decision` what its pure decision returns, `Rec` what the loop
 * remembers per key between syncs, `Metrics` its collectors.
 */
export interface ControlLoop<Obj, Decision, Rec extends object, Metrics> {
  /** The loop's queue name (also the workqueue metrics' `name` label): `claims`, `volumes`, `resizes`. */
  readonly name: string;
  /** The key of an object on this loop's queue (a claim's uid, a PV's name). */
  key(obj: Obj): string;
  /** The pure decision on the term's caches and the loop's records; sync acts on it, explain shows it. */
  decide(t: ControllerTerm, obj: Obj): Decision;
  /** Processes one key and says what should happen next. Never touches the queue: the worker applies the Next. */
  sync(t: ControllerTerm, key: string): Promise<Next>;
  /** What the loop remembers per key (failures and the like); forgetting an object is one delete. */
  readonly records: Records<Rec>;
  readonly metrics: Metrics;
  /** Which informer events put which keys on `queue`, and what is forgotten when an object goes. */
  hooks(t: ControllerTerm, queue: KeyQueue): LoopHooks;
}

/** A loop of any kind, as the controller wires it (the wiring never looks at its objects, decisions or records). */
export type AnyControlLoop = ControlLoop<never, unknown, object, unknown>;
