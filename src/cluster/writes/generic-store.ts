// The write rules of kube-apiserver's generic registry store (k8s.io/apiserver registry/generic/registry/store.go)
// applied to our tables: create (system metadata, generateName retries, AlreadyExists), update (optimistic
// concurrency, BeforeUpdate resets, status subresource, finalizer-driven deletion, no-op detection), patch
// (applied to the latest version), delete (preconditions, finalizers -> deletionTimestamp), namespace lifecycle.
// They sit above storage and reach it only through its public surface (tables, commit, clock, limits).
import { randomUUID } from 'node:crypto';
import type { KubeObject, ObjectMeta, StatusCause } from '../../types/k8s.ts';
import {
  alreadyExists,
  badRequest,
  conflict,
  invalid,
  notFound,
  plainServerError,
  STALE_OBJECT_CAUSE,
  statusError,
  type ClusterApiError,
} from '../common/api-errors.ts';
import { formatTime, generateName, isMicroTime, jsonEqual, objectKey, readPath } from '../common/meta.ts';
import { applyJsonPatch, applyMergePatch } from '../patch/patch.ts';
import { applyStrategicMergePatch, applyStrategicMergePatchWithTurns } from '../patch/strategic-merge-patch.ts';
import { PatchError } from '../patch/patch-error.ts';
import { rootModel } from '../schema/schema.ts';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.ts';
import { validateObjectMeta } from '../registry/validation.ts';
import { StoredEntry } from '../storage/stored-entry.ts';
import { checkPatchResult } from '../storage/write-limits.ts';
import type { Storage } from '../storage/store.ts';
import { deletionFinalizers, type PropagationOptions } from './deletion-finalizers.ts';
import { NamespaceLifecycle } from './namespace-lifecycle.ts';

export type PatchType = 'json' | 'merge' | 'strategic';

/** Mutating/validating admission: may change `obj`; throw ClusterApiError to reject. */
export type AdmissionPlugin = (
  op: 'create' | 'update',
  obj: KubeObject,
  old: KubeObject | undefined,
  info: { subresource?: 'status'; user?: string },
) => void;

/** Options every write accepts. */
export interface WriteOptions {
  user?: string;
  /** Run every check (validation, admission, conflicts) but persist nothing and notify no watcher. */
  dryRun?: boolean;
}

export interface UpdateOptions extends WriteOptions {
  subresource?: 'status';
}

/** Patch options: `view` applies the patch to another representation of the stored object (events.k8s.io). */
export interface PatchOptions extends UpdateOptions {
  view?: { toStorage(obj: KubeObject): KubeObject; fromStorage(obj: KubeObject): KubeObject };
  /** Accumulated size of the values a JSON patch may copy (default: the request body limit). */
  maxCopyBytes?: number;
  /** Schema model of the patched representation (drives strategic-merge list strategies); default the kind's. */
  model?: string;
  /** Sees the patched object (request representation) before it is stored: pruning and field validation. */
  inspect?: (patched: KubeObject) => void;
}

/** An object ready to be created, validated but not yet written (WriteRules.prepareCreate). */
export interface PreparedCreate {
  resource: string;
  obj: KubeObject;
  /** Its name came from metadata.generateName (a collision draws another). */
  generated: boolean;
}

/** A patch applied but not yet written (WriteRules.applyPatch). */
export interface AppliedPatch {
  obj: KubeObject;
  /** The stored object's key in its table. */
  key: string;
  /** The version the patch was applied to. */
  appliedTo: number;
}

/** What a patch is applied to (WriteRules.patchSource). */
interface PatchSource {
  rt: ResourceType;
  key: string;
  /** The stored version read. */
  rv: number;
  /** A private copy for a strategic merge patch, the committed object for the others. */
  base: KubeObject;
  /** The schema model of a strategic merge patch. */
  model: string;
}

/** DeleteOptions: preconditions, and what happens to dependents (the garbage collector's finalizers). */
export interface DeleteOptions extends WriteOptions, PropagationOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
}

const GENERATE_NAME_ATTEMPTS = 8;

/** The write rules over one storage; admission plugins are registered here, per resource. */
export class WriteRules {
  private readonly d: Storage<ResourceType>;
  private readonly admission = new Map<string, AdmissionPlugin[]>();
  private readonly namespaces: NamespaceLifecycle;
  constructor(storage: Storage<ResourceType>) {
    this.d = storage;
    this.namespaces = new NamespaceLifecycle(storage, (resource, ns, name) => void this.delete(resource, ns, name, {}));
  }

  /** Registers an admission plugin run on create/update of `resource`, before validation. @throws ClusterApiError 404 */
  addAdmission(resource: string, plugin: AdmissionPlugin): void {
    this.d.table(resource);
    const list = this.admission.get(resource) ?? [];
    list.push(plugin);
    this.admission.set(resource, list);
  }

  private plugins(resource: string): readonly AdmissionPlugin[] {
    return this.admission.get(resource) ?? [];
  }

  create(resource: string, input: KubeObject, opts: WriteOptions): StoredEntry {
    return this.commitCreate(this.prepareCreate(resource, input, opts), opts);
  }

  /**
   * The first half of a create: the object made ready and validated (admission included), not yet written.
   * commitCreate then checks what depends on the table (the name taken, a generated name's collisions), so the two
   * may have other writes between them.
   */
  prepareCreate(resource: string, input: KubeObject, opts: WriteOptions): PreparedCreate {
    const table = this.d.table(resource);
    const rt = table.rt;
    const obj = withHeader(input, rt);
    const meta = obj.metadata;
    if (meta.resourceVersion) throw plainServerError('resourceVersion should not be set on objects to be created');
    checkMicroTimes(rt, obj);
    convertFromRequest(rt, obj);
    if (!rt.namespaced) delete meta.namespace;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    delete meta.generation;
    delete meta.managedFields;
    const now = this.d.now();
    meta.uid = randomUUID();
    meta.creationTimestamp = formatTime(now);
    rt.prepareForCreate?.(obj, now);
    const generated = !meta.name && !!meta.generateName;
    if (generated) meta.name = generateName(meta.generateName!);
    if (rt.namespaced && meta.namespace) this.namespaces.checkAcceptsCreate(rt, meta.namespace, meta.name ?? '');
    rt.defaults?.(obj);
    normalizeMeta(meta);
    for (const plugin of this.plugins(resource)) plugin('create', obj, undefined, { user: opts.user });
    const causes = [...validateObjectMeta(meta, rt.namespaced, rt.nameRule ?? 'dns1123subdomain'), ...rt.validate(obj)];
    if (causes.length) throw invalid(rt, meta.name ?? meta.generateName ?? '', causes);
    return { resource, obj, generated };
  }

  /** The second half of a create: the name checked against the table, and the commit. */
  commitCreate(prepared: PreparedCreate, opts: WriteOptions): StoredEntry {
    const { obj, generated } = prepared;
    const table = this.d.table(prepared.resource);
    const rt = table.rt;
    const meta = obj.metadata;
    let key = objectKey(meta.namespace, meta.name!);
    for (let i = 0; generated && table.items.has(key) && i < GENERATE_NAME_ATTEMPTS; i++) {
      meta.name = generateName(meta.generateName!);
      key = objectKey(meta.namespace, meta.name);
    }
    const existing = table.items.get(key);
    if (existing)
      throw alreadyExists(rt, meta.name!, { beingDeleted: !!existing.obj.metadata.deletionTimestamp, generated });
    return this.d.commit(table, 'ADDED', key, obj, undefined, opts.dryRun);
  }

  update(
    resource: string,
    input: KubeObject,
    opts: UpdateOptions & { fromPatch?: boolean },
  ): { entry: StoredEntry; created: boolean } {
    const table = this.d.table(resource);
    const rt = table.rt;
    const obj = withHeader(input, rt);
    const meta = obj.metadata;
    const name = meta.name;
    if (!name) throw badRequest('name is required for an update');
    if (!rt.namespaced) delete meta.namespace;
    const key = objectKey(meta.namespace, name);
    const existing = table.items.get(key);
    checkMicroTimes(rt, obj);
    convertFromRequest(rt, obj);
    if (!existing) {
      if (rt.allowCreateOnUpdate && !opts.subresource && !opts.fromPatch) {
        // Even with a (stale) resourceVersion: the store's create-on-update path ignores it (GuaranteedUpdate
        // clears it before storing), e.g. a leader's cached Lease PUT after someone deleted the Lease.
        delete meta.resourceVersion;
        return { entry: this.create(resource, obj, opts), created: true };
      }
      throw notFound(rt, name);
    }
    const old = existing.obj;
    if (meta.resourceVersion) {
      if (!/^\d+$/.test(meta.resourceVersion))
        throw badRequest(`invalid resource version "${meta.resourceVersion}": must be a decimal integer`);
      if (Number(meta.resourceVersion) !== existing.rv) throw conflict(rt, name, STALE_OBJECT_CAUSE);
    } else if (rt.allowUnconditionalUpdate === false) {
      // The store reports the resource plural as the kind here (GroupKind{Group, Kind: resource}), uint64 as %#v.
      throw invalid({ group: rt.group, resource: rt.resource, kind: rt.resource }, name, [
        {
          reason: 'FieldValueInvalid',
          message: 'Invalid value: 0x0: must be specified for an update',
          field: 'metadata.resourceVersion',
        },
      ]);
    }
    if (meta.uid && meta.uid !== old.metadata.uid) {
      throw conflict(
        rt,
        name,
        `StorageError: invalid object, Code: 4, Key: /registry/${rt.resource}/${key}, ResourceVersion: 0, AdditionalErrorMsg: ` +
          `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${old.metadata.uid}`,
      );
    }
    restoreSystemFields(meta, old.metadata);
    if (opts.subresource === 'status') {
      if (!rt.hasStatus) throw notFound(rt, name);
      for (const k of Object.keys(obj)) if (!KEPT_ON_STATUS_WRITE.has(k) && !(k in old)) delete obj[k];
      for (const k of Object.keys(old)) if (!KEPT_ON_STATUS_WRITE.has(k)) obj[k] = old[k];
    } else if (rt.hasStatus) {
      if (old.status === undefined) delete obj.status;
      else obj.status = old.status;
    }
    const now = this.d.now();
    rt.prepareForUpdate?.(obj, old, opts.subresource, now);
    rt.defaults?.(obj);
    normalizeMeta(meta);
    for (const plugin of this.plugins(resource))
      plugin('update', obj, old, { subresource: opts.subresource, user: opts.user });
    const causes = [
      ...validateObjectMeta(meta, rt.namespaced, rt.nameRule ?? 'dns1123subdomain'),
      ...finalizerUpdateCauses(meta, old.metadata),
      ...rt.validate(obj, old),
    ];
    if (causes.length) throw invalid(rt, name, causes);
    if (old.metadata.deletionTimestamp && !meta.finalizers?.length) {
      // The last finalizer is gone: the update becomes the deletion, announced with the previously stored state.
      const gone = this.d.commit(
        table,
        'DELETED',
        key,
        { ...old, metadata: { ...old.metadata } },
        existing,
        opts.dryRun,
      );
      meta.resourceVersion = String(gone.rv);
      if (!opts.dryRun) this.namespaces.finalizeIfEmpty(meta.namespace);
      return { entry: new StoredEntry(obj, gone.rv), created: false };
    }
    meta.resourceVersion = old.metadata.resourceVersion;
    if (jsonEqual(obj, old)) return { entry: existing, created: false };
    return { entry: this.d.commit(table, 'MODIFIED', key, obj, existing, opts.dryRun), created: false };
  }

  patch(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions,
  ): StoredEntry {
    return this.commitPatch(resource, this.applyPatch(resource, namespace, name, type, patch, opts), opts);
  }

  /**
   * The first half of a patch: applied to the latest stored version and checked, not yet written. The object
   * carries that version as its resourceVersion (unless the patch set one), so committing it after another write
   * is a conflict: see isLatest.
   */
  applyPatch(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions,
  ): AppliedPatch {
    const source = this.patchSource(resource, namespace, name, type, opts);
    let patched: unknown;
    try {
      patched = applyPatchOfType(type, source, patch, opts);
    } catch (err) {
      throw err instanceof PatchError ? patchFailure(err, source.rt, name) : err;
    }
    return this.checkPatched(source, patched, name, namespace, opts);
  }

  /**
   * applyPatch for a large patch's request: a strategic merge patch gives the loop a turn (`turn`) after every
   * MERGE_SLICE list items or map keys it steps over, and every patch one more between being applied and its
   * checks. The version it was applied to is the one read before the first turn: see isLatest.
   */
  async applyPatchWithTurns(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions,
    turn: () => Promise<void>,
  ): Promise<AppliedPatch> {
    const source = this.patchSource(resource, namespace, name, type, opts);
    let patched: unknown;
    try {
      patched =
        type === 'strategic'
          ? await applyStrategicMergePatchWithTurns(source.base, patch, source.model, turn)
          : applyPatchOfType(type, source, patch, opts);
    } catch (err) {
      throw err instanceof PatchError ? patchFailure(err, source.rt, name) : err;
    }
    await turn();
    return this.checkPatched(source, patched, name, namespace, opts);
  }

  /** The stored object a patch applies to, in the request's representation. @throws ClusterApiError 404 */
  private patchSource(
    resource: string,
    namespace: string | undefined,
    name: string,
    type: PatchType,
    opts: PatchOptions,
  ): PatchSource {
    const table = this.d.table(resource);
    const rt = table.rt;
    const key = objectKey(rt.namespaced ? namespace : undefined, name);
    const existing = table.items.get(key);
    if (!existing) throw notFound(rt, name);
    // JSON and merge patches copy the document before changing it, so they read the committed object itself; the
    // strategic merge patch shares parts of its input with its result, so it gets a copy of its own.
    const stored = type === 'strategic' ? (JSON.parse(existing.json) as KubeObject) : existing.obj;
    const base = opts.view ? opts.view.fromStorage(stored) : stored;
    const model = opts.model ?? rootModel(rt.group, rt.version, rt.kind) ?? '';
    return { rt, key, rv: existing.rv, base, model };
  }

  /** The checks of a patch's result, and the AppliedPatch to commit. @throws ClusterApiError */
  private checkPatched(
    source: PatchSource,
    patched: unknown,
    name: string,
    namespace: string | undefined,
    opts: PatchOptions,
  ): AppliedPatch {
    const { rt } = source;
    if (patched === null || typeof patched !== 'object' || Array.isArray(patched))
      throw badRequest('the patch must produce a JSON object');
    checkPatchResult(patched, this.d.limits);
    opts.inspect?.(patched as KubeObject);
    const obj = opts.view ? opts.view.toStorage(patched as KubeObject) : (patched as KubeObject);
    if (!obj.metadata || typeof obj.metadata !== 'object') obj.metadata = {};
    const decodeError = rt.convertFromRequest?.(obj);
    if (decodeError) {
      // A patched object that does not decode: NewInvalid with an empty GroupKind, the patched JSON as the value.
      throw invalid({ group: '', resource: '', kind: '' }, '', [
        {
          reason: 'FieldValueInvalid',
          message: `Invalid value: ${JSON.stringify(JSON.stringify(patched))}: ${decodeError}`,
          field: 'patch',
        },
      ]);
    }
    const causes: StatusCause[] = [];
    if (obj.metadata.name !== name) causes.push(immutable('metadata.name', obj.metadata.name));
    if (rt.namespaced && obj.metadata.namespace !== namespace)
      causes.push(immutable('metadata.namespace', obj.metadata.namespace));
    if (causes.length) throw invalid(rt, name, causes);
    if (!obj.metadata.resourceVersion) obj.metadata.resourceVersion = String(source.rv);
    return { obj, key: source.key, appliedTo: source.rv };
  }

  /** The second half of a patch: the update rules and the commit of what applyPatch gave. */
  commitPatch(resource: string, applied: AppliedPatch, opts: PatchOptions): StoredEntry {
    return this.update(resource, applied.obj, {
      subresource: opts.subresource,
      user: opts.user,
      dryRun: opts.dryRun,
      fromPatch: true,
    }).entry;
  }

  /** Whether the version a patch was applied to is still the latest one. */
  isLatest(resource: string, applied: AppliedPatch): boolean {
    return this.d.table(resource).items.get(applied.key)?.rv === applied.appliedTo;
  }

  delete(
    resource: string,
    namespace: string | undefined,
    name: string,
    opts: DeleteOptions,
  ): { entry: StoredEntry; deleted: boolean } {
    const table = this.d.table(resource);
    const rt = table.rt;
    const key = objectKey(rt.namespaced ? namespace : undefined, name);
    const existing = table.items.get(key);
    if (!existing) throw notFound(rt, name);
    const old = existing.obj;
    const pre = opts.preconditions;
    if (pre?.uid && pre.uid !== old.metadata.uid) {
      throw conflict(
        rt,
        name,
        `the UID in the precondition (${pre.uid}) does not match the UID in record (${old.metadata.uid}). The object might have been deleted and then recreated`,
        true,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== old.metadata.resourceVersion) {
      throw conflict(
        rt,
        name,
        `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${old.metadata.resourceVersion}). The object might have been modified`,
        true,
      );
    }
    const now = formatTime(this.d.now());
    if (resource === 'namespaces')
      return { entry: this.namespaces.delete(table, key, existing, now, opts.dryRun), deleted: false };
    // The garbage collector's finalizers follow the options, the object's finalizers and the kind's default;
    // while any finalizer remains the object is only marked (markAsDeleting), else it goes now.
    const finalizers =
      deletionFinalizers(rt.garbageCollectionPolicy, old.metadata.finalizers ?? [], opts) ??
      old.metadata.finalizers ??
      [];
    if (finalizers.length > 0) {
      const meta = { ...old.metadata, finalizers, deletionGracePeriodSeconds: 0 };
      if (!old.metadata.deletionTimestamp) {
        meta.deletionTimestamp = now;
        if (meta.generation !== undefined && meta.generation > 0) meta.generation += 1;
      }
      const marked = { ...old, metadata: meta };
      if (jsonEqual(marked, old)) return { entry: existing, deleted: false };
      return { entry: this.d.commit(table, 'MODIFIED', key, marked, existing, opts.dryRun), deleted: false };
    }
    const entry = this.d.commit(
      table,
      'DELETED',
      key,
      { ...old, metadata: { ...old.metadata } },
      existing,
      opts.dryRun,
    );
    if (!opts.dryRun) this.namespaces.finalizeIfEmpty(old.metadata.namespace);
    return { entry, deleted: true };
  }
}

/** Top-level fields a /status write takes from the request; all others are restored from the stored object. */
const KEPT_ON_STATUS_WRITE = new Set(['apiVersion', 'kind', 'metadata', 'status']);

/** A copy of the object with kind, apiVersion and metadata first (kube's key order) and the URL's group/version. */
function withHeader(input: KubeObject, rt: ResourceType): KubeObject {
  if (input === null || typeof input !== 'object' || Array.isArray(input))
    throw badRequest(`${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: not a JSON object`);
  const { kind: _k, apiVersion: _a, metadata, ...rest } = input;
  const meta = metadata !== null && typeof metadata === 'object' && !Array.isArray(metadata) ? metadata : {};
  return { kind: rt.kind, apiVersion: apiVersionOf(rt), metadata: meta, ...rest };
}

/** BeforeUpdate: fields clients cannot change through an update. */
function restoreSystemFields(meta: ObjectMeta, old: ObjectMeta): void {
  const keys = [
    'uid',
    'creationTimestamp',
    'generation',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
    'namespace',
  ] as const;
  for (const k of keys) {
    if (old[k] === undefined) delete meta[k];
    else (meta as Record<string, unknown>)[k] = old[k];
  }
  delete meta.managedFields;
}

/** Empty lists and maps are omitted in kube's JSON (omitempty); normalizing keeps no-op detection exact. */
const MAP_FIELDS = ['labels', 'annotations'] as const;
const LIST_FIELDS = ['finalizers', 'ownerReferences'] as const;

/** Whether an object has no own enumerable key (Object.keys(v).length === 0, without building the array). */
function hasNoKeys(v: object): boolean {
  for (const k in v) if (Object.hasOwn(v, k)) return false;
  return true;
}

function normalizeMeta(meta: ObjectMeta): void {
  for (const k of MAP_FIELDS) {
    const v = meta[k];
    if (v === null || (v && typeof v === 'object' && hasNoKeys(v))) delete meta[k];
  }
  for (const k of LIST_FIELDS) {
    const v = meta[k];
    if (v === null || (Array.isArray(v) && v.length === 0)) delete meta[k];
  }
  if ('selfLink' in meta) delete (meta as Record<string, unknown>).selfLink;
}

function finalizerUpdateCauses(meta: ObjectMeta, old: ObjectMeta): StatusCause[] {
  if (!old.deletionTimestamp) return [];
  const had = new Set(old.finalizers ?? []);
  const added = (meta.finalizers ?? []).filter((f) => !had.has(f));
  if (!added.length) return [];
  return [
    {
      reason: 'FieldValueForbidden',
      message: `Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
      field: 'metadata.finalizers',
    },
  ];
}

function immutable(field: string, value: unknown): StatusCause {
  return {
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${JSON.stringify(value ?? '')}: field is immutable`,
    field,
  };
}

/** The kind's request conversion (Secret stringData); a value Go would not decode is a 400, as in Go. */
function convertFromRequest(rt: ResourceType, obj: KubeObject): void {
  const error = rt.convertFromRequest?.(obj);
  if (error) throw badRequest(`${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: ${error}`);
}

/** metav1.MicroTime inputs must have exactly six fractional digits, or decoding fails (400) as in Go. */
function checkMicroTimes(rt: ResourceType, obj: KubeObject): void {
  for (const p of rt.microTimeFields ?? []) {
    const v = readPath(obj, p);
    if (v === undefined || v === null) continue;
    if (typeof v === 'string' && isMicroTime(v)) continue;
    const frac = typeof v === 'string' ? (/(\.\d*)?(Z|[+-]\d{2}:\d{2})?$/.exec(v)?.[0] ?? v) : String(v);
    throw badRequest(
      `${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: parsing time ${JSON.stringify(v)} as ` +
        `"2006-01-02T15:04:05.000000Z07:00": cannot parse ${JSON.stringify(frac)} as ".000000"`,
    );
  }
}

/** A patch applied to what patchSource read, with no turn. @throws PatchError */
function applyPatchOfType(type: PatchType, source: PatchSource, patch: unknown, opts: PatchOptions): unknown {
  if (type === 'json') return applyJsonPatch(source.base, patch, opts.maxCopyBytes);
  if (type === 'merge') return applyMergePatch(source.base, patch);
  return applyStrategicMergePatch(source.base, patch, source.model);
}

function patchFailure(err: PatchError, rt: ResourceType, name: string): ClusterApiError {
  if (err.code === 409) return conflict(rt, name, err.message);
  if (err.code === 400) return badRequest(err.message);
  if (err.code === 413) return statusError(413, 'RequestEntityTooLarge', err.message);
  // NewGenericServerResponse(422, ..., isUnexpectedResponse=false): the patch error itself is not reported.
  return statusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {});
}
