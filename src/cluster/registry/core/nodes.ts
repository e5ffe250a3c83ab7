// core/v1 Node: its registry entry (quantity canonicalisation, spec.unschedulable field selector), validation
// (taints, unschedulable, capacity/allocatable quantities) after k/k pkg/apis/core/validation, and its kubectl
// columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  duplicate,
  invalidEach,
  list,
  notSupported,
  record,
  required,
  sorted,
  typeCheck,
} from '../../common/field-errors.ts';
import { isQualifiedName, isValidLabelValue } from '../../common/name-rules.ts';
import { canonicalizeQuantityMaps } from '../quantity-canonical.ts';
import { ALL_VERBS, boolPath } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  ageColumn,
  column,
  nameColumn,
  nonEmpty,
  rec,
  spec,
  status,
  str as cellText,
  type TableColumn,
} from '../table-columns.ts';
import { validateResourceList } from '../validation.ts';

const TAINT_EFFECTS = sorted(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);

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
    if (t.value !== undefined && t.value !== '')
      causes.push(...invalidEach(p.child('value'), String(t.value), isValidLabelValue(String(t.value))));
    if (!t.effect) causes.push(required(p.child('effect')));
    else if (!TAINT_EFFECTS.includes(t.effect as string))
      causes.push(notSupported(p.child('effect'), t.effect, TAINT_EFFECTS));
    const id = `${key}:${String(t.effect)}`;
    if (seen.has(id)) causes.push(duplicate(p, `${key}:${String(t.effect)}`));
    seen.add(id);
  });
  const status = record(obj.status) ?? {};
  causes.push(...validateResourceList(status.capacity, FieldPath.root('status', 'capacity')));
  causes.push(...validateResourceList(status.allocatable, FieldPath.root('status', 'allocatable')));
  return causes;
}

function nodeInfo(o: KubeObject): Record<string, unknown> {
  return rec(status(o).nodeInfo);
}
function nodeAddress(o: KubeObject, type: string): string {
  const addresses = Array.isArray(status(o).addresses) ? (status(o).addresses as unknown[]) : [];
  const found = addresses.map(rec).find((a) => a.type === type);
  return found ? cellText(found.address, '<none>') : '<none>';
}

const nodeColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'The status of the node', (o) => {
    const conditions = Array.isArray(status(o).conditions) ? (status(o).conditions as unknown[]).map(rec) : [];
    const ready = conditions.find((c) => c.type === 'Ready');
    const parts = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
    if (spec(o).unschedulable === true) parts.push('SchedulingDisabled');
    return parts.join(',');
  }),
  column('Roles', 'The roles of the node', (o) => {
    const roles = new Set<string>();
    for (const [k, v] of Object.entries(o.metadata.labels ?? {})) {
      if (k.startsWith('node-role.kubernetes.io/')) roles.add(k.slice('node-role.kubernetes.io/'.length));
      else if (k === 'kubernetes.io/role' && v !== '') roles.add(v);
    }
    return roles.size === 0 ? '<none>' : [...roles].sort().join(',');
  }),
  ageColumn,
  column('Version', 'Kubelet Version reported by the node.', (o) => cellText(nodeInfo(o).kubeletVersion)),
  column('Internal-IP', 'List of internal IPs assigned to the node.', (o) => nodeAddress(o, 'InternalIP'), 1),
  column('External-IP', 'List of external IPs assigned to the node.', (o) => nodeAddress(o, 'ExternalIP'), 1),
  column(
    'OS-Image',
    'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).',
    (o) => nonEmpty(nodeInfo(o).osImage, '<unknown>'),
    1,
  ),
  column(
    'Kernel-Version',
    "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    (o) => nonEmpty(nodeInfo(o).kernelVersion, '<unknown>'),
    1,
  ),
  column(
    'Container-Runtime',
    'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).',
    (o) => nonEmpty(nodeInfo(o).containerRuntimeVersion, '<unknown>'),
    1,
  ),
];

export const NODES: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'nodes',
  kind: 'Node',
  listKind: 'NodeList',
  namespaced: false,
  shortNames: ['no'],
  singular: 'node',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validateNode(o, old),
  defaults: (o) => canonicalizeQuantityMaps(o, ['status.capacity', 'status.allocatable']),
  fieldSelectors: { 'spec.unschedulable': boolPath('spec.unschedulable') },
  columns: nodeColumns,
};
