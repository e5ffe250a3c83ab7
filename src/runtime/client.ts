// The runtime's Kubernetes REST client: plain JSON over node:http(s) with one keep-alive agent, auth from a
// kubeconfig (RestConfig, or client-node's KubeConfig), a client-side QPS/burst budget, per-request timeouts,
// safe retries, and typed errors.
// client-node's generated clients are not used: they drop unknown fields and change timestamp types.
import http from 'node:http';
import https from 'node:https';
import type { KubeList, KubeObject, Status } from '../types/k8s.ts';
import { realClock, type Clock } from './clock.ts';
import {
  ApiError,
  errorFromStatus,
  GoneError,
  NetworkError,
  parseStatus,
  ServerError,
  syntheticStatus,
  TimeoutError,
  TooManyRequestsError,
} from './errors.ts';
import { apiVersionOf, resourcePath, type ApiResource } from './resources.ts';
import { TokenBucket } from './token-bucket.ts';
import { WatchStream } from './watch-stream.ts';

/** Default client-side budget: client-go's defaults (5/10) are too low for a controller doing bursts of binds. */
export const DEFAULT_QPS = 20;
/** Default client-side burst (bucket size) of a KubeClient. */
export const DEFAULT_BURST = 30;
/** Default per-request timeout of a KubeClient (30 s). */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Default number of retries of a retryable request. */
export const DEFAULT_MAX_RETRIES = 5;
/** Default User-Agent of a KubeClient. */
export const DEFAULT_USER_AGENT = 'kube-provisioner';

/**
 * Where and how to connect: the current cluster's URL and a function filling Node TLS options and auth
 * headers. {@link RestConfig} (from loadKubeConfig) and @kubernetes/client-node's KubeConfig both fit.
 */
export interface KubeConnection {
  getCurrentCluster(): { server: string; proxyUrl?: string } | null;
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

/** How a {@link KubeClient} connects, and its request budget, timeouts and retries. */
export interface KubeClientOptions {
  kubeConfig: KubeConnection;
  /** Sent as User-Agent (the embedded cluster's audit counter and real audit logs key on it). */
  userAgent?: string;
  /** Requests per second allowed by the client-side bucket (default 20); 0 = unlimited. */
  qps?: number;
  /** Bucket size (default 30). */
  burst?: number;
  /** Use this bucket instead of building one from qps/burst (e.g. share one among clients, or a dedicated one). */
  bucket?: TokenBucket;
  /** Per-request timeout in ms (default 30 s); 0 = none. Watches use it for the response headers only. */
  timeoutMs?: number;
  /** Retries of a retryable failure (default 5). */
  maxRetries?: number;
  /** First retry delay when the server sent no Retry-After (default 250 ms, doubling, capped at 8 s, jittered). */
  retryBaseDelayMs?: number;
  /** Clock for retry sleeps and the bucket (default real time). */
  clock?: Clock;
}

/** Options of every request: an AbortSignal and a timeout overriding the client's. */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Overrides the client's per-request timeout. */
  timeoutMs?: number;
}
/** Request options with the namespace of a namespaced resource. */
export interface NamespacedOptions extends RequestOptions {
  namespace?: string;
}
/** Options of a list: selectors, paging and resourceVersion semantics. */
export interface ListOptions extends NamespacedOptions {
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
  resourceVersion?: string;
  resourceVersionMatch?: 'Exact' | 'NotOlderThan';
}
/** Options of create/update/patch: field manager, dry run, subresource. */
export interface WriteOptions extends NamespacedOptions {
  fieldManager?: string;
  dryRun?: boolean;
  subresource?: 'status' | string;
}
/** Patch flavour: merge patch (RFC 7386), JSON patch (RFC 6902) or strategic merge patch. */
export type PatchType = 'merge' | 'json' | 'strategic';
/** Options of a patch, with its type. */
export interface PatchOptions extends WriteOptions {
  /** Default `merge` (application/merge-patch+json). */
  type?: PatchType;
}
/** Options of a delete: preconditions, propagation policy, grace period. */
export interface DeleteOptions extends NamespacedOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  gracePeriodSeconds?: number;
}
/** Options of a watch: resourceVersion, bookmarks, server timeout, selectors and an idle timeout. */
export interface WatchOptions extends NamespacedOptions {
  resourceVersion?: string;
  allowWatchBookmarks?: boolean;
  timeoutSeconds?: number;
  labelSelector?: string;
  fieldSelector?: string;
  /** Fail the stream with TimeoutError when no byte arrives for this long (default 0 = off). */
  idleTimeoutMs?: number;
}

const PATCH_CONTENT_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
};

interface Call {
  verb: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  opts: RequestOptions;
}

interface Shared {
  kc: KubeConnection;
  server: URL;
  agent: http.Agent | undefined;
}

/**
 * The single-object calls of a client (a KubeClient fits): what code that reads and writes objects but never lists
 * or watches depends on, so its test fakes implement five methods, not the whole client.
 */
export type ObjectClient = Pick<KubeClient, 'get' | 'create' | 'update' | 'patch' | 'delete'>;

/**
 * A Kubernetes REST client working in plain JSON. Reads (GET/LIST) are retried on 429, 5xx, timeouts and
 * network errors; writes only on 429 and on failures that happened before the request was sent.
 * Create one per process (they share nothing global); derive variants with {@link KubeClient.withOptions}.
 */
export class KubeClient {
  readonly userAgent: string;
  readonly bucket: TokenBucket | undefined;
  private readonly shared: Shared;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryBaseDelayMs: number;
  private readonly clock: Clock;
  private readonly options: KubeClientOptions;

  constructor(options: KubeClientOptions, shared?: Shared) {
    this.options = options;
    const cluster = options.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('KubeConfig has no current cluster');
    this.shared = shared ?? { kc: options.kubeConfig, server: new URL(cluster.server), agent: undefined };
    this.userAgent = options.userAgent ?? DEFAULT_USER_AGENT;
    this.clock = options.clock ?? realClock;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.retryBaseDelayMs = options.retryBaseDelayMs ?? 250;
    const qps = options.qps ?? DEFAULT_QPS;
    this.bucket =
      options.bucket ?? (qps > 0 ? new TokenBucket(qps, options.burst ?? DEFAULT_BURST, this.clock) : undefined);
  }

  /**
   * A client sharing this one's connection pool and credentials but with its own options: e.g. a leader
   * elector's client with a dedicated bucket, so workers' QPS cannot starve lease renewals.
   */
  withOptions(overrides: Omit<Partial<KubeClientOptions>, 'kubeConfig'>): KubeClient {
    const merged: KubeClientOptions = { ...this.options, ...overrides };
    // Without a new budget the derived client shares this one's bucket; with qps/burst it gets a fresh one.
    const newBudget = overrides.bucket !== undefined || overrides.qps !== undefined || overrides.burst !== undefined;
    if (!newBudget) merged.bucket = this.bucket;
    else if (!overrides.bucket) delete merged.bucket;
    if (!newBudget && !this.bucket) merged.qps = 0;
    return new KubeClient(merged, this.shared);
  }

  /** Closes idle keep-alive sockets. Open watches end with a NetworkError. */
  close(): void {
    this.shared.agent?.destroy();
    this.shared.agent = undefined;
  }

  async get<T extends KubeObject = KubeObject>(
    r: ApiResource<T>,
    name: string,
    opts: NamespacedOptions & { subresource?: string } = {},
  ): Promise<T> {
    return this.call<T>({ verb: 'GET', path: resourcePath(r, opts.namespace, name, opts.subresource), opts });
  }

  /** One page (or the whole list, without `limit`). Items get `kind`/`apiVersion` filled in when the server omits them. */
  async list<T extends KubeObject = KubeObject>(r: ApiResource<T>, opts: ListOptions = {}): Promise<KubeList<T>> {
    const list = await this.call<KubeList<T>>({
      verb: 'GET',
      path: resourcePath(r, opts.namespace),
      query: {
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
        limit: opts.limit,
        continue: opts.continue,
        resourceVersion: opts.resourceVersion,
        resourceVersionMatch: opts.resourceVersionMatch,
      },
      opts,
    });
    const apiVersion = apiVersionOf(r);
    for (const item of list.items ?? []) {
      item.kind ??= r.kind;
      item.apiVersion ??= apiVersion;
    }
    list.items ??= [];
    return list;
  }

  /**
   * Every page of a list (`limit` per page, default 500), as one consistent snapshot. If a continue token
   * expires mid-way (410), falls back to one unpaginated list, as client-go's pager does.
   */
  async listAll<T extends KubeObject = KubeObject>(
    r: ApiResource<T>,
    opts: ListOptions = {},
  ): Promise<{ items: T[]; resourceVersion: string }> {
    const limit = opts.limit ?? 500;
    const items: T[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      let page: KubeList<T>;
      try {
        page = await this.list<T>(r, { ...opts, limit, continue: cont });
      } catch (err) {
        if (!(err instanceof GoneError) || cont === undefined) throw err;
        const full = await this.list<T>(r, { ...opts, limit: undefined, continue: undefined });
        return { items: full.items, resourceVersion: full.metadata.resourceVersion ?? '' };
      }
      items.push(...page.items);
      resourceVersion = page.metadata.resourceVersion ?? resourceVersion;
      cont = page.metadata.continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  async create<T extends KubeObject = KubeObject>(r: ApiResource<T>, obj: T, opts: WriteOptions = {}): Promise<T> {
    const namespace = opts.namespace ?? obj.metadata.namespace;
    return this.call<T>({
      verb: 'POST',
      path: resourcePath(r, namespace, undefined, undefined),
      body: withTypeMeta(r, obj),
      query: writeQuery(opts),
      opts,
    });
  }

  /** PUT of a whole object; `metadata.resourceVersion` makes it conditional (409 ConflictError when stale). */
  async update<T extends KubeObject = KubeObject>(r: ApiResource<T>, obj: T, opts: WriteOptions = {}): Promise<T> {
    const namespace = opts.namespace ?? obj.metadata.namespace;
    const name = obj.metadata.name;
    if (!name) throw new TypeError('update needs metadata.name');
    return this.call<T>({
      verb: 'PUT',
      path: resourcePath(r, namespace, name, opts.subresource),
      body: withTypeMeta(r, obj),
      query: writeQuery(opts),
      opts,
    });
  }

  /** PATCH, merge-patch by default; `type: 'json'` for RFC 6902 (with `test` guards), `'strategic'` for SMP. */
  async patch<T extends KubeObject = KubeObject>(
    r: ApiResource<T>,
    name: string,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<T> {
    return this.call<T>({
      verb: 'PATCH',
      path: resourcePath(r, opts.namespace, name, opts.subresource),
      body: patch,
      contentType: PATCH_CONTENT_TYPES[opts.type ?? 'merge'],
      query: writeQuery(opts),
      opts,
    });
  }

  /** DELETE; returns the object (now terminating or gone) or the server's Success Status. */
  async delete<T extends KubeObject = KubeObject>(
    r: ApiResource<T>,
    name: string,
    opts: DeleteOptions = {},
  ): Promise<T | Status> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    return this.call<T | Status>({ verb: 'DELETE', path: resourcePath(r, opts.namespace, name), body, opts });
  }

  /**
   * Opens a watch. Resolves once the server answered 200 (an HTTP error such as 410 rejects here as a typed
   * error); then iterate the stream. Not retried: reconnecting is the reflector's job.
   */
  async watch<T extends KubeObject = KubeObject>(r: ApiResource<T>, opts: WatchOptions = {}): Promise<WatchStream<T>> {
    const path = resourcePath(r, opts.namespace);
    const query = {
      watch: 'true',
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: opts.allowWatchBookmarks || undefined,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    };
    const call: Call = { verb: 'GET', path, query, opts };
    await this.bucket?.take(opts.signal);
    const res = await this.send(call, true);
    return new WatchStream<T>(res, { verb: 'WATCH', path }, opts.idleTimeoutMs ?? 0);
  }

  // ---- request machinery ----

  private async call<T>(call: Call): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      await this.bucket?.take(call.opts.signal);
      try {
        const res = await this.send(call, false);
        return (await readJson(res, call)) as T;
      } catch (err) {
        if (attempt >= this.maxRetries || !isRetryable(call.verb, err)) throw err;
        await this.clock.sleep(this.retryDelay(attempt, err as ApiError), call.opts.signal);
      }
    }
  }

  private retryDelay(attempt: number, err: ApiError): number {
    if (err.retryAfterSeconds !== undefined && err.retryAfterSeconds >= 0)
      return Math.min(err.retryAfterSeconds * 1000, 30_000);
    const base = Math.min(this.retryBaseDelayMs * 2 ** attempt, 8_000);
    return base / 2 + Math.random() * (base / 2);
  }

  /** Sends one request; resolves with a 2xx response (body unread) or rejects with a typed error. */
  private async send(call: Call, streaming: boolean): Promise<http.IncomingMessage> {
    const { kc, server } = this.shared;
    const reqOpts: https.RequestOptions = { headers: {} };
    await kc.applyToHTTPSOptions(reqOpts);
    // The request target is built as a string, not a URL per request: a URL, its search params and node's
    // conversion of it back to options were a tenth of what a request allocated.
    let path = basePath(server) + call.path;
    let search: URLSearchParams | undefined;
    for (const k in call.query) {
      const v = call.query[k];
      if (v !== undefined && v !== '') (search ??= new URLSearchParams()).set(k, String(v));
    }
    if (search) path += `?${search.toString()}`;
    const payload = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body));
    const headers: http.OutgoingHttpHeaders = {
      ...(reqOpts.headers as http.OutgoingHttpHeaders),
      Accept: 'application/json',
      'User-Agent': this.userAgent,
    };
    if (payload) {
      headers['Content-Type'] = call.contentType ?? 'application/json';
      headers['Content-Length'] = payload.length;
    }
    const timeoutMs = call.opts.timeoutMs ?? this.timeoutMs;
    const request = { verb: call.verb, path: call.path };
    const agent = this.agentFor(reqOpts);
    const mod = server.protocol === 'http:' ? http : https;

    return new Promise<http.IncomingMessage>((resolve, reject) => {
      let settled = false;
      let response: http.IncomingMessage | undefined;
      const settle = (fn: () => void) => {
        if (!settled) {
          settled = true;
          fn();
        }
      };
      // Covers connect, headers and (for non-watch calls) the body: the timer destroys whichever is in flight.
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              const err = new TimeoutError(
                syntheticStatus(0, 'Timeout', `${call.verb} ${call.path}: no response in ${timeoutMs} ms`),
                request,
              );
              if (response) response.destroy(err);
              else req.destroy(err);
            }, timeoutMs)
          : undefined;
      timer?.unref();
      const req = mod.request({
        protocol: server.protocol,
        hostname: hostnameOf(server),
        port: server.port || undefined,
        path,
        method: call.verb,
        headers,
        agent,
        auth: reqOpts.auth,
        signal: call.opts.signal,
      });
      req.on('response', (res) => {
        response = res;
        if (timer) {
          if (streaming) clearTimeout(timer);
          else res.on('close', () => clearTimeout(timer));
        }
        const code = res.statusCode ?? 0;
        if (code >= 200 && code < 300) return settle(() => resolve(res));
        collect(res)
          .then((body) => {
            const retryAfter = parseRetryAfter(res.headers['retry-after']);
            settle(() => reject(errorFromStatus(parseStatus(code, body), request, retryAfter)));
          })
          .catch((err: unknown) =>
            settle(() => reject(err instanceof ApiError ? err : toNetworkError(err, request, true))),
          );
      });
      req.on('error', (err) => {
        if (timer) clearTimeout(timer);
        if (err instanceof ApiError || err.name === 'AbortError') return settle(() => reject(err));
        const errno = (err as NodeJS.ErrnoException).code;
        // ECONNREFUSED: nothing was sent. ECONNRESET on a reused keep-alive socket before any response: the
        // server closed an idle connection as we wrote (Node's documented retry case), so it processed nothing.
        const notSent = errno === 'ECONNREFUSED' || (!response && errno === 'ECONNRESET' && req.reusedSocket);
        settle(() => reject(toNetworkError(err, request, !notSent)));
      });
      req.end(payload);
    });
  }

  private agentFor(reqOpts: https.RequestOptions): http.Agent | undefined {
    const cluster = this.shared.kc.getCurrentCluster();
    if (cluster?.proxyUrl) return reqOpts.agent as http.Agent; // client-node's proxy agent
    if (!this.shared.agent) {
      const tls: https.AgentOptions = {
        keepAlive: true,
        ca: reqOpts.ca,
        cert: reqOpts.cert,
        key: reqOpts.key,
        servername: reqOpts.servername,
      };
      if (reqOpts.rejectUnauthorized !== undefined) tls.rejectUnauthorized = reqOpts.rejectUnauthorized;
      this.shared.agent =
        this.shared.server.protocol === 'http:' ? new http.Agent({ keepAlive: true }) : new OneServerAgent(tls);
    }
    return this.shared.agent;
  }
}

/**
 * The keep-alive agent of one API server with one set of TLS options. https.Agent keys its connection pool by a name
 * it rebuilds from the request's options on every request and every socket release, CA and client certificate
 * included (kilobytes per request); for one server and fixed options the name never changes, so it is built once.
 */
class OneServerAgent extends https.Agent {
  private poolName: string | undefined;

  override getName(options?: https.RequestOptions): string {
    return (this.poolName ??= super.getName(options));
  }
}

function isRetryable(verb: Call['verb'], err: unknown): boolean {
  if (err instanceof TooManyRequestsError) return true;
  if (err instanceof NetworkError && !err.sent) return true;
  if (verb !== 'GET') return false;
  if (err instanceof ServerError) return err.code !== 501;
  return err instanceof TimeoutError || err instanceof NetworkError;
}

function writeQuery(opts: WriteOptions): Call['query'] {
  return { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
}

function withTypeMeta<T extends KubeObject>(r: ApiResource<T>, obj: T): T {
  if (obj.kind && obj.apiVersion) return obj;
  return { ...obj, kind: obj.kind ?? r.kind, apiVersion: obj.apiVersion ?? apiVersionOf(r) };
}

function parseRetryAfter(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const seconds = Number(v);
  if (Number.isFinite(seconds)) return seconds;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

function toNetworkError(err: unknown, request: { verb: string; path: string }, sent: boolean): NetworkError {
  const e = err as NodeJS.ErrnoException;
  return new NetworkError(`${request.verb} ${request.path}: ${e.message}`, sent, e.code, request, { cause: err });
}

/** The server URL's path without its trailing slash ('' for a server at the root). */
function basePath(server: URL): string {
  const p = server.pathname;
  return p.endsWith('/') ? p.slice(0, -1) : p;
}

/** The host to connect to, an IPv6 literal without its brackets (as node's own URL conversion gives it). */
function hostnameOf(server: URL): string {
  const h = server.hostname;
  return h.startsWith('[') ? h.slice(1, -1) : h;
}

/**
 * A response body as text. Listeners rather than `for await`: the async iterator and its end-of-stream tracking
 * cost more per response than the body of a typical answer, and a response waiting on a slow server lives long
 * enough to be promoted to old space.
 */
function collect(res: http.IncomingMessage): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let ended = false;
    res.on('data', (chunk: Buffer) => chunks.push(chunk));
    res.once('end', () => {
      ended = true;
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    });
    res.once('error', reject);
    res.once('close', () => {
      if (ended) return;
      const err = Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' });
      reject(res.errored ?? err);
    });
  });
}

async function readJson(res: http.IncomingMessage, call: Call): Promise<unknown> {
  let body: string;
  try {
    body = await collect(res);
  } catch (err) {
    if (err instanceof ApiError || (err as Error).name === 'AbortError') throw err;
    throw toNetworkError(err, { verb: call.verb, path: call.path }, true);
  }
  if (!body) return {};
  try {
    return JSON.parse(body);
  } catch (err) {
    throw new ApiError(
      syntheticStatus(res.statusCode ?? 0, 'BadResponse', `${call.verb} ${call.path}: response is not JSON`),
      { verb: call.verb, path: call.path },
      undefined,
      { cause: err },
    );
  }
}
