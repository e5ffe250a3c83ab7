// The serviceaccounts controller of kube-controller-manager, reduced to what clients observe: every namespace
// that is not terminating has a ServiceAccount named `default`, created when the namespace appears and again
// if it is deleted. Token secrets are not created (tokens are requested, not stored, since Kubernetes 1.24).
import type { Logger } from '../../types/logger.ts';
import { ClusterApiError } from '../common/api-errors.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';

const DEFAULT_SA = 'default';

/** Keeps a `default` ServiceAccount in every active namespace until the returned function is called. */
export function startServiceAccountController(store: ClusterStore, logger: Logger): () => void {
  const ensure = (namespace: string | undefined): void => {
    if (!namespace) return;
    const ns = store.get('namespaces', undefined, namespace);
    if (!ns || ns.metadata.deletionTimestamp || store.getEntry('serviceaccounts', namespace, DEFAULT_SA)) return;
    try {
      store.create(
        'serviceaccounts',
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: DEFAULT_SA, namespace } },
        {
          user: 'system:serviceaccount:kube-system:service-account-controller',
        },
      );
    } catch (err) {
      // Lost a race with another writer, or the namespace began terminating: nothing to do either way.
      if (!(err instanceof ClusterApiError)) throw err;
      logger.debug({ namespace, err: err.message }, 'default service account not created');
    }
  };
  const stopNamespaces = store.watch('namespaces', {}, (ev) => {
    if (ev.type === 'ADDED') ensure(ev.object.metadata.name);
  });
  const stopAccounts = store.watch(
    'serviceaccounts',
    { fieldSelector: `metadata.name=${DEFAULT_SA}`, resourceVersion: String(store.resourceVersion) },
    (ev) => {
      if (ev.type === 'DELETED') ensure(ev.object.metadata.namespace);
    },
  );
  return () => {
    stopNamespaces();
    stopAccounts();
  };
}
