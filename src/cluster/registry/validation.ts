// Validation shared by every registry entry: ObjectMeta (names, labels, annotations, owner references,
// finalizers), which the write rules apply to every kind, and the building blocks several kinds' validators use
// (quantities, resource lists, access modes, class names, optional enums, label selectors, canonical JSON).
// Each validator returns StatusCause[] with kube's reasons, messages and field paths (k/k
// pkg/apis/core/validation, apimachinery pkg/api/validation); an empty list means valid. The kinds' own
// validators live next to their entries (core/*.ts, apps/*.ts and the group files).

import type { ObjectMeta, StatusCause } from '../../types/k8s.ts';
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../../types/annotations.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import {
  FieldPath,
  forbidden,
  invalid,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  sorted,
  str,
  tooLong,
  typeCheck,
  type JsonRecord,
} from '../common/field-errors.ts';
import {
  isDNS1123Label,
  isDNS1123Subdomain,
  isQualifiedName,
  isValidQualifiedName,
  isValidLabelValue,
} from '../common/identifier-validation.ts';

/** metadata.annotations: total bytes of keys and values (TotalAnnotationSizeLimitB). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

const STANDARD_FINALIZERS = new Set(['kubernetes', 'orphan', 'foregroundDeletion']);

/** ValidatePathSegmentName: names that must be usable as one URL path segment. */
export function pathSegmentName(name: string, prefix: boolean): string[] {
  if (prefix) return [];
  if (name === '.') return ["may not be '.'"];
  if (name === '..') return ["may not be '..'"];
  const errs: string[] = [];
  if (name.includes('/')) errs.push("may not contain '/'");
  if (name.includes('%')) errs.push("may not contain '%'");
  return errs;
}

export function nameErrors(
  name: string,
  rule: 'dns1123subdomain' | 'dns1123label' | 'path',
  prefix: boolean,
): string[] {
  // A generateName prefix may end in '-' (maskTrailingDash).
  const n = prefix && name.length > 1 && name.endsWith('-') ? `${name.slice(0, -1)}a` : name;
  if (rule === 'dns1123label') return isDNS1123Label(n);
  if (rule === 'path') return pathSegmentName(n, prefix);
  return isDNS1123Subdomain(n);
}

/** Byte length as Go's len() counts it. */
export const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** ValidateLabels: keys are qualified names, values label values; causes carry the whole map's path. */
export function validateLabels(labels: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, labels, 'object');
  if (typeErrs.length) return typeErrs;
  const causes: StatusCause[] = [];
  for (const [k, v] of Object.entries(record(labels) ?? {})) {
    causes.push(...invalidEach(p, k, isQualifiedName(k)));
    if (typeof v !== 'string') causes.push(invalid(p, v, 'must be a string'));
    else causes.push(...invalidEach(p, v, isValidLabelValue(v)));
  }
  return causes;
}

export function validateAnnotations(annotations: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, annotations, 'object');
  if (typeErrs.length) return typeErrs;
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of Object.entries(record(annotations) ?? {})) {
    causes.push(...invalidEach(p, k, isQualifiedName(k.toLowerCase())));
    if (typeof v !== 'string') causes.push(invalid(p, v, 'must be a string'));
    else size += byteLength(k) + byteLength(v);
  }
  if (size > TOTAL_ANNOTATION_SIZE_LIMIT) causes.push(tooLong(p, TOTAL_ANNOTATION_SIZE_LIMIT));
  return causes;
}

/** Finalizer names on core kinds: qualified names, and a name without '/' must be a standard one. */
export function validateFinalizerName(name: unknown, p: FieldPath): StatusCause[] {
  if (typeof name !== 'string') return [invalid(p, name, 'must be a string')];
  if (!isValidQualifiedName(name)) return invalidEach(p, name, isQualifiedName(name));
  if (!name.includes('/') && !STANDARD_FINALIZERS.has(name)) {
    return [invalid(p, name, 'name is neither a standard finalizer name nor is it fully qualified')];
  }
  return [];
}

export function validateOwnerReferences(refs: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, refs, 'array');
  if (typeErrs.length || !Array.isArray(refs)) return typeErrs;
  const causes: StatusCause[] = [];
  const controllers: string[] = [];
  for (const raw of refs) {
    const ref = record(raw) ?? {};
    if (!str(ref.apiVersion))
      causes.push(invalid(p.child('apiVersion'), ref.apiVersion ?? '', 'version must not be empty'));
    if (!str(ref.kind)) causes.push(invalid(p.child('kind'), ref.kind ?? '', 'kind must not be empty'));
    if (!str(ref.name)) causes.push(invalid(p.child('name'), ref.name ?? '', 'name must not be empty'));
    if (!str(ref.uid)) causes.push(invalid(p.child('uid'), ref.uid ?? '', 'uid must not be empty'));
    if (ref.controller === true) controllers.push(`${String(ref.kind)}/${String(ref.name)}`);
  }
  if (controllers.length > 1) {
    causes.push(
      invalid(
        p,
        refs,
        `Only one reference can have Controller set to true. Found "true" in references for ${controllers.join(' and ')}`,
      ),
    );
  }
  return causes;
}

/**
 * ValidateObjectMeta: name (or generateName) by `nameRule`, namespace presence by scope, labels, annotations
 * (qualified keys, 256 KiB total), ownerReferences and finalizer names. Update-only rules (immutable name/uid,
 * no new finalizers while deleting) are the store's.
 */
export function validateObjectMeta(
  meta: ObjectMeta,
  namespaced: boolean,
  nameRule: 'dns1123subdomain' | 'dns1123label' | 'path',
): StatusCause[] {
  const p = FieldPath.root('metadata');
  const m = (record(meta) ?? {}) as JsonRecord;
  const causes: StatusCause[] = [];
  const name = m.name;
  const generateName = m.generateName;
  if (generateName !== undefined && generateName !== '') {
    if (typeof generateName !== 'string')
      causes.push(invalid(p.child('generateName'), generateName, 'must be a string'));
    else causes.push(...invalidEach(p.child('generateName'), generateName, nameErrors(generateName, nameRule, true)));
  }
  if (name === undefined || name === '') {
    if (!generateName) causes.push(required(p.child('name'), 'name or generateName is required'));
  } else if (typeof name !== 'string') {
    causes.push(invalid(p.child('name'), name, 'must be a string'));
  } else {
    causes.push(...invalidEach(p.child('name'), name, nameErrors(name, nameRule, false)));
  }
  const ns = m.namespace;
  if (namespaced) {
    if (ns === undefined || ns === '') causes.push(required(p.child('namespace')));
    else if (typeof ns !== 'string') causes.push(invalid(p.child('namespace'), ns, 'must be a string'));
    else causes.push(...invalidEach(p.child('namespace'), ns, isDNS1123Label(ns)));
  } else if (ns !== undefined && ns !== '') {
    causes.push(forbidden(p.child('namespace'), 'not allowed on this type'));
  }
  if (typeof m.generation === 'number' && m.generation < 0) {
    causes.push(invalid(p.child('generation'), m.generation, 'must be greater than or equal to 0'));
  }
  causes.push(...validateLabels(m.labels, p.child('labels')));
  causes.push(...validateAnnotations(m.annotations, p.child('annotations')));
  causes.push(...validateOwnerReferences(m.ownerReferences, p.child('ownerReferences')));
  const finalizers = m.finalizers;
  causes.push(...typeCheck(p.child('finalizers'), finalizers, 'array'));
  if (Array.isArray(finalizers)) {
    const at = p.child('finalizers');
    for (const f of finalizers) {
      const errs = validateFinalizerName(f, at);
      if (errs.length > 0) causes.push(...errs);
    }
    if (finalizers.includes(FINALIZER_ORPHAN_DEPENDENTS) && finalizers.includes(FINALIZER_DELETE_DEPENDENTS)) {
      causes.push(
        invalid(
          p.child('finalizers'),
          finalizers,
          `finalizer ${FINALIZER_ORPHAN_DEPENDENTS} and ${FINALIZER_DELETE_DEPENDENTS} cannot be both set`,
        ),
      );
    }
  }
  return causes;
}

export const ACCESS_MODES = sorted(['ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteMany', 'ReadWriteOncePod']);
export const VOLUME_MODES = sorted(['Block', 'Filesystem']);

export function validateAccessModes(modes: unknown, p: FieldPath, requiredDetail?: string): StatusCause[] {
  const typeErrs = typeCheck(p, modes, 'array');
  if (typeErrs.length) return typeErrs;
  const list_ = list(modes);
  if (list_.length === 0) return [required(p, requiredDetail)];
  const causes: StatusCause[] = [];
  for (const m of list_) if (!ACCESS_MODES.includes(m as string)) causes.push(notSupported(p, m, ACCESS_MODES));
  if (list_.includes('ReadWriteOncePod') && list_.length > 1)
    causes.push(forbidden(p, 'may not use ReadWriteOncePod with other access modes'));
  return causes;
}

/** A quantity that must parse and be >= 0 (or > 0 with `positive`). */
export function validateQuantity(v: unknown, p: FieldPath, positive: boolean): StatusCause[] {
  // Parsed once: parseQuantity refuses exactly what isQuantity refuses.
  let n: bigint | undefined;
  try {
    n = typeof v === 'string' ? parseQuantity(v) : undefined;
  } catch {
    n = undefined;
  }
  if (n === undefined) {
    return [
      invalid(p, v, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ];
  }
  if (positive && n <= 0n) return [invalid(p, v, 'must be greater than zero')];
  if (n < 0n) return [invalid(p, v, 'must be greater than or equal to 0')];
  return [];
}

export function validateOptionalEnum(v: unknown, p: FieldPath, values: string[]): StatusCause[] {
  if (v === undefined || v === null || v === '') return [];
  return values.includes(v as string) ? [] : [notSupported(p, v, values)];
}

export function validateClassName(v: unknown, p: FieldPath): StatusCause[] {
  if (v === undefined || v === null || v === '') return [];
  if (typeof v !== 'string') return [invalid(p, v, 'must be a string')];
  return invalidEach(p, v, isDNS1123Subdomain(v));
}

/** A map of resource quantities (ResourceList): every value a quantity >= 0. */
export function validateResourceList(v: unknown, p: FieldPath): StatusCause[] {
  const causes = typeCheck(p, v, 'object');
  for (const [k, q] of Object.entries(record(v) ?? {})) {
    if (!isQuantity(q))
      causes.push(
        invalid(
          p.key(k),
          q,
          "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
      );
    else if (parseQuantity(q) < 0n) causes.push(invalid(p.key(k), q, 'must be greater than or equal to 0'));
  }
  return causes;
}

/** JSON with sorted keys and absent/null members dropped, for semantic equality of specs. */
export function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  const r = record(v);
  if (!r) return v;
  const out: JsonRecord = {};
  for (const k of Object.keys(r).sort()) if (r[k] !== undefined && r[k] !== null) out[k] = canonical(r[k]);
  return out;
}

/** metav1validation.ValidateLabelSelector (strict label values). */
export function validateLabelSelector(v: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, v, 'object');
  if (typeErrs.length || v === undefined || v === null) return typeErrs;
  const sel = record(v) ?? {};
  const causes = validateLabels(sel.matchLabels, p.child('matchLabels'));
  list(sel.matchExpressions).forEach((raw, i) => {
    const e = record(raw) ?? {};
    const ep = p.child('matchExpressions').index(i);
    const values = list(e.values);
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0)
          causes.push(required(ep.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0)
          causes.push(
            forbidden(ep.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
          );
        break;
      default:
        causes.push(invalid(ep.child('operator'), e.operator ?? '', 'not a valid selector operator'));
    }
    const key = str(e.key) ?? '';
    causes.push(...invalidEach(ep.child('key'), key, isQualifiedName(key)));
    values.forEach((value, j) =>
      causes.push(...invalidEach(ep.child('values').index(j), String(value), isValidLabelValue(String(value)))),
    );
  });
  return causes;
}
