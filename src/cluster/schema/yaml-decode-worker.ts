// The worker thread of yaml-decode.ts: decodes the YAML bodies posted to it, one at a time, with the same
// decodeYamlText the event loop uses for small bodies.
import { parentPort } from 'node:worker_threads';
import { decodeYamlText, type YamlAnswer, type YamlJob } from './yaml-decode.ts';

const port = parentPort!;
port.on('message', ({ id, text, depthLimit, repeats }: YamlJob) => {
  let answer: YamlAnswer;
  try {
    answer = { id, result: decodeYamlText(text, depthLimit, repeats) };
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
