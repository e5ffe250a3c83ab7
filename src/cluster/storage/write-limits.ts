// The store's side of the request limits: every committed object is serialized before anything changes and
// refused when it is too large or too deeply nested, a patch result is measured before it is serialized at all,
// and a write that exhausts the stack on a client's value fails as that client's error with nothing stored.
import { badRequest, requestEntityTooLarge } from '../common/api-errors.ts';
import {
  checkJsonValue,
  JsonTooDeepError,
  JsonTooLargeError,
  MAX_JSON_DEPTH,
  serializedJsonOf,
  serializeJson,
} from '../common/json-safety.ts';

/** Bounds of stored objects. */
export interface ObjectLimits {
  /** Largest serialized object (default 1.5 MiB, etcd's request limit); 413 beyond. */
  maxObjectBytes: number;
  /** Deepest nesting (default 10,000); 400 beyond. */
  maxJsonDepth: number;
}

export const DEFAULT_OBJECT_LIMITS: Readonly<ObjectLimits> = Object.freeze({
  maxObjectBytes: 1.5 * 1024 * 1024,
  maxJsonDepth: MAX_JSON_DEPTH,
});

function limitError(err: unknown, limits: ObjectLimits): unknown {
  if (err instanceof JsonTooLargeError)
    return requestEntityTooLarge(`the object exceeds the limit of ${limits.maxObjectBytes} bytes`);
  if (err instanceof JsonTooDeepError) return badRequest(`the object is too deeply nested: ${err.message}`);
  return err;
}

/** The JSON of an object about to be committed. @throws ClusterApiError 413 over the size limit, 400 too deep. */
export function serializeForCommit(obj: unknown, limits: ObjectLimits): string {
  // A ConfigMap or Secret whose data map was parsed in slices: its JSON is known without serializing the map
  // (one pass as long as parsing it), so it is refused, or written, without that pass.
  const known = knownJson(obj);
  if (known !== undefined) {
    if (known.bytes > limits.maxObjectBytes) throw tooLarge(known.bytes, limits);
    return known.json();
  }
  let json: string;
  try {
    json = serializeJson(obj, limits.maxJsonDepth);
  } catch (err) {
    throw limitError(err, limits);
  }
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only a long string needs its bytes counted.
  if (
    json.length > limits.maxObjectBytes ||
    (json.length * 3 > limits.maxObjectBytes && Buffer.byteLength(json) > limits.maxObjectBytes)
  ) {
    throw tooLarge(Buffer.byteLength(json), limits);
  }
  return json;
}

/** The 413 for an object of `bytes` serialized bytes over the limit. */
function tooLarge(bytes: number, limits: ObjectLimits): Error {
  return requestEntityTooLarge(`the object is ${bytes} bytes, the limit is ${limits.maxObjectBytes}`);
}

/** serializedJsonOf, or undefined when the rest of the object cannot be serialized (serializeJson says why). */
function knownJson(obj: unknown): ReturnType<typeof serializedJsonOf> {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) return undefined;
  try {
    return serializedJsonOf(obj as Record<string, unknown>);
  } catch {
    return undefined;
  }
}

/** Checks a patch result before it is serialized. @throws ClusterApiError 413 / 400 */
export function checkPatchResult(obj: unknown, limits: ObjectLimits): void {
  try {
    checkJsonValue(obj, { maxDepth: limits.maxJsonDepth, maxBytes: limits.maxObjectBytes });
  } catch (err) {
    throw limitError(err, limits);
  }
}

/**
 * Runs one store write. A RangeError can only come from the client's value (nesting too deep for the stack,
 * a string or array past the engine's limits); the store commits last, so nothing was stored and the client
 * gets a 400 instead of an internal error.
 */
export function guardWrite<T>(write: () => T): T {
  try {
    return write();
  } catch (err) {
    if (err instanceof RangeError)
      throw badRequest(`the object cannot be processed: it is too large or too deeply nested`);
    throw err;
  }
}
