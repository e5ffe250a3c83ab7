// metav1.Status errors of the embedded API server: one typed error class and constructors that reproduce
// kube-apiserver's reasons, codes and message templates (k8s.io/apimachinery/pkg/api/errors), so clients that
// branch on `reason`/`code` behave as they would against a real cluster.
import type { Status, StatusCause } from '../../types/k8s.ts';

/**
 * An API failure of the embedded cluster, carrying the exact metav1.Status body the server sends. Not the
 * client's ApiError (src/runtime/status-errors.ts), which is what a client sees of such a failure.
 */
export class ClusterApiError extends Error {
  readonly status: Status;
  constructor(status: Status) {
    super(status.message ?? `request failed with code ${status.code}`);
    this.name = 'ClusterApiError';
    this.status = status;
  }
  /** The HTTP status code (= status.code). */
  get code(): number {
    return this.status.code;
  }
  get reason(): string | undefined {
    return this.status.reason;
  }
}

/** Identity of a resource in error messages: `resource` for core, `resource.group` otherwise. */
export interface ResourceRef {
  group: string;
  resource: string;
  kind: string;
}

export function qualifiedResource(r: ResourceRef): string {
  return r.group ? `${r.resource}.${r.group}` : r.resource;
}

export function qualifiedKind(r: ResourceRef): string {
  return r.group ? `${r.kind}.${r.group}` : r.kind;
}

function failure(
  code: number,
  reason: string | undefined,
  message: string,
  details?: Status['details'],
): ClusterApiError {
  // Key order follows kube-apiserver's JSON (kind, apiVersion, metadata, status, message, reason, details, code).
  const status: Status = {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    ...(reason ? { reason } : {}),
    ...(details ? { details } : {}),
    code,
  };
  return new ClusterApiError(status);
}

function resourceDetails(r: ResourceRef, name: string | undefined): Status['details'] {
  const d: Status['details'] = {};
  if (name) d.name = name;
  if (r.group) d.group = r.group;
  d.kind = r.resource;
  return d;
}

export function notFound(r: ResourceRef, name: string): ClusterApiError {
  return failure(404, 'NotFound', `${qualifiedResource(r)} "${name}" not found`, resourceDetails(r, name));
}

export function alreadyExists(
  r: ResourceRef,
  name: string,
  opts?: { beingDeleted?: boolean; generated?: boolean },
): ClusterApiError {
  let message = `${qualifiedResource(r)} "${name}" already exists`;
  if (opts?.beingDeleted) message = `object is being deleted: ${message}`;
  const details = resourceDetails(r, name);
  if (opts?.generated) {
    message += ', the server was not able to generate a unique name for the object';
    details!.retryAfterSeconds = 1;
  }
  return failure(409, 'AlreadyExists', message, details);
}

export function conflict(r: ResourceRef, name: string, cause: string, kindInMessage = false): ClusterApiError {
  const what = kindInMessage ? r.kind : qualifiedResource(r);
  return failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${what} "${name}": ${cause}`,
    resourceDetails(r, name),
  );
}

export const STALE_OBJECT_CAUSE =
  'the object has been modified; please apply your changes to the latest version and try again';

/** Renders one cause the way field.Error.Error() does: `<field>: <body>`. */
export function causeText(c: StatusCause): string {
  return c.field ? `${c.field}: ${c.message ?? ''}` : (c.message ?? '');
}

export function invalid(r: ResourceRef, name: string, causes: StatusCause[]): ClusterApiError {
  const seen = new Set<string>();
  const unique: StatusCause[] = [];
  for (const c of causes) {
    const key = causeText(c);
    if (seen.has(key)) continue;
    seen.add(key);
    unique.push(c);
  }
  const texts = unique.map(causeText);
  const agg = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  const details: Status['details'] = { name, group: r.group || undefined, kind: r.kind, causes: unique };
  if (!r.group) delete details.group;
  return failure(422, 'Invalid', `${qualifiedKind(r)} "${name}" is invalid: ${agg}`, details);
}

export function badRequest(message: string): ClusterApiError {
  return failure(400, 'BadRequest', message);
}

export function unauthorized(): ClusterApiError {
  return failure(401, 'Unauthorized', 'Unauthorized');
}

export function forbidden(r: ResourceRef, name: string, detail: string, causes?: StatusCause[]): ClusterApiError {
  const details = resourceDetails(r, name);
  if (causes) details!.causes = causes;
  const target = name ? `${qualifiedResource(r)} "${name}"` : qualifiedResource(r);
  return failure(403, 'Forbidden', `${target} is forbidden: ${detail}`, details);
}

export function methodNotAllowed(verb: string, r: ResourceRef): ClusterApiError {
  return failure(
    405,
    'MethodNotAllowed',
    `${verb} is not supported on resources of kind "${qualifiedResource(r)}"`,
    resourceDetails(r, undefined),
  );
}

/** A method the URL has no route for: go-restful's ServiceErrorHandler answers NewGenericServerResponse(405). */
export function methodNotRouted(): ClusterApiError {
  return failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
}

export function notAcceptable(message: string): ClusterApiError {
  return failure(406, 'NotAcceptable', message);
}

export function expired(message: string): ClusterApiError {
  return failure(410, 'Expired', message);
}

export function requestEntityTooLarge(message: string): ClusterApiError {
  return failure(413, 'RequestEntityTooLarge', `Request entity too large: ${message}`);
}

/** The patch types served. Server-side apply (application/apply-patch+yaml) is not, so the 415 does not list it. */
export const PATCH_MEDIA_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
];

export function unsupportedMediaType(): ClusterApiError {
  return failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: ${PATCH_MEDIA_TYPES.join(', ')}`,
  );
}

export function tooManyRequests(retryAfterSeconds: number): ClusterApiError {
  return failure(429, 'TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds });
}

export function internalError(detail: string): ClusterApiError {
  return failure(500, 'InternalError', `Internal error occurred: ${detail}`, { causes: [{ message: detail }] });
}

/** A plain (non-status) storage error: kube-apiserver answers 500 with an empty reason. */
export function plainServerError(message: string): ClusterApiError {
  return failure(500, undefined, message);
}

export function serverTimeout(
  message: string,
  opts?: { retryAfterSeconds?: number; causes?: StatusCause[] },
): ClusterApiError {
  const details: Status['details'] = {};
  if (opts?.causes) details.causes = opts.causes;
  if (opts?.retryAfterSeconds !== undefined) details.retryAfterSeconds = opts.retryAfterSeconds;
  return failure(504, 'Timeout', message, details);
}

export function serviceUnavailable(message: string): ClusterApiError {
  return failure(503, 'ServiceUnavailable', message);
}

/** A failure with an explicit code, for injected faults. */
export function statusError(
  code: number,
  reason: string,
  message: string,
  details?: Status['details'],
): ClusterApiError {
  return failure(code, reason, message, details);
}
