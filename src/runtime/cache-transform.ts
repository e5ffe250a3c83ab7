// What an informer cache keeps of an object (client-go's SetTransform): the server's bookkeeping nobody reads
// (managedFields, kubectl's last-applied copy of the whole object, and fields a caller names) is dropped, and the
// short strings that repeat across objects (kinds, namespaces, class and provisioner names, access modes,
// finalizers, annotation values, quantities, timestamps) are shared through one bounded table instead of one copy
// per object, which JSON parsing would otherwise give. Runs once per object, before it enters the cache.
import type { KubeObject } from '../types/k8s.ts';
import { shareStrings, StringTable } from '../types/shared-strings.ts';

/** kubectl apply's copy of the whole object: as large as the object itself, read by kubectl only. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Options of {@link cacheTransform}. */
export interface CacheTransformOptions {
  /**
   * Dotted paths of fields to drop besides managedFields and the last-applied annotation, e.g. `status.images` of
   * a Node (tens of kilobytes on a real node). Only fields nothing that reads the cache needs.
   */
  dropFields?: readonly string[];
  /** Where repeated strings are shared; one table may serve several informers. Default: a table of its own. */
  strings?: StringTable;
}

/**
 * A transform for {@link InformerOptions.transform}: drops `metadata.managedFields`, the last-applied annotation and
 * `dropFields`, then shares repeated short strings. Changes the (fresh) object in place and returns it.
 */
export function cacheTransform<T extends KubeObject>(opts: CacheTransformOptions = {}): (obj: T) => T {
  const strings = opts.strings ?? new StringTable();
  const drops = (opts.dropFields ?? []).map((p) => p.split('.'));
  return (obj) => {
    const meta = obj.metadata as (KubeObject['metadata'] & { managedFields?: unknown }) | undefined;
    if (meta) {
      delete meta.managedFields;
      if (meta.annotations && LAST_APPLIED_ANNOTATION in meta.annotations) {
        delete meta.annotations[LAST_APPLIED_ANNOTATION];
        if (Object.keys(meta.annotations).length === 0) delete meta.annotations;
      }
    }
    for (const path of drops) dropPath(obj as unknown as Record<string, unknown>, path);
    shareStrings(obj as unknown as Record<string, unknown>, strings);
    return obj;
  };
}

function dropPath(obj: Record<string, unknown>, path: string[]): void {
  let at: unknown = obj;
  for (let i = 0; i < path.length - 1; i++) {
    if (!at || typeof at !== 'object') return;
    at = (at as Record<string, unknown>)[path[i]];
  }
  if (at && typeof at === 'object' && !Array.isArray(at)) delete (at as Record<string, unknown>)[path[path.length - 1]];
}
