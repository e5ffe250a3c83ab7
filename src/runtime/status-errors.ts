// Typed API errors: every failure the runtime client reports is one of these classes, carrying the
// server's metav1.Status (or a synthesised one for client-side failures), so callers branch on the class
// or on `reason`/`code`, never on message text.
import type { Status, StatusCause } from '../types/k8s.ts';

/** Base class of every error the runtime client throws. `status` is the server's Status body or a synthesised one. */
export class ApiError extends Error {
  override readonly name: string = 'ApiError';
  /** HTTP status code (0 when no response was received). */
  readonly code: number;
  /** metav1.Status `reason` (`NotFound`, `Conflict`, `Expired`, ...); '' when the server gave none. */
  readonly reason: string;
  /** Seconds the server asked us to wait (Retry-After header or details.retryAfterSeconds), if any. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly status: Status,
    readonly request?: { verb: string; path: string },
    retryAfterSeconds?: number,
    options?: { cause?: unknown },
  ) {
    super(status.message ?? `${status.reason ?? 'request failed'} (${status.code})`, options);
    this.code = status.code;
    this.reason = status.reason ?? '';
    this.retryAfterSeconds = retryAfterSeconds ?? status.details?.retryAfterSeconds;
  }

  /** Field causes of an Invalid (422) error, or any other causes the server listed. */
  get causes(): StatusCause[] {
    return this.status.details?.causes ?? [];
  }
}

/** 404 NotFound. */
export class NotFoundError extends ApiError {
  override readonly name = 'NotFoundError';
}
/** The result of a read, or undefined when the object does not exist (NotFoundError); other errors are thrown. */
export async function undefinedIfNotFound<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
}
/** 409 Conflict: a stale resourceVersion or failed precondition. Re-read and retry. */
export class ConflictError extends ApiError {
  override readonly name = 'ConflictError';
}
/** 409 AlreadyExists on create. */
export class AlreadyExistsError extends ApiError {
  override readonly name = 'AlreadyExistsError';
}
/** 410 Gone / reason Expired: the requested resourceVersion or continue token is too old; relist. */
export class GoneError extends ApiError {
  override readonly name = 'GoneError';
}
/** 422 Invalid (validation failed; see `causes`) or 400 BadRequest. */
export class InvalidError extends ApiError {
  override readonly name = 'InvalidError';
}
/** 403 Forbidden. */
export class ForbiddenError extends ApiError {
  override readonly name = 'ForbiddenError';
}
/** 401 Unauthorized. */
export class UnauthorizedError extends ApiError {
  override readonly name = 'UnauthorizedError';
}
/** 429 TooManyRequests (API priority and fairness, or an injected fault). */
export class TooManyRequestsError extends ApiError {
  override readonly name = 'TooManyRequestsError';
}
/** 5xx other than 504. */
export class ServerError extends ApiError {
  override readonly name = 'ServerError';
}
/** The per-request timeout (or watch idle timeout) fired, or the server answered 504 / reason Timeout. */
export class TimeoutError extends ApiError {
  override readonly name = 'TimeoutError';
}
/**
 * No usable response: connection refused/reset, TLS failure, a stream cut mid-body. `sent` is false when the
 * request certainly never reached the server (connection refused), which makes even a write safe to retry.
 */
export class NetworkError extends ApiError {
  override readonly name = 'NetworkError';
  constructor(
    message: string,
    readonly sent: boolean,
    readonly errno: string | undefined,
    request?: { verb: string; path: string },
    options?: { cause?: unknown },
  ) {
    super(syntheticStatus(0, 'NetworkError', message), request, undefined, options);
  }
}

/** Builds a Status for failures that have no server body. */
export function syntheticStatus(code: number, reason: string, message: string): Status {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', reason, message, code };
}

/** Parses a response body into a Status, falling back to a synthetic one for non-Status bodies. */
export function parseStatus(code: number, body: string): Status {
  try {
    const parsed = JSON.parse(body) as Partial<Status> | null;
    if (parsed && typeof parsed === 'object' && parsed.kind === 'Status') {
      return { ...parsed, code: parsed.code || code } as Status;
    }
  } catch {
    // not JSON: e.g. "404 page not found" for an unknown path
  }
  const text = body.trim().slice(0, 500);
  return syntheticStatus(code, reasonForCode(code), text || `HTTP ${code}`);
}

function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 409:
      return 'Conflict';
    case 410:
      return 'Expired';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 504:
      return 'Timeout';
    default:
      return code >= 500 ? 'InternalError' : '';
  }
}

/** Maps a Status (server or synthetic) to the matching typed error class. */
export function errorFromStatus(
  status: Status,
  request?: { verb: string; path: string },
  retryAfterSeconds?: number,
): ApiError {
  const { code } = status;
  const reason = status.reason ?? '';
  const args = [status, request, retryAfterSeconds] as const;
  if (code === 404) return new NotFoundError(...args);
  if (code === 409) return reason === 'AlreadyExists' ? new AlreadyExistsError(...args) : new ConflictError(...args);
  if (code === 410 || reason === 'Expired' || reason === 'Gone') return new GoneError(...args);
  if (code === 422 || code === 400) return new InvalidError(...args);
  if (code === 403) return new ForbiddenError(...args);
  if (code === 401) return new UnauthorizedError(...args);
  if (code === 429) return new TooManyRequestsError(...args);
  if (code === 504 || reason === 'Timeout') return new TimeoutError(...args);
  if (code >= 500) return new ServerError(...args);
  return new ApiError(...args);
}

/** True for failures worth retrying on a safe (read) verb: 429, 5xx, timeouts, network errors. */
export function isTransientError(err: unknown): boolean {
  return (
    err instanceof TooManyRequestsError ||
    err instanceof ServerError ||
    err instanceof TimeoutError ||
    err instanceof NetworkError
  );
}
