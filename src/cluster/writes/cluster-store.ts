// The store the rest of the cluster uses: storage (tables, commit, watch) with the write rules on top and the
// registry's resource types as its default. Public writes copy objects in and out; the `*Entry` writes are for the
// HTTP layer: they take ownership of the object passed in and return the committed immutable version.
import type { KubeObject } from '../../types/k8s.ts';
import { RESOURCES } from '../registry/registry.ts';
import type { ResourceType } from '../registry/resource-type.ts';
import { Storage, type StorageOptions } from '../storage/store.ts';
import type { StoredEntry } from '../storage/stored-entry.ts';
import { guardWrite } from '../storage/write-limits.ts';
import {
  WriteRules,
  type AdmissionPlugin,
  type DeleteOptions,
  type PatchOptions,
  type PatchType,
  type UpdateOptions,
  type WriteOptions,
} from './generic-store.ts';

/** Options of a ClusterStore (resources default to every registry entry). */
export type ClusterStoreOptions = StorageOptions<ResourceType>;

/** The embedded cluster's store: kube-apiserver's write rules over the storage layer. */
export class ClusterStore extends Storage<ResourceType> {
  private readonly writes: WriteRules;

  constructor(opts: ClusterStoreOptions = {}) {
    super({ ...opts, resources: opts.resources ?? RESOURCES });
    this.writes = new WriteRules(this);
  }

  /** Creates an object; takes ownership of `obj`. @throws ClusterApiError */
  createEntry(resource: string, obj: KubeObject, opts: WriteOptions = {}): StoredEntry {
    return guardWrite(() => this.writes.create(resource, obj, opts));
  }

  /**
   * createEntry with a turn of the event loop between validating the object and committing it (`turn`: a large
   * body's request, see http-io's loopTurn). Whether the name is taken is checked after the turn, at the commit.
   * @throws ClusterApiError
   */
  async createEntryAfterTurn(
    resource: string,
    obj: KubeObject,
    opts: WriteOptions,
    turn: () => Promise<void>,
  ): Promise<StoredEntry> {
    const prepared = guardWrite(() => this.writes.prepareCreate(resource, obj, opts));
    await turn();
    return guardWrite(() => this.writes.commitCreate(prepared, opts));
  }

  create(resource: string, obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    return copyOut(guardWrite(() => this.createEntry(resource, structuredClone(obj), opts)));
  }

  /** PUT semantics; takes ownership of `obj`. `created` when a missing Lease/Event was created. @throws ClusterApiError */
  updateEntry(resource: string, obj: KubeObject, opts: UpdateOptions = {}): { entry: StoredEntry; created: boolean } {
    return guardWrite(() => this.writes.update(resource, obj, opts));
  }

  update(resource: string, obj: KubeObject, opts: UpdateOptions = {}): KubeObject {
    return copyOut(guardWrite(() => this.updateEntry(resource, structuredClone(obj), opts)).entry);
  }

  /** Applies a patch to the latest stored version, then runs the update rules. @throws ClusterApiError */
  patchEntry(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions = {},
  ): StoredEntry {
    return guardWrite(() => this.writes.patch(resource, namespace, name, type, patch, opts));
  }

  /**
   * patchEntry with turns of the event loop (`turn`: a large patch's request, see http-io's loopTurn): inside a
   * strategic merge (every MERGE_SLICE list items or map keys), between applying the patch and checking its result,
   * and between those checks and the write. The result is written only if the object is still the version the
   * patch was applied to; otherwise the patch is applied again to the latest version and written at once. That is
   * kube-apiserver's GuaranteedUpdate: a patch is applied to what was read and retried on a conflict.
   * @throws ClusterApiError
   */
  async patchEntryAfterTurn(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions,
    turn: () => Promise<void>,
  ): Promise<StoredEntry> {
    const applied = await guardWriteAsync(() =>
      this.writes.applyPatchWithTurns(resource, namespace, name, type, patch, opts, turn),
    );
    await turn();
    // Applied again, the result is inspected again too: field validation prunes the object that is written.
    if (!this.writes.isLatest(resource, applied)) return this.patchEntry(resource, namespace, name, type, patch, opts);
    return guardWrite(() => this.writes.commitPatch(resource, applied, opts));
  }

  patch(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: UpdateOptions = {},
  ): KubeObject {
    return copyOut(this.patchEntry(resource, namespace, name, type, patch, opts));
  }

  /** DELETE semantics: `deleted` is false when finalizers only set deletionTimestamp. @throws ClusterApiError */
  deleteEntry(
    resource: string,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions = {},
  ): { entry: StoredEntry; deleted: boolean } {
    return guardWrite(() => this.writes.delete(resource, namespace, name, opts));
  }

  delete(resource: string, namespace: string | undefined, name: string, opts: DeleteOptions = {}): KubeObject {
    return copyOut(this.deleteEntry(resource, namespace, name, opts).entry);
  }

  /** Registers an admission plugin run on create/update of `resource`, before validation. */
  addAdmission(resource: string, plugin: AdmissionPlugin): void {
    this.writes.addAdmission(resource, plugin);
  }
}

/** guardWrite for a write that takes turns of the event loop. */
async function guardWriteAsync<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    // The same answer as guardWrite gives (a RangeError is a 400).
    return guardWrite(() => {
      throw err;
    });
  }
}

function copyOut(e: StoredEntry): KubeObject {
  return JSON.parse(e.json) as KubeObject;
}
