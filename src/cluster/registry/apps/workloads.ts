// What the apps/v1 workloads (Deployment, DaemonSet) share, as kube-apiserver 1.32 does it (k/k
// pkg/apis/apps/validation, pkg/apis/apps/v1 defaults, the apps strategies, kubectl's printers): the fields of
// their registry entries, pod template defaults and validation (restartPolicy Always, no activeDeadlineSeconds),
// selector rules (non-empty, matching the template's labels, immutable), IntOrString rollout values,
// generation bookkeeping and the wide kubectl columns. Bad values print as Go's %#v does, because kubectl
// users know these messages verbatim. The embedded cluster stores and validates workloads so manifests can be
// applied and checked as on a real cluster; no controller acts on them: a Deployment creates no pods.
import type { KubeObject, LabelSelector, StatusCause } from '../../../types/k8s.ts';
import { labelSelectorToPredicate, SelectorError } from '../../common/selectors.ts';
import { FieldPath, invalid, list, notSupported, record, type JsonRecord } from '../../common/field-errors.ts';
import { jsonEqual } from '../../common/meta.ts';
import { ALL_VERBS, section } from '../registry-fields.ts';
import { defaultPodTemplate } from '../core/pod-defaults.ts';
import type { ResourceType } from '../resource-type.ts';
import { column, rec, spec, str as cellText, type TableColumn } from '../table-columns.ts';
import { validateLabels } from '../validation.ts';
import { validatePodSpec } from '../core/pods.ts';

export const rawInvalid = (p: FieldPath, rendered: string, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid',
  field: p.toString(),
  message: `Invalid value: ${rendered}: ${detail}`,
});

export const goString = (v: unknown) => JSON.stringify(typeof v === 'string' ? v : '');
const goStrings = (v: unknown) => (Array.isArray(v) ? `[]string{${v.map(goString).join(', ')}}` : '[]string(nil)');

/** Go's %#v of a metav1.LabelSelector (the value kube prints for selector errors). */
export function goLabelSelector(v: unknown): string {
  const sel = record(v) ?? {};
  const labels = record(sel.matchLabels);
  const labelText = labels
    ? `map[string]string{${Object.keys(labels)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${goString(labels[k])}`)
        .join(', ')}}`
    : 'map[string]string(nil)';
  const exprs = Array.isArray(sel.matchExpressions)
    ? `[]v1.LabelSelectorRequirement{${sel.matchExpressions
        .map((raw) => {
          const e = record(raw) ?? {};
          return `v1.LabelSelectorRequirement{Key:${goString(e.key)}, Operator:${goString(e.operator)}, Values:${goStrings(e.values)}}`;
        })
        .join(', ')}}`
    : '[]v1.LabelSelectorRequirement(nil)';
  return `v1.LabelSelector{MatchLabels:${labelText}, MatchExpressions:${exprs}}`;
}

export function nonNegative(v: unknown, p: FieldPath): StatusCause[] {
  return typeof v === 'number' && v < 0 ? [invalid(p, v, 'must be greater than or equal to 0')] : [];
}

// ------------------------------------------------------------------------------------------ IntOrString

/** Go's %#v of an intstr.IntOrString (its String() has a pointer receiver, so kube prints the struct). */
export function goIntOrString(v: unknown): string {
  return typeof v === 'string'
    ? `intstr.IntOrString{Type:1, IntVal:0, StrVal:${JSON.stringify(v)}}`
    : `intstr.IntOrString{Type:0, IntVal:${String(v)}, StrVal:""}`;
}

const PERCENT_RE = /^[0-9]+%$/;

/** ValidatePositiveIntOrPercent. */
export function validatePositiveIntOrPercent(v: unknown, p: FieldPath): StatusCause[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') {
    return PERCENT_RE.test(v)
      ? []
      : [
          rawInvalid(
            p,
            goIntOrString(v),
            "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
          ),
        ];
  }
  if (typeof v === 'number' && Number.isInteger(v)) return nonNegative(v, p);
  return [rawInvalid(p, JSON.stringify(v), "must be an integer or percentage (e.g '5%')")];
}

/** getIntOrPercentValue: the number, or the percentage's number. */
export function intOrPercentValue(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && PERCENT_RE.test(v)) return Number(v.slice(0, -1));
  return 0;
}

export function notMoreThan100Percent(v: unknown, p: FieldPath): StatusCause[] {
  return typeof v === 'string' && PERCENT_RE.test(v) && intOrPercentValue(v) > 100
    ? [rawInvalid(p, goIntOrString(v), 'must not be greater than 100%')]
    : [];
}

// ----------------------------------------------------------------------------------------- pod template

/** ValidatePodTemplateSpec plus the rules every workload adds (restartPolicy Always, no active deadline). */
export function validateTemplate(template: JsonRecord, p: FieldPath, activeDeadlineMessage: string): StatusCause[] {
  const meta = record(template.metadata) ?? {};
  // kube reports template label errors at `<template>.labels` (ValidatePodTemplateSpec's path).
  const causes = validateLabels(meta.labels, p.child('labels'));
  causes.push(...validatePodSpec(template.spec, p.child('spec')));
  const spec = record(template.spec) ?? {};
  if (spec.restartPolicy !== 'Always')
    causes.push(notSupported(p.child('spec', 'restartPolicy'), spec.restartPolicy ?? '', ['Always']));
  if (spec.activeDeadlineSeconds !== undefined && spec.activeDeadlineSeconds !== null) {
    causes.push(invalid(p.child('spec', 'activeDeadlineSeconds'), spec.activeDeadlineSeconds, activeDeadlineMessage));
  }
  return causes;
}

/** The selector as a predicate; undefined when it cannot be parsed (reported by validateLabelSelector). */
function selectorPredicate(sel: unknown): ((labels: Record<string, string>) => boolean) | undefined {
  if (record(sel) === undefined) return () => false; // nil selector: labels.Nothing()
  try {
    return labelSelectorToPredicate(sel as LabelSelector);
  } catch (e) {
    if (e instanceof SelectorError) return undefined;
    throw e;
  }
}

export const isEmptySelector = (sel: JsonRecord) =>
  Object.keys(record(sel.matchLabels) ?? {}).length + list(sel.matchExpressions).length === 0;

export function templateLabelsMismatch(sel: unknown, template: JsonRecord, p: FieldPath): StatusCause[] {
  const labels = (record(record(template.metadata)?.labels) ?? {}) as Record<string, string>;
  const matches = selectorPredicate(sel);
  if (matches === undefined || matches(labels)) return [];
  return [invalid(p.child('metadata', 'labels'), labels, '`selector` does not match template `labels`')];
}

export function immutableSelector(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  if (old === undefined) return [];
  const next = record(obj.spec)?.selector;
  const prev = record(old.spec)?.selector;
  if (goLabelSelector(next) === goLabelSelector(prev) && (next == null) === (prev == null)) return [];
  return [rawInvalid(FieldPath.root('spec', 'selector'), goLabelSelector(next), 'field is immutable')];
}

export function statusCounters(obj: KubeObject, fields: string[]): StatusCause[] {
  const status = record(obj.status) ?? {};
  return fields.flatMap((f) => nonNegative(status[f], FieldPath.root('status', f)));
}

/** The pod template gets the PodSpec defaults (not SetDefaults_Pod's, which only Pods get). */
export function defaultTemplate(spec: Record<string, unknown>): void {
  defaultPodTemplate(section(spec, 'template'));
}

const nonEmpty = (m: unknown) => (m && typeof m === 'object' && Object.keys(m).length > 0 ? m : undefined);

/**
 * Generation bookkeeping of the apps strategies: 1 at create; +1 when the spec changes (a Deployment also
 * counts annotation changes, which it copies to its ReplicaSets). Status writes never bump it.
 */
export function bumpGeneration(countAnnotations: boolean, applyDefaults: (o: KubeObject) => void) {
  return (o: KubeObject, old: KubeObject, subresource: 'status' | undefined): void => {
    if (subresource === 'status') return;
    applyDefaults(o); // compare defaulted specs, as kube does after decoding
    const changed =
      !jsonEqual(o.spec, old.spec) ||
      (countAnnotations && !jsonEqual(nonEmpty(o.metadata.annotations), nonEmpty(old.metadata.annotations)));
    if (changed) o.metadata.generation = (old.metadata.generation ?? 0) + 1;
  };
}

/** The fields every apps/v1 entry shares. */
export const APPS_FIELDS = {
  group: 'apps',
  version: 'v1',
  namespaced: true,
  verbs: ALL_VERBS,
  categories: ['all'],
  hasStatus: true,
  fieldSelectors: {},
  // apps/v1 strategies: DeleteDependents (v1beta1/v1beta2 orphaned); deleted workloads answer a Status.
  garbageCollectionPolicy: 'DeleteDependents',
} as const satisfies Partial<ResourceType>;

/** labels.Selector.String() of a metav1.LabelSelector: requirements sorted by key, `<none>` when empty. */
export function labelSelectorString(sel: unknown): string {
  const s = rec(sel);
  const reqs: Array<[string, string]> = Object.entries(rec(s.matchLabels)).map(([k, v]) => [k, `${k}=${cellText(v)}`]);
  for (const e of (Array.isArray(s.matchExpressions) ? s.matchExpressions : []).map(rec)) {
    const key = cellText(e.key);
    const values = `(${(Array.isArray(e.values) ? e.values.map((v) => cellText(v)) : []).sort().join(',')})`;
    const text = { In: `${key} in ${values}`, NotIn: `${key} notin ${values}`, Exists: key, DoesNotExist: `!${key}` }[
      cellText(e.operator)
    ];
    if (text !== undefined) reqs.push([key, text]);
  }
  const out = reqs
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, t]) => t)
    .join(',');
  return out === '' ? '<none>' : out;
}

function templateContainers(o: KubeObject): Array<Record<string, unknown>> {
  const list = rec(rec(spec(o).template).spec).containers;
  return Array.isArray(list) ? list.map(rec) : [];
}
export const num = (v: unknown) => (typeof v === 'number' ? v : 0);
export const workloadWideColumns: TableColumn[] = [
  column(
    'Containers',
    'Names of each container in the template.',
    (o) =>
      templateContainers(o)
        .map((c) => cellText(c.name))
        .join(','),
    1,
  ),
  column(
    'Images',
    'Images referenced by each container in the template.',
    (o) =>
      templateContainers(o)
        .map((c) => cellText(c.image))
        .join(','),
    1,
  ),
];
