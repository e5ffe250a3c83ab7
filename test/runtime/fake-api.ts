// A deliberately small in-test Kubernetes API (node:http, 127.0.0.1, port 0) for runtime unit tests that
// need exact control: a global RV counter, list with limit/continue, watch with replay from an event log and
// 410 when compacted, GET/POST/PUT(RV conflict)/merge-PATCH/DELETE, and fault hooks. Not a cluster: the
// embedded cluster (src/testing) is what integration tests use.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import type { KubeObject, WatchEvent } from '../../src/types/k8s.ts';

interface LogEntry {
  rv: number;
  plural: string;
  ev: WatchEvent;
}

export interface FakeApi {
  url: string;
  kubeConfig: KubeConfig;
  objects: Map<string, KubeObject>;
  /** Requests seen, as "VERB path". */
  requests: string[];
  /** Return a status for matching requests (called first; return undefined to pass). */
  fault: ((method: string, path: string) => number | undefined) | undefined;
  put(plural: string, obj: KubeObject): KubeObject;
  remove(plural: string, namespace: string | undefined, name: string): void;
  closeWatches(): void;
  /** Forget the event log so every resume from an older RV gets 410. */
  compact(): void;
  openWatches(): number;
  close(): Promise<void>;
}

const status = (code: number, reason: string, message = reason) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: 'Failure',
  code,
  reason,
  message,
});

export async function startFakeApi(): Promise<FakeApi> {
  let rv = 100;
  let compactedBelow = 0;
  const log: LogEntry[] = [];
  const watchers = new Set<{ plural: string; ns?: string; res: http.ServerResponse }>();
  const objects = new Map<string, KubeObject>();
  const key = (plural: string, ns: string | undefined, name: string) => `${plural}/${ns ?? ''}/${name}`;

  const emit = (plural: string, ev: WatchEvent) => {
    log.push({ rv, plural, ev });
    for (const w of watchers) {
      if (w.plural === plural && (!w.ns || w.ns === ev.object.metadata.namespace))
        w.res.write(JSON.stringify(ev) + '\n');
    }
  };

  const fake: FakeApi = {
    url: '',
    kubeConfig: new KubeConfig(),
    objects,
    requests: [],
    fault: undefined,
    put(plural, obj) {
      const k = key(plural, obj.metadata.namespace, obj.metadata.name ?? '');
      const existing = objects.get(k);
      const stored: KubeObject = structuredClone(obj);
      stored.metadata.resourceVersion = String(++rv);
      stored.metadata.uid ??= existing?.metadata.uid ?? `uid-${rv}`;
      objects.set(k, stored);
      emit(plural, { type: existing ? 'MODIFIED' : 'ADDED', object: stored });
      return stored;
    },
    remove(plural, ns, name) {
      const k = key(plural, ns, name);
      const existing = objects.get(k);
      if (!existing) return;
      objects.delete(k);
      const last = structuredClone(existing);
      last.metadata.resourceVersion = String(++rv);
      emit(plural, { type: 'DELETED', object: last });
    },
    closeWatches() {
      for (const w of watchers) w.res.end();
      watchers.clear();
    },
    compact() {
      compactedBelow = rv;
      log.length = 0;
    },
    openWatches: () => watchers.size,
    close: async () => {},
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const method = req.method ?? 'GET';
      fake.requests.push(`${method} ${url.pathname}${url.searchParams.get('watch') ? '?watch' : ''}`);
      const send = (code: number, body: unknown) => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const injected = fake.fault?.(method, url.pathname);
      if (injected) return send(injected, status(injected, injected === 429 ? 'TooManyRequests' : 'InternalError'));
      // /api/v1[/namespaces/ns]/plural[/name] or /apis/g/v[/namespaces/ns]/plural[/name]
      const parts = url.pathname.split('/').filter(Boolean);
      const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
      let ns: string | undefined;
      if (rest[0] === 'namespaces' && rest.length >= 3) {
        ns = rest[1];
        rest.splice(0, 2);
      }
      const [plural, name] = rest;
      const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString()) as KubeObject) : undefined;

      if (method === 'GET' && !name && url.searchParams.get('watch')) {
        const from = Number(url.searchParams.get('resourceVersion') || '0');
        res.writeHead(200, { 'Content-Type': 'application/json' });
        if (from && from < compactedBelow) {
          res.end(
            JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from}`) }) +
              '\n',
          );
          return;
        }
        for (const e of log) if (e.rv > from && e.plural === plural) res.write(JSON.stringify(e.ev) + '\n');
        const w = { plural, ns, res };
        watchers.add(w);
        res.on('close', () => watchers.delete(w));
        return;
      }
      if (method === 'GET' && !name) {
        const all = [...objects.entries()]
          .filter(([k]) => k.startsWith(`${plural}/${ns ?? ''}`) || (!ns && k.startsWith(`${plural}/`)))
          .map(([, o]) => o);
        const limit = Number(url.searchParams.get('limit') || '0');
        const start = Number(url.searchParams.get('continue') || '0');
        const items = limit ? all.slice(start, start + limit) : all;
        const next = limit && start + limit < all.length ? String(start + limit) : undefined;
        return send(200, {
          kind: 'List',
          apiVersion: 'v1',
          metadata: { resourceVersion: String(rv), continue: next },
          items,
        });
      }
      const k = key(plural, ns, name ?? body?.metadata.name ?? '');
      const existing = objects.get(k);
      if (method === 'GET') return existing ? send(200, existing) : send(404, status(404, 'NotFound'));
      if (method === 'POST') {
        if (existing) return send(409, status(409, 'AlreadyExists'));
        return send(201, fake.put(plural, { ...(body as KubeObject), metadata: { ...body?.metadata, namespace: ns } }));
      }
      if (method === 'PUT') {
        if (!existing) return send(404, status(404, 'NotFound'));
        if (body?.metadata.resourceVersion !== existing.metadata.resourceVersion)
          return send(409, status(409, 'Conflict'));
        return send(200, fake.put(plural, body as KubeObject));
      }
      if (method === 'PATCH') {
        if (!existing) return send(404, status(404, 'NotFound'));
        return send(200, fake.put(plural, { ...existing, ...(body as object), metadata: existing.metadata }));
      }
      if (method === 'DELETE') {
        if (!existing) return send(404, status(404, 'NotFound'));
        fake.remove(plural, ns, name);
        return send(200, existing);
      }
      send(405, status(405, 'MethodNotAllowed'));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: fake.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'ctx', cluster: 'c', user: 'u' }],
    currentContext: 'ctx',
  });
  fake.close = () =>
    new Promise<void>((r) => {
      fake.closeWatches();
      server.closeAllConnections();
      server.close(() => r());
    });
  return fake;
}
