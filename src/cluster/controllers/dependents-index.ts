// The garbage collector's dependency graph, kept to what a deletion needs: every object that has
// ownerReferences (a dependent), by its key and under the uid of each owner it names. An owner is found by uid
// in one map lookup, so the work of a deletion follows its own dependents, never the number of other objects
// (kube-controller-manager's GraphBuilder keeps a node for every object; objects without owners need none
// here, as the store answers for them). Maintained from store events by the garbage collector.
import type { KubeObject, OwnerReference } from '../../types/k8s.ts';

/** A dependent as the index knows it. */
export interface Dependent {
  /** `resource/namespace/name` (namespace empty for cluster-scoped objects). */
  readonly key: string;
  readonly resource: string;
  readonly namespace: string | undefined;
  readonly name: string;
  readonly uid: string;
  readonly owners: readonly OwnerReference[];
  /** Being deleted with the foregroundDeletion finalizer: waiting for its own dependents. */
  readonly deletingDependents: boolean;
}

/** What changed in one dependent's ownerReferences (by owner uid). */
export interface OwnerChanges {
  added: OwnerReference[];
  removed: OwnerReference[];
  /** References whose blockOwnerDeletion went from true to false. */
  unblocked: OwnerReference[];
}

/** The key of an object in the index and the garbage collector's queue. */
export function itemKey(resource: string, namespace: string | undefined, name: string): string {
  return `${resource}/${namespace ?? ''}/${name}`;
}

/** The parts of an item key. */
export function parseItemKey(key: string): { resource: string; namespace: string | undefined; name: string } {
  const [resource, namespace, name] = key.split('/');
  return { resource, namespace: namespace || undefined, name };
}

export class DependentsIndex {
  private readonly byKey = new Map<string, Dependent>();
  private readonly byOwner = new Map<string, Set<Dependent>>();

  /** Number of dependents indexed. */
  get size(): number {
    return this.byKey.size;
  }

  get(key: string): Dependent | undefined {
    return this.byKey.get(key);
  }

  /** The dependents that name `ownerUid` among their owners. */
  dependentsOf(ownerUid: string): ReadonlySet<Dependent> {
    return this.byOwner.get(ownerUid) ?? EMPTY;
  }

  /** Records the current state of an object; answers how its ownerReferences changed. */
  upsert(resource: string, deletingDependents: boolean, obj: KubeObject): OwnerChanges {
    const meta = obj.metadata;
    const key = itemKey(resource, meta.namespace, meta.name ?? '');
    const previous = this.byKey.get(key);
    const owners = meta.ownerReferences ?? [];
    const changes = diffOwners(previous?.owners ?? [], owners);
    if (previous) this.unlink(previous);
    if (owners.length === 0) {
      this.byKey.delete(key);
      return changes;
    }
    const node: Dependent = {
      key,
      resource,
      namespace: meta.namespace,
      name: meta.name ?? '',
      uid: meta.uid ?? '',
      owners,
      deletingDependents,
    };
    this.byKey.set(key, node);
    for (const ref of owners) {
      let set = this.byOwner.get(ref.uid);
      if (!set) this.byOwner.set(ref.uid, (set = new Set()));
      set.add(node);
    }
    return changes;
  }

  /** Forgets a deleted object; answers the dependent it was, if it was one. */
  remove(resource: string, obj: KubeObject): Dependent | undefined {
    const key = itemKey(resource, obj.metadata.namespace, obj.metadata.name ?? '');
    const node = this.byKey.get(key);
    if (!node) return undefined;
    this.unlink(node);
    this.byKey.delete(key);
    return node;
  }

  private unlink(node: Dependent): void {
    for (const ref of node.owners) {
      const set = this.byOwner.get(ref.uid);
      if (!set) continue;
      set.delete(node);
      if (set.size === 0) this.byOwner.delete(ref.uid);
    }
  }
}

const EMPTY: ReadonlySet<Dependent> = new Set();

function diffOwners(before: readonly OwnerReference[], after: readonly OwnerReference[]): OwnerChanges {
  const old = new Map(before.map((r) => [r.uid, r]));
  const now = new Map(after.map((r) => [r.uid, r]));
  const changes: OwnerChanges = { added: [], removed: [], unblocked: [] };
  for (const [uid, ref] of now) {
    const was = old.get(uid);
    if (!was) changes.added.push(ref);
    else if (was.blockOwnerDeletion === true && ref.blockOwnerDeletion !== true) changes.unblocked.push(ref);
  }
  for (const [uid, ref] of old) if (!now.has(uid)) changes.removed.push(ref);
  return changes;
}
