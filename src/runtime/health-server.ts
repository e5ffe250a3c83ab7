// The probe and scrape endpoint of a running controller: /healthz and /readyz with kube-apiserver's
// output conventions (per-check paths, ?verbose, ?exclude), and /metrics from the caller's own registry.
// Off unless started; stops on signal or stop(), leaving no sockets behind.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { errorMessage } from '../types/error-message.ts';

/**
 * A named check: `true` means healthy; `false` or a string (the reason) means failing; a throw counts
 * as failing with the error's message. May be async.
 */
export type HealthCheck = () => boolean | string | Promise<boolean | string>;

/** Options of startHealthServer: listen address, checks, metrics registry, AbortSignal. */
export interface HealthServerOptions {
  /** `host:port` (`[::1]:port` for IPv6); port 0 picks a free port. */
  address: string;
  /** Served on /metrics; without it /metrics is 404. */
  registry?: Registry;
  checks?: { healthz?: Record<string, HealthCheck>; readyz?: Record<string, HealthCheck> };
  /** Aborting stops the server. */
  signal?: AbortSignal;
}

/** A running health server: its URL and a stop function. */
export interface HealthServer {
  /** Base URL, e.g. `http://127.0.0.1:43121`. */
  readonly url: string;
  readonly port: number;
  /** Closes the listener and every open connection. Idempotent. */
  stop(): Promise<void>;
}

/** The `address` option is not `host:port`. */
export class InvalidAddressError extends Error {
  constructor(readonly address: string) {
    super(`invalid listen address ${JSON.stringify(address)}: want host:port`);
    this.name = 'InvalidAddressError';
  }
}

/** Splits `host:port`, `[v6]:port` or `:port` (all interfaces). */
export function parseListenAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new InvalidAddressError(address);
  return { host: m[1] ?? m[2] ?? '', port };
}

interface CheckResult {
  name: string;
  ok: boolean;
  reason?: string;
}

async function runCheck(name: string, check: HealthCheck): Promise<CheckResult> {
  try {
    const result = await check();
    if (result === true) return { name, ok: true };
    return { name, ok: false, reason: typeof result === 'string' && result !== '' ? result : undefined };
  } catch (err) {
    return { name, ok: false, reason: errorMessage(err) };
  }
}

async function serveChecks(
  kind: 'healthz' | 'readyz',
  checks: Record<string, HealthCheck>,
  sub: string,
  query: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  if (sub !== '') {
    // /healthz/<name>: just that check, like kube.
    const check = Object.hasOwn(checks, sub) ? checks[sub] : undefined;
    if (!check) return sendText(res, 404, '404 page not found\n');
    const result = await runCheck(sub, check);
    return result.ok
      ? sendText(res, 200, 'ok')
      : sendText(res, 500, `internal server error: ${result.reason ?? 'check failed'}\n`);
  }
  const excluded = new Set(query.getAll('exclude'));
  const results = await Promise.all(
    Object.entries(checks)
      .filter(([name]) => !excluded.has(name))
      .map(([name, check]) => runCheck(name, check)),
  );
  const failed = results.some((r) => !r.ok);
  if (!failed && !query.has('verbose')) return sendText(res, 200, 'ok');
  const lines = results.map((r) =>
    r.ok ? `[+]${r.name} ok` : `[-]${r.name} failed: ${r.reason ?? 'reason withheld'}`,
  );
  for (const name of excluded) if (Object.hasOwn(checks, name)) lines.push(`[+]${name} excluded: ok`);
  lines.push(failed ? `${kind} check failed` : `${kind} check passed`);
  sendText(res, failed ? 500 : 200, lines.join('\n') + '\n');
}

function sendText(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, {
    'content-type': contentType,
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  });
  res.end(body);
}

/** Starts the server; resolves once it listens. */
export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const { host, port } = parseListenAddress(opts.address);
  const healthz = opts.checks?.healthz ?? {};
  const readyz = opts.checks?.readyz ?? {};

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      return sendText(res, 405, 'method not allowed\n');
    }
    const url = new URL(req.url ?? '/', 'http://localhost');
    const [, top = '', sub = '', ...rest] = url.pathname.split('/');
    if (rest.length > 0) return sendText(res, 404, '404 page not found\n');
    if (top === 'healthz' || top === 'livez') return serveChecks('healthz', healthz, sub, url.searchParams, res);
    if (top === 'readyz') return serveChecks('readyz', readyz, sub, url.searchParams, res);
    if (top === 'metrics' && sub === '' && opts.registry) {
      const body = await opts.registry.metrics();
      return sendText(res, 200, body, opts.registry.contentType);
    }
    sendText(res, 404, '404 page not found\n');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendText(res, 500, `internal server error: ${errorMessage(err)}\n`);
      else res.destroy();
    });
  });
  // Probes are short; an idle keep-alive socket must not hold stop() up.
  server.keepAliveTimeout = 5_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: host === '' ? undefined : host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });

  const bound = server.address() as AddressInfo;
  const urlHost =
    host === '' || host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= new Promise<void>((resolve) => {
      opts.signal?.removeEventListener('abort', onAbort);
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return stopped;
  };
  const onAbort = () => void stop();
  if (opts.signal?.aborted) await stop();
  else opts.signal?.addEventListener('abort', onAbort, { once: true });

  return { url: `http://${urlHost}:${bound.port}`, port: bound.port, stop };
}
