// JSON Patch (RFC 6902, with the behaviour of evanphx/json-patch that kube-apiserver uses) and JSON Merge Patch
// (RFC 7386); the strategic merge patch lives in strategic-merge-patch.ts and is re-exported here so the API
// layer has one import. Every function is pure: inputs are never mutated, results are fresh objects.

import { checkJsonValue, getOwn, JsonTooLargeError, MAX_BODY_BYTES, setOwn } from '../common/json-safety.ts';
import { isJsonObject } from '../../types/json.ts';
import { PatchError, jsonEqual } from './patch-error.ts';

/** Default accumulated copy size of one JSON patch: kube-apiserver's request body limit (3 MiB). */
export const DEFAULT_MAX_COPY_BYTES = MAX_BODY_BYTES;

/** kube-apiserver's limit on operations in one JSON patch (413 beyond it). */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;

type Container = Record<string, unknown> | unknown[];

/** Splits a JSON pointer into unescaped reference tokens ("" is the whole document). */
function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError(`invalid JSON pointer: ${JSON.stringify(pointer)}`, 422);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Array index per RFC 6901: "0" or no leading zeros; `-` only where the caller allows it. */
function arrayIndex(token: string, length: number, allowEnd: boolean): number {
  if (allowEnd && token === '-') return length;
  if (!/^(0|[1-9]\d*)$/.test(token))
    throw new PatchError(`Unable to access invalid index: ${token}: invalid index referenced`, 422);
  const i = Number(token);
  if (i > length || (!allowEnd && i === length))
    throw new PatchError(`Unable to access invalid index: ${i}: invalid index referenced`, 422);
  return i;
}

/** Walks to the container holding the last token; undefined when some ancestor does not exist. */
function findParent(doc: unknown, tokens: string[]): Container | undefined {
  let cur: unknown = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const t = tokens[i];
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9]\d*)$/.test(t) || Number(t) >= cur.length) return undefined;
      cur = cur[Number(t)];
    } else if (isJsonObject(cur)) {
      if (!Object.prototype.hasOwnProperty.call(cur, t)) return undefined;
      cur = cur[t];
    } else {
      return undefined;
    }
  }
  return Array.isArray(cur) || isJsonObject(cur) ? cur : undefined;
}

const has = (o: Record<string, unknown>, k: string) => Object.prototype.hasOwnProperty.call(o, k);

function getValue(doc: unknown, path: string): { found: boolean; value?: unknown } {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return { found: true, value: doc };
  const parent = findParent(doc, tokens);
  const key = tokens[tokens.length - 1];
  if (parent === undefined) return { found: false };
  if (Array.isArray(parent)) {
    if (!/^(0|[1-9]\d*)$/.test(key) || Number(key) >= parent.length) return { found: false };
    return { found: true, value: parent[Number(key)] };
  }
  return has(parent, key) ? { found: true, value: parent[key] } : { found: false };
}

/** The copy budget of one JSON patch (evanphx/json-patch's AccumulatedCopySizeLimit). */
interface CopyBudget {
  limit: number;
  used: number;
}

/** Charges the serialized size of a copied value; stops measuring as soon as the budget is spent. */
function chargeCopy(budget: CopyBudget, value: unknown): void {
  try {
    budget.used += checkJsonValue(value, { maxBytes: budget.limit - budget.used, maxDepth: Infinity });
  } catch (err) {
    if (!(err instanceof JsonTooLargeError)) throw err;
    throw new PatchError(
      `Unable to complete the copy, the accumulated size increase of copy exceeds the limit ${budget.limit}`,
      422,
    );
  }
}

/** Applies one operation to `doc` (already a private copy) and returns the new document root. */
function applyOperation(doc: unknown, op: Record<string, unknown>, budget: CopyBudget): unknown {
  const kind = op.op;
  const path = op.path;
  if (typeof path !== 'string') throw new PatchError(`operation missing path: ${JSON.stringify(op)}`, 422);
  const needValue = kind === 'add' || kind === 'replace' || kind === 'test';
  if (needValue && !has(op, 'value')) throw new PatchError(`${String(kind)} operation missing value: ${path}`, 422);
  const needFrom = kind === 'move' || kind === 'copy';
  if (needFrom && typeof op.from !== 'string')
    throw new PatchError(`${String(kind)} operation missing from: ${path}`, 422);

  switch (kind) {
    case 'add':
      return add(doc, path, structuredClone(op.value), 'add');
    case 'remove':
      return remove(doc, path).doc;
    case 'replace': {
      const tokens = parsePointer(path);
      if (tokens.length === 0) return structuredClone(op.value);
      const parent = findParent(doc, tokens);
      const key = tokens[tokens.length - 1];
      if (parent === undefined || (!Array.isArray(parent) && !has(parent, key))) {
        throw new PatchError(`replace operation does not apply: doc is missing key: ${path}: missing value`, 422);
      }
      if (Array.isArray(parent)) parent[arrayIndex(key, parent.length, false)] = structuredClone(op.value);
      else setOwn(parent, key, structuredClone(op.value));
      return doc;
    }
    case 'move': {
      const from = op.from as string;
      if (path !== from && path.startsWith(`${from}/`)) {
        throw new PatchError(`move operation does not apply: cannot move ${from} into its own child ${path}`, 422);
      }
      const got = getValue(doc, from);
      if (!got.found)
        throw new PatchError(`move operation does not apply: doc is missing from path: ${from}: missing value`, 422);
      const removed = remove(doc, from);
      return add(removed.doc, path, removed.value, 'move');
    }
    case 'copy': {
      const from = op.from as string;
      const got = getValue(doc, from);
      if (!got.found)
        throw new PatchError(`copy operation does not apply: doc is missing from path: ${from}: missing value`, 422);
      chargeCopy(budget, got.value);
      return add(doc, path, structuredClone(got.value), 'copy');
    }
    case 'test': {
      const got = getValue(doc, path);
      const actual = got.found ? got.value : undefined;
      // evanphx/json-patch: a missing or null value passes a test for null.
      const ok = actual === undefined || actual === null ? op.value === null : jsonEqual(actual, op.value);
      if (!ok) throw new PatchError(`testing value ${path} failed: test failed`, 422);
      return doc;
    }
    default:
      throw new PatchError(`Unexpected kind: ${String(kind)}`, 422);
  }
}

function add(doc: unknown, path: string, value: unknown, opName: string): unknown {
  const tokens = parsePointer(path);
  if (tokens.length === 0) return value;
  const parent = findParent(doc, tokens);
  if (parent === undefined)
    throw new PatchError(
      `${opName} operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
      422,
    );
  const key = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(key, parent.length, true), 0, value);
  else setOwn(parent, key, value);
  return doc;
}

function remove(doc: unknown, path: string): { doc: unknown; value: unknown } {
  const tokens = parsePointer(path);
  if (tokens.length === 0)
    throw new PatchError('remove operation does not apply: cannot remove the whole document', 422);
  const parent = findParent(doc, tokens);
  if (parent === undefined)
    throw new PatchError(
      `remove operation does not apply: doc is missing path: ${JSON.stringify(path)}: missing value`,
      422,
    );
  const key = tokens[tokens.length - 1];
  if (Array.isArray(parent)) {
    const [value] = parent.splice(arrayIndex(key, parent.length, false), 1);
    return { doc, value };
  }
  if (!has(parent, key)) {
    throw new PatchError(
      `error in remove for path: '${path}': Unable to remove nonexistent key: ${key}: missing value`,
      422,
    );
  }
  const value = parent[key];
  delete parent[key];
  return { doc, value };
}

/**
 * Applies an RFC 6902 JSON patch (add, remove, replace, move, copy, test; `~0`/`~1` escapes; `-` appends).
 * Operations apply in order to a private copy; the first failure aborts the whole patch.
 * `maxCopyBytes` bounds the total serialized size of the values `copy` operations duplicate (kube-apiserver
 * sets it to the request body limit), so a small patch cannot copy a value into itself until memory runs out.
 * @throws PatchError 400 when `ops` is not an array of objects, 413 beyond 10,000 operations,
 *   422 when an operation does not apply (failed test, missing path, bad index, unknown op) or the copies
 *   exceed `maxCopyBytes`.
 */
export function applyJsonPatch<T>(doc: T, ops: unknown, maxCopyBytes = DEFAULT_MAX_COPY_BYTES): T {
  if (!Array.isArray(ops))
    throw new PatchError(
      'json: cannot unmarshal into Go value of type jsonpatch.Patch: the patch must be a JSON array',
      400,
    );
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new PatchError(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
      413,
    );
  }
  for (const op of ops) {
    if (!isJsonObject(op))
      throw new PatchError(
        'json: cannot unmarshal into Go value of type jsonpatch.Operation: each operation must be a JSON object',
        400,
      );
  }
  let out: unknown = structuredClone(doc);
  const budget: CopyBudget = { limit: maxCopyBytes, used: 0 };
  for (const op of ops as Array<Record<string, unknown>>) out = applyOperation(out, op, budget);
  return out as T;
}

function mergePatchValue(target: unknown, patch: unknown): unknown {
  // A scalar is immutable: shared as it is (a clone per key made a 300,000-key patch cost seconds).
  if (patch === null || typeof patch !== 'object') return patch;
  if (!isJsonObject(patch)) return structuredClone(patch);
  const out: Record<string, unknown> = isJsonObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else setOwn(out, k, mergePatchValue(getOwn(out, k), v));
  }
  return out;
}

/**
 * Applies an RFC 7386 JSON merge patch: objects merge recursively, `null` deletes a key, anything else
 * (arrays included) replaces. The patch must be a JSON object, as for every kube object.
 * @throws PatchError 400 when the patch is not a JSON object.
 */
export function applyMergePatch<T>(doc: T, patch: unknown): T {
  if (!isJsonObject(patch)) throw new PatchError('Invalid JSON Patch', 400);
  return mergePatchValue(structuredClone(doc), patch) as T;
}
