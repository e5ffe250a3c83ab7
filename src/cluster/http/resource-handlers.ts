// The REST verbs of the API server over the store: get, list (limit/continue, selectors, resourceVersion
// rules), create, update, patch, delete and deletecollection, including the events.k8s.io view conversion
// and server-side Tables. Watch lives in watch-endpoint.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import {
  ClusterApiError,
  badRequest,
  expired,
  invalid,
  methodNotRouted,
  notFound,
  plainServerError,
  serverTimeout,
  statusError,
  unsupportedMediaType,
} from '../common/api-errors.ts';
import {
  decodeJsonBody,
  decodeLargeJsonBody,
  decodeRequestBody,
  decodePatchBody,
  mediaType,
  readBody,
  repeatsKeys,
  isLargeBody,
  loopTurn,
  abandonLargeBody,
  sendBytes,
  sendJson,
  sendJsonText,
  type Negotiated,
} from './http-io.ts';
import { decodeContinue, encodeContinue, entriesAt, pageOf } from '../storage/list-snapshot.ts';
import { parseListQuery, queryInt64, queryOptionalBool, validateListQuery } from './query-params.ts';
import {
  duplicateFields,
  enforceOnBody,
  fieldValidationOf,
  patchFieldValidation,
  strictErrors,
  strictErrorsOf,
} from '../schema/field-validation.ts';
import type { Faults } from './faults.ts';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.ts';
import { countObjectKeysInSlices, keepLargeMapsInSlices, parseLargeJsonText } from '../common/json-safety.ts';
import { decodeProtobufOffThread } from './decode-worker-pool.ts';
import { pruneUnknownInSlices, rootModel } from '../schema/schema.ts';
import { normalizeTimes } from '../schema/time-encoding.ts';
import { apiVersionOf, type ResourceType } from '../registry/resource-type.ts';
import type { ServerLimits } from './request-limits.ts';
import type { ResourceRequest } from './routing.ts';
import type { ClusterStore } from '../writes/cluster-store.ts';
import type { DeleteOptions, PatchOptions, PatchType } from '../writes/generic-store.ts';
import type { PropagationPolicy } from '../writes/deletion-finalizers.ts';
import { encodeList, encodeListOfJson, type StoredEntry } from '../storage/stored-entry.ts';
import { toTable, type IncludeObject } from '../registry/tables.ts';

/** Everything a verb handler needs about one request. */
export interface RequestScope {
  store: ClusterStore;
  req: IncomingMessage;
  res: ServerResponse;
  query: URLSearchParams;
  request: ResourceRequest;
  negotiated: Negotiated;
  client: string;
  now(): number;
  /** The server's bounds (body depth, patch copy work). */
  limits: Pick<ServerLimits, 'maxJsonDepth' | 'maxPatchCopyBytes'>;
  /** Fault rules naming an object are matched here for creates, whose name is in the body. */
  faults?: Faults;
}

/** The stored resource behind a (possibly view) resource type. */
export function storageResource(rt: ResourceType): string {
  return rt.view ? rt.view.resource : rt.resource;
}

/** A stored object as this resource type serves it. */
export function viewObject(rt: ResourceType, e: StoredEntry): KubeObject {
  return rt.view ? rt.view.fromStorage(e.obj) : e.obj;
}

/**
 * A list body as kube-apiserver encodes built-in lists: kind/apiVersion on the list only, not on its items.
 * Stored objects are copied from their serialised text with the type header cut out; a view converts each one.
 * Custom resources (the snapshot kinds) are served as apiextensions-apiserver serves them: an UnstructuredList
 * whose items keep their kind/apiVersion.
 */
function listBody(rt: ResourceType, meta: string, entries: readonly StoredEntry[]): Buffer {
  const head = `{"kind":"${rt.listKind}","apiVersion":"${apiVersionOf(rt)}","metadata":{${meta}},"items":[`;
  const tail = ']}\n';
  if (rt.customSchema && !rt.view)
    return encodeListOfJson(
      head,
      entries.map((e) => e.json),
      tail,
    );
  if (!rt.view) return encodeList(head, entries, tail);
  const view = rt.view;
  const items = entries.map((e) => {
    const { kind: _k, apiVersion: _a, ...item } = view.fromStorage(e.obj);
    return JSON.stringify(item);
  });
  return encodeListOfJson(head, items, tail);
}

export function includeObjectParam(query: URLSearchParams): IncludeObject {
  const v = query.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

function sendObject(s: RequestScope, code: number, e: StoredEntry): void {
  const { rt } = s.request;
  if (s.negotiated.table) {
    const table = toTable(
      rt,
      [viewObject(rt, e)],
      { resourceVersion: String(e.rv) },
      includeObjectParam(s.query),
      s.now(),
    );
    sendJson(s.res, code, JSON.stringify(table));
  } else if (rt.view) {
    sendJson(s.res, code, JSON.stringify(rt.view.fromStorage(e.obj)));
  } else {
    sendJsonText(s.res, code, e.json, e.byteLength);
  }
}

/**
 * The resourceVersion of a get/list, as the versioner reads it (strconv.ParseUint, 64 bits: exact digits, hence a
 * bigint). kube-apiserver hands the storage layer's InvalidError back unconverted (storeerr.InterpretGetError/
 * InterpretListError do not map it), so a garbage value is a plain 500.
 */
function readResourceVersion(rv: string | undefined): bigint {
  if (rv === undefined || rv === '') return 0n;
  const parseError = !/^\d+$/.test(rv) ? 'invalid syntax' : BigInt(rv) >= 2n ** 64n ? 'value out of range' : '';
  if (parseError)
    throw plainServerError(
      `resourceVersion: Invalid value: "${rv}": strconv.ParseUint: parsing "${rv}": ${parseError}`,
    );
  return BigInt(rv);
}

/**
 * A get or list at a resourceVersion the store has not reached: the watch cache waits up to 3 s for it
 * (waitUntilFreshAndBlock), then answers this. Nothing here can bring a newer version in by waiting (every write
 * goes through this store), so the answer comes at once.
 */
function checkNotAhead(requestedRv: bigint, current: number): void {
  if (requestedRv > BigInt(current)) {
    throw serverTimeout(`Timeout: Too large resource version: ${requestedRv}, current: ${current}`, {
      retryAfterSeconds: 1,
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    });
  }
}

/** Get of one object; a resourceVersion is "not older than", answered from the latest state once reached. */
export async function handleGet(s: RequestScope): Promise<void> {
  const { rt, namespace, name } = s.request;
  checkNotAhead(readResourceVersion(s.query.get('resourceVersion') ?? undefined), s.store.resourceVersion);
  const e = s.store.getEntry(storageResource(rt), namespace, name!);
  if (!e) throw notFound(rt, name!);
  sendObject(s, 200, e);
}

export async function handleList(s: RequestScope): Promise<void> {
  const { rt, namespace } = s.request;
  const lq = parseListQuery(s.query);
  const rvParam = lq.resourceVersion;
  const rvMatch = lq.resourceVersionMatch;
  validateListQuery(lq);
  const requestedRv = readResourceVersion(rvParam);
  const resource = storageResource(rt);
  const filter = s.store.filter(resource, {
    namespace,
    labelSelector: lq.labelSelector,
    fieldSelector: lq.fieldSelector,
  });
  const current = s.store.resourceVersion;
  checkNotAhead(requestedRv, current);
  // resourceVersion=0 means "any": served from cache, and the limit is ignored like kube-apiserver does.
  const limit = rvParam === '0' || lq.limit < 0 ? 0 : lq.limit;
  let listRv = current;
  let startAfterKey: string | undefined;
  let paging = false;
  if (lq.continueToken) {
    const token = decodeContinue(lq.continueToken);
    if (rvParam && rvParam !== '0') throw badRequest('specifying resource version is not allowed when using continue');
    // A token from the future (up to int64's largest, in its exact digits): etcd3 store GetList turns etcd's
    // ErrFutureRev into this (retry 0, no retryAfterSeconds).
    if (token.rv > BigInt(current)) {
      throw serverTimeout(`Timeout: Too large resource version: ${token.rv}, current: ${current}`, {
        causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
      });
    }
    // Below 0 (-1: the token of an expired continuation): the rest of the list at the latest resourceVersion.
    if (token.rv > 0n) listRv = Number(token.rv);
    startAfterKey = token.startAfterKey;
    paging = true;
  } else if (
    rvMatch === 'Exact' ||
    (rvParam !== undefined && rvParam !== '0' && rvParam !== '' && limit > 0 && !rvMatch)
  ) {
    listRv = Number(requestedRv);
  }
  let page: { entries: StoredEntry[]; nextKey: string | undefined; remaining: number };
  if (listRv === current) {
    page = s.store.listEntries(resource, filter, { limit, startAfterKey });
  } else {
    const snapshot = entriesAt(s.store.table(resource), listRv);
    if (!snapshot)
      throw paging ? continueExpired(startAfterKey!) : expired('The resourceVersion for the provided list is too old.');
    page = pageOf(snapshot, filter, limit, startAfterKey);
  }
  const continueToken = page.nextKey !== undefined ? encodeContinue(listRv, page.nextKey) : undefined;
  if (s.negotiated.table) {
    const table = toTable(
      rt,
      page.entries.map((e) => viewObject(rt, e)),
      { resourceVersion: String(listRv), continue: continueToken },
      includeObjectParam(s.query),
      s.now(),
    );
    sendJson(s.res, 200, JSON.stringify(table));
    return;
  }
  let meta = `"resourceVersion":"${listRv}"`;
  if (continueToken) {
    meta += `,"continue":"${continueToken}"`;
    if (!filter.matches) meta += `,"remainingItemCount":${page.remaining}`;
  }
  sendBytes(s.res, 200, listBody(rt, meta, page.entries));
}

/**
 * handleCompactedErrorForPaging: 410 Expired whose metadata.continue lets the client read the rest of the list
 * at the latest resourceVersion (token rv -1), knowing it may be inconsistent.
 */
function continueExpired(startAfterKey: string): ClusterApiError {
  const err = expired(
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, ' +
      'or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an ' +
      'inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  );
  err.status.metadata = { continue: encodeContinue(-1, startAfterKey) };
  return err;
}

/**
 * A large body's turn of the event loop (see LARGE_BODY_BYTES). A client that went away meanwhile gets nothing
 * more done for it: a flood of large bodies whose senders disconnect costs one pass each, not the whole request.
 * @throws ClientAbortedError (answered with nothing)
 */
async function largeBodyTurn(s: RequestScope): Promise<void> {
  await loopTurn();
  if (s.req.socket?.destroyed) throw abandonLargeBody();
}

/**
 * Whether a decoded JSON body repeats a key in some object. A large body's value is counted in slices with a turn
 * between them, and the key lists of its large maps are kept for validation (countObjectKeysInSlices).
 */
async function repeatsKeysOf(
  s: RequestScope,
  decoded: { body: unknown; keysInText: number },
  bytes: number,
): Promise<boolean> {
  if (!isLargeBody(bytes)) return repeatsKeys(decoded);
  return decoded.keysInText !== (await countObjectKeysInSlices(decoded.body, () => largeBodyTurn(s)));
}

/**
 * Reads and decodes a JSON/YAML object body for create/update, checking kind and apiVersion against the URL.
 * A large body gives the event loop a turn after each pass over it, and before the store's write (see
 * LARGE_BODY_BYTES).
 */
async function readObject(s: RequestScope): Promise<{ obj: KubeObject; large: boolean }> {
  const { rt } = s.request;
  const type = mediaType(s.req.headers['content-type']);
  let body: unknown;
  let bytes = 0;
  let duplicates: string[] = [];
  let yamlError: string | undefined;
  let pruned: readonly string[] | undefined;
  let counted = false;
  const model = rootModel(rt.group, rt.version, rt.kind);
  if (type === PROTOBUF_MEDIA_TYPE) {
    const raw = await readBody(s.req);
    bytes = raw.length;
    if (isLargeBody(bytes)) {
      // Decoded in the worker thread (a 3 MiB ConfigMap took 0.6-1.9 s on the loop), a large map sent back as
      // JSON text and parsed here in slices.
      const wire = await decodeProtobufOffThread(raw);
      if (!wire.ok) throw badRequest(wire.message);
      body = 'json' in wire ? (await parseLargeJsonText(wire.json, () => largeBodyTurn(s))).value : wire.value;
      await largeBodyTurn(s);
    } else body = decodeProtobufObject(raw);
  } else if (!type || type === 'application/json' || type === '*/*') {
    const raw = await readBody(s.req);
    bytes = raw.length;
    // A large body's large maps are parsed in slices, a turn between each (no JSON.parse of a whole map).
    const decoded = isLargeBody(bytes)
      ? await decodeLargeJsonBody(raw, () => largeBodyTurn(s), s.limits.maxJsonDepth)
      : decodeJsonBody(raw, s.limits.maxJsonDepth);
    body = decoded.body;
    if (isLargeBody(bytes)) await largeBodyTurn(s);
    // Repeated keys only make messages, which Ignore drops: the count of the value's keys (a pass over a large
    // body as long as parsing it) is not made for them, as patchFieldValidation does not make it for a patch.
    counted = fieldValidationOf(s.query) !== 'Ignore';
    if (counted && (await repeatsKeysOf(s, decoded, bytes))) {
      if (isLargeBody(bytes)) await largeBodyTurn(s);
      duplicates = duplicateFields(decoded.text);
    }
  } else if (type === 'application/yaml' || type === 'application/x-yaml') {
    const raw = await readBody(s.req);
    bytes = raw.length;
    // One YAML parse gives the value and Go's strict error for repeated keys; a large body is parsed off the loop.
    // Repeated keys are looked for only when field validation reports them (each key kept in a Set).
    const repeats = fieldValidationOf(s.query) !== 'Ignore';
    // The worker's value comes back as JSON text, whose large maps are parsed here in slices with turns between.
    const turn = isLargeBody(bytes) ? () => largeBodyTurn(s) : undefined;
    // A body decoded in the worker has its unknown fields pruned there too (300,000 of them cost the loop half
    // a second to parse and prune).
    const decoded = await decodeRequestBody(raw, type, s.limits.maxJsonDepth, repeats, turn, model);
    body = decoded.value;
    yamlError = decoded.yamlDuplicateError;
    pruned = decoded.pruned;
    // A turn before the checks.
    if (isLargeBody(bytes)) await largeBodyTurn(s);
  } else {
    s.req.resume();
    throw statusError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest(
      `${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: the body must be a JSON object`,
    );
  }
  const obj = body as KubeObject;
  // A large map not met by the count (Ignore, YAML, protobuf) is enumerated here, in slices, not by validation.
  if (isLargeBody(bytes) && !counted) await keepLargeMapsInSlices(obj, () => largeBodyTurn(s));
  const expected = apiVersionOf(rt);
  if (obj.apiVersion !== undefined && obj.apiVersion !== expected) {
    throw badRequest(
      `the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${expected})`,
    );
  }
  if (obj.kind !== undefined && obj.kind !== rt.kind) {
    throw badRequest(
      `${String(obj.kind)} in version "${rt.version}" cannot be handled as a ${rt.kind}: the kind in the data (${String(obj.kind)}) does not match the expected kind (${rt.kind})`,
    );
  }
  if (
    obj.metadata !== undefined &&
    (obj.metadata === null || typeof obj.metadata !== 'object' || Array.isArray(obj.metadata))
  ) {
    throw badRequest(
      `${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: metadata must be an object`,
    );
  }
  // A large body's unknown fields (300,000 of them at its top level) are pruned in slices with turns between;
  // those of a YAML body decoded in the worker were pruned there.
  const strict = pruned
    ? strictErrorsOf(pruned, duplicates)
    : model && isLargeBody(bytes)
      ? strictErrorsOf(await pruneUnknownInSlices(obj, model, () => largeBodyTurn(s)), duplicates)
      : strictErrors(obj, model, duplicates);
  const errors = yamlError ? [yamlError, ...strict] : strict;
  if (errors.length > 0) enforceOnBody(fieldValidationOf(s.query), errors, rt.kind, rt.version, s.res);
  if (model) normalizeTimes(obj, model);
  obj.metadata ??= {};
  const { namespace } = s.request;
  if (rt.namespaced) {
    if (!obj.metadata.namespace) obj.metadata.namespace = namespace;
    else if (obj.metadata.namespace !== namespace)
      throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  const large = isLargeBody(bytes);
  if (large) await largeBodyTurn(s);
  return { obj: rt.view ? rt.view.toStorage(obj) : obj, large };
}

type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/**
 * ValidateCreate/Update/PatchOptions: `dryRun` may only be "All" and `fieldValidation` one of the four
 * directives, else 422 `<Kind>Options.meta.k8s.io "" is invalid`. Returns whether this is a dry run.
 */
function writeOptions(kind: OptionsKind, dryRun: string[], fieldValidation: string | null): boolean {
  const causes: StatusCause[] = [];
  if (!dryRun.every((v) => v === 'All')) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'dryRun',
      message: `Unsupported value: []string{${dryRun.map((v) => JSON.stringify(v)).join(', ')}}: supported values: "All"`,
    });
  }
  if (fieldValidation !== null && !['', 'Ignore', 'Warn', 'Strict'].includes(fieldValidation)) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'fieldValidation',
      message: `Unsupported value: ${JSON.stringify(fieldValidation)}: supported values: "", "Ignore", "Strict", "Warn"`,
    });
  }
  if (causes.length) throw invalid({ group: 'meta.k8s.io', resource: kind.toLowerCase(), kind }, '', causes);
  return dryRun.length > 0;
}

function queryWriteOptions(s: RequestScope, kind: OptionsKind): boolean {
  return writeOptions(kind, s.query.getAll('dryRun'), s.query.get('fieldValidation'));
}

export async function handleCreate(s: RequestScope): Promise<void> {
  const { rt, namespace } = s.request;
  if (rt.namespaced && namespace === undefined) throw methodNotRouted();
  const dryRun = queryWriteOptions(s, 'CreateOptions');
  const { obj, large } = await readObject(s);
  const fault = obj.metadata.name
    ? s.faults?.decideCreate({ verb: 'create', resource: rt.resource, namespace, name: obj.metadata.name })
    : undefined;
  if (fault?.latencyMs) await new Promise((r) => setTimeout(r, fault.latencyMs));
  if (fault?.error) throw fault.error;
  const opts = { user: s.client, dryRun };
  // A large object gives the loop a turn between its validation and its commit.
  const entry = large
    ? await s.store.createEntryAfterTurn(storageResource(rt), obj, opts, () => largeBodyTurn(s))
    : s.store.createEntry(storageResource(rt), obj, opts);
  // Answered only once the transaction holding the write has committed (store.ts durable()).
  await s.store.durable();
  sendObject(s, 201, entry);
}

export async function handleUpdate(s: RequestScope): Promise<void> {
  const { rt, name, subresource } = s.request;
  const dryRun = queryWriteOptions(s, 'UpdateOptions');
  const { obj } = await readObject(s);
  if (obj.metadata.name !== name)
    throw badRequest(
      `the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${name})`,
    );
  const sub = subresource === 'status' ? 'status' : undefined;
  const { entry, created } = s.store.updateEntry(storageResource(rt), obj, {
    subresource: sub,
    user: s.client,
    dryRun,
  });
  await s.store.durable();
  sendObject(s, created ? 201 : 200, entry);
}

const PATCH_TYPES: Record<string, PatchType> = {
  'application/json-patch+json': 'json',
  'application/merge-patch+json': 'merge',
  'application/strategic-merge-patch+json': 'strategic',
};

export async function handlePatch(s: RequestScope): Promise<void> {
  const { rt, namespace, name, subresource } = s.request;
  const type = PATCH_TYPES[mediaType(s.req.headers['content-type'])];
  if (!type) {
    s.req.resume();
    throw unsupportedMediaType();
  }
  if (type === 'strategic' && rt.customSchema) {
    // A kind with its own schema is a custom resource on a real cluster: no strategic merge patch (no Go struct).
    s.req.resume();
    throw statusError(
      415,
      'UnsupportedMediaType',
      'the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml',
    );
  }
  const dryRun = queryWriteOptions(s, 'PatchOptions');
  if (queryOptionalBool(s.query, 'force') !== undefined) {
    s.req.resume();
    throw invalid({ group: 'meta.k8s.io', resource: 'patchoptions', kind: 'PatchOptions' }, '', [
      { reason: 'FieldValueForbidden', field: 'force', message: 'Forbidden: may not be specified for non-apply patch' },
    ]);
  }
  const raw = await readBody(s.req);
  const large = isLargeBody(raw.length);
  const { patch, keysInText } = decodePatchBody(raw, s.limits.maxJsonDepth);
  if (large) await largeBodyTurn(s);
  const model = rootModel(rt.group, rt.version, rt.kind);
  const opts: PatchOptions = {
    subresource: subresource === 'status' ? 'status' : undefined,
    user: s.client,
    view: rt.view,
    dryRun,
    maxCopyBytes: s.limits.maxPatchCopyBytes,
    model,
    inspect: patchFieldValidation(s.query, s.res, type, raw, { patch, keysInText }, model),
  };
  const resource = storageResource(rt);
  // A large patch gives the loop turns after decoding it and between applying it and writing the result.
  const entry = large
    ? await s.store.patchEntryAfterTurn(resource, namespace, name!, type, patch, opts, () => largeBodyTurn(s))
    : s.store.patchEntry(resource, namespace, name!, type, patch, opts);
  await s.store.durable();
  sendObject(s, 200, entry);
}

interface DeleteOptionsBody {
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun?: string[];
  propagationPolicy?: string;
  orphanDependents?: boolean;
}

async function readDeleteOptions(s: RequestScope): Promise<DeleteOptionsBody> {
  const raw = await readBody(s.req);
  let opts: DeleteOptionsBody = {};
  if (raw.length > 0) {
    const contentType = s.req.headers['content-type'] ?? 'application/json';
    const body = (await decodeRequestBody(raw, contentType, s.limits.maxJsonDepth)).value;
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) opts = body as DeleteOptionsBody;
    else
      throw badRequest(
        'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: the body must be a JSON object',
      );
  }
  if (raw.length === 0) {
    // Without a body DeleteOptions come from the query, through the same conversions as every parameter.
    const qp = s.query.get('propagationPolicy');
    if (qp !== null) opts.propagationPolicy = qp;
    queryInt64(s.query, 'gracePeriodSeconds');
    const orphan = queryOptionalBool(s.query, 'orphanDependents');
    if (orphan !== undefined) opts.orphanDependents = orphan;
  }
  const causes = [];
  if (opts.propagationPolicy !== undefined && opts.orphanDependents !== undefined) {
    causes.push({
      reason: 'FieldValueInvalid',
      field: 'propagationPolicy',
      message:
        'Invalid value: "' + opts.propagationPolicy + '": orphanDependents and deletionPropagation cannot be both set',
    });
  }
  if (
    opts.propagationPolicy !== undefined &&
    !['Orphan', 'Background', 'Foreground'].includes(opts.propagationPolicy)
  ) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'propagationPolicy',
      message: `Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"`,
    });
  }
  if (causes.length)
    throw invalid({ group: 'meta.k8s.io', resource: 'deleteoptions', kind: 'DeleteOptions' }, '', causes);
  return opts;
}

/** The validated DeleteOptions the store acts on: preconditions and what happens to dependents. */
function storeDeleteOptions(opts: DeleteOptionsBody): DeleteOptions {
  return {
    preconditions: opts.preconditions,
    propagationPolicy: opts.propagationPolicy as PropagationPolicy | undefined,
    orphanDependents: opts.orphanDependents,
  };
}

export async function handleDelete(s: RequestScope): Promise<void> {
  const { rt, namespace, name } = s.request;
  const opts = await readDeleteOptions(s);
  const dryRun = writeOptions(
    'DeleteOptions',
    [...s.query.getAll('dryRun'), ...(Array.isArray(opts.dryRun) ? opts.dryRun : [])],
    null,
  );
  const { entry, deleted } = s.store.deleteEntry(storageResource(rt), namespace, name!, {
    ...storeDeleteOptions(opts),
    user: s.client,
    dryRun,
  });
  await s.store.durable();
  if (deleted && !rt.returnDeletedObject) {
    const details: Record<string, string> = { name: name! };
    if (rt.group) details.group = rt.group;
    details.kind = rt.resource;
    if (entry.obj.metadata.uid) details.uid = entry.obj.metadata.uid;
    sendJson(
      s.res,
      200,
      JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }),
    );
    return;
  }
  // handlers/delete.go: 202 only for a legacy orphanDependents=false that did not delete at once.
  sendObject(s, !deleted && opts.orphanDependents === false ? 202 : 200, entry);
}

export async function handleDeleteCollection(s: RequestScope): Promise<void> {
  const { rt, namespace } = s.request;
  const opts = await readDeleteOptions(s);
  const dryRun = writeOptions(
    'DeleteOptions',
    [...s.query.getAll('dryRun'), ...(Array.isArray(opts.dryRun) ? opts.dryRun : [])],
    null,
  );
  const resource = storageResource(rt);
  const filter = s.store.filter(resource, {
    namespace,
    labelSelector: s.query.get('labelSelector') ?? undefined,
    fieldSelector: s.query.get('fieldSelector') ?? undefined,
  });
  const items: StoredEntry[] = [];
  for (const e of s.store.listEntries(resource, filter).entries) {
    try {
      const r = s.store.deleteEntry(resource, e.obj.metadata.namespace, e.obj.metadata.name!, {
        ...storeDeleteOptions(opts),
        user: s.client,
        dryRun,
      });
      items.push(r.entry);
    } catch (err) {
      // Deletion is not atomic: objects that vanished meanwhile are skipped, like kube-apiserver does.
      if (!(err instanceof ClusterApiError && err.code === 404)) throw err;
    }
  }
  await s.store.durable();
  sendBytes(s.res, 200, listBody(rt, `"resourceVersion":"${s.store.resourceVersion}"`, items));
}
