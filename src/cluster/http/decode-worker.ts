// The worker thread of decode-worker-pool.ts: decodes the YAML bodies posted to it, one at a time, with the same
// decodeYamlText the event loop uses for small bodies; and large protobuf bodies, with the same
// decodeProtobufObject.
import { randomUUID } from 'node:crypto';
import { parentPort } from 'node:worker_threads';
import type { KubeObject } from '../../types/k8s.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import { decodeProtobufObject, MapEntries } from './protobuf.ts';
import { pruneUnknownCopy } from '../schema/schema.ts';
import { decodeYamlTextForWire, sendsAsJson, type YamlDecoded, type YamlWire } from '../schema/yaml-decode.ts';
import type { JsonCheckJob, ProtobufJob, YamlAnswer, YamlJob } from './decode-worker-pool.ts';

/** Without aliases a YAML text's JSON is at most about 3 times as long (`a:` is `"a":null,`). */
const JSON_EXPANSION = 4;

const port = parentPort!;
port.on('message', (job: YamlJob | ProtobufJob | JsonCheckJob) => {
  const { id } = job;
  let answer: YamlAnswer;
  try {
    if ('jsonText' in job) {
      // Only its SyntaxError is wanted (thrown below); a text that is JSON after all is parsed by the loop.
      JSON.parse(job.jsonText);
      answer = { id, result: { ok: true, value: null, duplicateError: undefined } };
    } else if ('protobuf' in job) {
      const body = Buffer.from(job.protobuf.buffer, job.protobuf.byteOffset, job.protobuf.byteLength);
      const value = decodeProtobufObject(body, { mapEntries: true });
      const decoded: YamlDecoded = { ok: true, value, duplicateError: undefined };
      // A ConfigMap's or Secret's maps are written as JSON from their entries; anything else (no alias in
      // protobuf, but nothing known of the value either) goes as the walk decides.
      answer = { id, result: entriesJson(value) ?? wire(decoded, { jsonPlain: false, largeMap: false }, body.length) };
    } else {
      const { decoded, rootKeys, ...seen } = decodeYamlTextForWire(job.text, job.depthLimit, job.repeats);
      // The same prune the loop would do next (before any other check looks at the value), done here: the loop
      // then gets only the known fields, and the unknown ones' paths (none asked for without `repeats`: Ignore).
      let pruned: string[] | undefined;
      if (job.model && decoded.ok && isMap(decoded.value)) {
        const keys = rootKeys ?? { keys: Object.keys(decoded.value), exact: true };
        const copy = pruneUnknownCopy(decoded.value, job.model, keys);
        decoded.value = copy.value;
        pruned = copy.unknown;
      }
      const result = wire(decoded, seen, job.text.length);
      answer = { id, result: pruned ? { ...result, pruned } : result };
    }
  } catch (err) {
    if (err instanceof ClusterApiError) answer = { id, apiError: err.status };
    else {
      const e = err instanceof Error ? err : new Error(String(err));
      answer = { id, thrown: { name: e.name, message: e.message } };
    }
  }
  try {
    port.postMessage(answer);
  } catch (err) {
    // A value the structured clone cannot copy: answered as the exception it is.
    const e = err instanceof Error ? err : new Error(String(err));
    port.postMessage({ id, thrown: { name: e.name, message: e.message } } satisfies YamlAnswer);
  }
});

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The JSON text of a decoded ConfigMap or Secret whose maps were left as their MapEntries, written without building
 * the maps (for a 3 MiB ConfigMap the inserts into one hash table, the walk and the JSON.stringify of it were two
 * thirds of the worker's time); undefined for any other value. The rest of such an object (its metadata, strings
 * and booleans) is JSON exactly, and so are the entries' strings.
 */
function entriesJson(value: KubeObject): YamlWire | undefined {
  const maps: Array<[string, MapEntries]> = [];
  for (const [field, v] of Object.entries(value)) if (v instanceof MapEntries) maps.push([field, v]);
  if (maps.length === 0) return undefined;
  const token = `\u0000entries-${randomUUID()}-`;
  const rest: Record<string, unknown> = { ...value };
  maps.forEach(([field], i) => (rest[field] = token + i));
  let json = JSON.stringify(rest);
  maps.forEach(([, map], i) => {
    const quoted = JSON.stringify(token + i);
    const at = json.indexOf(quoted);
    const members = map.entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
    json = `${json.slice(0, at)}{${members.join(',')}}${json.slice(at + quoted.length)}`;
  });
  return { ok: true, json, duplicateError: undefined };
}

/**
 * A value with a large map that JSON gives back exactly is sent as its JSON text: the event loop parses it in
 * slices (http-io's decodeRequestBody), where a structured clone is rebuilt there in one step. Others (no large
 * map, NaN, -0) go as the value, and so does a value whose JSON is more than JSON_EXPANSION times its
 * YAML: aliases to collections (bounded as go-yaml bounds them) make copies in JSON, which the clone shares.
 */
function wire(result: YamlDecoded, seen: { jsonPlain: boolean; largeMap: boolean }, textLength: number): YamlWire {
  const bound = JSON_EXPANSION * textLength + 1024;
  if (!result.ok) return result;
  if (seen.jsonPlain) {
    // What the parse saw answers both questions without a walk of the value (a pass over every key): it is
    // exact, and with no alias its JSON is a few times the text at most.
    if (!seen.largeMap) return result;
  } else if (!sendsAsJson(result.value, bound)) {
    // The bound is checked on the value before any JSON is written: aliases to a long scalar would make a string
    // past V8's limit (a 500) or hundreds of megabytes thrown away.
    return result;
  }
  let json: string;
  try {
    json = JSON.stringify(result.value);
  } catch (err) {
    // Nested deeper than JSON.stringify's recursion reaches here (a few thousand levels, through aliases or a
    // protobuf RawExtension's JSON), which the structured clone still copies: the value goes as it is, and the
    // loop answers what it answers a small body (review of H5: a 500 'Maximum call stack size exceeded').
    if (err instanceof RangeError) return result;
    throw err;
  }
  if (json.length > bound) return result;
  return { ok: true, json, duplicateError: result.duplicateError };
}
