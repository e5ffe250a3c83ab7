// Request/response plumbing of the API server: bounded body reading (413 over 3 MiB), JSON/YAML decoding,
// content negotiation (JSON or Table), and writing JSON bodies and metav1.Status errors.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ClusterApiError, badRequest, notAcceptable, requestEntityTooLarge } from '../common/api-errors.ts';
import {
  checkJsonTextDepth,
  countObjectKeys,
  MAX_BODY_BYTES,
  MAX_JSON_DEPTH,
  parseJsonText,
  parseLargeJsonText,
} from '../common/json-safety.ts';
import { decodeYamlText, type YamlDecoded } from '../schema/yaml-decode.ts';
import { decodeYamlWire } from './decode-worker-pool.ts';

/** Thrown when a body exceeds the limit; the connection is closed after the 413 answer. */
export class BodyTooLargeError extends Error {}

/** The client went away before sending its whole body: nothing to answer. */
export class ClientAbortedError extends Error {}

/** Reads the whole request body, rejecting (without buffering further) once it exceeds `limit` bytes. */
export function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      req.resume();
      reject(new BodyTooLargeError());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        chunks.length = 0;
        reject(new BodyTooLargeError());
        return;
      }
      chunks.push(c);
    });
    let complete = false;
    req.on('end', () => {
      complete = true;
      if (!failed) resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
    });
    req.on('error', () => {
      if (!failed && !complete) reject(new ClientAbortedError('request aborted'));
      failed = true;
    });
    req.on('close', () => {
      if (!failed && !complete) reject(new ClientAbortedError('request aborted'));
      failed = true;
    });
  });
}

export function tooLargeError(limit = MAX_BODY_BYTES): ClusterApiError {
  return requestEntityTooLarge(`limit is ${limit}`);
}

/**
 * Bodies of at least this many bytes give the event loop back between the phases of their request (decoding,
 * checking, the store's write). One event loop serves every client: a 3 MiB body with 300,000 keys costs about
 * 200 ms per pass over it (JSON.parse alone, then pruning, validation, serialisation), and without a turn between
 * the passes a GET waited for all of them (1.5 s). Small bodies, the usual case, never wait for a turn.
 */
export const LARGE_BODY_BYTES = 64 * 1024;

const loopTurns = { large: 0, abandoned: 0 };

/** How many turns large bodies have given the loop (tests read it). */
export function loopTurnsForLargeBodies(): number {
  return loopTurns.large;
}

/** How many large bodies' requests were given up because their client went away during a turn (tests read it). */
export function abandonedLargeBodies(): number {
  return loopTurns.abandoned;
}

/** Counts a large body's request given up (its client went away). */
export function abandonLargeBody(): ClientAbortedError {
  loopTurns.abandoned++;
  return new ClientAbortedError('the client went away');
}

/** Whether a body of `bytes` is large enough to give the loop turns between the phases of its request. */
export function isLargeBody(bytes: number): boolean {
  return bytes >= LARGE_BODY_BYTES;
}

/**
 * Lets the event loop serve what is waiting (other requests' I/O) before the next phase of a large body's
 * request. Called only for large bodies (isLargeBody): an `await` costs a small body's request a tick too.
 */
export function loopTurn(): Promise<void> {
  loopTurns.large++;
  return new Promise((resolve) => setImmediate(resolve));
}

/** The media type of a Content-Type header, lower case without parameters. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

/**
 * Decodes a JSON or YAML request body. `what` names the expected kind for the error message, as
 * kube-apiserver does (`couldn't get version/kind; json parse error: ...`).
 * @throws ClusterApiError 400
 */
export function decodeBody(body: Buffer, contentType: string, depthLimit = MAX_JSON_DEPTH): unknown {
  return decodeObjectBody(body, contentType, depthLimit).value;
}

/** A decoded request body; a YAML one also carries Go's strict error for its repeated keys, from the same parse. */
export interface DecodedBody {
  value: unknown;
  yamlDuplicateError?: string;
  /** The unknown fields of the model given to decodeRequestBody, already removed in the worker: their paths. */
  pruned?: readonly string[];
}

/** decodeBody, keeping what the one YAML parse found about repeated keys (field validation reports them). */
export function decodeObjectBody(body: Buffer, contentType: string, depthLimit = MAX_JSON_DEPTH): DecodedBody {
  const text = body.toString('utf8');
  if (isYaml(contentType)) return yamlBody(decodeYamlText(text, depthLimit));
  try {
    return { value: parseJsonText(text, depthLimit) };
  } catch (err) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
}

/**
 * decodeObjectBody for a request handler: a YAML body of YAML_WORKER_MIN_BYTES or more is decoded in a worker (the `yaml`
 * library takes about a second per MiB), so other requests go on meanwhile; the answer is the same. Without
 * `repeats` a YAML body's repeated keys are not looked for (no yamlDuplicateError): fieldValidation=Ignore. With
 * `model`, a body decoded in the worker comes back with the model's unknown fields pruned there (`pruned`).
 * @throws ClusterApiError 400; 429 when the worker already has its full queue of bodies
 */
export async function decodeRequestBody(
  body: Buffer,
  contentType: string,
  depthLimit = MAX_JSON_DEPTH,
  repeats = true,
  turn?: () => Promise<void>,
  model?: string,
): Promise<DecodedBody> {
  if (!isYaml(contentType)) return decodeObjectBody(body, contentType, depthLimit);
  const wire = await decodeYamlWire(body.toString('utf8'), depthLimit, repeats, model);
  const pruned = wire.pruned ? { pruned: wire.pruned } : {};
  if (!('json' in wire)) return { ...yamlBody(wire), ...pruned };
  // The worker's value as JSON text: with `turn` (a large body's request) its large maps are parsed in slices.
  const value = turn ? (await parseLargeJsonText(wire.json, turn)).value : (JSON.parse(wire.json) as unknown);
  return { value, yamlDuplicateError: wire.duplicateError, ...pruned };
}

function isYaml(contentType: string): boolean {
  const type = mediaType(contentType);
  return type === 'application/yaml' || type === 'application/x-yaml' || type === 'text/yaml';
}

/** Repeated keys are field validation's business (fieldValidation decides): the last value wins here. */
function yamlBody(decoded: YamlDecoded): DecodedBody {
  if (!decoded.ok) throw badRequest(decoded.message);
  return { value: decoded.value, yamlDuplicateError: decoded.duplicateError };
}

/**
 * Decodes a JSON request body, with what tells whether some object in it repeats a key (JSON.parse keeps the last
 * one silently; field validation reports it): the keys counted in the text, to compare with the value's
 * (repeatsKeys), so only a body that does repeat one needs the scan that names the fields.
 * @throws ClusterApiError 400
 */
export function decodeJsonBody(
  raw: Buffer,
  depthLimit = MAX_JSON_DEPTH,
): { body: unknown; text: string; keysInText: number } {
  const text = raw.toString('utf8');
  try {
    const keysInText = checkJsonTextDepth(text, depthLimit);
    return { body: JSON.parse(text) as unknown, text, keysInText };
  } catch (err) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
}

/**
 * decodeJsonBody for a large body (isLargeBody): its large maps are parsed in slices with `turn` between them
 * (parseLargeJsonText), so no single JSON.parse holds the event loop for a whole 300,000-key map. The same value,
 * count and errors as decodeJsonBody.
 * @throws ClusterApiError 400; what `turn` throws
 */
export async function decodeLargeJsonBody(
  raw: Buffer,
  turn: () => Promise<void>,
  depthLimit = MAX_JSON_DEPTH,
): Promise<{ body: unknown; text: string; keysInText: number }> {
  const text = raw.toString('utf8');
  let decoded: { value: unknown; keysInText: number };
  try {
    decoded = await parseLargeJsonText(text, turn, depthLimit);
  } catch (err) {
    // The client went away during a turn: nothing to answer. Anything else is the body's, as decodeJsonBody says.
    if (err instanceof ClientAbortedError) throw err;
    throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
  return { body: decoded.value, text, keysInText: decoded.keysInText };
}

/** Whether a decoded JSON body repeats a key in some object: a pass over the value (a separate phase of a large body). */
export function repeatsKeys(decoded: { body: unknown; keysInText: number }): boolean {
  return decoded.keysInText !== countObjectKeys(decoded.body);
}

/** Parses a PATCH body (JSON for every patch type). @throws ClusterApiError 400 for malformed or too deeply nested JSON. */
export function decodePatchBody(raw: Buffer, depthLimit = MAX_JSON_DEPTH): { patch: unknown; keysInText: number } {
  try {
    const text = raw.toString('utf8');
    const keysInText = checkJsonTextDepth(text, depthLimit);
    return { patch: JSON.parse(text) as unknown, keysInText };
  } catch (err) {
    throw badRequest(`error decoding patch: ${(err as Error).message}`);
  }
}

/** What the client asked the response to be. */
export interface Negotiated {
  readonly table: boolean;
}

/** The two answers, shared by every request: negotiation allocates nothing. */
const AS_JSON: Negotiated = Object.freeze({ table: false });
const AS_TABLE: Negotiated = Object.freeze({ table: true });

/**
 * Content negotiation: JSON, or a meta.k8s.io/v1 Table when the Accept header asks for one (kubectl get).
 * @throws ClusterApiError 406 when the client accepts neither JSON nor YAML (e.g. protobuf only).
 */
export function negotiate(accept: string | undefined): Negotiated {
  // What nearly every request sends, answered without parsing.
  if (!accept || accept === 'application/json' || accept === '*/*') return AS_JSON;
  let json = false;
  let table = false;
  for (const part of accept.split(',')) {
    const [typeRaw, ...params] = part.split(';').map((s) => s.trim());
    const type = typeRaw.toLowerCase();
    const p = new Map(params.map((kv) => kv.split('=').map((s) => s.trim()) as [string, string]));
    if (type === 'application/json' || type === 'application/*' || type === '*/*' || type === 'application/yaml') {
      if (p.get('as') === 'Table' && p.get('g') === 'meta.k8s.io' && (p.get('v') === 'v1' || p.get('v') === 'v1beta1'))
        table = true;
      else if (!p.has('as')) json = true;
    }
  }
  if (table) return AS_TABLE;
  if (!json) throw notAcceptable('only the following media types are accepted: application/json, application/yaml');
  return AS_JSON;
}

/** Writes a JSON body (already serialized) with Content-Length, so keep-alive connections stay usable. */
export function sendJson(res: ServerResponse, code: number, body: string, headers?: Record<string, string>): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // apimachinery's JSON encoder (json.Encoder.Encode) ends every body with a newline.
  const text = body.endsWith('\n') ? body : `${body}\n`;
  res.writeHead(code, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Writes an already encoded JSON body (a list) that ends with a newline. */
export function sendBytes(res: ServerResponse, code: number, body: Buffer): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': body.length });
  res.end(body);
}

/** Writes a stored object's JSON, whose UTF-8 size is known, with the newline apimachinery's encoder ends bodies with. */
export function sendJsonText(res: ServerResponse, code: number, json: string, byteLength: number): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': byteLength + 1 });
  res.end(`${json}\n`);
}

/** Writes a metav1.Status error; 429/503/504 with retryAfterSeconds also get a Retry-After header. */
export function sendError(res: ServerResponse, err: ClusterApiError, extraHeaders?: Record<string, string>): void {
  const headers: Record<string, string> = { ...extraHeaders };
  const retry = err.status.details?.retryAfterSeconds;
  if (retry !== undefined && (err.code === 429 || err.code === 503 || err.code === 504))
    headers['Retry-After'] = String(retry);
  sendJson(res, err.code, JSON.stringify(err.status), headers);
}

/** The plain-text 404 Go's http.NotFound writes for paths outside every API group. */
export function sendPlainNotFound(res: ServerResponse): void {
  const body = '404 page not found\n';
  res.writeHead(404, {
    'Content-Type': 'text/plain; charset=utf-8',
    'X-Content-Type-Options': 'nosniff',
    'Content-Length': Buffer.byteLength(body),
  });
  res.end(body);
}

export function sendText(res: ServerResponse, code: number, body: string): void {
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
