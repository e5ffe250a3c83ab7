// kube-provisioner/testing: the public test harness for provisioner authors (the envtest of this project).
// startCluster() runs a real HTTPS Kubernetes-compatible API server in-process and hands back a ready
// @kubernetes/client-node KubeConfig, plus fault injection and the audit counter.
import { KubeConfig } from '@kubernetes/client-node';
import type { Audit } from '../cluster/audit.ts';
import { startEmbeddedCluster, type EmbeddedClusterOptions } from '../cluster/embedded-cluster.ts';
import type { Faults } from '../cluster/faults.ts';
import type { ClusterStore } from '../cluster/store.ts';

export type { Audit, AuditKey, AuditRecord } from '../cluster/audit.ts';
export type { FaultRule, Faults } from '../cluster/faults.ts';
export type { ClusterStore } from '../cluster/store.ts';
export { ApiError } from '../cluster/errors.ts';

/** The embedded cluster's options, less the server-error hook (tests see errors as failed requests). */
export type StartClusterOptions = Omit<EmbeddedClusterOptions, 'onError'>;

export interface TestCluster {
  /** The API server URL (https://127.0.0.1:PORT). */
  url: string;
  /** A kubeconfig file with the CA and the bearer token. */
  kubeconfigPath: string;
  /** A client-node KubeConfig loaded from kubeconfigPath. */
  kubeConfig: KubeConfig;
  token: string;
  /** Direct, in-process access to the objects (the cluster's own controllers use it too). */
  store: ClusterStore;
  faults: Faults;
  audit: Audit;
  /** The cluster's controllers (undefined with `controllers: false`); `idle()` resolves when their queues are empty. */
  controllers: { idle(): Promise<void>; resync(): void } | undefined;
  /** Stops the server and controllers, ends open watches, closes the database. */
  stop(): Promise<void>;
}

/** Starts an embedded cluster for a test; call stop() when done (e.g. in an `after` hook). */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const cluster = await startEmbeddedCluster(opts);
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(cluster.kubeconfigPath);
  return {
    url: cluster.url,
    kubeconfigPath: cluster.kubeconfigPath,
    kubeConfig,
    token: cluster.token,
    store: cluster.store,
    faults: cluster.faults,
    audit: cluster.audit,
    controllers: cluster.controllers,
    stop: cluster.stop,
  };
}
