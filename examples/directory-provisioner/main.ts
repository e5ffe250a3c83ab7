// Example entry point: runs the directory provisioner against the cluster of the current kubeconfig (or in-cluster
// config), with leader election, health and metrics, and a graceful shutdown on SIGTERM/SIGINT.
//
//   BASE_DIR=/tmp/volumes NODE_NAME=$(hostname) npx tsx examples/directory-provisioner/main.ts
import { hostname } from 'node:os';
import {
  createLogger,
  createMetricsRegistry,
  KubeClient,
  loadKubeConfig,
  ProvisionController,
  startHealthServer,
} from 'kube-provisioner';
import { DirectoryProvisioner } from './provisioner.ts';

const logger = createLogger({ name: 'directory-provisioner' });
const { kubeConfig } = loadKubeConfig();
const client = new KubeClient({ kubeConfig, userAgent: 'directory-provisioner' });
const registry = createMetricsRegistry({ processMetrics: true });
const nodeName = process.env.NODE_NAME ?? hostname();

const controller = new ProvisionController(
  client,
  'directory.example.com/local',
  new DirectoryProvisioner({ baseDir: process.env.BASE_DIR ?? '/var/lib/directory-provisioner', nodeName }),
  {
    // One instance per node (a DaemonSet): every instance works, the node check in provision() shards the claims.
    leaderElection: { mode: 'none' },
    addFinalizer: true,
    retry: { failedProvisionThreshold: 0 },
    leakInventory: { enabled: true },
    logger,
    registry,
  },
);

const stop = new AbortController();
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => stop.abort());
const checks = controller.healthChecks();
const health = await startHealthServer({
  address: process.env.HEALTH_ADDRESS ?? '0.0.0.0:8080',
  registry,
  checks,
  signal: stop.signal,
});
logger.info({ url: health.url }, 'health and metrics server listening');
await controller.run(stop.signal);
await health.stop();
client.close();
