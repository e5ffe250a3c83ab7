// What a CSI call's failure means. CsiError carries the gRPC status of a failed call; the two tables here turn a
// failure into what the controller does next, exactly as the Go sidecars decide it: external-provisioner's
// checkError (a ProvisioningState) and external-resizer's IsFinalError / IsInfeasibleError / inUseError.
import type { ProvisioningState } from '../controller/provisioner.ts';

/** gRPC status codes, by the names Go's `codes.Code.String()` gives them (the `grpc_status_code` metric label). */
export const GRPC_CODES = Object.freeze({
  OK: 0,
  Canceled: 1,
  Unknown: 2,
  InvalidArgument: 3,
  DeadlineExceeded: 4,
  NotFound: 5,
  AlreadyExists: 6,
  PermissionDenied: 7,
  ResourceExhausted: 8,
  FailedPrecondition: 9,
  Aborted: 10,
  OutOfRange: 11,
  Unimplemented: 12,
  Internal: 13,
  Unavailable: 14,
  DataLoss: 15,
  Unauthenticated: 16,
});

/** A gRPC status code name. */
export type GrpcCodeName = keyof typeof GRPC_CODES;

const NAMES = new Map<number, GrpcCodeName>(Object.entries(GRPC_CODES).map(([k, v]) => [v, k as GrpcCodeName]));

/** The Go name of a gRPC status code number (`Code(17)` for one gRPC does not define). */
export function grpcCodeName(code: number): string {
  return NAMES.get(code) ?? `Code(${code})`;
}

/** A CSI call that ended with a non-OK gRPC status (from the plugin, or from gRPC itself: deadline, no connection). */
export class CsiError extends Error {
  override name = 'CsiError';
  /** The gRPC status code. */
  readonly code: number;
  /** Its name, as Go prints it (`DeadlineExceeded`). */
  readonly codeName: string;
  /** The status message the plugin (or gRPC) gave. */
  readonly details: string;
  /** The gRPC path of the call (`/csi.v1.Controller/CreateVolume`). */
  readonly method: string;

  constructor(method: string, code: number, details: string, options?: { cause?: unknown }) {
    super(
      `${method.split('/').pop() ?? method} failed: rpc error: code = ${grpcCodeName(code)} desc = ${details}`,
      options,
    );
    this.method = method;
    this.code = code;
    this.codeName = grpcCodeName(code);
    this.details = details;
  }
}

/** True for a CsiError with one of `codes`. */
export function hasCode(err: unknown, ...codes: number[]): err is CsiError {
  return err instanceof CsiError && codes.includes(err.code);
}

/**
 * external-provisioner's checkError: the provisioning state after a failed CreateVolume. Not a gRPC status (the
 * call may never have reached the plugin, or we do not know): InBackground. RESOURCE_EXHAUSTED: Reschedule when the
 * plugin has topology and a node was selected (`mayReschedule`), else Finished. CANCELLED, DEADLINE_EXCEEDED,
 * UNAVAILABLE and ABORTED: InBackground (the operation may still run: the same name is asked for again, even after
 * the claim is deleted). Everything else: Finished.
 */
export function provisioningStateOf(err: unknown, mayReschedule: boolean): ProvisioningState {
  if (!(err instanceof CsiError)) return 'InBackground';
  switch (err.code) {
    case GRPC_CODES.ResourceExhausted:
      return mayReschedule ? 'Reschedule' : 'Finished';
    case GRPC_CODES.Canceled:
    case GRPC_CODES.DeadlineExceeded:
    case GRPC_CODES.Unavailable:
    case GRPC_CODES.Aborted:
      return 'InBackground';
    default:
      return 'Finished';
  }
}

/**
 * How external-resizer reads a failed ControllerExpandVolume:
 * - `infeasible`: INVALID_ARGUMENT, OUT_OF_RANGE, NOT_FOUND (ControllerResizeInfeasible, slow retry);
 * - `inUse`: FAILED_PRECONDITION, the plugin cannot expand a published volume: wait until no pod uses it;
 * - `retry`: CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE, RESOURCE_EXHAUSTED, ABORTED or no gRPC status (the
 *   operation may still run; retried with backoff);
 * - `final`: any other status (ControllerResizeError; retried with backoff).
 */
export type ResizeFailure = 'infeasible' | 'inUse' | 'retry' | 'final';

/** external-resizer's table for a failed ControllerExpandVolume. */
export function resizeFailureOf(err: unknown): ResizeFailure {
  if (!(err instanceof CsiError)) return 'retry';
  switch (err.code) {
    case GRPC_CODES.InvalidArgument:
    case GRPC_CODES.OutOfRange:
    case GRPC_CODES.NotFound:
      return 'infeasible';
    case GRPC_CODES.FailedPrecondition:
      return 'inUse';
    case GRPC_CODES.Canceled:
    case GRPC_CODES.DeadlineExceeded:
    case GRPC_CODES.Unavailable:
    case GRPC_CODES.ResourceExhausted:
    case GRPC_CODES.Aborted:
      return 'retry';
    default:
      return 'final';
  }
}
