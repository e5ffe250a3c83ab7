// Shared helpers for the API server tests: raw HTTPS requests (for inputs client-node would never send),
// a watch collector over client-node's Watch (polling with the shared waitFor), body builders. Not a test file itself.
import { Watch, type KubeConfig } from '@kubernetes/client-node';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import type { TestCluster } from '../../src/testing/index.ts';
import { waitFor } from '../support/wait.ts';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

/** The CA of the cluster's kubeconfig, for raw requests that verify the serving certificate. */
function caOf(kc: KubeConfig): Buffer | undefined {
  const cluster = kc.getCurrentCluster();
  return cluster?.caData ? Buffer.from(cluster.caData, 'base64') : undefined;
}

/** Sends one HTTP request to the cluster. `token: null` sends no Authorization header. */
export function raw(
  c: Pick<TestCluster, 'url' | 'token' | 'kubeConfig'>,
  method: string,
  path: string,
  opts: { body?: string | Buffer; contentType?: string; headers?: Record<string, string>; token?: string | null } = {},
): Promise<RawResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? c.token : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) {
    headers['content-type'] = opts.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(opts.body));
  }
  const url = new URL(path, c.url);
  const send = url.protocol === 'https:' ? request : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method, headers, ca: caOf(c.kubeConfig), agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: <T>() => JSON.parse(text) as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

export interface CollectedEvent {
  type: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  object: any;
}

/** A running watch through client-node that records events; `done` resolves when the stream ends. */
export interface WatchCollector {
  events: CollectedEvent[];
  done: Promise<unknown>;
  /** Resolves once `pred` holds for the events seen so far (polls every 10 ms, rejects after `timeoutMs`). */
  until(pred: (events: CollectedEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  stop(): void;
}

export async function collectWatch(
  kc: KubeConfig,
  path: string,
  query: Record<string, string | number | boolean | undefined> = {},
): Promise<WatchCollector> {
  const events: CollectedEvent[] = [];
  let finish!: (v: unknown) => void;
  const done = new Promise((r) => (finish = r));
  const ac = await new Watch(kc).watch(
    path,
    query,
    (type, object) => events.push({ type, object }),
    (err) => finish(err ?? null),
  );
  return {
    events,
    done,
    until: async (pred, timeoutMs = 5000) => {
      await waitFor(`watch events on ${path}`, () => pred(events), timeoutMs, 10);
    },
    stop: () => ac.abort(),
  };
}

/** A minimal valid PVC body. */
export function pvcBody(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, ...(extra.metadata as object | undefined) },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    ...Object.fromEntries(Object.entries(extra).filter(([k]) => k !== 'metadata')),
  };
}

/** A minimal valid PV body. */
export function pvBody(name: string, labels?: Record<string, string>): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` } },
  };
}
