// The REST verbs of the API server over the store: get, list (limit/continue, selectors, resourceVersion
// rules), create, update, patch, delete and deletecollection, including the events.k8s.io view conversion
// and server-side Tables. Watch lives in watch-stream.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KubeObject, StatusCause } from '../types/k8s.ts';
import {
  ApiError,
  badRequest,
  expired,
  invalid,
  methodNotRouted,
  notFound,
  plainServerError,
  serverTimeout,
  statusError,
  unsupportedMediaType,
} from './errors.ts';
import { decodeBody, mediaType, readBody, sendJson, type Negotiated } from './http-io.ts';
import type { Faults } from './faults.ts';
import { decodeProtobufObject, PROTOBUF_MEDIA_TYPE } from './protobuf.ts';
import { apiVersionOf, type ResourceType } from './registry.ts';
import type { ResourceRequest } from './routing.ts';
import type { ClusterStore, PatchType, StoredEntry } from './store.ts';
import { toTable, type IncludeObject } from './tables.ts';

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

function objectJson(rt: ResourceType, e: StoredEntry): string {
  return rt.view ? JSON.stringify(rt.view.fromStorage(e.obj)) : e.json;
}

export function includeObjectParam(query: URLSearchParams): IncludeObject {
  const v = query.get('includeObject');
  return v === 'None' || v === 'Object' ? v : 'Metadata';
}

function sendObject(s: RequestScope, code: number, e: StoredEntry): void {
  const { rt } = s.request;
  if (s.negotiated.table) {
    const table = toTable(rt, [viewObject(rt, e)], { resourceVersion: String(e.rv) }, includeObjectParam(s.query), s.now());
    sendJson(s.res, code, JSON.stringify(table));
  } else {
    sendJson(s.res, code, objectJson(rt, e));
  }
}

/**
 * The resourceVersion of a get/list. kube-apiserver hands the storage layer's InvalidError back unconverted
 * (storeerr.InterpretGetError/InterpretListError do not map it), so a garbage value is a plain 500.
 */
function readResourceVersion(rv: string | undefined): number {
  if (rv === undefined || rv === '') return 0;
  if (!/^\d+$/.test(rv)) throw plainServerError(`resourceVersion: Invalid value: "${rv}": strconv.ParseUint: parsing "${rv}": invalid syntax`);
  return Number(rv);
}

export async function handleGet(s: RequestScope): Promise<void> {
  const { rt, namespace, name } = s.request;
  readResourceVersion(s.query.get('resourceVersion') ?? undefined);
  const e = s.store.getEntry(storageResource(rt), namespace, name!);
  if (!e) throw notFound(rt, name!);
  sendObject(s, 200, e);
}

interface ContinueToken {
  rv: number;
  start: string;
}

function encodeContinue(rv: number, lastKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` })).toString('base64url');
}

function decodeContinue(token: string): ContinueToken {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { v?: unknown; rv?: unknown; start?: unknown };
    if (parsed.v !== 'meta.k8s.io/v1' || typeof parsed.rv !== 'number' || typeof parsed.start !== 'string' || !parsed.start.endsWith('\u0000')) {
      throw new Error('invalid token');
    }
    return { rv: parsed.rv, start: parsed.start.slice(0, -1) };
  } catch {
    throw badRequest(`continue key is not valid: the continue token "${token}" could not be decoded`);
  }
}

export async function handleList(s: RequestScope): Promise<void> {
  const { rt, namespace } = s.request;
  const q = s.query;
  const rvParam = q.get('resourceVersion') ?? undefined;
  const rvMatch = q.get('resourceVersionMatch') ?? undefined;
  // ValidateListOptions (apimachinery internalversion/validation): every violation is one cause of a single 422.
  const causes: StatusCause[] = [];
  const forbid = (field: string, message: string) => causes.push({ reason: 'FieldValueForbidden', message: `Forbidden: ${message}`, field });
  if (rvMatch) {
    if (!rvParam) forbid('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided');
    if (q.get('continue')) forbid('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided');
    if (rvMatch !== 'NotOlderThan' && rvMatch !== 'Exact') {
      causes.push({ reason: 'FieldValueNotSupported', message: `Unsupported value: "${rvMatch}": supported values: "Exact", "NotOlderThan", ""`, field: 'resourceVersionMatch' });
    }
    if (rvMatch === 'Exact' && rvParam === '0') forbid('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"');
  }
  if (q.get('sendInitialEvents') !== null) forbid('sendInitialEvents', 'sendInitialEvents is forbidden for list');
  if (causes.length) throw invalid({ group: 'meta.k8s.io', resource: 'listoptions', kind: 'ListOptions' }, '', causes);
  const requestedRv = readResourceVersion(rvParam);
  const filter = s.store.filter(storageResource(rt), {
    namespace,
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
  });
  const current = s.store.resourceVersion;
  if (requestedRv > current) {
    throw serverTimeout(`Timeout: Too large resource version: ${requestedRv}, current: ${current}`, {
      retryAfterSeconds: 1,
      causes: [{ reason: 'ResourceVersionTooLarge', message: 'Too large resource version' }],
    });
  }
  let limit = Number(q.get('limit') ?? '0');
  if (!Number.isInteger(limit) || limit < 0) limit = 0;
  // resourceVersion=0 means "any": served from cache, and the limit is ignored like kube-apiserver does.
  if (rvParam === '0') limit = 0;
  const exact = rvMatch === 'Exact' || (rvParam !== undefined && rvParam !== '0' && limit > 0 && !rvMatch);
  if (exact && requestedRv !== current && requestedRv !== 0) {
    throw expired('The resourceVersion for the provided list is too old.');
  }
  const cont = q.get('continue');
  let listRv = current;
  let startAfterKey: string | undefined;
  if (cont) {
    const token = decodeContinue(cont);
    listRv = token.rv;
    startAfterKey = token.start;
  }
  const page = s.store.listEntries(storageResource(rt), filter, { limit, startAfterKey });
  const continueToken = page.nextKey !== undefined ? encodeContinue(listRv, page.nextKey) : undefined;
  if (s.negotiated.table) {
    const table = toTable(
      rt,
      page.entries.map((e) => viewObject(rt, e)),
      { resourceVersion: String(listRv), continue: continueToken },
      includeObjectParam(q),
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
  const items = page.entries.map((e) => objectJson(rt, e)).join(',');
  sendJson(s.res, 200, `{"kind":"${rt.listKind}","apiVersion":"${apiVersionOf(rt)}","metadata":{${meta}},"items":[${items}]}`);
}

/** Reads and decodes a JSON/YAML object body for create/update, checking kind and apiVersion against the URL. */
async function readObject(s: RequestScope): Promise<KubeObject> {
  const { rt } = s.request;
  const type = mediaType(s.req.headers['content-type']);
  let body: unknown;
  if (type === PROTOBUF_MEDIA_TYPE) {
    body = decodeProtobufObject(await readBody(s.req));
  } else if (!type || type === 'application/json' || type === 'application/yaml' || type === 'application/x-yaml' || type === '*/*') {
    body = decodeBody(await readBody(s.req), type);
  } else {
    s.req.resume();
    throw statusError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml`,
    );
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest(`${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: the body must be a JSON object`);
  }
  const obj = body as KubeObject;
  const expected = apiVersionOf(rt);
  if (obj.apiVersion !== undefined && obj.apiVersion !== expected) {
    throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${expected})`);
  }
  if (obj.kind !== undefined && obj.kind !== rt.kind) {
    throw badRequest(`${String(obj.kind)} in version "${rt.version}" cannot be handled as a ${rt.kind}: the kind in the data (${String(obj.kind)}) does not match the expected kind (${rt.kind})`);
  }
  if (obj.metadata !== undefined && (obj.metadata === null || typeof obj.metadata !== 'object' || Array.isArray(obj.metadata))) {
    throw badRequest(`${rt.kind} in version "${rt.version}" cannot be handled as a ${rt.kind}: metadata must be an object`);
  }
  obj.metadata ??= {};
  const { namespace } = s.request;
  if (rt.namespaced) {
    if (!obj.metadata.namespace) obj.metadata.namespace = namespace;
    else if (obj.metadata.namespace !== namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  return rt.view ? rt.view.toStorage(obj) : obj;
}

type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/**
 * ValidateCreate/Update/PatchOptions: `dryRun` may only be "All" and `fieldValidation` one of the four
 * directives, else 422 `<Kind>Options.meta.k8s.io "" is invalid`. Returns whether this is a dry run.
 */
function writeOptions(kind: OptionsKind, dryRun: string[], fieldValidation: string | null): boolean {
  const causes: StatusCause[] = [];
  if (!dryRun.every((v) => v === 'All')) {
    causes.push({ reason: 'FieldValueNotSupported', field: 'dryRun', message: `Unsupported value: []string{${dryRun.map((v) => JSON.stringify(v)).join(', ')}}: supported values: "All"` });
  }
  if (fieldValidation !== null && !['', 'Ignore', 'Warn', 'Strict'].includes(fieldValidation)) {
    causes.push({ reason: 'FieldValueNotSupported', field: 'fieldValidation', message: `Unsupported value: ${JSON.stringify(fieldValidation)}: supported values: "", "Ignore", "Strict", "Warn"` });
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
  const obj = await readObject(s);
  const fault = obj.metadata.name ? s.faults?.decideCreate({ verb: 'create', resource: rt.resource, namespace, name: obj.metadata.name }) : undefined;
  if (fault?.latencyMs) await new Promise((r) => setTimeout(r, fault.latencyMs));
  if (fault?.error) throw fault.error;
  sendObject(s, 201, s.store.createEntry(storageResource(rt), obj, { user: s.client, dryRun }));
}

export async function handleUpdate(s: RequestScope): Promise<void> {
  const { rt, name, subresource } = s.request;
  const dryRun = queryWriteOptions(s, 'UpdateOptions');
  const obj = await readObject(s);
  if (obj.metadata.name !== name) throw badRequest(`the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${name})`);
  const sub = subresource === 'status' ? 'status' : undefined;
  const { entry, created } = s.store.updateEntry(storageResource(rt), obj, { subresource: sub, user: s.client, dryRun });
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
  const dryRun = queryWriteOptions(s, 'PatchOptions');
  const raw = await readBody(s.req);
  let patch: unknown;
  try {
    patch = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw badRequest(`error decoding patch: ${(err as Error).message}`);
  }
  const entry = s.store.patchEntry(storageResource(rt), namespace, name!, type, patch, {
    subresource: subresource === 'status' ? 'status' : undefined,
    user: s.client,
    view: rt.view,
    dryRun,
  });
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
    const body = decodeBody(raw, s.req.headers['content-type'] ?? 'application/json');
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) opts = body as DeleteOptionsBody;
    else throw badRequest('DeleteOptions in version "v1" cannot be handled as a DeleteOptions: the body must be a JSON object');
  }
  const qp = s.query.get('propagationPolicy');
  if (qp && !opts.propagationPolicy) opts.propagationPolicy = qp;
  const causes = [];
  if (opts.propagationPolicy !== undefined && opts.orphanDependents !== undefined) {
    causes.push({ reason: 'FieldValueInvalid', field: 'propagationPolicy', message: 'Invalid value: "' + opts.propagationPolicy + '": orphanDependents and deletionPropagation cannot be both set' });
  }
  if (opts.propagationPolicy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(opts.propagationPolicy)) {
    causes.push({ reason: 'FieldValueNotSupported', field: 'propagationPolicy', message: `Unsupported value: "${opts.propagationPolicy}": supported values: "Foreground", "Background", "Orphan"` });
  }
  if (causes.length) throw invalid({ group: 'meta.k8s.io', resource: 'deleteoptions', kind: 'DeleteOptions' }, '', causes);
  return opts;
}

export async function handleDelete(s: RequestScope): Promise<void> {
  const { rt, namespace, name } = s.request;
  const opts = await readDeleteOptions(s);
  // Propagation policies are all treated as Background: there is no garbage collector to honour orphan/foreground.
  const dryRun = writeOptions('DeleteOptions', [...s.query.getAll('dryRun'), ...(Array.isArray(opts.dryRun) ? opts.dryRun : [])], null);
  const { entry, deleted } = s.store.deleteEntry(storageResource(rt), namespace, name!, { preconditions: opts.preconditions, user: s.client, dryRun });
  if (deleted && !rt.returnDeletedObject) {
    const details: Record<string, string> = { name: name! };
    if (rt.group) details.group = rt.group;
    details.kind = rt.resource;
    if (entry.obj.metadata.uid) details.uid = entry.obj.metadata.uid;
    sendJson(s.res, 200, JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }));
    return;
  }
  sendObject(s, 200, entry);
}

export async function handleDeleteCollection(s: RequestScope): Promise<void> {
  const { rt, namespace } = s.request;
  const opts = await readDeleteOptions(s);
  const dryRun = writeOptions('DeleteOptions', [...s.query.getAll('dryRun'), ...(Array.isArray(opts.dryRun) ? opts.dryRun : [])], null);
  const resource = storageResource(rt);
  const filter = s.store.filter(resource, {
    namespace,
    labelSelector: s.query.get('labelSelector') ?? undefined,
    fieldSelector: s.query.get('fieldSelector') ?? undefined,
  });
  const items: string[] = [];
  for (const e of s.store.listEntries(resource, filter).entries) {
    try {
      const r = s.store.deleteEntry(resource, e.obj.metadata.namespace, e.obj.metadata.name!, { preconditions: opts.preconditions, user: s.client, dryRun });
      items.push(objectJson(rt, r.entry));
    } catch (err) {
      // Deletion is not atomic: objects that vanished meanwhile are skipped, like kube-apiserver does.
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
  sendJson(s.res, 200, `{"kind":"${rt.listKind}","apiVersion":"${apiVersionOf(rt)}","metadata":{"resourceVersion":"${s.store.resourceVersion}"},"items":[${items.join(',')}]}`);
}
