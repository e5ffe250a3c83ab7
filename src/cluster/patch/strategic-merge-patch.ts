// Kubernetes strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch, as the API server applies it:
// MergeParallelList + IgnoreUnmatchedNulls). Merge lists and their keys come from the schema tables generated
// from k8s.io/api's struct tags (schema.ts); every other list is replaced and every map merged.

import { getOwn, setOwn } from '../common/json-safety.ts';
import { isJsonObject } from '../../types/json.ts';
import { PatchError } from './patch-error.ts';
import { patchListStrategy } from '../schema/schema.ts';

type JsonMap = Record<string, unknown>;

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';
const SET_ELEMENT_ORDER = '$setElementOrder/';

/** How a list field merges: `mergeKey` for lists of maps, none for a set of scalars. */
interface ListStrategy {
  mergeKey?: string;
}

/**
 * Merge strategy of the list at `path`, or undefined for a list that a patch replaces wholesale. `path[0]` is the
 * schema model of the patched document; the rest are field names (list indices omitted). The strategies are the
 * `patchStrategy:"merge"` / `patchMergeKey` struct tags of k8s.io/api, from the generated schema tables.
 */
export function listStrategyAt(path: readonly string[]): ListStrategy | undefined {
  return path[0] ? patchListStrategy(path[0], path.slice(1)) : undefined;
}

const bad = (msg: string) => new PatchError(msg, 400);

/** Removes null values from maps nested in a value that has no counterpart in the original (IgnoreUnmatchedNulls). */
function discardNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(discardNulls);
  if (!isJsonObject(v)) return v;
  const out: JsonMap = {};
  for (const [k, x] of Object.entries(v)) if (x !== null) setOwn(out, k, discardNulls(x));
  return out;
}

function kindOf(v: unknown): 'map' | 'list' | 'scalar' {
  return Array.isArray(v) ? 'list' : isJsonObject(v) ? 'map' : 'scalar';
}

function mergeMap(original: JsonMap, patch: JsonMap, path: string[]): JsonMap {
  if (DIRECTIVE in patch) {
    const d = patch[DIRECTIVE];
    if (d === 'replace') {
      const rest = { ...patch };
      delete rest[DIRECTIVE];
      return mergeMap({}, rest, path);
    }
    if (d === 'delete') return {};
    throw bad(`Unexpected patch type: ${JSON.stringify(d)}`);
  }
  let out: JsonMap = { ...original };
  const todo: JsonMap = { ...patch };

  if (RETAIN_KEYS in todo) {
    const retain = todo[RETAIN_KEYS];
    delete todo[RETAIN_KEYS];
    if (!Array.isArray(retain)) throw bad('invalid patch: the value of $retainKeys must be a list');
    const keep = new Set(retain);
    for (const [k, v] of Object.entries(todo)) {
      if (v === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) continue;
      if (!keep.has(k)) throw bad("doesn't match $retainKeys list: the patch has keys that are not in $retainKeys");
    }
    // Rebuilt rather than deleted from: deleting most keys of a large object one by one is not linear in V8.
    const retained: JsonMap = {};
    for (const k of Object.keys(out)) if (keep.has(k)) setOwn(retained, k, out[k]);
    out = retained;
  }

  // $setElementOrder first: it consumes its list from the patch.
  for (const key of Object.keys(todo)) {
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    const order = todo[key];
    delete todo[key];
    const field = key.slice(SET_ELEMENT_ORDER.length);
    if (!Array.isArray(order) || field === '')
      throw bad('invalid patch: $setElementOrder must be followed by a field name and carry a list');
    const childPath = [...path, field];
    const strategy = listStrategyAt(childPath);
    const origList = getOwn(out, field);
    const patchList = getOwn(todo, field);
    if (origList !== undefined && !Array.isArray(origList)) throw bad(`invalid patch: ${field} is not a list`);
    if (patchList !== undefined && !Array.isArray(patchList)) throw bad(`invalid patch: ${field} is not a list`);
    if (origList === undefined && patchList === undefined) continue;
    let merged: unknown[];
    if (origList !== undefined && patchList !== undefined) merged = mergeList(origList, patchList, childPath, false);
    else merged = origList ?? stripListDirectives(patchList as unknown[], strategy);
    setOwn(out, field, normalizeOrder(merged, order, origList ?? [], strategy?.mergeKey));
    delete todo[field];
  }

  for (const [rawKey, patchV] of Object.entries(todo)) {
    let key = rawKey;
    let isDeleteList = false;
    if (rawKey.startsWith(DELETE_FROM_PRIMITIVE_LIST)) {
      key = rawKey.slice(DELETE_FROM_PRIMITIVE_LIST.length);
      if (key === '') throw bad('invalid patch: $deleteFromPrimitiveList must be followed by a field name');
      // mergepatch.ErrBadPatchFormatForPrimitiveList: the directive's value must be a list (null is ignored below).
      if (patchV !== null && !Array.isArray(patchV)) throw bad('invalid patch format of primitive list');
      isDeleteList = true;
    }
    if (patchV === null) {
      if (!isDeleteList) delete out[key];
      continue;
    }
    const childPath = [...path, key];
    // Own properties only: `__proto__`, `constructor` and `prototype` are plain keys here.
    const origV = getOwn(out, key);
    if (origV === undefined) {
      if (isDeleteList) continue;
      setOwn(out, key, fresh(patchV, childPath));
      continue;
    }
    const kind = kindOf(origV);
    if (kind !== kindOf(patchV)) {
      if (!isDeleteList) setOwn(out, key, fresh(patchV, childPath));
      continue;
    }
    if (kind === 'map') setOwn(out, key, mergeMap(origV as JsonMap, patchV as JsonMap, childPath));
    else if (kind === 'list')
      setOwn(out, key, mergeList(origV as unknown[], patchV as unknown[], childPath, isDeleteList));
    else setOwn(out, key, patchV);
  }
  return out;
}

/** A patch value with no counterpart in the original: directives are applied against nothing, nulls dropped. */
function fresh(v: unknown, path: string[]): unknown {
  if (isJsonObject(v)) return mergeMap({}, v, path);
  if (Array.isArray(v)) return mergeList([], v, path, false);
  return v;
}

function stripListDirectives(list: unknown[], strategy: ListStrategy | undefined): unknown[] {
  if (strategy?.mergeKey === undefined) return list.map(discardNulls);
  return list.filter((e) => !(isJsonObject(e) && DIRECTIVE in e)).map(discardNulls);
}

function elementKind(...lists: unknown[][]): 'map' | 'scalar' | undefined {
  let kind: 'map' | 'scalar' | undefined;
  for (const list of lists) {
    for (const e of list) {
      const k = kindOf(e);
      if (k === 'list') throw new PatchError('lists of lists are not supported', 422);
      if (kind !== undefined && kind !== k) throw bad('list element types are not identical');
      kind = k;
    }
  }
  return kind;
}

const keyOf = (e: unknown, mergeKey: string | undefined): unknown =>
  mergeKey === undefined ? e : (e as JsonMap)[mergeKey];

/** Key (the element itself for scalars, its merge key's value for maps) to its first position in `list`. */
function firstPositions(list: readonly unknown[], mergeKey: string | undefined): Map<unknown, number> {
  const at = new Map<unknown, number>();
  list.forEach((x, i) => {
    const k = mergeKey === undefined ? x : isJsonObject(x) ? x[mergeKey] : undefined;
    if (!at.has(k)) at.set(k, i);
  });
  return at;
}

function requireMergeKey(e: unknown, mergeKey: string): JsonMap {
  if (!isJsonObject(e)) throw bad(`invalid patch: list element is not a map: ${JSON.stringify(e)}`);
  if (!(mergeKey in e)) throw bad(`map: ${JSON.stringify(e)} does not contain declared merge key: ${mergeKey}`);
  return e;
}

function mergeList(original: unknown[], patch: unknown[], path: string[], isDeleteList: boolean): unknown[] {
  const strategy = listStrategyAt(path);
  if (strategy === undefined && !isDeleteList) return stripListDirectives(patch, undefined);
  if (original.length === 0 && patch.length === 0) return [];
  const kind = elementKind(original, patch);
  if (kind !== 'map') {
    if (isDeleteList) {
      const removed = new Set(patch);
      return original.filter((e) => !removed.has(e));
    }
    const merged = [...new Set([...original, ...patch])];
    return normalizeOrder(merged, patch, original, undefined);
  }
  const mergeKey = strategy?.mergeKey;
  if (mergeKey === undefined) throw bad(`cannot merge lists without merge key for ${path.slice(1).join('.')}`);

  // Special elements: {$patch: delete, key: v} removes, {$patch: replace} replaces the whole list.
  const deleted = new Set<unknown>();
  const plain: JsonMap[] = [];
  let replace = false;
  for (const e of patch) {
    const m = requireMapElement(e);
    if (!(DIRECTIVE in m)) {
      plain.push(m);
      continue;
    }
    const d = m[DIRECTIVE];
    if (d === 'delete') {
      if (!(mergeKey in m)) throw bad(`map: ${JSON.stringify(m)} does not contain declared merge key: ${mergeKey}`);
      deleted.add(m[mergeKey]);
    } else if (d === 'replace') {
      replace = true;
    } else if (d === 'merge') {
      throw bad('merging lists cannot yet be specified in the patch');
    } else {
      throw bad(`Unexpected patch type: ${JSON.stringify(d)}`);
    }
  }
  if (replace) return plain.map((e) => mergeMap({}, e, path));

  // One pass each, through maps from merge key to position: linear in the lists, not in their product.
  const orig =
    deleted.size === 0 ? [...original] : original.filter((o) => !(isJsonObject(o) && deleted.has(o[mergeKey])));
  const merged = [...orig];
  const at = firstPositions(merged, mergeKey);
  for (const p of plain) {
    requireMergeKey(p, mergeKey);
    const i = at.get(p[mergeKey]);
    if (i !== undefined) merged[i] = mergeMap(requireMergeKey(merged[i], mergeKey), p, path);
    else {
      at.set(p[mergeKey], merged.length);
      merged.push(mergeMap({}, p, path));
    }
  }
  return normalizeOrder(merged, plain, orig, mergeKey);
}

function requireMapElement(e: unknown): JsonMap {
  if (!isJsonObject(e)) throw bad(`invalid patch: list element is not a map: ${JSON.stringify(e)}`);
  return e;
}

/**
 * strategicpatch.normalizeElementOrder: items named by `patchOrder` come in that order, server-only items keep
 * their order, and the two are interleaved by their positions in `serverOrder` (a new item goes before the
 * server-only items that follow it, e.g. server [a,b] + patch [c] gives [c,a,b]).
 */
function normalizeOrder(
  merged: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  mergeKey: string | undefined,
): unknown[] {
  // Position of an item in a list by its key (the first one, as findIndex would): one map per list.
  const positions = new Map<unknown[], Map<unknown, number>>();
  const idx = (list: unknown[], item: unknown) => {
    let at = positions.get(list);
    if (!at) positions.set(list, (at = firstPositions(list, mergeKey)));
    return at.get(keyOf(item, mergeKey)) ?? -1;
  };
  // Each item's position in a list is looked up once: the partition's lookup is the sort's, and the merge below
  // reads positions kept by the sorts (it looked two up per step).
  const patchItems: unknown[] = [];
  const patchPos: number[] = [];
  const serverOnly: unknown[] = [];
  for (const m of merged) {
    const p = idx(patchOrder, m);
    if (p >= 0) {
      patchItems.push(m);
      patchPos.push(p);
    } else serverOnly.push(m);
  }
  // Items found in `order` by their position there, then the others in their own order: a stable counting sort
  // (positions are list indices), linear where a comparison sort of 90,000 finalizers was not.
  const sortBy = (items: unknown[], pos: ArrayLike<number>, orderLength: number) => {
    const starts = new Int32Array(orderLength + 2); // starts[p + 1]: items at position p - 1 (p = -1: not found)
    for (let i = 0; i < items.length; i++) starts[pos[i] + 2]++;
    // Not found (-1) sorts last: count it after every position.
    const missing = starts[1];
    starts[1] = 0;
    for (let p = 2; p < starts.length; p++) starts[p] += starts[p - 1];
    const sorted = new Array<unknown>(items.length);
    const sortedPos = new Int32Array(items.length);
    let last = items.length - missing;
    for (let i = 0; i < items.length; i++) {
      const at = pos[i] < 0 ? last++ : starts[pos[i] + 1]++;
      sorted[at] = items[i];
      sortedPos[at] = pos[i];
    }
    return { sorted, sortedPos };
  };
  const serverPos = Int32Array.from(serverOnly, (m) => idx(serverOrder, m));
  const { sorted: left, sortedPos: leftPos } = sortBy(serverOnly, serverPos, serverOrder.length);
  const right = sortBy(patchItems, patchPos, patchOrder.length).sorted;
  const rightPos = serverOrder.length === 0 ? undefined : Int32Array.from(right, (m) => idx(serverOrder, m));
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  while (i < left.length || j < right.length) {
    if (i >= left.length) out.push(right[j++]);
    else if (j >= right.length) out.push(left[i++]);
    else {
      const li = leftPos[i];
      const ri = rightPos === undefined ? -1 : rightPos[j];
      if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
      else out.push(right[j++]);
    }
  }
  return out;
}

/**
 * Applies a Kubernetes strategic merge patch to a document of schema model `model` (e.g. V1PersistentVolumeClaim). Maps merge recursively and `null` deletes; lists are replaced except
 * the merge lists of k8s.io/api (metadata.finalizers as an ordered set, metadata.ownerReferences by uid,
 * status.conditions by type, pod containers/volumes/env by name, ...). Directives: `$patch: replace|delete`
 * (maps and list elements), `$deleteFromPrimitiveList/<f>`, `$setElementOrder/<f>`, `$retainKeys`.
 * @throws PatchError 400 for a malformed patch or directive, 422 for a list of lists.
 */
export function applyStrategicMergePatch<T>(doc: T, patch: unknown, model: string): T {
  if (!isJsonObject(patch)) throw bad('invalid JSON document');
  // mergeMap never mutates its inputs but shares untouched subtrees with them; the clone makes the result private.
  return structuredClone(mergeMap(isJsonObject(doc) ? doc : {}, patch, [model])) as T;
}
