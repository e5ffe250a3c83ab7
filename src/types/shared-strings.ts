// Short strings that repeat across cached objects (kinds, namespaces, class and provisioner names, access modes,
// finalizers, annotation values, quantities), shared through one bounded table instead of one copy per object, which
// JSON parsing would otherwise give. Used by the provisioner's informer transform (runtime/cache-transform.ts) and
// by the embedded cluster's controllers' cache, which may not import runtime/.

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
