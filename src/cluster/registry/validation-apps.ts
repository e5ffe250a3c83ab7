// Validation of the apps/v1 workloads the embedded cluster stores (Deployment, DaemonSet), as kube-apiserver
// 1.32 does it (k/k pkg/apis/apps/validation): a non-empty selector that matches the pod template's labels,
// the template validated like a Pod spec (restartPolicy Always, no activeDeadlineSeconds), rollout strategy
// rules, non-negative counters, and an immutable spec.selector. Bad values print as Go's %#v does, because
// kubectl users know these messages verbatim.

import type { KubeObject, LabelSelector, StatusCause } from '../../types/k8s.ts';
import { labelSelectorToPredicate, SelectorError } from '../common/selectors.ts';
import {
  FieldPath, forbidden, invalid, invalidEach, list, notSupported, record, required, str, typeCheck, type JsonRecord,
} from '../common/field-errors.ts';
import { isQualifiedName, isValidLabelValue } from '../common/name-rules.ts';
import { validateLabels } from './validation.ts';
import { validatePodSpec } from './core/pods.ts';

const rawInvalid = (p: FieldPath, rendered: string, detail: string): StatusCause => ({
  reason: 'FieldValueInvalid', field: p.toString(), message: `Invalid value: ${rendered}: ${detail}`,
});

const goString = (v: unknown) => JSON.stringify(typeof v === 'string' ? v : '');
const goStrings = (v: unknown) => (Array.isArray(v) ? `[]string{${v.map(goString).join(', ')}}` : '[]string(nil)');

/** Go's %#v of a metav1.LabelSelector (the value kube prints for selector errors). */
export function goLabelSelector(v: unknown): string {
  const sel = record(v) ?? {};
  const labels = record(sel.matchLabels);
  const labelText = labels
    ? `map[string]string{${Object.keys(labels).sort().map((k) => `${JSON.stringify(k)}:${goString(labels[k])}`).join(', ')}}`
    : 'map[string]string(nil)';
  const exprs = Array.isArray(sel.matchExpressions)
    ? `[]v1.LabelSelectorRequirement{${sel.matchExpressions.map((raw) => {
      const e = record(raw) ?? {};
      return `v1.LabelSelectorRequirement{Key:${goString(e.key)}, Operator:${goString(e.operator)}, Values:${goStrings(e.values)}}`;
    }).join(', ')}}`
    : '[]v1.LabelSelectorRequirement(nil)';
  return `v1.LabelSelector{MatchLabels:${labelText}, MatchExpressions:${exprs}}`;
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
        if (values.length === 0) causes.push(required(ep.child('values'), "must be specified when `operator` is 'In' or 'NotIn'"));
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) causes.push(forbidden(ep.child('values'), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
        break;
      default:
        causes.push(invalid(ep.child('operator'), e.operator ?? '', 'not a valid selector operator'));
    }
    const key = str(e.key) ?? '';
    causes.push(...invalidEach(ep.child('key'), key, isQualifiedName(key)));
    values.forEach((value, j) => causes.push(...invalidEach(ep.child('values').index(j), String(value), isValidLabelValue(String(value)))));
  });
  return causes;
}

function nonNegative(v: unknown, p: FieldPath): StatusCause[] {
  return typeof v === 'number' && v < 0 ? [invalid(p, v, 'must be greater than or equal to 0')] : [];
}

// ------------------------------------------------------------------------------------------ IntOrString

/** Go's %#v of an intstr.IntOrString (its String() has a pointer receiver, so kube prints the struct). */
function goIntOrString(v: unknown): string {
  return typeof v === 'string'
    ? `intstr.IntOrString{Type:1, IntVal:0, StrVal:${JSON.stringify(v)}}`
    : `intstr.IntOrString{Type:0, IntVal:${String(v)}, StrVal:""}`;
}

const PERCENT_RE = /^[0-9]+%$/;

/** ValidatePositiveIntOrPercent. */
function validatePositiveIntOrPercent(v: unknown, p: FieldPath): StatusCause[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') {
    return PERCENT_RE.test(v) ? [] : [rawInvalid(p, goIntOrString(v), "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")];
  }
  if (typeof v === 'number' && Number.isInteger(v)) return nonNegative(v, p);
  return [rawInvalid(p, JSON.stringify(v), "must be an integer or percentage (e.g '5%')")];
}

/** getIntOrPercentValue: the number, or the percentage's number. */
function intOrPercentValue(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && PERCENT_RE.test(v)) return Number(v.slice(0, -1));
  return 0;
}

function notMoreThan100Percent(v: unknown, p: FieldPath): StatusCause[] {
  return typeof v === 'string' && PERCENT_RE.test(v) && intOrPercentValue(v) > 100 ? [rawInvalid(p, goIntOrString(v), 'must not be greater than 100%')] : [];
}

// ----------------------------------------------------------------------------------------- pod template

/** ValidatePodTemplateSpec plus the rules every workload adds (restartPolicy Always, no active deadline). */
function validateTemplate(template: JsonRecord, p: FieldPath, activeDeadlineMessage: string): StatusCause[] {
  const meta = record(template.metadata) ?? {};
  // kube reports template label errors at `<template>.labels` (ValidatePodTemplateSpec's path).
  const causes = validateLabels(meta.labels, p.child('labels'));
  causes.push(...validatePodSpec(template.spec, p.child('spec')));
  const spec = record(template.spec) ?? {};
  if (spec.restartPolicy !== 'Always') causes.push(notSupported(p.child('spec', 'restartPolicy'), spec.restartPolicy ?? '', ['Always']));
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

const isEmptySelector = (sel: JsonRecord) => Object.keys(record(sel.matchLabels) ?? {}).length + list(sel.matchExpressions).length === 0;

function templateLabelsMismatch(sel: unknown, template: JsonRecord, p: FieldPath): StatusCause[] {
  const labels = (record(record(template.metadata)?.labels) ?? {}) as Record<string, string>;
  const matches = selectorPredicate(sel);
  if (matches === undefined || matches(labels)) return [];
  return [invalid(p.child('metadata', 'labels'), labels, '`selector` does not match template `labels`')];
}

function immutableSelector(obj: KubeObject, old: KubeObject | undefined): StatusCause[] {
  if (old === undefined) return [];
  const next = record(obj.spec)?.selector;
  const prev = record(old.spec)?.selector;
  if (goLabelSelector(next) === goLabelSelector(prev) && (next == null) === (prev == null)) return [];
  return [rawInvalid(FieldPath.root('spec', 'selector'), goLabelSelector(next), 'field is immutable')];
}

function statusCounters(obj: KubeObject, fields: string[]): StatusCause[] {
  const status = record(obj.status) ?? {};
  return fields.flatMap((f) => nonNegative(status[f], FieldPath.root('status', f)));
}

// ------------------------------------------------------------------------------------------- Deployment

/** Deployment: ValidateDeploymentSpec, the apps/v1 selector immutability, non-negative status counters. */
export function validateDeployment(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes = nonNegative(spec.replicas, p.child('replicas'));
  const sel = record(spec.selector);
  if (spec.selector === undefined || spec.selector === null) causes.push(required(p.child('selector')));
  else {
    causes.push(...validateLabelSelector(spec.selector, p.child('selector')));
    if (sel && isEmptySelector(sel)) causes.push(rawInvalid(p.child('selector'), goLabelSelector(sel), 'empty selector is invalid for deployment'));
  }
  const template = record(spec.template) ?? {};
  // An empty selector selects everything (the match is not checked); a nil one selects nothing.
  if (!(sel && isEmptySelector(sel))) causes.push(...templateLabelsMismatch(spec.selector, template, p.child('template')));
  causes.push(...validateTemplate(template, p.child('template'), 'activeDeadlineSeconds in ReplicaSet is not Supported'));
  causes.push(...validateDeploymentStrategy(record(spec.strategy) ?? {}, p.child('strategy')));
  causes.push(...nonNegative(spec.minReadySeconds, p.child('minReadySeconds')));
  causes.push(...nonNegative(spec.revisionHistoryLimit, p.child('revisionHistoryLimit')));
  if (typeof spec.progressDeadlineSeconds === 'number') {
    causes.push(...nonNegative(spec.progressDeadlineSeconds, p.child('progressDeadlineSeconds')));
    const minReady = typeof spec.minReadySeconds === 'number' ? spec.minReadySeconds : 0;
    if (spec.progressDeadlineSeconds <= minReady) causes.push(invalid(p.child('progressDeadlineSeconds'), spec.progressDeadlineSeconds, 'must be greater than minReadySeconds'));
  }
  causes.push(...immutableSelector(obj, old));
  causes.push(...statusCounters(obj, ['observedGeneration', 'replicas', 'updatedReplicas', 'readyReplicas', 'availableReplicas', 'unavailableReplicas']));
  return causes;
}

function validateDeploymentStrategy(strategy: JsonRecord, p: FieldPath): StatusCause[] {
  const rollingUpdate = record(strategy.rollingUpdate);
  switch (strategy.type) {
    case 'Recreate':
      return rollingUpdate ? [forbidden(p.child('rollingUpdate'), "may not be specified when strategy `type` is 'Recreate'")] : [];
    case 'RollingUpdate': {
      if (!rollingUpdate) return [required(p.child('rollingUpdate'), 'this should be defaulted and never be nil')];
      const rp = p.child('rollingUpdate');
      const causes = [
        ...validatePositiveIntOrPercent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...validatePositiveIntOrPercent(rollingUpdate.maxSurge, rp.child('maxSurge')),
      ];
      if (intOrPercentValue(rollingUpdate.maxUnavailable) === 0 && intOrPercentValue(rollingUpdate.maxSurge) === 0) {
        causes.push(rawInvalid(rp.child('maxUnavailable'), goIntOrString(rollingUpdate.maxUnavailable ?? 0), 'may not be 0 when `maxSurge` is 0'));
      }
      causes.push(...notMoreThan100Percent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')));
      return causes;
    }
    default:
      return [{
        reason: 'FieldValueNotSupported', field: p.toString(),
        message: `Unsupported value: apps.DeploymentStrategy{Type:${goString(strategy.type)}, RollingUpdate:(*apps.RollingUpdateDeployment)(nil)}: supported values: "Recreate", "RollingUpdate"`,
      }];
  }
}

// -------------------------------------------------------------------------------------------- DaemonSet

/** DaemonSet: ValidateDaemonSetSpec, the apps/v1 selector immutability, non-negative status counters. */
export function validateDaemonSet(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes = validateLabelSelector(spec.selector, p.child('selector'));
  const template = record(spec.template) ?? {};
  causes.push(...templateLabelsMismatch(spec.selector, template, p.child('template')));
  const sel = record(spec.selector);
  if (sel && isEmptySelector(sel)) causes.push(rawInvalid(p.child('selector'), goLabelSelector(sel), 'empty selector is invalid for daemonset'));
  causes.push(...validateTemplate(template, p.child('template'), 'activeDeadlineSeconds in DaemonSet is not Supported'));
  causes.push(...nonNegative(spec.minReadySeconds, p.child('minReadySeconds')));
  causes.push(...validateDaemonSetUpdateStrategy(record(spec.updateStrategy) ?? {}, p.child('updateStrategy')));
  causes.push(...nonNegative(spec.revisionHistoryLimit, p.child('revisionHistoryLimit')));
  causes.push(...immutableSelector(obj, old));
  causes.push(...statusCounters(obj, [
    'currentNumberScheduled', 'numberMisscheduled', 'desiredNumberScheduled', 'numberReady', 'observedGeneration',
    'updatedNumberScheduled', 'numberAvailable', 'numberUnavailable',
  ]));
  return causes;
}

function validateDaemonSetUpdateStrategy(strategy: JsonRecord, p: FieldPath): StatusCause[] {
  const rollingUpdate = record(strategy.rollingUpdate);
  switch (strategy.type) {
    case 'OnDelete':
      return [];
    case 'RollingUpdate': {
      if (!rollingUpdate) return [required(p.child('rollingUpdate'))];
      const rp = p.child('rollingUpdate');
      const causes = [
        ...validatePositiveIntOrPercent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...validatePositiveIntOrPercent(rollingUpdate.maxSurge, rp.child('maxSurge')),
        ...notMoreThan100Percent(rollingUpdate.maxUnavailable, rp.child('maxUnavailable')),
        ...notMoreThan100Percent(rollingUpdate.maxSurge, rp.child('maxSurge')),
      ];
      const hasUnavailable = intOrPercentValue(rollingUpdate.maxUnavailable) !== 0;
      const hasSurge = intOrPercentValue(rollingUpdate.maxSurge) !== 0;
      if (hasUnavailable && hasSurge) causes.push(rawInvalid(rp.child('maxSurge'), goIntOrString(rollingUpdate.maxSurge), 'may not be set when maxUnavailable is non-zero'));
      if (!hasUnavailable && !hasSurge) causes.push(required(rp.child('maxUnavailable'), 'cannot be 0 when maxSurge is 0'));
      return causes;
    }
    default:
      return [{
        reason: 'FieldValueNotSupported', field: p.toString(),
        message: `Unsupported value: apps.DaemonSetUpdateStrategy{Type:${goString(strategy.type)}, RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"`,
      }];
  }
}
