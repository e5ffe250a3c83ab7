// The worker thread that decodes large request bodies off the event loop: YAML bodies of YAML_WORKER_MIN_BYTES or
// more (decodeYamlText, schema/yaml-decode.ts) and protobuf bodies of LARGE_BODY_BYTES or more
// (decodeProtobufObject, protobuf.ts). One worker, started on the first large body, shared by every cluster of
// the process, holding the process only while it has work, ended when idle; at most YAML_WORKER_MAX_QUEUED bodies
// wait (then 429). It lives in the HTTP layer because it runs both decoders (the protobuf one knows the registry).
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { Status } from '../../types/k8s.ts';
import { ClusterApiError, internalError, tooManyRequests } from '../common/api-errors.ts';
import { findSyntaxErrorsWith } from '../common/json-safety.ts';
import { newModuleWorker } from '../common/module-worker.ts';
import { decodeProtobufObject } from './protobuf.ts';
import { countDecoded, decodeYamlText, type YamlDecoded, type YamlWire } from '../schema/yaml-decode.ts';

/** A YAML body decoded in the worker, as it came back: its JSON text is parsed here in one piece. */
function fromWire(wire: YamlWire): YamlDecoded {
  if (!('json' in wire)) return wire;
  return { ok: true, value: JSON.parse(wire.json) as unknown, duplicateError: wire.duplicateError };
}

/** YAML bodies of at least this many bytes are decoded in the worker thread; smaller ones on the event loop. */
export const YAML_WORKER_MIN_BYTES = 16 * 1024;

/** Bodies waiting for (or in) the worker at most; one more is answered 429 rather than queued. */
export const YAML_WORKER_MAX_QUEUED = 16;

/**
 * The worker's stack: the main thread's 984 KB for V8 plus the 192 KB Node keeps back from a worker's stack
 * (measured: 13,665 frames of a trivial recursion here, 13,684 on the main thread; Node's default of 4 MB gave
 * 55,194). Both paths then have the same room below MAX_YAML_DEPTH, so a body cannot pass in one and fail in
 * the other, and the tests that run bodies through the worker prove the loop's margin too.
 */
export const YAML_WORKER_STACK_MB = (984 + 192) / 1024;

/** The worker ends after this long without work (it is started again for the next large body). */
const IDLE_MS = 30_000;

/** A job as posted to the worker. */
export interface YamlJob {
  id: number;
  text: string;
  depthLimit: number;
  /** Look for repeated keys (decodeYamlText's `repeats`). */
  repeats: boolean;
  /** The model of the kind the body is for: its unknown fields are pruned in the worker (DecodedWire's `pruned`). */
  model?: string;
}

/**
 * A body decoded by decodeYamlWire: with `pruned` when its unknown fields (of the `model` it was given) were
 * removed in the worker thread, their paths in document order, as pruneUnknown returns them. 300,000 unknown
 * top-level fields were otherwise sent to the loop as JSON, to be parsed and then pruned there in slices (half a
 * second of the loop's CPU, after the worker's).
 */
export type DecodedWire = YamlWire & { pruned?: string[] };

/** A protobuf body posted to the same worker (decodeProtobufOffThread). */
export interface ProtobufJob {
  id: number;
  protobuf: Uint8Array;
}

/** A large JSON text that could not be parsed in slices, posted to the same worker for JSON.parse's error. */
export interface JsonCheckJob {
  id: number;
  jsonText: string;
}

/** The worker's answer: the decode result, or `thrown`, an exception decodeYamlText let through. */
export interface YamlAnswer {
  id: number;
  result?: DecodedWire;
  /** The Status of the API error the decoder threw (a protobuf body's 400 or 415). */
  apiError?: Status;
  thrown?: { name: string; message: string };
}

/**
 * Decodes a YAML body: on the event loop under YAML_WORKER_MIN_BYTES, else in the worker thread (started on the
 * first large body, shared by every cluster of the process, never keeping the process alive). A value from the
 * worker may come as its JSON text (YamlWire): a request handler parses a large one in slices.
 * @throws ClusterApiError 429 when YAML_WORKER_MAX_QUEUED bodies are already waiting; 500 when the worker dies
 */
export async function decodeYamlWire(
  text: string,
  depthLimit: number,
  repeats = true,
  model?: string,
): Promise<DecodedWire> {
  if (Buffer.byteLength(text) < YAML_WORKER_MIN_BYTES) {
    countDecoded('inThread');
    return decodeYamlText(text, depthLimit, repeats);
  }
  return pool.decode(text, depthLimit, repeats, model);
}

/**
 * decodeYamlText in the worker thread, whatever the body's size.
 * @internal exported for the tests that compare both paths
 */
export async function decodeYamlOffThread(text: string, depthLimit: number, repeats = true): Promise<YamlDecoded> {
  return fromWire(await pool.decode(text, depthLimit, repeats));
}

/**
 * A protobuf body decoded in the worker thread (decodeProtobufObject there): a value with a large map comes back
 * as JSON text (sendsAsJson), for the loop to parse in slices. A 3 MiB ConfigMap took 0.6-1.9 s to decode in one
 * step on the loop.
 * @throws ClusterApiError the decoder's 400 or 415, 429 as decodeYamlWire, 500 when the worker dies
 */
export async function decodeProtobufOffThread(body: Buffer): Promise<YamlWire> {
  try {
    return await pool.decodeProtobuf(body);
  } catch (err) {
    // A value nested too deep for either way across threads (JSON.stringify and the structured clone recurse: a
    // RawExtension's JSON thousands of levels deep) is decoded here, as a small body is: the same answer, not a
    // 500 (review of H5). Only such a body holds the loop for its decode.
    if (err instanceof Error && err.name === 'RangeError')
      return { ok: true, value: decodeProtobufObject(body), duplicateError: undefined };
    throw err;
  }
}

/**
 * JSON.parse's SyntaxError message for a large text, found in the worker thread (parseLargeJsonText's fallback:
 * one JSON.parse of a 3 MiB text builds every map that closes before the error, 150-170 ms on the loop); undefined
 * when the text is JSON, or when the worker cannot say (its queue full, the thread gone): the loop parses it then.
 */
export async function jsonSyntaxErrorOffThread(text: string): Promise<string | undefined> {
  try {
    await pool.checkJson(text);
    return undefined;
  } catch (err) {
    return err instanceof Error && err.name === 'SyntaxError' ? err.message : undefined;
  }
}
findSyntaxErrorsWith(jsonSyntaxErrorOffThread);

interface Pending {
  resolve: (r: DecodedWire) => void;
  reject: (err: unknown) => void;
}

/** A pool of one worker thread: started lazily, holding the process only while it has work, ended when idle. */
class YamlWorkerPool {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | undefined;

  decode(text: string, depthLimit: number, repeats: boolean, model?: string): Promise<DecodedWire> {
    return this.post('offThread', (id) => ({ id, text, depthLimit, repeats, model }) satisfies YamlJob);
  }

  decodeProtobuf(protobuf: Uint8Array): Promise<YamlWire> {
    return this.post('protobufOffThread', (id) => ({ id, protobuf }) satisfies ProtobufJob);
  }

  checkJson(jsonText: string): Promise<YamlWire> {
    return this.post('jsonOffThread', (id) => ({ id, jsonText }) satisfies JsonCheckJob);
  }

  private post(
    counted: 'offThread' | 'protobufOffThread' | 'jsonOffThread',
    job: (id: number) => YamlJob | ProtobufJob | JsonCheckJob,
  ): Promise<DecodedWire> {
    if (this.pending.size >= YAML_WORKER_MAX_QUEUED) return Promise.reject(tooManyRequests(1));
    countDecoded(counted);
    clearTimeout(this.idleTimer);
    const worker = (this.worker ??= this.start());
    worker.ref(); // a body being decoded holds the process, as a pending read would
    const id = this.nextId++;
    return new Promise<DecodedWire>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage(job(id));
    });
  }

  private start(): Worker {
    const ext = extname(fileURLToPath(import.meta.url));
    const worker = newModuleWorker(new URL(`./decode-worker${ext}`, import.meta.url), {
      resourceLimits: { stackSizeMb: YAML_WORKER_STACK_MB },
    });
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
    if (answer.apiError) {
      p.reject(new ClusterApiError(answer.apiError));
      return;
    }
    if (answer.thrown) {
      const err = new Error(answer.thrown.message);
      err.name = answer.thrown.name;
      p.reject(err);
      return;
    }
    p.resolve(answer.result!);
  }
}

const pool = new YamlWorkerPool();
