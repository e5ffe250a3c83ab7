// The worker thread of yaml-decode.ts: decodes the YAML bodies posted to it, one at a time, with the same
// decodeYamlText the event loop uses for small bodies.
import { parentPort } from 'node:worker_threads';
import { decodeYamlText, isJsonExact, type YamlAnswer, type YamlJob, type YamlWire } from './yaml-decode.ts';

const port = parentPort!;
port.on('message', ({ id, text, depthLimit, repeats }: YamlJob) => {
  let answer: YamlAnswer;
  try {
    answer = { id, result: wire(decodeYamlText(text, depthLimit, repeats)) };
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    answer = { id, thrown: { name: e.name, message: e.message } };
  }
  try {
    port.postMessage(answer);
  } catch (err) {
    // A value the structured clone cannot copy: answered as the exception it is.
    const e = err instanceof Error ? err : new Error(String(err));
    port.postMessage({ id, thrown: { name: e.name, message: e.message } } satisfies YamlAnswer);
  }
});

/**
 * A value JSON gives back exactly is sent as its JSON text: the event loop parses a large one in slices
 * (http-io's decodeRequestBody), where a structured clone is rebuilt there in one step. Others (a YAML 1.1
 * binary's Buffer, NaN) go as the value.
 */
function wire(result: ReturnType<typeof decodeYamlText>): YamlWire {
  if (!result.ok || !isJsonExact(result.value)) return result;
  return { ok: true, json: JSON.stringify(result.value), duplicateError: result.duplicateError };
}
