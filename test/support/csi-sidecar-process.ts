// The CSI sidecar as a process of its own, for tests and benchmarks that kill it or measure it: the sidecar `dev
// --csi` runs (startDevCsiSidecar) against $KUBECONFIG and the plugin at $CSI_ADDRESS, with $WORKER_THREADS claim
// workers. Prints `ready <driver>` once started; on request over IPC (`{ type: 'stats' }`) answers its RSS;
// SIGTERM stops it. (When `kube-provisioner run csi` is merged, this is that command with the same flags.)
import { KubeClient } from '../../src/runtime/client.ts';
import { loadKubeConfig } from '../../src/runtime/kubeconfig.ts';
import { silentLogger, createLogger } from '../../src/runtime/logger.ts';
import { startDevCsiSidecar } from '../../src/cli/dev-csi.ts';

const kubeconfig = process.env.KUBECONFIG ?? '';
const address = process.env.CSI_ADDRESS ?? '';
const workerThreads = Number(process.env.WORKER_THREADS ?? '16');
const logger = process.env.LOG_LEVEL ? createLogger({ level: process.env.LOG_LEVEL as 'debug', name: 'csi-sidecar' }) : silentLogger;
const client = new KubeClient({ kubeConfig: loadKubeConfig({ path: kubeconfig }).kubeConfig, qps: 0, userAgent: process.env.USER_AGENT ?? 'csi-sidecar' });
const sidecar = await startDevCsiSidecar({ client, address, workerThreads, logger });
process.stdout.write(`ready ${sidecar.driverName}\n`);
process.on('message', (m: { type?: string }) => {
  if (m?.type === 'stats') {
    global.gc?.();
    process.send?.({ type: 'stats', rssBytes: process.memoryUsage().rss, heapUsedBytes: process.memoryUsage().heapUsed });
  }
});
process.once('SIGTERM', () => {
  void sidecar.stop().finally(() => {
    client.close();
    process.exit(0);
  });
});
