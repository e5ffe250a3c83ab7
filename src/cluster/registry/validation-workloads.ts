// Validation of the non-storage kinds the embedded cluster serves: Node and Pod
// (k/k pkg/apis/core/validation). Kept to the rules clients of this project
// can trip over; anything kube checks that is not listed here is accepted.

import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import { isQuantity, parseQuantity } from '../../types/quantity.ts';
import {
  FieldPath, duplicate, forbidden, invalid, invalidEach, list, notSupported, record, required, sorted, str, typeCheck,
} from '../common/field-errors.ts';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from '../common/name-rules.ts';

const TAINT_EFFECTS = sorted(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);
const RESTART_POLICIES = sorted(['Always', 'OnFailure', 'Never']);

function validateResourceList(v: unknown, p: FieldPath): StatusCause[] {
  const causes = typeCheck(p, v, 'object');
  for (const [k, q] of Object.entries(record(v) ?? {})) {
    if (!isQuantity(q)) causes.push(invalid(p.key(k), q, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
    else if (parseQuantity(q) < 0n) causes.push(invalid(p.key(k), q, 'must be greater than or equal to 0'));
  }
  return causes;
}

/** Node: taints (key, effect, no duplicates), unschedulable type, capacity/allocatable quantities. */
export function validateNode(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = record(obj.spec) ?? {};
  causes.push(...typeCheck(FieldPath.root('spec', 'unschedulable'), spec.unschedulable, 'boolean'));
  const seen = new Set<string>();
  list(spec.taints).forEach((raw, i) => {
    const t = record(raw) ?? {};
    const p = FieldPath.root('spec', 'taints').index(i);
    const key = String(t.key ?? '');
    causes.push(...invalidEach(p.child('key'), key, isQualifiedName(key)));
    if (t.value !== undefined && t.value !== '') causes.push(...invalidEach(p.child('value'), String(t.value), isValidLabelValue(String(t.value))));
    if (!t.effect) causes.push(required(p.child('effect')));
    else if (!TAINT_EFFECTS.includes(t.effect as string)) causes.push(notSupported(p.child('effect'), t.effect, TAINT_EFFECTS));
    const id = `${key}:${String(t.effect)}`;
    if (seen.has(id)) causes.push(duplicate(p, `${key}:${String(t.effect)}`));
    seen.add(id);
  });
  const status = record(obj.status) ?? {};
  causes.push(...validateResourceList(status.capacity, FieldPath.root('status', 'capacity')));
  causes.push(...validateResourceList(status.allocatable, FieldPath.root('status', 'allocatable')));
  return causes;
}

function validateContainers(v: unknown, p: FieldPath, requireOne: boolean, volumeNames: Set<string>): StatusCause[] {
  const typeErrs = typeCheck(p, v, 'array');
  if (typeErrs.length) return typeErrs;
  const containers = list(v);
  if (requireOne && containers.length === 0) return [required(p)];
  const causes: StatusCause[] = [];
  const names = new Set<string>();
  containers.forEach((raw, i) => {
    const c = record(raw) ?? {};
    const cp = p.index(i);
    const name = str(c.name);
    if (!name) causes.push(required(cp.child('name')));
    else {
      causes.push(...invalidEach(cp.child('name'), name, isDNS1123Label(name)));
      if (names.has(name)) causes.push(duplicate(cp.child('name'), name));
      names.add(name);
    }
    if (!str(c.image)) causes.push(required(cp.child('image')));
    list(c.volumeMounts).forEach((rawMount, j) => {
      const m = record(rawMount) ?? {};
      const mp = cp.child('volumeMounts').index(j);
      const mountName = str(m.name);
      if (!mountName) causes.push(required(mp.child('name')));
      else if (!volumeNames.has(mountName)) causes.push({ reason: 'FieldValueNotFound', field: mp.child('name').toString(), message: `Not found: ${JSON.stringify(mountName)}` });
      if (!str(m.mountPath)) causes.push(required(mp.child('mountPath')));
    });
  });
  return causes;
}

/** Pod: containers required (names, images), volumes (names, PVC claimName), restartPolicy; update limits. */
export function validatePod(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const causes = validatePodSpec(obj.spec, p);
  const spec = record(obj.spec);
  if (old !== undefined && spec) causes.push(...validatePodUpdate(spec, record(old.spec) ?? {}));
  return causes;
}

/**
 * ValidatePodSpec at `p` (`spec` for a Pod, `spec.template.spec` for a workload's pod template): volumes,
 * containers, init containers, restartPolicy, nodeName.
 */
export function validatePodSpec(value: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, value, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(value) ?? {};
  const causes: StatusCause[] = [];
  const volumeNames = new Set<string>();
  list(spec.volumes).forEach((raw, i) => {
    const vol = record(raw) ?? {};
    const vp = p.child('volumes').index(i);
    const name = str(vol.name);
    if (!name) causes.push(required(vp.child('name')));
    else {
      causes.push(...invalidEach(vp.child('name'), name, isDNS1123Label(name)));
      if (volumeNames.has(name)) causes.push(duplicate(vp.child('name'), name));
      volumeNames.add(name);
    }
    const pvc = record(vol.persistentVolumeClaim);
    if (pvc && !str(pvc.claimName)) causes.push(required(vp.child('persistentVolumeClaim', 'claimName')));
  });
  causes.push(...validateContainers(spec.containers, p.child('containers'), true, volumeNames));
  causes.push(...validateContainers(spec.initContainers, p.child('initContainers'), false, volumeNames));
  if (spec.restartPolicy !== undefined && spec.restartPolicy !== '' && !RESTART_POLICIES.includes(spec.restartPolicy as string)) {
    causes.push(notSupported(p.child('restartPolicy'), spec.restartPolicy, RESTART_POLICIES));
  }
  const nodeName = spec.nodeName;
  if (typeof nodeName === 'string' && nodeName !== '') causes.push(...invalidEach(p.child('nodeName'), nodeName, isDNS1123Subdomain(nodeName)));
  return causes;
}

/**
 * ValidatePodUpdate, simplified: only container images, activeDeadlineSeconds and tolerations may change;
 * nodeName may be set once (what pods/binding does; our scheduler stand-in binds by update).
 */
function validatePodUpdate(spec: Record<string, unknown>, oldSpec: Record<string, unknown>): StatusCause[] {
  const nodeNameSettable = !oldSpec.nodeName;
  if (JSON.stringify(immutablePodSpec(spec, nodeNameSettable)) === JSON.stringify(immutablePodSpec(oldSpec, nodeNameSettable))) return [];
  return [forbidden(FieldPath.root('spec'), 'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)')];
}

/** The pod spec minus its mutable fields, canonical (sorted keys, no null/undefined members) for comparison. */
function immutablePodSpec(spec: Record<string, unknown>, dropNodeName: boolean): unknown {
  const canonical = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canonical);
    const r = record(v);
    if (!r) return v;
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(r).sort()) if (r[k] !== undefined && r[k] !== null) out[k] = canonical(r[k]);
    return out;
  };
  const s: Record<string, unknown> = { ...spec };
  for (const f of ['containers', 'initContainers']) s[f] = list(spec[f]).map((c) => ({ ...(record(c) ?? {}), image: undefined }));
  delete s.activeDeadlineSeconds;
  delete s.tolerations;
  if (dropNodeName) delete s.nodeName;
  return canonical(s);
}
