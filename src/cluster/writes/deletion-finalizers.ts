// Which garbage-collector finalizers a DELETE leaves on an object, as kube-apiserver's generic store decides
// (k8s.io/apiserver registry/generic/registry/store.go deletionFinalizersForGarbageCollection, shouldOrphanDependents,
// shouldDeleteDependents): the request's orphanDependents or propagationPolicy first, then the finalizer the
// object already carries, then the kind's default policy. Pure, so the order of precedence is tested alone.
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../../types/annotations.ts';
import type { GarbageCollectionPolicy } from '../registry/resource-type.ts';

/** metav1.DeletionPropagation. */
export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

/** The DeleteOptions fields that choose what happens to dependents. */
export interface PropagationOptions {
  propagationPolicy?: PropagationPolicy;
  /** Deprecated: true is Orphan, false is "not Orphan". Set together with propagationPolicy is refused earlier. */
  orphanDependents?: boolean;
}

function shouldOrphan(
  policy: GarbageCollectionPolicy | undefined,
  finalizers: readonly string[],
  opts: PropagationOptions,
): boolean {
  if (policy === 'Unsupported') return false;
  if (opts.orphanDependents !== undefined) return opts.orphanDependents;
  if (opts.propagationPolicy !== undefined) return opts.propagationPolicy === 'Orphan';
  for (const f of finalizers) {
    if (f === FINALIZER_ORPHAN_DEPENDENTS) return true;
    if (f === FINALIZER_DELETE_DEPENDENTS) return false;
  }
  return policy === 'OrphanDependents';
}

function shouldDeleteDependents(
  policy: GarbageCollectionPolicy | undefined,
  finalizers: readonly string[],
  opts: PropagationOptions,
): boolean {
  if (policy === 'Unsupported' || opts.orphanDependents !== undefined) return false;
  if (opts.propagationPolicy !== undefined) return opts.propagationPolicy === 'Foreground';
  for (const f of finalizers) {
    if (f === FINALIZER_DELETE_DEPENDENTS) return true;
    if (f === FINALIZER_ORPHAN_DEPENDENTS) return false;
  }
  return false;
}

/**
 * The object's finalizers after a DELETE with `opts` on a kind with default `policy`, or undefined when they
 * stay as they are (compared as sets, as kube does).
 */
export function deletionFinalizers(
  policy: GarbageCollectionPolicy | undefined,
  finalizers: readonly string[],
  opts: PropagationOptions,
): string[] | undefined {
  const next = finalizers.filter((f) => f !== FINALIZER_ORPHAN_DEPENDENTS && f !== FINALIZER_DELETE_DEPENDENTS);
  if (shouldOrphan(policy, finalizers, opts)) next.push(FINALIZER_ORPHAN_DEPENDENTS);
  if (shouldDeleteDependents(policy, finalizers, opts)) next.push(FINALIZER_DELETE_DEPENDENTS);
  const before = new Set(finalizers);
  const after = new Set(next);
  const same = before.size === after.size && [...after].every((f) => before.has(f));
  return same ? undefined : next;
}
