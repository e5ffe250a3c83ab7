// What an informer cache keeps of an object (client-go's SetTransform): the server's bookkeeping nobody reads
// (managedFields, kubectl's last-applied copy of the whole object, and fields a caller names) is dropped, and the
// short strings that repeat across objects (kinds, namespaces, class and provisioner names, access modes,
// finalizers, annotation values, quantities, timestamps) are shared through one bounded table instead of one copy
// per object, which JSON parsing would otherwise give. Runs once per object, before it enters the cache.
import type { KubeObject } from '../types/k8s.ts';

/** kubectl apply's copy of the whole object: as large as the object itself, read by kubectl only. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/** Keys whose string values are (nearly) unique per object: sharing them would only fill the table. */
const UNIQUE_VALUE_KEYS: ReadonlySet<string> = new Set([
  'name',
  'uid',
  'resourceVersion',
  'volumeName',
  'path',
  'volumeHandle',
]);

/** Strings longer than this are not shared (lock records, messages, certificates: unique, and rarely equal). */
const MAX_SHARED_LENGTH = 64;

/**
 * A bounded table of shared strings. Once it holds `capacity` distinct strings it starts over, so values that
 * keep changing (timestamps) cannot grow it without bound; sharing is only an optimisation.
 */
export class StringTable {
  private readonly strings = new Map<string, string>();

  constructor(private readonly capacity = 4096) {}

  /** The table's copy of `s` (added when absent). */
  share(s: string): string {
    const known = this.strings.get(s);
    if (known !== undefined) return known;
    if (this.strings.size >= this.capacity) this.strings.clear();
    this.strings.set(s, s);
    return s;
  }

  /** Distinct strings held. */
  get size(): number {
    return this.strings.size;
  }
}

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

/**
 * Replaces every short string value (outside the keys whose values are unique per object) by the table's copy, in
 * place, without recursion. The object means the same afterwards: only which copy of each string it points at
 * changes, so an object others hold may be passed (the cluster controllers' cache uses it alone, without the drops).
 */
export function shareStrings(root: Record<string, unknown>, table: StringTable): void {
  const stack: Array<Record<string, unknown> | unknown[]> = [root];
  const keys: Array<string | undefined> = [undefined];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const parentKey = keys.pop();
    if (Array.isArray(node)) {
      if (parentKey !== undefined && UNIQUE_VALUE_KEYS.has(parentKey)) continue;
      for (let i = 0; i < node.length; i++) {
        const v = node[i];
        if (typeof v === 'string') {
          if (v.length <= MAX_SHARED_LENGTH) node[i] = table.share(v);
        } else if (v && typeof v === 'object') {
          stack.push(v as Record<string, unknown>);
          keys.push(parentKey);
        }
      }
      continue;
    }
    for (const key in node) {
      if (!Object.hasOwn(node, key) || key === '__proto__') continue;
      const v = node[key];
      if (typeof v === 'string') {
        if (v.length <= MAX_SHARED_LENGTH && !UNIQUE_VALUE_KEYS.has(key)) node[key] = table.share(v);
      } else if (v && typeof v === 'object') {
        stack.push(v as Record<string, unknown>);
        keys.push(key);
      }
    }
  }
}
