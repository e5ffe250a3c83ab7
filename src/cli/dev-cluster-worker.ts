// The thread `dev` runs its embedded cluster in (see dev-cluster.ts): starts the cluster with the options in
// workerData, answers `ready` (or `start-failed`), and stops it when the main thread says `stop`. Its log lines
// go straight to fd 2 (pino's destination), not through the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { startEmbeddedCluster } from '../cluster/embedded-cluster.ts';
import { createLogger } from '../runtime/logger.ts';
import { errorMessage } from '../types/errors.ts';
import type { ClusterThreadMessage, ClusterThreadOptions } from './dev-cluster.ts';

const port = parentPort!;
const opts = workerData as ClusterThreadOptions;
const logger = createLogger({ level: opts.logLevel, name: 'kube-provisioner' });
const send = (msg: ClusterThreadMessage) => port.postMessage(msg);

try {
  const cluster = await startEmbeddedCluster({
    dataDir: opts.dataDir,
    port: opts.port,
    host: opts.host,
    eventTtlMs: opts.eventTtlMs,
    onError: (err) => logger.error({ err: errorMessage(err) }, 'embedded cluster error'),
  });
  port.once('message', () => {
    cluster
      .stop()
      .then(
        () => send({ type: 'stopped' }),
        (err: unknown) => send({ type: 'stopped', error: errorMessage(err) }),
      )
      .finally(() => port.close());
  });
  send({ type: 'ready', url: cluster.url, kubeconfigPath: cluster.kubeconfigPath, persistence: cluster.persistence });
} catch (err) {
  send({ type: 'start-failed', message: errorMessage(err), code: (err as NodeJS.ErrnoException | undefined)?.code });
  port.close();
}
