// The server counterpart of client.ts: a CSI plugin's gRPC server on a unix socket, with @grpc/grpc-js (imported on
// start) and the same RPC rows and codec the client uses (services.ts), so both ends share one description of the
// wire. A plugin is a set of async handlers by RPC name; a handler answers with the response message, or throws a
// CsiError (or anything with a numeric gRPC `code`) for a status; any other error is INTERNAL. An RPC of a served
// service without a handler answers UNIMPLEMENTED, as the spec asks of optional RPCs.
import { lstat, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { sendUnaryData, Server, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { silentLogger, type Logger } from '../runtime/logger.ts';
import { socketPathOf } from './csi-client.ts';
import { CsiError, GRPC_CODES, grpcCodeName, type GrpcCodeName } from './grpc-status.ts';
import {
  CSI_RPCS,
  serviceDefinition,
  type CsiRpcName,
  type CsiService,
  type RequestOf,
  type ResponseOf,
} from './services.ts';

/** What a handler sees of its call besides the request. */
export interface CsiCallContext {
  /** Aborted when the caller cancels or its deadline passes. */
  signal: AbortSignal;
}

/** One RPC's implementation. */
export type CsiHandler<N extends CsiRpcName> = (
  request: RequestOf<N>,
  context: CsiCallContext,
) => Promise<ResponseOf<N>> | ResponseOf<N>;

/** A plugin: handlers by RPC name (those it leaves out answer UNIMPLEMENTED). */
export type CsiPluginHandlers = { [N in CsiRpcName]?: CsiHandler<N> };

/** How to serve a plugin. */
export interface CsiServerOptions {
  /** `unix:///path`, `unix:/path` or `/path` (the CSI_ENDPOINT). */
  endpoint: string;
  handlers: CsiPluginHandlers;
  /** The services to serve (default: every service with at least one handler). */
  services?: CsiService[];
  logger?: Logger;
}

/** A serving plugin. */
export interface CsiServer {
  readonly socketPath: string;
  /** `unix://<socketPath>`. */
  readonly address: string;
  /** Stops accepting calls, waits up to `graceMs` (default 2 s) for those in flight, then ends them; removes the socket. */
  stop(graceMs?: number): Promise<void>;
}

/** A status a handler throws: `throw new CsiStatusError('NotFound', 'volume x not found')`. */
export class CsiStatusError extends Error {
  override name = 'CsiStatusError';
  readonly code: number;
  constructor(
    readonly codeName: GrpcCodeName,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = GRPC_CODES[codeName];
  }
}

/**
 * Serves `handlers` on the endpoint's unix socket. A stale socket file left by a killed plugin is removed first
 * (anything else at that path is refused), and the socket's directory is created.
 */
export async function serveCsiPlugin(o: CsiServerOptions): Promise<CsiServer> {
  const grpc = await import('@grpc/grpc-js');
  const logger = o.logger ?? silentLogger;
  const socketPath = socketPathOf(o.endpoint);
  await mkdir(dirname(socketPath), { recursive: true });
  const st = await lstat(socketPath).catch(() => undefined);
  if (st) {
    if (!st.isSocket()) throw new Error(`${socketPath} exists and is not a socket; refusing to replace it`);
    await rm(socketPath, { force: true });
  }
  const server: Server = new grpc.Server();
  const services =
    o.services ??
    (['Identity', 'Controller', 'Node'] as const).filter((s) =>
      (Object.keys(o.handlers) as CsiRpcName[]).some((n) => CSI_RPCS[n].service === s),
    );
  for (const service of services)
    server.addService(serviceDefinition(service), implementation(service, o.handlers, logger));
  const address = `unix://${socketPath}`;
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  return {
    socketPath,
    address,
    stop: async (graceMs = 2000) => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      await rm(socketPath, { force: true });
    },
  };
}

function implementation(
  service: CsiService,
  handlers: CsiPluginHandlers,
  logger: Logger,
): UntypedServiceImplementation {
  const out: UntypedServiceImplementation = {};
  for (const [name, spec] of Object.entries(CSI_RPCS) as Array<[CsiRpcName, (typeof CSI_RPCS)[CsiRpcName]]>) {
    if (spec.service !== service) continue;
    const handler = handlers[name] as CsiHandler<CsiRpcName> | undefined;
    out[spec.method] = (call: ServerUnaryCall<Record<string, unknown>, unknown>, callback: sendUnaryData<unknown>) => {
      if (!handler) {
        callback({ code: GRPC_CODES.Unimplemented, details: `${spec.method} is not implemented by this plugin` });
        return;
      }
      const abort = new AbortController();
      call.on('cancelled', () => abort.abort(new Error('call cancelled')));
      Promise.resolve()
        .then(() => handler(call.request as RequestOf<CsiRpcName>, { signal: abort.signal }))
        .then(
          (reply) => callback(null, reply ?? {}),
          (err: unknown) => {
            const code = statusCodeOf(err);
            const details = err instanceof CsiError ? err.details : err instanceof Error ? err.message : String(err);
            logger.debug(
              { method: spec.path, code: grpcCodeName(code), err: details },
              'CSI call answered with an error',
            );
            callback({ code, details });
          },
        );
    };
  }
  return out;
}

function statusCodeOf(err: unknown): number {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' && Number.isInteger(code) && code > 0 && code <= 16 ? code : GRPC_CODES.Internal;
}
