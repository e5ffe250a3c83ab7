// The bounds the API server puts on what a client can make it hold: object size and nesting, JSON-patch copy
// work, watch buffers (per watch and server-wide), connection timeouts, connections that have not
// authenticated, and the audit's cardinality. One table of defaults; tests and embedders override any of them.
import { MAX_BODY_BYTES } from '../common/json-safety.ts';
import { DEFAULT_OBJECT_LIMITS } from '../storage/write-limits.ts';

/** Every bound of one API server. */
export interface ServerLimits {
  /** Largest serialized object a write may store (etcd's default request limit, 1.5 MiB); 413 beyond. */
  maxObjectBytes: number;
  /**
   * JSON nesting limit of request bodies and patch results (apimachinery: 10,000); 400 beyond. YAML bodies stop
   * at the lower of this and MAX_YAML_DEPTH (200, the YAML nesting limit: schema/yaml-decode.ts).
   */
  maxJsonDepth: number;
  /** Accumulated size of the values a JSON patch copies (kube: the request body limit); 422 beyond. */
  maxPatchCopyBytes: number;
  /** Unsent bytes one watch may buffer before its connection is destroyed. */
  maxWatchBufferBytes: number;
  /** Unsent bytes all watches together may buffer; the watch that pushes the total past it is destroyed. */
  maxTotalWatchBufferBytes: number;
  /** Time a connection has to finish the TLS handshake and send complete request headers. */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request (headers and body). */
  requestTimeoutMs: number;
  /**
   * Open connections that have not yet sent an authenticated request, in each of two stages: waiting for their
   * ClientHello, and past it (connection-admission.ts); past it the stage's oldest one is closed. Holding them is
   * cheaper than closing them: a closed attacker connection comes straight back, queues in the listen backlog
   * ahead of legitimate clients and, once past its ClientHello, costs a TLS key exchange again. So the default
   * holds a 1,000-connection attacker whole (measured 4 KB per idle connection, 18 KB per connection waiting in
   * its TLS handshake: at most ~45 MB with both stages full).
   */
  maxUnauthenticatedConnections: number;
  /** Distinct client names the audit keeps; later clients are counted as `other`. */
  maxAuditClients: number;
  /** Client names (X-Client-Name or User-Agent) are truncated to this many characters. */
  maxClientNameLength: number;
}

export const DEFAULT_LIMITS: Readonly<ServerLimits> = Object.freeze({
  maxObjectBytes: DEFAULT_OBJECT_LIMITS.maxObjectBytes,
  maxJsonDepth: DEFAULT_OBJECT_LIMITS.maxJsonDepth,
  maxPatchCopyBytes: MAX_BODY_BYTES,
  maxWatchBufferBytes: 16 * 1024 * 1024,
  maxTotalWatchBufferBytes: 256 * 1024 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
  maxUnauthenticatedConnections: 2048,
  maxAuditClients: 1_000,
  maxClientNameLength: 128,
});

/** The defaults with `overrides` applied. */
export function resolveLimits(overrides: Partial<ServerLimits> = {}): ServerLimits {
  const out: ServerLimits = { ...DEFAULT_LIMITS };
  for (const [k, v] of Object.entries(overrides) as Array<[keyof ServerLimits, number | undefined]>) {
    if (v !== undefined) out[k] = v;
  }
  return out;
}
