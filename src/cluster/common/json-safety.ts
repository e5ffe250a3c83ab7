// JSON that a hostile client controls, handled without trusting its shape: a nesting limit checked on the raw
// text before parsing (apimachinery's decoder stops at 10,000 levels), an iterative measure of a value's depth
// and serialized size (nothing here recurses, so no input can exhaust the stack), serialization that turns a
// too-deep or too-large value into a typed error, and own-property access so that `__proto__`, `constructor`
// and `prototype` stay plain keys and no prototype is ever read or replaced.

/** kube-apiserver's request body limit (3 MiB); also bounds what one JSON patch may copy. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** apimachinery's JSON decoding limit (Go encoding/json maxNestingDepth). */
export const MAX_JSON_DEPTH = 10_000;

/** V8's maximum string length on 64-bit platforms. */
const MAX_STRING_LENGTH = 2 ** 29 - 24;

/** A document nested deeper than the limit. */
export class JsonTooDeepError extends Error {
  override name = 'JsonTooDeepError';
  constructor(
    readonly limit: number,
    message = `exceeded max depth of ${limit}`,
  ) {
    super(message);
  }
}

/** A value whose serialization exceeds a byte limit. */
export class JsonTooLargeError extends Error {
  override name = 'JsonTooLargeError';
  constructor(readonly limit: number) {
    super(`the object exceeds the limit of ${limit} bytes`);
  }
}

const passes = { textScanned: 0, keysCounted: 0 };

/**
 * The work this thread's checks of JSON bodies have done since the process started: characters scanned by
 * checkJsonTextDepth, keys counted by countObjectKeys (tests read it: whether a request made these passes).
 */
export function jsonCheckWork(): { textScanned: number; keysCounted: number } {
  return { ...passes };
}

/**
 * Scans JSON text for its nesting depth without parsing it, and counts the object keys written in it (a key
 * repeated in one object counts twice, where the parsed value keeps it once: see countObjectKeys).
 * @throws JsonTooDeepError past `limit` levels.
 */
export function checkJsonTextDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let keys = 0;
  const n = text.length;
  passes.textScanned += n;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      // A string: jump to its closing quote (one preceded by an even number of backslashes).
      let end = text.indexOf('"', i + 1);
      for (;;) {
        if (end < 0) return keys; // unterminated: JSON.parse reports it
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
        if (slashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      i = end;
      let k = end + 1;
      for (let c = text.charCodeAt(k); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(++k));
      if (text.charCodeAt(k) === 0x3a) keys++;
    } else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > limit) throw new JsonTooDeepError(limit);
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return keys;
}

/** The number of own keys over every object in a parsed JSON value (iterative: no input can exhaust the stack). */
export function countObjectKeys(value: unknown): number {
  let keys = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    const names = Object.keys(v); // own keys, as JSON.parse makes them (for-in also walks the prototype chain)
    keys += names.length;
    for (const k of names) {
      const item = (v as Record<string, unknown>)[k];
      if (item !== null && typeof item === 'object') stack.push(item);
    }
  }
  passes.keysCounted += keys;
  return keys;
}

/** Parses JSON text after checking its depth. @throws JsonTooDeepError, SyntaxError */
export function parseJsonText(text: string, depthLimit = MAX_JSON_DEPTH): unknown {
  checkJsonTextDepth(text, depthLimit);
  return JSON.parse(text) as unknown;
}

/** Serialized length (UTF-16 units of compact JSON) of a scalar, or undefined for values JSON omits. */
function scalarLength(v: unknown): number | undefined {
  if (v === null) return 4;
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v).length;
    case 'number':
      return Number.isFinite(v) ? String(v).length : 4;
    case 'boolean':
      return v ? 4 : 5;
    default:
      return undefined;
  }
}

/**
 * Walks a parsed JSON value iteratively and checks its depth and compact serialized size, stopping as soon as a
 * limit is passed (so a value built by amplification is never walked, nor serialized, in full).
 * @throws JsonTooDeepError, JsonTooLargeError
 */
export function checkJsonValue(value: unknown, limits: { maxDepth?: number; maxBytes?: number }): number {
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  const maxBytes = limits.maxBytes ?? Infinity;
  let size = 0;
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (v !== null && typeof v === 'object') {
      if (depth + 1 > maxDepth) throw new JsonTooDeepError(maxDepth);
      if (Array.isArray(v)) {
        size += 2 + Math.max(0, v.length - 1);
        for (const item of v) stack.push({ v: item === undefined ? null : item, depth: depth + 1 });
      } else {
        const keys = Object.keys(v);
        size += 2 + Math.max(0, keys.length - 1);
        for (const k of keys) {
          const item = (v as Record<string, unknown>)[k];
          if (item === undefined || typeof item === 'function') continue;
          size += JSON.stringify(k).length + 1;
          stack.push({ v: item, depth: depth + 1 });
        }
      }
    } else {
      size += scalarLength(v) ?? 0;
    }
    if (size > maxBytes) throw new JsonTooLargeError(maxBytes);
  }
  return size;
}

/**
 * JSON.stringify, with the failures a hostile value can cause (stack exhaustion on deep nesting, a string past
 * V8's length limit) turned into typed errors. Bounded values pay only the native call.
 * @throws JsonTooDeepError, JsonTooLargeError
 */
export function serializeJson(value: unknown, depthLimit = MAX_JSON_DEPTH): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    // Which limit was hit: a string past V8's maximum length, or nesting too deep for this stack.
    checkJsonValue(value, { maxDepth: depthLimit, maxBytes: MAX_STRING_LENGTH });
    throw new JsonTooDeepError(
      depthLimit,
      `nested too deeply to be serialized (the decoding limit is ${depthLimit} levels)`,
    );
  }
}

/** Whether `key` is an own property of `obj` (never one inherited from a prototype). */
export function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** The own property `key` of `obj`, or undefined: `obj["__proto__"]` must not return Object.prototype. */
export function getOwn(obj: Record<string, unknown>, key: string): unknown {
  return hasOwn(obj, key) ? obj[key] : undefined;
}

/**
 * Sets `key` as an own data property, so `__proto__` becomes a key instead of replacing the prototype. Only
 * `__proto__` needs defineProperty (an accessor of Object.prototype); on the plain objects JSON gives, assigning
 * any other key makes or replaces an own data property, and costs a fraction of defineProperty.
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}
