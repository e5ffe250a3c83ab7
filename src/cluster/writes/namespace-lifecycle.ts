// The NamespaceLifecycle admission plugin and the namespace deletion of kube-apiserver plus the namespace
// controller, over storage: no new content in a missing or terminating namespace; deleting a namespace marks it
// Terminating, deletes its content, and removes it once nothing is left (now, or when the last finalizer of its
// content goes). A DELETE of a namespace already terminating is a Conflict while its spec finalizers remain
// (k/k pkg/registry/core/namespace/storage Delete).
import type { KubeObject } from '../../types/k8s.ts';
import { conflict, forbidden, notFound } from '../common/api-errors.ts';
import type { ResourceType } from '../registry/resource-type.ts';
import type { StoredEntry } from '../storage/stored-entry.ts';
import type { ResourceTable, Storage } from '../storage/store.ts';

/** Namespaces kube-apiserver refuses to delete. */
const IMMORTAL_NAMESPACES = new Set(['default', 'kube-system', 'kube-public']);

export class NamespaceLifecycle {
  private readonly d: Storage<ResourceType>;
  private readonly deleteContent: (resource: string, namespace: string, name: string) => void;

  /** `deleteContent` deletes one object of a terminating namespace, through the ordinary delete rules. */
  constructor(
    storage: Storage<ResourceType>,
    deleteContent: (resource: string, namespace: string, name: string) => void,
  ) {
    this.d = storage;
    this.deleteContent = deleteContent;
  }

  /** Namespace deletion: mark Terminating, delete its content, remove it once empty. @throws ClusterApiError */
  delete(
    table: ResourceTable<ResourceType>,
    key: string,
    existing: StoredEntry,
    now: string,
    dryRun: boolean | undefined,
  ): StoredEntry {
    const old = existing.obj;
    const ns = old.metadata.name!;
    if (IMMORTAL_NAMESPACES.has(ns)) throw forbidden(table.rt, ns, 'this namespace may not be deleted');
    if (old.metadata.deletionTimestamp) {
      const specFinalizers = (old.spec as { finalizers?: unknown[] } | undefined)?.finalizers;
      if (specFinalizers?.length) {
        throw conflict(
          table.rt,
          ns,
          'The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system.',
        );
      }
      return existing;
    }
    const marked: KubeObject = {
      ...old,
      metadata: { ...old.metadata, deletionTimestamp: now, deletionGracePeriodSeconds: 0 },
      status: { ...((old.status as object | undefined) ?? {}), phase: 'Terminating' },
    };
    const entry = this.d.commit(table, 'MODIFIED', key, marked, existing, dryRun);
    if (dryRun) return entry;
    for (const t of this.namespacedTables()) {
      for (const [k, e] of [...t.items]) {
        if (!k.startsWith(`${ns}/`) || e.obj.metadata.deletionTimestamp) continue;
        this.deleteContent(t.rt.resource, ns, e.obj.metadata.name!);
      }
    }
    this.finalizeIfEmpty(ns);
    return entry;
  }

  /** Removes a terminating namespace once it holds nothing. */
  finalizeIfEmpty(ns: string | undefined): void {
    if (!ns) return;
    const nsTable = this.namespaceTable();
    const entry = nsTable?.items.get(ns);
    if (!nsTable || !entry?.obj.metadata.deletionTimestamp) return;
    for (const t of this.namespacedTables()) {
      for (const k of t.items.keys()) if (k.startsWith(`${ns}/`)) return;
    }
    this.d.commit(nsTable, 'DELETED', ns, { ...entry.obj, metadata: { ...entry.obj.metadata } }, entry);
  }

  /** NamespaceLifecycle admission on create. @throws ClusterApiError 404 / 403 */
  checkAcceptsCreate(rt: ResourceType, ns: string, name: string): void {
    const nsTable = this.namespaceTable();
    if (!nsTable) return;
    const entry = nsTable.items.get(ns);
    if (!entry) throw notFound({ group: '', resource: 'namespaces', kind: 'Namespace' }, ns);
    if (entry.obj.metadata.deletionTimestamp) {
      const message = `unable to create new content in namespace ${ns} because it is being terminated`;
      throw forbidden(rt, name, message, [{ reason: 'NamespaceTerminating', message, field: 'metadata.namespace' }]);
    }
  }

  private namespacedTables(): Array<ResourceTable<ResourceType>> {
    return this.d.tables().filter((t) => t.rt.namespaced);
  }

  /** The namespaces table, or undefined in a store that does not serve namespaces (then nothing is enforced). */
  private namespaceTable(): ResourceTable<ResourceType> | undefined {
    return this.d.has('namespaces') ? this.d.table('namespaces') : undefined;
  }
}
