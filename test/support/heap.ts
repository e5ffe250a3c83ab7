// The heap a test can measure: used bytes after two full collections (gc exposed at run time, so the test runner
// needs no --expose-gc flag).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap used after two full garbage collections, in bytes. */
export function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}
