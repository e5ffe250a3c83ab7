// Raw client plumbing for the API-server hostile suites: requests written byte by byte over TLS (targets and
// headers no HTTP client would send), sockets that never read, never handshake or never finish their headers,
// and a keep-alive HTTPS agent for request floods. Not a test file itself.
import type http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';

/** Where and how to reach a cluster. */
export interface Endpoint {
  url: string;
  token: string;
  caPem: string | undefined;
}

function hostPort(e: Endpoint): { host: string; port: number } {
  const u = new URL(e.url);
  return { host: u.hostname, port: Number(u.port) };
}

/** A verified TLS connection to the cluster. */
export function connectTls(e: Endpoint): Promise<tls.TLSSocket> {
  const { host, port } = hostPort(e);
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host, port, ca: e.caPem, servername: 'localhost' }, () => resolve(s));
    s.once('error', reject);
  });
}

/** A plain TCP connection to the TLS port that never starts the handshake. */
export function connectTcp(e: Endpoint): Promise<net.Socket> {
  const { host, port } = hostPort(e);
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port }, () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes `head` (the request line and headers, CRLF-terminated) and returns the first response's status code. */
export async function rawStatus(e: Endpoint, head: string): Promise<number> {
  const s = await connectTls(e);
  return new Promise((resolve, reject) => {
    let text = '';
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m) {
        s.destroy();
        resolve(Number(m[1]));
      }
    });
    s.on('error', reject);
    s.on('close', () =>
      reject(new Error(`connection closed without a response: ${JSON.stringify(text.slice(0, 200))}`)),
    );
    s.write(head);
  });
}

/** Whether a socket has closed (tracked from the moment this is called). Reads and drops what arrives. */
export function closedFlag(s: net.Socket): () => boolean {
  let closed = s.destroyed;
  // A socket nobody reads never sees the server's end of the connection.
  s.resume();
  s.once('close', () => (closed = true));
  // Errors (ECONNRESET) end in 'close'; without a listener they would be thrown.
  s.on('error', () => {});
  return () => closed;
}

/** A keep-alive agent trusting the cluster CA (for floods of requests). */
export function keepAliveAgent(e: Endpoint): https.Agent {
  return new https.Agent({ keepAlive: true, maxSockets: 8, ca: e.caPem });
}

/** One request through `agent`; resolves with the status code (the body is drained). */
export function statusOf(
  e: Endpoint,
  agent: https.Agent,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, e.url), { method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A response as the hostile suites read it. */
export interface Answer {
  status: number;
  text: string;
  headers?: http.IncomingHttpHeaders;
  json<T = Record<string, unknown>>(): T;
}

/** One authenticated request (unless `token: null`) with an optional body; a fresh connection each time. */
export function call(
  e: Endpoint,
  method: string,
  path: string,
  opts: { body?: string | Buffer; contentType?: string; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  const token = opts.token === undefined ? e.token : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) {
    headers['content-type'] = opts.contentType ?? 'application/json';
    headers['content-length'] = String(Buffer.byteLength(opts.body));
  }
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, e.url), { method, headers, ca: e.caPem, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, text, headers: res.headers, json: <T>() => JSON.parse(text) as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}
