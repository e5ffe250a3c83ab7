// core/v1 Pod: its registry entry (defaults from pod-defaults.ts, field selectors), validation (volumes, containers, init
// containers, restartPolicy, nodeName; update limits) after k/k pkg/apis/core/validation, kept to the rules
// clients of this project can trip over, and its kubectl columns. validatePodSpec also checks the pod templates
// of the apps/v1 workloads.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  duplicate,
  forbidden,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  sorted,
  str,
  typeCheck,
} from '../../common/field-errors.ts';
import { isDNS1123Label, isDNS1123Subdomain } from '../../common/name-rules.ts';
import { ALL_VERBS, boolPath, path, section, setDefault } from '../registry-fields.ts';
import { quantityNanos } from '../quantity-canonical.ts';
import { defaultPod } from './pod-defaults.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, nonEmpty, rec, spec, status, type TableColumn } from '../table-columns.ts';

const RESTART_POLICIES = sorted(['Always', 'OnFailure', 'Never']);

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
      else if (!volumeNames.has(mountName))
        causes.push({
          reason: 'FieldValueNotFound',
          field: mp.child('name').toString(),
          message: `Not found: ${JSON.stringify(mountName)}`,
        });
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
  if (
    spec.restartPolicy !== undefined &&
    spec.restartPolicy !== '' &&
    !RESTART_POLICIES.includes(spec.restartPolicy as string)
  ) {
    causes.push(notSupported(p.child('restartPolicy'), spec.restartPolicy, RESTART_POLICIES));
  }
  const nodeName = spec.nodeName;
  if (typeof nodeName === 'string' && nodeName !== '')
    causes.push(...invalidEach(p.child('nodeName'), nodeName, isDNS1123Subdomain(nodeName)));
  return causes;
}

/**
 * ValidatePodUpdate, simplified: only container images, activeDeadlineSeconds and tolerations may change;
 * nodeName may be set once (what pods/binding does; our scheduler stand-in binds by update).
 */
function validatePodUpdate(spec: Record<string, unknown>, oldSpec: Record<string, unknown>): StatusCause[] {
  const nodeNameSettable = !oldSpec.nodeName;
  if (
    JSON.stringify(immutablePodSpec(spec, nodeNameSettable)) ===
    JSON.stringify(immutablePodSpec(oldSpec, nodeNameSettable))
  )
    return [];
  return [
    forbidden(
      FieldPath.root('spec'),
      'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
    ),
  ];
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
  for (const f of ['containers', 'initContainers'])
    s[f] = list(spec[f]).map((c) => ({ ...(record(c) ?? {}), image: undefined }));
  delete s.activeDeadlineSeconds;
  delete s.tolerations;
  if (dropNodeName) delete s.nodeName;
  return canonical(s);
}

/** ComputePodQOS (k/k pkg/apis/core/helper/qos): cpu and memory requests and limits of the (init) containers. */
export function podQosClass(pod: KubeObject): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  const spec = record(pod.spec) ?? {};
  for (const c of [...list(spec.containers), ...list(spec.initContainers)]) {
    const resources = record(record(c)?.resources) ?? {};
    const found = new Set<string>();
    for (const [into, from] of [
      [requests, resources.requests],
      [limits, resources.limits],
    ] as const) {
      for (const [name, q] of Object.entries(record(from) ?? {})) {
        const nanos = quantityNanos(q);
        if ((name !== 'cpu' && name !== 'memory') || nanos === undefined || nanos <= 0n) continue;
        into.set(name, (into.get(name) ?? 0n) + nanos);
        if (into === limits) found.add(name);
      }
    }
    if (!found.has('cpu') || !found.has('memory')) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed && [...requests].every(([name, q]) => limits.get(name) === q) && requests.size === limits.size)
    return 'Guaranteed';
  return 'Burstable';
}

function containerStatuses(o: KubeObject): Array<Record<string, unknown>> {
  const list = status(o).containerStatuses;
  return Array.isArray(list) ? list.map(rec) : [];
}

const podColumns: TableColumn[] = [
  nameColumn,
  column('Ready', 'The aggregate readiness state of this pod for accepting traffic.', (o) => {
    const containers = Array.isArray(spec(o).containers) ? (spec(o).containers as unknown[]).length : 0;
    return `${containerStatuses(o).filter((c) => c.ready === true).length}/${containers}`;
  }),
  column('Status', 'The aggregate status of the containers in this pod.', (o) => {
    if (o.metadata.deletionTimestamp) return status(o).reason === 'NodeLost' ? 'Unknown' : 'Terminating';
    return nonEmpty(status(o).reason, '') || nonEmpty(status(o).phase, 'Pending');
  }),
  column(
    'Restarts',
    'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.',
    (o) =>
      String(containerStatuses(o).reduce((n, c) => n + (typeof c.restartCount === 'number' ? c.restartCount : 0), 0)),
  ),
  ageColumn,
  column('IP', 'podIP address allocated to the pod.', (o) => nonEmpty(status(o).podIP, '<none>'), 1),
  column(
    'Node',
    'NodeName indicates in which node this pod is scheduled.',
    (o) => nonEmpty(spec(o).nodeName, '<none>'),
    1,
  ),
  column(
    'Nominated Node',
    'nominatedNodeName is set only when this pod preempts other pods on the node.',
    (o) => nonEmpty(status(o).nominatedNodeName, '<none>'),
    1,
  ),
  column(
    'Readiness Gates',
    'If specified, all readiness gates will be evaluated for pod readiness.',
    () => '<none>',
    1,
  ),
];

export const PODS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'pods',
  kind: 'Pod',
  listKind: 'PodList',
  namespaced: true,
  shortNames: ['po'],
  singular: 'pod',
  verbs: ALL_VERBS,
  categories: ['all'],
  hasStatus: true,
  validate: (o, old) => validatePod(o, old),
  defaults(o) {
    defaultPod(o);
    setDefault(section(o, 'status'), 'phase', 'Pending');
  },
  prepareForCreate(o) {
    defaultPod(o); // the QoS class reads the defaulted requests, as kube decodes (defaults) before PrepareForCreate
    o.status = { phase: 'Pending', qosClass: podQosClass(o) };
  },
  fieldSelectors: {
    'spec.nodeName': path('spec.nodeName'),
    // Old v1 clients' name for spec.nodeName, which the Pod conversion still maps.
    'spec.host': path('spec.nodeName'),
    'spec.restartPolicy': path('spec.restartPolicy'),
    'spec.schedulerName': path('spec.schedulerName'),
    'spec.serviceAccountName': path('spec.serviceAccountName'),
    'spec.hostNetwork': boolPath('spec.hostNetwork'),
    'status.phase': path('status.phase'),
    'status.podIP': path('status.podIP'),
    'status.nominatedNodeName': path('status.nominatedNodeName'),
  },
  returnDeletedObject: true,
  columns: podColumns,
};
