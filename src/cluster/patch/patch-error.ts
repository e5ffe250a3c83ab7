// The one error type of the patch functions (patch.ts, strategic-merge-patch.ts): it carries the HTTP status
// kube-apiserver gives the same failure, so the API layer maps it without looking at message text.
import { isJsonObject } from '../../types/json.ts';

/**
 * A patch that cannot be applied. `code` is the HTTP status kube-apiserver answers with:
 * 400 malformed patch document, 422 an operation that does not apply (failed `test`, missing path; kube sends the
 * generic message "the server rejected our request due to an error in our request" with this message as the cause),
 * 409 conflict, 413 too many JSON-patch operations.
 */
export class PatchError extends Error {
  override name = 'PatchError';
  constructor(
    message: string,
    readonly code: 422 | 400 | 409 | 413,
  ) {
    super(message);
  }
}

/** Structural JSON equality (object key order does not matter). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && jsonEqual(a[k], b[k]));
  }
  return false;
}
