// The worker thread of yaml-decode.ts: decodes the YAML bodies posted to it, one at a time, with the same
// decodeYamlText the event loop uses for small bodies; a value JSON text carries exactly is sent as that text.
import { parentPort } from 'node:worker_threads';
import { decodeYamlForTransfer, type YamlAnswer, type YamlJob } from './yaml-decode.ts';

const port = parentPort!;
port.on('message', ({ id, text, depthLimit, repeats }: YamlJob) => {
  let answer: YamlAnswer;
  try {
    const { decoded, jsonExact } = decodeYamlForTransfer(text, depthLimit, repeats);
    // A value JSON carries exactly goes as its text: the loop parses it faster than it rebuilds a structured clone.
    const json = decoded.ok && jsonExact ? jsonText(decoded.value) : undefined;
    answer =
      decoded.ok && json !== undefined ? { id, json, duplicateError: decoded.duplicateError } : { id, result: decoded };
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

/** The value's JSON text, or undefined if it cannot be written (then the structured clone carries it). */
function jsonText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
