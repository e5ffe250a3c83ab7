// Query parameters decoded as kube-apiserver's parameter codec converts url.Values into ListOptions,
// DeleteOptions and friends (apimachinery runtime/conversion.go): a boolean is false only when absent, `0`
// or `false` in any case (so `watch=True`, `watch=` and `watch=yes` are watches); integers are Go
// strconv.ParseInt base 10 (sign allowed, 64-bit range) and a bad one is a 400 with strconv's message.
// Only the first value of a repeated parameter counts.
import type { StatusCause } from '../../types/k8s.ts';
import { badRequest, invalid } from '../common/api-errors.ts';

/** Convert_Slice_string_To_bool: absent -> false; `0` or `false` (any case) -> false; anything else -> true. */
export function queryBool(q: URLSearchParams, name: string): boolean {
  return queryOptionalBool(q, name) ?? false;
}

/** Convert_Slice_string_To_Pointer_bool as the generated url.Values conversions call it: absent -> undefined. */
export function queryOptionalBool(q: URLSearchParams, name: string): boolean | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  return !(v === '0' || v.toLowerCase() === 'false');
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * strconv.ParseInt(s, 10, 64) with Go's error text.
 * @throws ClusterApiError 400 `strconv.ParseInt: parsing "x": invalid syntax` / `value out of range`
 */
export function parseGoInt64(s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw badRequest(`strconv.ParseInt: parsing ${goQuote(s)}: invalid syntax`);
  const n = BigInt(s);
  if (n < INT64_MIN || n > INT64_MAX) throw badRequest(`strconv.ParseInt: parsing ${goQuote(s)}: value out of range`);
  return Number(n);
}

/** Convert_Slice_string_To_Pointer_int64: absent -> undefined, else strconv.ParseInt of the first value. */
export function queryInt64(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  return v === null ? undefined : parseGoInt64(v);
}

/** Go's %q for the ASCII strings a query carries (enough for error messages). */
function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** metav1.ListOptions as decoded from a list or watch request's query. */
export interface ListQuery {
  watch: boolean;
  allowWatchBookmarks: boolean;
  /** undefined when absent (a *bool in ListOptions). */
  sendInitialEvents: boolean | undefined;
  /** undefined when absent; may be 0 or negative as sent. */
  timeoutSeconds: number | undefined;
  /** 0 when absent. */
  limit: number;
  resourceVersion: string | undefined;
  resourceVersionMatch: string;
  continueToken: string;
  labelSelector: string | undefined;
  fieldSelector: string | undefined;
}

/**
 * Decodes every ListOptions parameter at once, the way the list/watch handler does before anything else, so a
 * malformed integer is a 400 even on a parameter this request would not use.
 * @throws ClusterApiError 400 for malformed integers
 */
export function parseListQuery(q: URLSearchParams): ListQuery {
  const str = (name: string): string | undefined => q.get(name) ?? undefined;
  return {
    watch: queryBool(q, 'watch'),
    allowWatchBookmarks: queryBool(q, 'allowWatchBookmarks'),
    sendInitialEvents: queryOptionalBool(q, 'sendInitialEvents'),
    timeoutSeconds: queryInt64(q, 'timeoutSeconds'),
    limit: queryInt64(q, 'limit') ?? 0,
    resourceVersion: str('resourceVersion'),
    resourceVersionMatch: str('resourceVersionMatch') ?? '',
    continueToken: str('continue') ?? '',
    labelSelector: str('labelSelector'),
    fieldSelector: str('fieldSelector'),
  };
}

/**
 * ValidateListOptions of a list (apimachinery internalversion/validation): every violation is one cause of a
 * single 422 `ListOptions.meta.k8s.io "" is invalid`.
 * @throws ClusterApiError 422
 */
export function validateListQuery(lq: ListQuery): void {
  const causes: StatusCause[] = [];
  const forbid = (field: string, message: string) =>
    causes.push({ reason: 'FieldValueForbidden', message: `Forbidden: ${message}`, field });
  const match = lq.resourceVersionMatch;
  if (match) {
    if (!lq.resourceVersion)
      forbid('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (lq.continueToken) forbid('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided');
    if (match !== 'NotOlderThan' && match !== 'Exact') {
      causes.push({
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: "${match}": supported values: "Exact", "NotOlderThan", ""`,
        field: 'resourceVersionMatch',
      });
    }
    if (match === 'Exact' && lq.resourceVersion === '0')
      forbid('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  }
  if (lq.sendInitialEvents !== undefined) forbid('sendInitialEvents', 'sendInitialEvents is forbidden for list');
  if (causes.length) throw invalid({ group: 'meta.k8s.io', resource: 'listoptions', kind: 'ListOptions' }, '', causes);
}
