// YAML request bodies: one decode function, run on the event loop for small bodies and in a worker thread for
// large ones. The `yaml` library parses about 1 MB/s of CPU (a 3 MiB body takes seconds), so a large body
// decoded on the event loop held every other request back for that long; in the worker only that request waits.
// Both paths run decodeYamlText, so the value, the Status text of a parse error and Go's strict error for
// repeated keys are the same whichever path a body takes.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import { isScalar, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { internalError, tooManyRequests } from '../common/api-errors.ts';
import { checkJsonValue, JsonTooDeepError } from '../common/json-safety.ts';
import { newModuleWorker } from '../common/module-worker.ts';

/** A YAML body parsed once: its document and Go's strict error for its repeated keys (undefined when none). */
export interface ParsedYamlBody {
  /** Repeated keys are kept; `toJS()` gives the last value, as Go's non-strict decoder does. */
  doc: Document.Parsed;
  duplicateError: string | undefined;
}

/**
 * Parses a YAML body and finds its repeated keys in the text of Go's strict YAML decoder
 * (`line 4: key "name" already set in map`, joined as its single error). Linear in the body: each map's keys go
 * through one Set, and a key's line comes from the parser's line index (a binary search) rather than from counting
 * the newlines before it, which made 40,000 repeated keys take 24 s.
 */
export function parseYamlBody(text: string): ParsedYamlBody {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: false, lineCounter });
  if (doc.errors.length > 0) return { doc, duplicateError: undefined };
  const lines: string[] = [];
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) {
          const offset = isScalar(pair.key) ? (pair.key.range?.[0] ?? 0) : 0;
          lines.push(`line ${lineCounter.linePos(offset).line}: key ${JSON.stringify(key)} already set in map`);
        }
        seen.add(key);
      }
    },
  });
  return { doc, duplicateError: lines.length ? `yaml: unmarshal errors:\n  ${lines.join('\n  ')}` : undefined };
}

/** Go's strict YAML error for the repeated keys of a YAML text; undefined when there are none. */
export function yamlDuplicateError(text: string): string | undefined {
  return parseYamlBody(text).duplicateError;
}

/** What decoding a YAML body gives: its value and repeated-key error, or the message of its 400 answer. */
export type YamlDecoded =
  { ok: true; value: unknown; duplicateError: string | undefined } | { ok: false; message: string };

/**
 * Decodes a YAML request body as kube-apiserver answers it: the value (the last of repeated keys), Go's strict
 * error for the repeated keys, or the message of the 400 (`couldn't get version/kind; yaml parse error: ...`)
 * for a parse error, a conversion error or nesting over `depthLimit`. Runs on either thread.
 */
export function decodeYamlText(text: string, depthLimit: number): YamlDecoded {
  const failed = (message: string): YamlDecoded => ({
    ok: false,
    message: `couldn't get version/kind; yaml parse error: ${message}`,
  });
  const { doc, duplicateError } = parseYamlBody(text);
  const error = doc.errors[0];
  if (error) return failed(error.message.split('\n')[0]);
  let value: unknown;
  try {
    value = doc.toJS();
  } catch (err) {
    return failed((err as Error).message.split('\n')[0]);
  }
  try {
    checkJsonValue(value, { maxDepth: depthLimit });
  } catch (err) {
    if (err instanceof JsonTooDeepError) return failed(err.message);
    throw err;
  }
  return { ok: true, value, duplicateError };
}

/** YAML bodies of at least this many bytes are decoded in the worker thread; smaller ones on the event loop. */
export const YAML_WORKER_MIN_BYTES = 16 * 1024;

/** Bodies waiting for (or in) the worker at most; one more is answered 429 rather than queued. */
export const YAML_WORKER_MAX_QUEUED = 16;

/** The worker ends after this long without work (it is started again for the next large body). */
const IDLE_MS = 30_000;

/** A job as posted to the worker. */
export interface YamlJob {
  id: number;
  text: string;
  depthLimit: number;
}

/**
 * The worker's answer: the decode result and the Buffers in its value (see buffersIn), or `thrown`, an exception
 * decodeYamlText let through.
 */
export interface YamlAnswer {
  id: number;
  result?: YamlDecoded;
  buffers?: Uint8Array[];
  thrown?: { name: string; message: string };
}

const counts = { inThread: 0, offThread: 0 };

/** How many YAML bodies were decoded on the event loop and in the worker thread (tests and benchmarks read it). */
export function yamlDecodeCounts(): { inThread: number; offThread: number } {
  return { ...counts };
}

/**
 * Decodes a YAML body: on the event loop under YAML_WORKER_MIN_BYTES, else in the worker thread (started on the
 * first large body, shared by every cluster of the process, never keeping the process alive).
 * @throws ClusterApiError 429 when YAML_WORKER_MAX_QUEUED bodies are already waiting; 500 when the worker dies
 */
export async function decodeYaml(text: string, depthLimit: number): Promise<YamlDecoded> {
  if (Buffer.byteLength(text) < YAML_WORKER_MIN_BYTES) {
    counts.inThread++;
    return decodeYamlText(text, depthLimit);
  }
  return decodeYamlOffThread(text, depthLimit);
}

/**
 * decodeYamlText in the worker thread, whatever the body's size.
 * @internal exported for the tests that compare both paths
 */
export function decodeYamlOffThread(text: string, depthLimit: number): Promise<YamlDecoded> {
  return pool.decode(text, depthLimit);
}

interface Pending {
  resolve: (r: YamlDecoded) => void;
  reject: (err: unknown) => void;
}

/** A pool of one worker thread: started lazily, holding the process only while it has work, ended when idle. */
class YamlWorkerPool {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  decode(text: string, depthLimit: number): Promise<YamlDecoded> {
    if (this.pending.size >= YAML_WORKER_MAX_QUEUED) return Promise.reject(tooManyRequests(1));
    counts.offThread++;
    clearTimeout(this.idleTimer);
    const worker = (this.worker ??= this.start());
    worker.ref(); // a body being decoded holds the process, as a pending read would
    const id = this.nextId++;
    return new Promise<YamlDecoded>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, text, depthLimit } satisfies YamlJob);
    });
  }

  private start(): Worker {
    const ext = extname(fileURLToPath(import.meta.url));
    const worker = newModuleWorker(new URL(`./yaml-decode-worker${ext}`, import.meta.url));
    worker.on('message', (answer: YamlAnswer) => this.answered(answer));
    let failure: unknown;
    worker.on('error', (err) => (failure = err));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      const why = failure instanceof Error ? failure.message : `exit code ${code}`;
      for (const p of this.pending.values()) p.reject(internalError(`the YAML decoder thread ended: ${why}`));
      this.pending.clear();
    });
    return worker;
  }

  private answered(answer: YamlAnswer): void {
    const p = this.pending.get(answer.id);
    if (!p) return;
    this.pending.delete(answer.id);
    if (this.pending.size === 0) {
      this.worker?.unref();
      this.idleTimer = setTimeout(() => {
        const idle = this.worker;
        this.worker = undefined; // the next body starts a new one rather than posting to this one as it ends
        void idle?.terminate();
      }, IDLE_MS);
      this.idleTimer.unref();
    }
    if (answer.thrown) {
      const err = new Error(answer.thrown.message);
      err.name = answer.thrown.name;
      p.reject(err);
      return;
    }
    // The clone made the value's Buffers plain Uint8Arrays: the same objects as in `buffers`, made Buffers again.
    for (const b of answer.buffers ?? []) Object.setPrototypeOf(b, Buffer.prototype);
    p.resolve(answer.result!);
  }
}

const pool = new YamlWorkerPool();

/**
 * The Buffers in a decoded value (YAML 1.1 `!!binary`; none in a YAML 1.2 body), through objects, arrays, Maps and
 * Sets. Posted next to the value, they arrive as the very Uint8Arrays the clone put in it (a structured clone
 * keeps identity within one message), so the other thread can make them Buffers again in place.
 */
export function buffersIn(value: unknown): Buffer[] {
  const out: Buffer[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (Buffer.isBuffer(v)) out.push(v);
    else if (Array.isArray(v) || v instanceof Set) for (const item of v) stack.push(item);
    else if (v instanceof Map) for (const [k, item] of v) stack.push(k, item);
    else for (const k of Object.keys(v)) stack.push((v as Record<string, unknown>)[k]);
  }
  return out;
}
