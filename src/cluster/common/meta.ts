// Small pure helpers over object metadata shared by the store and the HTTP layer: Kubernetes time formats,
// generateName suffixes, storage keys, and the semantic equality that decides whether a write is a no-op.
import { randomInt } from 'node:crypto';
import type { KubeObject } from '../../types/k8s.ts';

/** The last second formatted by formatTime: every write within one second stamps the same text. */
const lastTime = { second: NaN, text: '' };

/** metav1.Time: RFC 3339 in UTC with whole seconds (`2006-01-02T15:04:05Z`). */
export function formatTime(ms: number): string {
  // A memo of a pure function (same input second, same text), not state anyone can observe.
  const second = Math.floor(ms / 1000);
  if (second !== lastTime.second) {
    lastTime.text = `${new Date(ms).toISOString().slice(0, 19)}Z`;
    lastTime.second = second;
  }
  return lastTime.text;
}

/** metav1.MicroTime: exactly six fractional digits (`2006-01-02T15:04:05.000000Z`). */
export function formatMicroTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})$/;

/** Whether a string is a MicroTime as Go's RFC3339Micro layout parses it. */
export function isMicroTime(s: string): boolean {
  return MICRO_TIME.test(s);
}

const NAME_SUFFIX_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';
const MAX_GENERATED_NAME_LENGTH = 63;

/** names.SimpleNameGenerator: base truncated to 58 characters plus 5 random characters. */
export function generateName(base: string): string {
  const maxBase = MAX_GENERATED_NAME_LENGTH - 5;
  let out = base.length > maxBase ? base.slice(0, maxBase) : base;
  for (let i = 0; i < 5; i++) out += NAME_SUFFIX_ALPHABET[randomInt(NAME_SUFFIX_ALPHABET.length)];
  return out;
}

/** The storage key of an object: `namespace/name`, or `name` for cluster-scoped resources. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Deep equality of JSON values, ignoring object key order (a PUT body rarely has the stored key order). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let count = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    count++;
    if (!jsonEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) count--;
  return count === 0;
}

/** A fresh deep copy of a JSON object. */
export function cloneJson<T>(v: T): T {
  return structuredClone(v);
}

/** Reads a dotted path (`spec.nodeName`) from an object; undefined when any step is missing. */
export function readPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}

/** A field-selector value: strings as they are, numbers/booleans printed, anything else absent. */
export function fieldString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}

/** Reads an object's `metadata.labels` without trusting its shape. */
export function labelsOf(obj: KubeObject): Record<string, string> | undefined {
  return obj.metadata?.labels;
}
