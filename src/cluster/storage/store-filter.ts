// Compiles the namespace / labelSelector / fieldSelector of a list or watch into one predicate over stored
// objects, with the resource's supported field selectors; parse errors become 400 BadRequest.
import type { KubeObject } from '../../types/k8s.ts';
import { badRequest } from '../common/api-errors.ts';
import {
  fieldGetters,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
  unknownFieldLabel,
  type FieldSelectableKind,
} from '../common/selectors.ts';

/** Namespace, label selector and field selector of a list or watch of the store. */
export interface ListFilterOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface CompiledFilter {
  /** Only objects of this namespace (undefined = all namespaces, or a cluster-scoped resource). */
  namespace: string | undefined;
  /** Label and field predicate; undefined when there is none (lets the store skip per-object checks). */
  matches: ((obj: KubeObject) => boolean) | undefined;
}

/** @throws ClusterApiError 400 for a selector that does not parse or names an unsupported field. */
export function compileFilter(rt: FieldSelectableKind, opts: ListFilterOptions): CompiledFilter {
  const namespace = rt.namespaced && opts.namespace ? opts.namespace : undefined;
  let matches: CompiledFilter['matches'];
  try {
    const label = opts.labelSelector ? parseLabelSelector(opts.labelSelector) : undefined;
    let field: ((obj: KubeObject) => boolean) | undefined;
    if (opts.fieldSelector) {
      const getters = fieldGetters(rt);
      const pred = parseFieldSelector(opts.fieldSelector, new Set(Object.keys(getters)), (label) =>
        unknownFieldLabel(rt, label),
      );
      field = (obj) => pred((p) => getters[p]?.(obj));
    }
    if (label && field) matches = (obj) => label(obj.metadata.labels) && field(obj);
    else if (label) matches = (obj) => label(obj.metadata.labels);
    else matches = field;
  } catch (err) {
    if (err instanceof SelectorError) throw badRequest(err.message);
    throw err;
  }
  return { namespace, matches };
}
