// YAML request bodies: one decode function, run on the event loop for small bodies and in a worker thread for
// large ones. The `yaml` library parses about 1 MB/s of CPU (a 3 MiB body takes seconds), so a large body
// decoded on the event loop held every other request back for that long; in the worker only that request waits.
// Both paths run decodeYamlText, so the value, the Status text of a parse error and Go's strict error for
// repeated keys are the same whichever path a body takes.
//
// Nesting is bounded before anything recursive runs. The library's lexer and parser are iterative (an explicit
// stack), but its composer, `toJS` and `visit` recurse once per level and run out of stack at about 800 levels
// on the loop's 984 KB stack (fewer while the code is still interpreted). A stack overflow that lands in V8's
// regexp compiler aborts the whole process ("RegExpCompiler Allocation failed"), uncatchable. So the body is
// parsed to the library's CST one lexeme at a time, stopped as soon as the parser's open collections pass
// MAX_YAML_DEPTH (a 3 MiB body of `[` costs about 200 lexemes), the complete CST measured again with an explicit
// stack (measureYamlDepth), and the composer runs on that CST only when it is within the limit.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import {
  Composer,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  Parser,
  visit,
  YAMLParseError,
  type CST,
  type Document,
} from 'yaml';
import { internalError, tooManyRequests } from '../common/api-errors.ts';
import { checkJsonValue, JsonTooDeepError } from '../common/json-safety.ts';
import { newModuleWorker } from '../common/module-worker.ts';

/**
 * The deepest nesting of collections (maps and sequences, flow or block) a YAML body may have; deeper is a 400
 * before the composer runs. kube-apiserver's YAML path (go-yaml under sigs.k8s.io/yaml) stops at 10,000 flow or
 * indent levels, but the `yaml` library recurses per level: measured on Node 20 in a fresh process, the composer
 * and `toJS` overflowed the main thread's 984 KB stack at about 390 levels of `{a: [` (780 collections) and 790
 * of `[`. 200 keeps a factor of 4 for the request's own frames and for cold (interpreted) code, and is far above
 * what manifests use (a CRD's openAPIV3Schema nests about 2 levels per schema level).
 */
export const MAX_YAML_DEPTH = 200;

/** A body's nesting past a limit: where the collection that crossed it starts, and whether it is a flow one. */
export interface YamlTooDeep {
  offset: number;
  flow: boolean;
}

const depthWork = { steps: 0 };

/**
 * What the nesting checks have done since the process started: one step per lexeme fed to the parser, per CST
 * token measured and per open token looked at (a test compares it at two body sizes; it has no other use).
 */
export function yamlDepthSteps(): number {
  return depthWork.steps;
}

function isCollection(token: CST.Token): token is CST.BlockMap | CST.BlockSequence | CST.FlowCollection {
  return token.type === 'block-map' || token.type === 'block-seq' || token.type === 'flow-collection';
}

/**
 * Measures the nesting of a parsed YAML CST without recursion: an explicit stack of (token, depth), each token
 * visited once, so the work is linear in the body. Returns the first collection (in the text's order) deeper than
 * `limit` (the root collection is level 1, as for JSON), or undefined.
 */
export function measureYamlDepth(tokens: readonly CST.Token[], limit: number): YamlTooDeep | undefined {
  const stack: Array<{ token: CST.Token; depth: number }> = [];
  const push = (token: CST.Token | null | undefined, depth: number) => token && stack.push({ token, depth });
  for (let i = tokens.length - 1; i >= 0; i--) push(tokens[i], 0);
  while (stack.length > 0) {
    depthWork.steps++;
    const { token, depth } = stack.pop()!;
    if (token.type === 'document') push(token.value, depth);
    else if (isCollection(token)) {
      if (depth + 1 > limit) return { offset: token.offset, flow: token.type === 'flow-collection' };
      // Pushed last item first, so that items are measured in the text's order.
      for (let i = token.items.length - 1; i >= 0; i--) {
        push(token.items[i].value, depth + 1);
        push(token.items[i].key, depth + 1);
      }
    }
  }
  return undefined;
}

/**
 * The collection past `limit` among the parser's open tokens (each nested in the one before it), or undefined.
 * Looked at only once there are more open tokens than the limit, so it stops a deep body after about `limit`
 * levels of it have been read, whatever its size.
 */
function openTooDeep(open: readonly CST.Token[], limit: number): YamlTooDeep | undefined {
  let depth = 0;
  for (const token of open) {
    depthWork.steps++;
    if (isCollection(token) && ++depth > limit) return { offset: token.offset, flow: token.type === 'flow-collection' };
  }
  return undefined;
}

/** A YAML body parsed once: its document and Go's strict error for its repeated keys (undefined when none). */
export interface ParsedYamlBody {
  /** Repeated keys are kept; `toJS()` gives the last value, as Go's non-strict decoder does. */
  doc: Document.Parsed;
  duplicateError: string | undefined;
}

/** A body's first error as one line (the library's own text and its position), or undefined. */
export type YamlParsed = (ParsedYamlBody & { error: string | undefined }) | { tooDeep: string };

/**
 * Parses a YAML body and finds its repeated keys in the text of Go's strict YAML decoder
 * (`line 4: key "name" already set in map`, joined as its single error). Linear in the body: each map's keys go
 * through one Set, and a key's line comes from the parser's line index (a binary search) rather than from counting
 * the newlines before it, which made 40,000 repeated keys take 24 s. Nesting past `depthLimit` is refused
 * (`tooDeep`) before the composer runs: see MAX_YAML_DEPTH.
 */
export function parseYamlBody(text: string, depthLimit = MAX_YAML_DEPTH): YamlParsed {
  const lineCounter = new LineCounter();
  // Parser.parse(text), one lexeme at a time, stopping once the open collections are past the limit.
  const parser = new Parser(lineCounter.addNewLine);
  lineCounter.addNewLine(0);
  const tokens: CST.Token[] = [];
  let deep: YamlTooDeep | undefined;
  for (const lexeme of new Lexer().lex(text)) {
    depthWork.steps++;
    for (const token of parser.next(lexeme)) tokens.push(token);
    if (parser.stack.length > depthLimit && (deep = openTooDeep(parser.stack, depthLimit))) break;
  }
  if (!deep) {
    for (const token of parser.end()) tokens.push(token);
    // Complete, the CST can be deeper than the parser's open tokens ever were (`[[x]]: v` becomes a map's key).
    deep = measureYamlDepth(tokens, depthLimit);
  }
  if (deep) {
    // go-yaml's text for the same refusal, with this limit.
    const { line, col } = lineCounter.linePos(deep.offset);
    const level = deep.flow ? 'flow' : 'indent';
    return {
      tooDeep: `while increasing ${level} level at line ${line}, column ${col}: exceeded max depth of ${depthLimit}`,
    };
  }
  // What parseDocument does, on the CST already parsed.
  const composer = new Composer({ uniqueKeys: false });
  let doc: Document.Parsed | undefined;
  for (const next of composer.compose(tokens, true, text.length)) {
    if (!doc) doc = next;
    else {
      const message = 'Source contains multiple documents; please use YAML.parseAllDocuments()';
      doc.errors.push(new YAMLParseError([next.range[0], next.range[1]], 'MULTIPLE_DOCS', message));
      break;
    }
  }
  if (!doc) throw new Error('the YAML composer gave no document'); // compose(…, true) always gives one
  const first = doc.errors[0];
  if (first) {
    // The library's message and position, as parseDocument's prettyErrors puts them on its first line.
    let message = first.message;
    if (first.pos[0] !== -1) {
      const { line, col } = lineCounter.linePos(first.pos[0]);
      message += ` at line ${line}, column ${col}`;
    }
    return { doc, duplicateError: undefined, error: message.split('\n')[0] };
  }
  const lines: string[] = [];
  let keyError: string | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        // go-yaml refuses a map or a sequence as a key (`yaml: invalid map key`); the yaml library would make
        // it a string, and `? ? ? v` nested n deep doubles the escapes of that string per level (exponential).
        const key = isAlias(pair.key) ? pair.key.resolve(doc!) : pair.key;
        if (isMap(key) || isSeq(key)) {
          const { line, col } = lineCounter.linePos((pair.key as { range?: number[] }).range?.[0] ?? 0);
          keyError = `invalid map key: a ${isMap(key) ? 'map' : 'sequence'} at line ${line}, column ${col}`;
          return visit.BREAK;
        }
        const name = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(name)) {
          const offset = isScalar(pair.key) ? (pair.key.range?.[0] ?? 0) : 0;
          lines.push(`line ${lineCounter.linePos(offset).line}: key ${JSON.stringify(name)} already set in map`);
        }
        seen.add(name);
      }
      return undefined;
    },
  });
  if (keyError) return { doc, duplicateError: undefined, error: keyError };
  const duplicateError = lines.length ? `yaml: unmarshal errors:\n  ${lines.join('\n  ')}` : undefined;
  return { doc, duplicateError, error: undefined };
}

/** Go's strict YAML error for the repeated keys of a YAML text; undefined when there are none. */
export function yamlDuplicateError(text: string): string | undefined {
  const parsed = parseYamlBody(text);
  return 'tooDeep' in parsed ? undefined : parsed.duplicateError;
}

/** What decoding a YAML body gives: its value and repeated-key error, or the message of its 400 answer. */
export type YamlDecoded =
  { ok: true; value: unknown; duplicateError: string | undefined } | { ok: false; message: string };

/**
 * Decodes a YAML request body as kube-apiserver answers it: the value (the last of repeated keys), Go's strict
 * error for the repeated keys, or the message of the 400 (`couldn't get version/kind; yaml parse error: ...`)
 * for a parse error, a conversion error, or nesting over MAX_YAML_DEPTH (checked before the composer runs) or
 * `depthLimit` (also checked on the value: aliases can make it deeper than the text). Runs on either thread.
 */
export function decodeYamlText(text: string, depthLimit: number): YamlDecoded {
  const failed = (message: string): YamlDecoded => ({
    ok: false,
    message: `couldn't get version/kind; yaml parse error: ${message}`,
  });
  const parsed = parseYamlBody(text, Math.min(depthLimit, MAX_YAML_DEPTH));
  if ('tooDeep' in parsed) return failed(parsed.tooDeep);
  const { doc, duplicateError, error } = parsed;
  if (error) return failed(error);
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
    const worker = newModuleWorker(new URL(`./yaml-decode-worker${ext}`, import.meta.url), {
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
