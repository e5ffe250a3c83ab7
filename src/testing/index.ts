// kube-provisioner/testing: the public test kit for provisioner authors (the envtest of this project).
// startCluster() runs a real HTTPS Kubernetes-compatible API server in-process and hands back a ready
// KubeClient with typed create/get helpers, a narrow view of the stored objects, fault injection and the
// audit counter; waitFor() and its conditions wait for states; provisionerConformance() checks a Provisioner;
// StubCsiPlugin is a scriptable CSI plugin on a unix socket (its gRPC library loads only when one starts).
import type { KubeConfig } from '@kubernetes/client-node';
import type { Audit } from '../cluster/http/audit.ts';
import { startEmbeddedCluster, type EmbeddedClusterOptions } from '../cluster/embedded-cluster.ts';
import { MissingDependencyError } from '../cluster/common/optional-deps.ts';
import type { Faults } from '../cluster/http/faults.ts';
import type { ListFilterOptions } from '../cluster/storage/store-filter.ts';
import type { StoreWatchOptions } from '../cluster/storage/store.ts';
import { KubeClient } from '../runtime/client.ts';
import { loadKubeConfig } from '../runtime/kubeconfig.ts';
import type { ApiResource } from '../runtime/resources.ts';
import type { KubeObject, WatchEvent } from '../types/k8s.ts';

export type { Audit, AuditKey, AuditRecord } from '../cluster/http/audit.ts';
export type { FaultRule, Faults } from '../cluster/http/faults.ts';
export type { ListFilterOptions } from '../cluster/storage/store-filter.ts';
export type { StoreWatchOptions } from '../cluster/storage/store.ts';
export { ClusterApiError } from '../cluster/common/api-errors.ts';
export { MissingDependencyError } from '../cluster/common/optional-deps.ts';
export {
  waitFor,
  conditions,
  eventsOf,
  WaitTimeoutError,
  type Condition,
  type ConditionContext,
  type ConditionPredicate,
  type WaitForOptions,
} from './wait.ts';
export {
  provisionerConformance,
  conformanceClaim,
  conformanceOptions,
  CONFORMANCE_CASES,
  type ConformanceCase,
  type ConformanceSubject,
  type ConformanceSuiteOptions,
  type TestRunner,
} from './conformance.ts';
export {
  StubCsiPlugin,
  type StubAnswer,
  type StubCall,
  type StubMethod,
  type StubPluginOptions,
  type StubVolume,
} from './csi-stub-plugin.ts';

/** The embedded cluster's options, less the server-error hook (tests see errors as failed requests). */
export type StartClusterOptions = Omit<EmbeddedClusterOptions, 'onError'>;

/**
 * Direct, in-process access to the stored objects, by resource plural (`persistentvolumeclaims`): for
 * arranging state a test cannot reach through the API, or reading it without a request. Writes go through the
 * same validation and admission as API writes and are seen by watches.
 */
export interface TestStore {
  /** The last resourceVersion handed out. */
  readonly resourceVersion: number;
  get(resource: string, namespace: string | undefined, name: string): KubeObject | undefined;
  list(resource: string, opts?: ListFilterOptions): { items: KubeObject[]; resourceVersion: string };
  create(resource: string, obj: KubeObject): KubeObject;
  /** Replaces an object (or its status with `subresource: 'status'`). */
  update(resource: string, obj: KubeObject, opts?: { subresource?: 'status' }): KubeObject;
  delete(resource: string, namespace: string | undefined, name: string): KubeObject;
  /** Calls `onEvent` for every change (after `resourceVersion`, else ADDED for what exists); returns the stop function. */
  watch(resource: string, opts: StoreWatchOptions, onEvent: (ev: WatchEvent) => void): () => void;
}

/** A running test cluster. */
export interface TestCluster {
  /** The API server URL (https://127.0.0.1:PORT). */
  url: string;
  /** A kubeconfig file with the CA and the bearer token. */
  kubeconfigPath: string;
  /** A ready client (no client-side rate limit), closed by stop(). */
  client: KubeClient;
  /** Creates an object through the API; the namespace comes from `obj.metadata.namespace`. */
  create<T extends KubeObject>(resource: ApiResource<T>, obj: T): Promise<T>;
  /** Reads an object through the API. */
  get<T extends KubeObject>(resource: ApiResource<T>, name: string, namespace?: string): Promise<T>;
  /**
   * A @kubernetes/client-node KubeConfig loaded from kubeconfigPath, for this repository's tests that use its
   * generated clients. Not in the published types (stripped as internal), so that they name no package the kit does
   * not depend on: an author who uses client-node loads `kubeconfigPath` with it (`kc.loadFromFile(...)`).
   * Reading it without client-node installed throws MissingDependencyError.
   * @internal
   */
  readonly kubeConfig: KubeConfig;
  /** The bearer token of the cluster's admin user. */
  token: string;
  store: TestStore;
  faults: Faults;
  audit: Audit;
  /** The cluster's controllers (undefined with `controllers: false`); `idle()` resolves when their queues are empty. */
  controllers: { idle(): Promise<void>; resync(): void } | undefined;
  /** Stops the client, the server and controllers, ends open watches, closes the database. */
  stop(): Promise<void>;
}

/** Starts an embedded cluster for a test; call stop() when done (e.g. in an `after` hook). */
export async function startCluster(opts: StartClusterOptions = {}): Promise<TestCluster> {
  const cluster = await startEmbeddedCluster(opts);
  const kubeConfig = await clientNodeKubeConfig(cluster.kubeconfigPath);
  const client = new KubeClient({
    kubeConfig: loadKubeConfig({ path: cluster.kubeconfigPath }).kubeConfig,
    qps: 0,
    userAgent: 'kube-provisioner-testing',
  });
  return {
    url: cluster.url,
    kubeconfigPath: cluster.kubeconfigPath,
    client,
    create: (resource, obj) => client.create(resource, obj),
    get: (resource, name, namespace) => client.get(resource, name, { namespace }),
    get kubeConfig(): KubeConfig {
      if (kubeConfig instanceof Error) throw kubeConfig;
      return kubeConfig;
    },
    token: cluster.token,
    store: cluster.store,
    faults: cluster.faults,
    audit: cluster.audit,
    controllers: cluster.controllers,
    stop: async () => {
      client.close();
      await cluster.stop();
    },
  };
}

/** client-node's KubeConfig for the cluster, or the error to throw when the optional package is absent. */
async function clientNodeKubeConfig(path: string): Promise<KubeConfig | MissingDependencyError> {
  let mod: typeof import('@kubernetes/client-node');
  try {
    mod = await import('@kubernetes/client-node');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw err;
    return new MissingDependencyError('@kubernetes/client-node', 'TestCluster.kubeConfig', { cause: err });
  }
  const kc = new mod.KubeConfig();
  kc.loadFromFile(path);
  return kc;
}
