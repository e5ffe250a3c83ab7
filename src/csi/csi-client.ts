// The CSI client: unary calls to a plugin's Identity, Controller and Node services over a unix socket, with
// @grpc/grpc-js (imported on first connect, so nothing else in the process pays for it) and our own codec. Every
// call has a deadline (the `--timeout`, 10 s by default) and an optional AbortSignal, fails with a CsiError carrying
// the gRPC status, and is observed in csi_sidecar_operations_seconds.
import { isAbsolute, resolve } from 'node:path';
import type { Client as GrpcClient } from '@grpc/grpc-js';
import { Registry, type Histogram } from 'prom-client';
import { realClock, type Clock } from '../runtime/clock.ts';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { decodeMessage, encodeMessage } from './codec.ts';
import { CsiError, GRPC_CODES, grpcCodeName } from './grpc-status.ts';
import { createCsiOperationsMetric, UNKNOWN_DRIVER_NAME, type CsiOperationLabels } from './csi-metrics.ts';
import { CSI_RPCS, type CsiRpcName, type RequestOf, type ResponseOf } from './services.ts';

/** The default per-call timeout (external-provisioner's `--timeout`). */
export const DEFAULT_CSI_TIMEOUT_MS = 10_000;

/** How to reach a plugin. */
export interface CsiClientOptions {
  /** The plugin's socket: `/run/csi/socket`, `unix:///run/csi/socket` or `unix:/run/csi/socket`. */
  address: string;
  /** Deadline of each call, in ms (default 10 s). */
  timeoutMs?: number;
  /** Where csi_sidecar_operations_seconds is registered (default: a registry of its own). */
  registry?: Registry;
  /** The driver_name label until {@link CsiClient.driverName} is set (default `unknown-driver`). */
  driverName?: string;
  clock?: Clock;
  logger?: Logger;
}

/** Per-call options. */
export interface CsiCallOptions {
  /** Cancels the call (the plugin sees it cancelled; the call fails with CANCELLED). */
  signal?: AbortSignal;
  /** This call's deadline in ms, instead of the client's. */
  timeoutMs?: number;
}

/** An address that is not a unix socket (CSI plugins listen on one). */
export class CsiAddressError extends Error {
  override name = 'CsiAddressError';
}

/** The socket path of a CSI address (`/path`, `unix:///path`, `unix:/path`, or a relative path). */
export function socketPathOf(address: string): string {
  let path = address;
  if (address.startsWith('unix://')) path = address.slice('unix://'.length);
  else if (address.startsWith('unix:')) path = address.slice('unix:'.length);
  else if (/^[a-z][a-z0-9+.-]*:/i.test(address))
    throw new CsiAddressError(`${address}: only unix sockets are supported (unix:///path or /path)`);
  if (path === '') throw new CsiAddressError(`${address}: no socket path`);
  return isAbsolute(path) ? path : resolve(path);
}

/** A connection to one CSI plugin. Cheap to create; close() it when done. */
export class CsiClient {
  /** The socket path. */
  readonly socketPath: string;
  /** The default deadline of a call, in ms. */
  readonly timeoutMs: number;
  private readonly grpc: GrpcClient;
  private readonly metric: Histogram<CsiOperationLabels>;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private driver: string;
  private closed = false;

  private constructor(grpc: GrpcClient, socketPath: string, options: CsiClientOptions) {
    this.grpc = grpc;
    this.socketPath = socketPath;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_CSI_TIMEOUT_MS;
    this.metric = createCsiOperationsMetric(options.registry ?? new Registry());
    this.clock = options.clock ?? realClock;
    this.logger = options.logger ?? silentLogger;
    this.driver = options.driverName || UNKNOWN_DRIVER_NAME;
  }

  /**
   * A client for the plugin at `options.address`. Loads @grpc/grpc-js on first use. Does not wait for the socket:
   * calls fail with UNAVAILABLE until the plugin listens (see waitForPlugin).
   */
  static async connect(options: CsiClientOptions): Promise<CsiClient> {
    const socketPath = socketPathOf(options.address);
    if (options.timeoutMs !== undefined && !(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be a positive number of milliseconds, got ${options.timeoutMs}`);
    }
    const grpc = await import('@grpc/grpc-js');
    const client = new grpc.Client(`unix://${socketPath}`, grpc.credentials.createInsecure(), {
      // The plugin is local: reconnect quickly after it restarts instead of backing off up to two minutes.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    });
    return new CsiClient(client, socketPath, options);
  }

  /** The driver_name metric label (set it once GetPluginInfo answered). */
  get driverName(): string {
    return this.driver;
  }
  set driverName(name: string) {
    this.driver = name || UNKNOWN_DRIVER_NAME;
  }

  /** One unary call. Resolves with the decoded response; rejects with a CsiError. */
  call<N extends CsiRpcName>(name: N, request: RequestOf<N>, options: CsiCallOptions = {}): Promise<ResponseOf<N>> {
    const spec = CSI_RPCS[name];
    if (this.closed) return Promise.reject(new CsiError(spec.path, GRPC_CODES.Canceled, 'client closed'));
    const signal = options.signal;
    if (signal?.aborted)
      return Promise.reject(
        new CsiError(spec.path, GRPC_CODES.Canceled, 'call cancelled before it started', { cause: signal.reason }),
      );
    const started = this.clock.now();
    const deadline = Date.now() + (options.timeoutMs ?? this.timeoutMs);
    return new Promise<ResponseOf<N>>((resolvePromise, reject) => {
      const onAbort = () => call.cancel();
      const call = this.grpc.makeUnaryRequest(
        spec.path,
        (value: RequestOf<N>) => encodeMessage(spec.request, value),
        (bytes: Buffer) => decodeMessage(spec.response, bytes) as ResponseOf<N>,
        request,
        { deadline },
        (err, response) => {
          signal?.removeEventListener('abort', onAbort);
          const code = err ? err.code : GRPC_CODES.OK;
          this.metric.observe(
            { driver_name: this.driver, method_name: spec.path, grpc_status_code: grpcCodeName(code) },
            (this.clock.now() - started) / 1000,
          );
          if (err) {
            this.logger.debug({ method: spec.path, code: grpcCodeName(code), err: err.details }, 'CSI call failed');
            reject(new CsiError(spec.path, code, err.details || err.message, { cause: err }));
          } else {
            resolvePromise(response ?? ({} as ResponseOf<N>));
          }
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Closes the channel; calls in flight fail with CANCELLED or UNAVAILABLE. */
  close(): void {
    this.closed = true;
    this.grpc.close();
  }
}
