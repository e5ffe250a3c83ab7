// Runtime access to the generated schemas (schemas.generated.ts from client-node's models, go-tags.generated.ts
// from k8s.io/api struct tags): the model of each served kind, field types, and pruning of unknown fields with
// the paths kube-apiserver's strict decoder reports (`spec.storageClasName`, `spec.containers[0].foo`).
import { KEY_SLICE, largeMapOnce } from '../common/json-safety.ts';
import type { RootKeys } from './yaml-decode.ts';
import { GO_TAGS, type GoFieldTags } from './go-tags.generated.ts';
import type { GeneratedModel } from './schema-model.ts';
import { MODELS, ROOT_MODELS } from './schemas.generated.ts';

/** `table[key]` when `key` is the table's own entry: tenant keys such as `__proto__` never reach a prototype. */
function own<T>(table: Readonly<Record<string, T>> | undefined, key: string): T | undefined {
  return table !== undefined && Object.hasOwn(table, key) ? table[key] : undefined;
}

/** The field `key` of a model, or undefined (an own property only). */
export function fieldOf(m: GeneratedModel | undefined, key: string): [string] | [string, string] | undefined {
  return own(m?.f, key);
}

/** The client-node model of a served kind, or undefined for a kind without one. */
export function rootModel(group: string, version: string, kind: string): string | undefined {
  return own(ROOT_MODELS, `${group}/${version}/${kind}`);
}

export function model(name: string): GeneratedModel | undefined {
  return own(MODELS, name);
}

/** Struct tags (protobuf number, patch strategy) of a model's field, when the Go table has them. */
export function goField(modelName: string, field: string): GoFieldTags | undefined {
  return own(own(GO_TAGS, modelName)?.fields, field);
}

/** The Go package of a model (`io.k8s.api.core.v1`), for OpenAPI schema names. */
export function goPackage(modelName: string): string | undefined {
  return own(GO_TAGS, modelName)?.pkg;
}

const modelRefs = new Map<string, string | undefined>();

/** The model a compact type refers to (`[]V1Container` -> V1Container), if any. Types come from the generated
 * schemas (a bounded set), so each is parsed once: this runs for every object value of every request body. */
export function modelRef(type: string): string | undefined {
  let ref = modelRefs.get(type);
  if (ref === undefined && !modelRefs.has(type)) {
    const base = type.replace(/^(\[\]|map\[\])+/, '');
    ref = /^[A-Z]/.test(base) ? base : undefined;
    modelRefs.set(type, ref);
  }
  return ref;
}

const isMap = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Removes, in place, every field the schema does not know, and returns their paths in document order.
 * Values of type `any` (RawExtension, JSON) are kept as sent; values of the wrong JSON type are left for
 * validation to judge.
 */
export function pruneUnknown(value: Record<string, unknown>, modelName: string, path = ''): string[] {
  const unknown: string[] = [];
  const walk = pruneModel(value, modelName, path ? [path] : [], unknown, { keys: 0 });
  while (!walk.next().done);
  return unknown;
}

/**
 * pruneUnknown into a new object: the known fields of `value`, those below them pruned in place, with the paths
 * pruneUnknown would return, given `keys`, the own keys of `value` (RootKeys: the YAML parse knows them). No
 * key is deleted from `value` and it is not enumerated: for 300,000 unknown top-level fields the enumeration and
 * the deletes were a fifth of the worker's decode. Keys that repeat (RootKeys not `exact`) copy the same
 * fields, and their paths are not returned (they would be named twice, and out of Object.keys's order).
 */
export function pruneUnknownCopy(
  value: Record<string, unknown>,
  modelName: string,
  keys: RootKeys,
): { value: Record<string, unknown>; unknown: string[] } {
  if (!model(modelName)) return { value, unknown: [] };
  const unknown: string[] = [];
  const into: Record<string, unknown> = {};
  const walk = pruneModel(value, modelName, [], unknown, { keys: 0 }, { keys: keys.keys, into });
  while (!walk.next().done);
  return { value: into, unknown: keys.exact ? unknown : [] };
}

/** The top-level map of pruneUnknownCopy: its keys, and the object its known fields go to. */
interface CopiedTop {
  keys: readonly string[];
  into: Record<string, unknown>;
}

/**
 * pruneUnknown for a large body's value: `turn` (a turn of the event loop) after each KEY_SLICE keys looked at,
 * and the key list of a map parsed in slices taken from that parse (one enumeration of a 300,000-key object is
 * about as long as parsing it).
 */
export async function pruneUnknownInSlices(
  value: Record<string, unknown>,
  modelName: string,
  turn: () => Promise<void>,
): Promise<string[]> {
  const unknown: string[] = [];
  const walk = pruneModel(value, modelName, [], unknown, { keys: 0 });
  while (!walk.next().done) await turn();
  return unknown;
}

/**
 * The path of a field as the strict decoder prints it, from the segments leading to it: keys joined by dots,
 * list indices as `[i]`. Built only for an unknown field: a body without any costs no path string.
 */
function pathText(segments: ReadonlyArray<string | number>, key: string): string {
  let out = '';
  for (const seg of segments) out = typeof seg === 'number' ? `${out}[${seg}]` : out ? `${out}.${seg}` : seg;
  return out ? `${out}.${key}` : key;
}

/** The keys a prune walk has looked at since its last pause. */
interface PruneWork {
  keys: number;
}

/**
 * The prune walk of one model's object: a generator that pauses (yields) after each KEY_SLICE keys looked at,
 * run to its end at once by pruneUnknown and with turns between by pruneUnknownInSlices.
 */
function* pruneModel(
  obj: Record<string, unknown>,
  modelName: string,
  path: Array<string | number>,
  out: string[],
  work: PruneWork,
  top?: CopiedTop,
): Generator<void, void, void> {
  const m = model(modelName);
  if (!m) return;
  // A map parsed in slices: its keys as the parse saw them (it is changed here, so they are taken, not kept).
  for (const key of top?.keys ?? largeMapOnce(obj)?.keys ?? Object.keys(obj)) {
    if (++work.keys >= KEY_SLICE) {
      work.keys = 0;
      yield;
    }
    const f = fieldOf(m, key);
    if (!f) {
      out.push(pathText(path, key));
      if (!top) delete obj[key];
      continue;
    }
    // Only objects and arrays can hold unknown fields.
    const v = obj[key];
    // A model's field is never `__proto__` (fieldOf: own entries only), so this sets a field.
    if (top) top.into[key] = v;
    if (v !== null && typeof v === 'object') {
      path.push(key);
      yield* pruneValue(v, f[0], path, out, work);
      path.pop();
    }
  }
}

function* pruneValue(
  v: unknown,
  type: string,
  path: Array<string | number>,
  out: string[],
  work: PruneWork,
): Generator<void, void, void> {
  // Only a model has fields to prune: a list or map of scalars (a ConfigMap's data) is not walked at all.
  if (modelRef(type) === undefined) return;
  if (type.startsWith('[]')) {
    if (Array.isArray(v)) {
      const itemType = type.slice(2);
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        yield* pruneValue(v[i], itemType, path, out, work);
        path.pop();
      }
    }
    return;
  }
  if (type.startsWith('map[]')) {
    if (isMap(v)) {
      const itemType = type.slice(5);
      for (const k of Object.keys(v)) {
        path.push(k);
        yield* pruneValue(v[k], itemType, path, out, work);
        path.pop();
      }
    }
    return;
  }
  const ref = modelRef(type);
  if (ref && isMap(v)) yield* pruneModel(v, ref, path, out, work);
}

/** The type of the field at a dotted path below a model (list indices omitted), or undefined. */
export function typeAt(modelName: string, path: readonly string[]): string | undefined {
  let type = modelName;
  for (const seg of path) {
    const base = type.replace(/^(\[\]|map\[\])+/, '');
    if (type.startsWith('map[]')) {
      type = type.slice(5);
      continue;
    }
    const f = fieldOf(model(base), seg);
    if (!f) return undefined;
    type = f[0];
  }
  return type;
}

/**
 * The strategic-merge strategy of the list field at `path` below `modelName`: `{ mergeKey }` for a
 * `patchStrategy:"merge"` list of maps, `{}` for a merged set of scalars, undefined for a replaced list.
 */
export function patchListStrategy(modelName: string, path: readonly string[]): { mergeKey?: string } | undefined {
  if (path.length === 0) return undefined;
  const parent = typeAt(modelName, path.slice(0, -1));
  const parentModel = parent === undefined ? undefined : modelRef(parent);
  if (!parentModel) return undefined;
  const tags = goField(parentModel, path[path.length - 1]);
  if (!tags?.s?.split(',').includes('merge')) return undefined;
  return tags.k ? { mergeKey: tags.k } : {};
}
