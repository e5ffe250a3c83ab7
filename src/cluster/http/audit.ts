// The audit counter: authenticated API requests counted by (client, verb, resource, status code). Benchmarks use
// it to count API calls per claim, and the RBAC check uses it to list what the provisioner actually called.
// Its size is bounded whatever clients send: names are truncated and, past a number of distinct clients, the
// newcomers are counted together as `other`.

/** Who did what: the user agent, verb and resource (with subresource) of counted requests. */
export interface AuditKey {
  /** The X-Client-Name header if sent, else the User-Agent, else "unknown" (truncated; `other` past the limit). */
  client: string;
  verb: string;
  /** Resource plural with `/subresource` when there is one; "" for non-resource paths. */
  resource: string;
  /** HTTP status; 0 when the connection was reset without one (an injected lost response). */
  code: number;
}

/** An audit key with the number of requests counted for it. */
export interface AuditRecord extends AuditKey {
  count: number;
}

export interface AuditOptions {
  /** Distinct client names kept (default 1,000); later ones are counted as `other`. */
  maxClients?: number;
  /** Client names are cut to this many characters (default 128). */
  maxClientNameLength?: number;
}

/** The client name later clients share once the audit holds its maximum of distinct clients. */
export const OTHER_CLIENTS = 'other';

/** Counts of served API requests. */
export class Audit {
  private readonly counts = new Map<string, AuditRecord>();
  private readonly clients = new Set<string>();
  private readonly maxClients: number;
  private readonly maxNameLength: number;

  constructor(opts: AuditOptions = {}) {
    this.maxClients = opts.maxClients ?? 1_000;
    this.maxNameLength = opts.maxClientNameLength ?? 128;
  }

  record(clientName: string, verb: string, resource: string, code: number): void {
    let client = clientName.length > this.maxNameLength ? clientName.slice(0, this.maxNameLength) : clientName;
    if (!this.clients.has(client)) {
      if (this.clients.size >= this.maxClients) client = OTHER_CLIENTS;
      else this.clients.add(client);
    }
    const key = `${client}\u0000${verb}\u0000${resource}\u0000${code}`;
    const rec = this.counts.get(key);
    if (rec) rec.count++;
    else this.counts.set(key, { client, verb, resource, code, count: 1 });
  }

  /** Every counter, sorted by client, resource, verb, code. */
  records(): AuditRecord[] {
    return [...this.counts.values()]
      .map((r) => ({ ...r }))
      .sort(
        (a, b) =>
          a.client.localeCompare(b.client) ||
          a.resource.localeCompare(b.resource) ||
          a.verb.localeCompare(b.verb) ||
          a.code - b.code,
      );
  }

  /** Sum of the counters matching every given field (`client` also matches as a prefix, e.g. "kube-provisioner"). */
  count(filter: Partial<AuditKey> = {}): number {
    let n = 0;
    for (const r of this.counts.values()) {
      if (filter.client !== undefined && !r.client.startsWith(filter.client)) continue;
      if (filter.verb !== undefined && r.verb !== filter.verb) continue;
      if (filter.resource !== undefined && r.resource !== filter.resource) continue;
      if (filter.code !== undefined && r.code !== filter.code) continue;
      n += r.count;
    }
    return n;
  }

  reset(): void {
    this.counts.clear();
    this.clients.clear();
  }
}
