// The CSI sidecar as a process of its own, for tests and benchmarks that kill it or measure it: the sidecar `dev
// --csi` runs (startDevCsiSidecar) against $KUBECONFIG and the plugin at $CSI_ADDRESS, with $WORKER_THREADS claim
// workers and $USER_AGENT as its API client's name. Prints `ready <driver>` once started; SIGTERM stops it.
// SIDECAR_FROM=src runs the sources (under `node --import tsx`, as tests do); otherwise the build in dist/ (`npm
// run build`), as the benchmark does, so its memory is the command's and not tsx's.
// (When `kube-provisioner run csi` is merged, this is that command with the same flags.)
const fromSrc = process.env.SIDECAR_FROM === 'src';
const load = (module) => import(fromSrc ? `../../src/${module}.ts` : `../../dist/${module}.js`);
const [{ KubeClient }, { loadKubeConfig }, { silentLogger, createLogger }, { startDevCsiSidecar }] = await Promise.all([
  load('runtime/client'), load('runtime/kubeconfig'), load('runtime/logger'), load('cli/dev-csi'),
]);

const logger = process.env.LOG_LEVEL ? createLogger({ level: process.env.LOG_LEVEL, name: 'csi-sidecar' }) : silentLogger;
const client = new KubeClient({
  kubeConfig: loadKubeConfig({ path: process.env.KUBECONFIG ?? '' }).kubeConfig, qps: 0, userAgent: process.env.USER_AGENT ?? 'csi-sidecar',
});
const sidecar = await startDevCsiSidecar({ client, address: process.env.CSI_ADDRESS ?? '', workerThreads: Number(process.env.WORKER_THREADS ?? '16'), logger });
process.stdout.write(`ready ${sidecar.driverName}\n`);
process.once('SIGTERM', () => {
  void sidecar.stop().finally(() => {
    client.close();
    process.exit(0);
  });
});
