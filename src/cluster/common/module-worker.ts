// Worker threads running one of this package's modules, from the compiled package or from its TypeScript source.
import { Worker, type WorkerOptions } from 'node:worker_threads';

/**
 * A Worker running the module at `entry`: a compiled .js (dist/) as it is; a .ts source (`npm start`, tests)
 * through a bootstrap that registers tsx's loader in the worker first (on Node 20 the loader the main thread got
 * from `--import tsx` does not reach workers).
 */
export function newModuleWorker(entry: URL, options: WorkerOptions = {}): Worker {
  // The worker takes the process's flags, but `--input-type` (a script run with `node --input-type=module -e`)
  // makes a worker given a file fail to start.
  const execArgv = options.execArgv ?? process.execArgv.filter((a) => !a.startsWith('--input-type'));
  let worker: Worker;
  if (!entry.pathname.endsWith('.ts')) worker = new Worker(entry, { ...options, execArgv });
  else {
    const tsx = import.meta.resolve('tsx/esm/api');
    const bootstrap = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
    worker = new Worker(bootstrap, { ...options, execArgv, eval: true });
  }
  return worker;
}
