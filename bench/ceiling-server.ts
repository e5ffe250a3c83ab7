// The ceiling the API server benchmarks compare against: a bare Node HTTPS server doing only the protocol work a
// Kubernetes API server cannot avoid (bearer-token check, JSON parse and serialise, objects kept in a Map, list,
// get, delete, watch fan-out with a resourceVersion counter) and nothing else: no storage layer, no validation,
// no admission, no defaulting, no watch cache or history. Written as plainly as Node allows, so that "x of the
// ceiling" reads as "x of what this machine's Node can do for the same requests". Paths are the core group's
// (`/api/v1/[namespaces/NS/]RESOURCE[/NAME]`), so the same load generators drive it and the embedded cluster.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Where the ceiling listens and how to reach it. */
export interface CeilingServer {
  readonly url: string;
  /** Objects held, over every resource. */
  size(): number;
  close(): Promise<void>;
}

/** Options of the ceiling server: the bearer token it accepts and its serving certificate. */
export interface CeilingServerOptions {
  token: string;
  tls: { certPem: string; keyPem: string };
  host?: string;
  port?: number;
}

interface Stored {
  json: string;
}

interface Watch {
  res: ServerResponse;
  namespace: string | undefined;
}

interface Collection {
  items: Map<string, Stored>;
  watches: Set<Watch>;
}

function key(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Starts the ceiling server; resolves once it listens. */
export async function startCeilingServer(opts: CeilingServerOptions): Promise<CeilingServer> {
  const expected = Buffer.from(`Bearer ${opts.token}`);
  const collections = new Map<string, Collection>();
  let rv = 0;
  const collection = (resource: string): Collection => {
    let c = collections.get(resource);
    if (!c) collections.set(resource, (c = { items: new Map(), watches: new Set() }));
    return c;
  };
  const send = (res: ServerResponse, code: number, body: string): void => {
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  const fanOut = (c: Collection, type: string, namespace: string | undefined, json: string): void => {
    const line = `{"type":"${type}","object":${json}}\n`;
    for (const w of c.watches) if (w.namespace === undefined || w.namespace === namespace) w.res.write(line);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: string): void => {
    const url = new URL(req.url ?? '/', 'https://ceiling');
    const parts = url.pathname.split('/').filter(Boolean);
    if (parts[0] !== 'api' || parts[1] !== 'v1') return send(res, 404, '{"kind":"Status","code":404}');
    let namespace: string | undefined;
    let rest = parts.slice(2);
    if (rest[0] === 'namespaces' && rest.length >= 3) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
    const [resource, name] = rest;
    const c = collection(resource);
    switch (req.method) {
      case 'POST': {
        const obj = JSON.parse(body) as { metadata: { name: string; namespace?: string; resourceVersion?: string } };
        if (namespace) obj.metadata.namespace = namespace;
        const k = key(namespace, obj.metadata.name);
        if (c.items.has(k)) return send(res, 409, '{"kind":"Status","code":409,"reason":"AlreadyExists"}');
        obj.metadata.resourceVersion = String(++rv);
        const json = JSON.stringify(obj);
        c.items.set(k, { json });
        send(res, 201, json);
        return fanOut(c, 'ADDED', namespace, json);
      }
      case 'GET': {
        if (url.searchParams.get('watch') === 'true') {
          const w: Watch = { res, namespace };
          res.writeHead(200, { 'Content-Type': 'application/json' });
          res.flushHeaders();
          // From resourceVersion "" or "0": the current objects first. From "N": only what comes next (no history).
          const from = url.searchParams.get('resourceVersion');
          if (!from || from === '0') {
            for (const [k, s] of c.items)
              if (!namespace || k.startsWith(`${namespace}/`)) res.write(`{"type":"ADDED","object":${s.json}}\n`);
          }
          c.watches.add(w);
          res.on('close', () => c.watches.delete(w));
          return;
        }
        if (name !== undefined) {
          const s = c.items.get(key(namespace, name));
          return s ? send(res, 200, s.json) : send(res, 404, '{"kind":"Status","code":404,"reason":"NotFound"}');
        }
        const items: string[] = [];
        for (const [k, s] of c.items) if (!namespace || k.startsWith(`${namespace}/`)) items.push(s.json);
        return send(
          res,
          200,
          `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"${rv}"},"items":[${items.join(',')}]}`,
        );
      }
      case 'DELETE': {
        const k = key(namespace, name ?? '');
        const s = c.items.get(k);
        if (!s) return send(res, 404, '{"kind":"Status","code":404,"reason":"NotFound"}');
        c.items.delete(k);
        const obj = JSON.parse(s.json) as { metadata: { resourceVersion?: string } };
        obj.metadata.resourceVersion = String(++rv);
        const json = JSON.stringify(obj);
        send(res, 200, json);
        return fanOut(c, 'DELETED', namespace, json);
      }
      default:
        return send(res, 405, '{"kind":"Status","code":405}');
    }
  };

  const server: Server = createServer(
    { cert: opts.tls.certPem, key: opts.tls.keyPem, keepAlive: true, noDelay: true },
    (req, res) => {
      const auth = Buffer.from(req.headers.authorization ?? '');
      if (auth.length !== expected.length || !timingSafeEqual(auth, expected)) {
        req.resume();
        return send(res, 401, '{"kind":"Status","code":401,"reason":"Unauthorized"}');
      }
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          handle(req, res, Buffer.concat(chunks).toString('utf8'));
        } catch (err) {
          send(res, 400, JSON.stringify({ kind: 'Status', code: 400, message: String(err) }));
        }
      });
    },
  );
  server.keepAliveTimeout = 65_000;
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://${host}:${port}`,
    size: () => [...collections.values()].reduce((n, c) => n + c.items.size, 0),
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of collections.values()) for (const w of c.watches) w.res.end();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
