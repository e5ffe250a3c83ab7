// Kubernetes strategic merge patch (k8s.io/apimachinery/pkg/util/strategicpatch, as the API server applies it:
// MergeParallelList + IgnoreUnmatchedNulls). Merge lists and their keys come from the schema tables generated
// from k8s.io/api's struct tags (schema.ts); every other list is replaced and every map merged.
//
// The merge is written as generators that pause after every MERGE_SLICE list items or map keys they step over
// (`yield`): applyStrategicMergePatch runs them through, applyStrategicMergePatchWithTurns gives the event loop a
// turn at each pause, so a large patch (90,000 finalizers) is not one synchronous piece of work. The two give the
// same result: the pauses change when the work is done, not what it does.

import { getOwn, setOwn } from '../common/json-safety.ts';
import { isJsonObject } from '../../types/json.ts';
import { PatchError } from './patch-error.ts';
import { patchListStrategy } from '../schema/schema.ts';

type JsonMap = Record<string, unknown>;

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const DELETE_FROM_PRIMITIVE_LIST = '$deleteFromPrimitiveList/';
const SET_ELEMENT_ORDER = '$setElementOrder/';

/** List items and map keys stepped over between two pauses of the merge (a turn of the loop, for a large patch). */
export const MERGE_SLICE = 8_192;

/** The steps of one application since its last pause; a generator yields when they reach MERGE_SLICE. */
interface Work {
  steps: number;
}

/** A merge step that may pause (yield) and returns T. */
type Merge<T> = Generator<void, T, void>;

const work = { steps: 0, pauses: 0, turns: 0, longestRun: 0 };

/**
 * Counts of the merges so far (tests read them): `steps` list items and map keys stepped over, `pauses` of the
 * generators, `turns` given to the event loop at those pauses, `longestRun` the most steps made without a turn
 * (reset by longestMergeRunSince).
 */
export function strategicMergeWork(): typeof work {
  return { ...work };
}

/** The most list items and map keys one merge stepped over without a turn of the loop since the last call. */
export function longestMergeRunSince(): number {
  const longest = work.longestRun;
  work.longestRun = 0;
  return longest;
}

function endRun(steps: number): void {
  work.steps += steps;
  if (steps > work.longestRun) work.longestRun = steps;
}

/** Runs a merge through without a turn: its pauses only count. */
function runThrough<T>(merge: Merge<T>, w: Work): T {
  let run = 0;
  for (;;) {
    const r = merge.next();
    run += w.steps;
    w.steps = 0;
    if (r.done) {
      endRun(run);
      return r.value;
    }
    work.pauses++;
  }
}

/** Runs a merge with `turn` (a turn of the event loop) at each of its pauses. */
async function runWithTurns<T>(merge: Merge<T>, w: Work, turn: () => Promise<void>): Promise<T> {
  for (;;) {
    const r = merge.next();
    endRun(w.steps);
    w.steps = 0;
    if (r.done) return r.value;
    work.pauses++;
    work.turns++;
    await turn();
  }
}

/** inSlices of a range that fits in the current slice: already run, nothing to pause for. */
const NO_PAUSE: readonly void[] = [];

/**
 * Runs `range(from, to)` over [0, length) in pieces that fill the current slice, pausing when it is full. The
 * per-item loops live in `range`, an ordinary function (the engine optimises its loop as any other). A range
 * that fits in the slice (every list of a small patch) is run at once, with no generator.
 */
function inSlices(length: number, w: Work, range: (from: number, to: number) => void): Iterable<void> {
  if (length < MERGE_SLICE - w.steps) {
    range(0, length);
    w.steps += length;
    return NO_PAUSE;
  }
  return slices(length, w, range);
}

function* slices(length: number, w: Work, range: (from: number, to: number) => void): Merge<void> {
  let from = 0;
  while (from < length) {
    const to = Math.min(length, from + MERGE_SLICE - w.steps);
    range(from, to);
    w.steps += to - from;
    from = to;
    if (w.steps >= MERGE_SLICE) yield;
  }
}

/** Copies the scalars of list[from, to) to `out` up to the first map or list; returns its index (or `to`). */
function copyScalars(list: readonly unknown[], out: unknown[], from: number, to: number): number {
  for (let i = from; i < to; i++) {
    const e: unknown = list[i];
    if (e !== null && typeof e === 'object') return i;
    out.push(e);
  }
  return to;
}

/**
 * A copy of `list`: scalars as they are, maps and lists through `each` (which may drop them: undefined), pausing
 * every MERGE_SLICE items.
 */
function* copyList(list: readonly unknown[], w: Work, each: (e: object) => Merge<unknown>): Merge<unknown[]> {
  const out: unknown[] = [];
  let i = 0;
  while (i < list.length) {
    const to = Math.min(list.length, i + MERGE_SLICE - w.steps);
    const at = copyScalars(list, out, i, to);
    w.steps += at - i;
    i = at;
    if (i < to) {
      const copied = yield* each(list[i] as object);
      if (copied !== undefined) out.push(copied);
      w.steps++;
      i++;
    }
    if (w.steps >= MERGE_SLICE) yield;
  }
  return out;
}

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
function* discardNulls(v: unknown, w: Work): Merge<unknown> {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return yield* copyList(v, w, (x) => discardNulls(x, w));
  const out: JsonMap = {};
  for (const [k, x] of Object.entries(v as JsonMap)) {
    if (x !== null) setOwn(out, k, typeof x !== 'object' ? x : yield* discardNulls(x, w));
    if (++w.steps >= MERGE_SLICE) yield;
  }
  return out;
}

function kindOf(v: unknown): 'map' | 'list' | 'scalar' {
  return Array.isArray(v) ? 'list' : isJsonObject(v) ? 'map' : 'scalar';
}

function* mergeMap(original: JsonMap, patch: JsonMap, path: string[], w: Work): Merge<JsonMap> {
  if (DIRECTIVE in patch) {
    const d = patch[DIRECTIVE];
    if (d === 'replace') {
      const rest = { ...patch };
      delete rest[DIRECTIVE];
      return yield* mergeMap({}, rest, path, w);
    }
    if (d === 'delete') return {};
    throw bad(`Unexpected patch type: ${JSON.stringify(d)}`);
  }
  let out: JsonMap = { ...original };
  // The patch's keys, read once (a copy of a map of 100,000 keys and its entries cost about 100 ms); `done` holds
  // the keys the directives below consume, which the last loop skips.
  const keys = Object.keys(patch);
  const done = new Set<string>();

  if (RETAIN_KEYS in patch) {
    const retain = patch[RETAIN_KEYS];
    done.add(RETAIN_KEYS);
    if (!Array.isArray(retain)) throw bad('invalid patch: the value of $retainKeys must be a list');
    const keep = new Set<unknown>();
    for (let i = 0; i < retain.length; i++) {
      keep.add(retain[i]);
      if (++w.steps >= MERGE_SLICE) yield;
    }
    for (const k of keys) {
      if (++w.steps >= MERGE_SLICE) yield;
      if (done.has(k)) continue;
      const v = patch[k];
      if (v === null || k.startsWith(DELETE_FROM_PRIMITIVE_LIST) || k.startsWith(SET_ELEMENT_ORDER)) continue;
      if (!keep.has(k)) throw bad("doesn't match $retainKeys list: the patch has keys that are not in $retainKeys");
    }
    // Rebuilt rather than deleted from: deleting most keys of a large object one by one is not linear in V8.
    const retained: JsonMap = {};
    for (const k of Object.keys(out)) {
      if (keep.has(k)) setOwn(retained, k, out[k]);
      if (++w.steps >= MERGE_SLICE) yield;
    }
    out = retained;
  }

  // $setElementOrder first: it consumes its list from the patch.
  for (const key of keys) {
    if (++w.steps >= MERGE_SLICE) yield;
    if (!key.startsWith(SET_ELEMENT_ORDER)) continue;
    // A list consumed as an earlier directive's field is gone, as the directive's own key would be.
    const order = done.has(key) ? undefined : patch[key];
    done.add(key);
    const field = key.slice(SET_ELEMENT_ORDER.length);
    if (!Array.isArray(order) || field === '')
      throw bad('invalid patch: $setElementOrder must be followed by a field name and carry a list');
    const childPath = [...path, field];
    const strategy = listStrategyAt(childPath);
    const origList = getOwn(out, field);
    const patchList = done.has(field) ? undefined : getOwn(patch, field);
    if (origList !== undefined && !Array.isArray(origList)) throw bad(`invalid patch: ${field} is not a list`);
    if (patchList !== undefined && !Array.isArray(patchList)) throw bad(`invalid patch: ${field} is not a list`);
    if (origList === undefined && patchList === undefined) continue;
    let merged: unknown[];
    if (origList !== undefined && patchList !== undefined)
      merged = yield* mergeList(origList, patchList, childPath, false, w);
    else merged = origList ?? (yield* stripListDirectives(patchList as unknown[], strategy, w));
    setOwn(out, field, yield* normalizeOrder(merged, order, origList ?? [], strategy?.mergeKey, w));
    done.add(field);
  }

  for (const rawKey of keys) {
    if (++w.steps >= MERGE_SLICE) yield;
    if (done.size > 0 && done.has(rawKey)) continue;
    const patchV = patch[rawKey];
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
    // Own properties only: `__proto__`, `constructor` and `prototype` are plain keys here.
    const origV = getOwn(out, key);
    if (typeof patchV !== 'object' && (origV === undefined || typeof origV !== 'object' || origV === null)) {
      // A scalar over nothing or over a scalar (most keys of a large map): set as it is.
      if (!isDeleteList) setOwn(out, key, patchV);
      continue;
    }
    const childPath = [...path, key];
    if (origV === undefined) {
      if (isDeleteList) continue;
      setOwn(out, key, yield* fresh(patchV, childPath, w));
      continue;
    }
    const kind = kindOf(origV);
    if (kind !== kindOf(patchV)) {
      if (!isDeleteList) setOwn(out, key, yield* fresh(patchV, childPath, w));
      continue;
    }
    if (kind === 'map') setOwn(out, key, yield* mergeMap(origV as JsonMap, patchV as JsonMap, childPath, w));
    else if (kind === 'list')
      setOwn(out, key, yield* mergeList(origV as unknown[], patchV as unknown[], childPath, isDeleteList, w));
    else setOwn(out, key, patchV);
  }
  return out;
}

/** A patch value with no counterpart in the original: directives are applied against nothing, nulls dropped. */
function* fresh(v: unknown, path: string[], w: Work): Merge<unknown> {
  if (isJsonObject(v)) return yield* mergeMap({}, v, path, w);
  if (Array.isArray(v)) return yield* mergeList([], v, path, false, w);
  return v;
}

function* stripListDirectives(list: unknown[], strategy: ListStrategy | undefined, w: Work): Merge<unknown[]> {
  const dropDirectives = strategy?.mergeKey !== undefined;
  // A directive element ({$patch: ...}) of a merge-key list is dropped: undefined.
  return yield* copyList(list, w, function* (e) {
    if (dropDirectives && isJsonObject(e) && DIRECTIVE in e) return undefined;
    return yield* discardNulls(e, w);
  });
}

function* elementKind(lists: unknown[][], w: Work): Merge<'map' | 'scalar' | undefined> {
  let kind: 'map' | 'scalar' | undefined;
  for (const list of lists) {
    yield* inSlices(list.length, w, (from, to) => {
      for (let i = from; i < to; i++) {
        const k = kindOf(list[i]);
        if (k === 'list') throw new PatchError('lists of lists are not supported', 422);
        if (kind !== undefined && kind !== k) throw bad('list element types are not identical');
        kind = k;
      }
    });
  }
  return kind;
}

const keyOf = (e: unknown, mergeKey: string | undefined): unknown =>
  mergeKey === undefined ? e : (e as JsonMap)[mergeKey];

/** Key (the element itself for scalars, its merge key's value for maps) to its first position in `list`. */
function* firstPositions(list: readonly unknown[], mergeKey: string | undefined, w: Work): Merge<Map<unknown, number>> {
  const at = new Map<unknown, number>();
  yield* inSlices(list.length, w, (from, to) => {
    for (let i = from; i < to; i++) {
      const x = list[i];
      const k = mergeKey === undefined ? x : isJsonObject(x) ? x[mergeKey] : undefined;
      if (!at.has(k)) at.set(k, i);
    }
  });
  return at;
}

function requireMergeKey(e: unknown, mergeKey: string): JsonMap {
  if (!isJsonObject(e)) throw bad(`invalid patch: list element is not a map: ${JSON.stringify(e)}`);
  if (!(mergeKey in e)) throw bad(`map: ${JSON.stringify(e)} does not contain declared merge key: ${mergeKey}`);
  return e;
}

function* mergeList(
  original: unknown[],
  patch: unknown[],
  path: string[],
  isDeleteList: boolean,
  w: Work,
): Merge<unknown[]> {
  const strategy = listStrategyAt(path);
  if (strategy === undefined && !isDeleteList) return yield* stripListDirectives(patch, undefined, w);
  if (original.length === 0 && patch.length === 0) return [];
  const kind = yield* elementKind([original, patch], w);
  if (kind !== 'map') {
    if (isDeleteList) {
      const removed = new Set<unknown>();
      yield* inSlices(patch.length, w, (from, to) => {
        for (let i = from; i < to; i++) removed.add(patch[i]);
      });
      const kept: unknown[] = [];
      yield* inSlices(original.length, w, (from, to) => {
        for (let i = from; i < to; i++) {
          const e = original[i];
          if (!removed.has(e)) kept.push(e);
        }
      });
      return kept;
    }
    // The union, each item once, in the order first seen: the original's, then the patch's.
    const seen = new Set<unknown>();
    const merged: unknown[] = [];
    for (const list of [original, patch]) {
      yield* inSlices(list.length, w, (from, to) => {
        for (let i = from; i < to; i++) {
          const e = list[i];
          if (!seen.has(e)) {
            seen.add(e);
            merged.push(e);
          }
        }
      });
    }
    return yield* normalizeOrder(merged, patch, original, undefined, w);
  }
  const mergeKey = strategy?.mergeKey;
  if (mergeKey === undefined) throw bad(`cannot merge lists without merge key for ${path.slice(1).join('.')}`);

  // Special elements: {$patch: delete, key: v} removes, {$patch: replace} replaces the whole list.
  const deleted = new Set<unknown>();
  const plain: JsonMap[] = [];
  let replace = false;
  for (let i = 0; i < patch.length; i++) {
    if (++w.steps >= MERGE_SLICE) yield;
    const m = requireMapElement(patch[i]);
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
  if (replace) {
    const out: JsonMap[] = [];
    for (const e of plain) {
      out.push(yield* mergeMap({}, e, path, w));
      if (++w.steps >= MERGE_SLICE) yield;
    }
    return out;
  }

  // One pass each, through maps from merge key to position: linear in the lists, not in their product.
  const orig: unknown[] = [];
  yield* inSlices(original.length, w, (from, to) => {
    for (let i = from; i < to; i++) {
      const o = original[i];
      if (deleted.size === 0 || !(isJsonObject(o) && deleted.has(o[mergeKey]))) orig.push(o);
    }
  });
  const merged = [...orig];
  const at = yield* firstPositions(merged, mergeKey, w);
  for (const p of plain) {
    if (++w.steps >= MERGE_SLICE) yield;
    requireMergeKey(p, mergeKey);
    const i = at.get(p[mergeKey]);
    if (i !== undefined) merged[i] = yield* mergeMap(requireMergeKey(merged[i], mergeKey), p, path, w);
    else {
      at.set(p[mergeKey], merged.length);
      merged.push(yield* mergeMap({}, p, path, w));
    }
  }
  return yield* normalizeOrder(merged, plain, orig, mergeKey, w);
}

function requireMapElement(e: unknown): JsonMap {
  if (!isJsonObject(e)) throw bad(`invalid patch: list element is not a map: ${JSON.stringify(e)}`);
  return e;
}

/**
 * `items` in the order of their positions `pos` in a list of `orderLength` (-1: not in it, last, in their own
 * order), with those positions: a stable counting sort (positions are list indices), linear where a comparison
 * sort of 90,000 finalizers was not.
 */
function* sortBy(
  items: unknown[],
  pos: ArrayLike<number>,
  orderLength: number,
  w: Work,
): Merge<{ sorted: unknown[]; sortedPos: Int32Array }> {
  const starts = new Int32Array(orderLength + 2); // starts[p + 1]: items at position p - 1 (p = -1: not found)
  yield* inSlices(items.length, w, (from, to) => {
    for (let i = from; i < to; i++) starts[pos[i] + 2]++;
  });
  // Not found (-1) sorts last: count it after every position.
  const missing = starts[1];
  starts[1] = 0;
  yield* inSlices(starts.length - 2, w, (from, to) => {
    for (let p = from + 2; p < to + 2; p++) starts[p] += starts[p - 1];
  });
  const sorted = new Array<unknown>(items.length);
  const sortedPos = new Int32Array(items.length);
  let last = items.length - missing;
  yield* inSlices(items.length, w, (from, to) => {
    for (let i = from; i < to; i++) {
      const at = pos[i] < 0 ? last++ : starts[pos[i] + 1]++;
      sorted[at] = items[i];
      sortedPos[at] = pos[i];
    }
  });
  return { sorted, sortedPos };
}

/** The positions of `items` (by key) in the list `at` maps (-1: not in it). */
function* positionsIn(
  at: Map<unknown, number> | undefined,
  items: unknown[],
  mergeKey: string | undefined,
  w: Work,
): Merge<Int32Array> {
  const pos = new Int32Array(items.length);
  yield* inSlices(items.length, w, (from, to) => {
    for (let i = from; i < to; i++) pos[i] = at === undefined ? -1 : (at.get(keyOf(items[i], mergeKey)) ?? -1);
  });
  return pos;
}

/**
 * strategicpatch.normalizeElementOrder: items named by `patchOrder` come in that order, server-only items keep
 * their order, and the two are interleaved by their positions in `serverOrder` (a new item goes before the
 * server-only items that follow it, e.g. server [a,b] + patch [c] gives [c,a,b]).
 */
function* normalizeOrder(
  merged: unknown[],
  patchOrder: unknown[],
  serverOrder: unknown[],
  mergeKey: string | undefined,
  w: Work,
): Merge<unknown[]> {
  // Position of an item in a list by its key (the first one, as findIndex would): one map per list.
  const inPatch = yield* firstPositions(patchOrder, mergeKey, w);
  const inServer = serverOrder.length === 0 ? undefined : yield* firstPositions(serverOrder, mergeKey, w);
  // Each item's position in a list is looked up once: the partition's lookup is the sort's, and the merge below
  // reads positions kept by the sorts (it looked two up per step).
  const patchItems: unknown[] = [];
  const patchPos: number[] = [];
  const serverOnly: unknown[] = [];
  yield* inSlices(merged.length, w, (from, to) => {
    for (let i = from; i < to; i++) {
      const m = merged[i];
      const p = inPatch.get(keyOf(m, mergeKey)) ?? -1;
      if (p >= 0) {
        patchItems.push(m);
        patchPos.push(p);
      } else serverOnly.push(m);
    }
  });
  const serverPos = yield* positionsIn(inServer, serverOnly, mergeKey, w);
  const { sorted: left, sortedPos: leftPos } = yield* sortBy(serverOnly, serverPos, serverOrder.length, w);
  const right = (yield* sortBy(patchItems, patchPos, patchOrder.length, w)).sorted;
  const rightPos = inServer === undefined ? undefined : yield* positionsIn(inServer, right, mergeKey, w);
  const out: unknown[] = [];
  let i = 0;
  let j = 0;
  yield* inSlices(left.length + right.length, w, (from, to) => {
    for (let n = from; n < to; n++) {
      if (i >= left.length) out.push(right[j++]);
      else if (j >= right.length) out.push(left[i++]);
      else {
        const li = leftPos[i];
        const ri = rightPos === undefined ? -1 : rightPos[j];
        if (li >= 0 && ri >= 0 && li < ri) out.push(left[i++]);
        else out.push(right[j++]);
      }
    }
  });
  return out;
}

function* strategicMerge(doc: unknown, patch: unknown, model: string, w: Work): Merge<JsonMap> {
  if (!isJsonObject(patch)) throw bad('invalid JSON document');
  return yield* mergeMap(isJsonObject(doc) ? doc : {}, patch, [model], w);
}

/**
 * Applies a Kubernetes strategic merge patch to a document of schema model `model` (e.g. V1PersistentVolumeClaim). Maps merge recursively and `null` deletes; lists are replaced except
 * the merge lists of k8s.io/api (metadata.finalizers as an ordered set, metadata.ownerReferences by uid,
 * status.conditions by type, pod containers/volumes/env by name, ...). Directives: `$patch: replace|delete`
 * (maps and list elements), `$deleteFromPrimitiveList/<f>`, `$setElementOrder/<f>`, `$retainKeys`.
 * @throws PatchError 400 for a malformed patch or directive, 422 for a list of lists.
 */
export function applyStrategicMergePatch<T>(doc: T, patch: unknown, model: string): T {
  const w: Work = { steps: 0 };
  // mergeMap never mutates its inputs but shares untouched subtrees with them; the clone makes the result private.
  return structuredClone(runThrough(strategicMerge(doc, patch, model, w), w)) as T;
}

/**
 * applyStrategicMergePatch with `turn` (a turn of the event loop, for a large patch's request) after every
 * MERGE_SLICE list items or map keys of the merge. Neither input may change meanwhile: the caller passes a private
 * copy of the document, and the patch is the request's. The result is not cloned (for a map of 100,000 keys, a
 * clone of about 100 ms in one piece): it shares untouched parts with `doc`, which the caller gives up, and no map
 * or list with the patch (the merge builds every container it takes from the patch anew: discardNulls, mergeMap
 * over {}, the lists' copies), so a patch applied again after a conflict is the one the client sent.
 * @throws PatchError as applyStrategicMergePatch
 */
export async function applyStrategicMergePatchWithTurns<T>(
  doc: T,
  patch: unknown,
  model: string,
  turn: () => Promise<void>,
): Promise<T> {
  const w: Work = { steps: 0 };
  return (await runWithTurns(strategicMerge(doc, patch, model, w), w, turn)) as T;
}
