// storage.k8s.io/v1 CSINode: its registry entry, validation after k/k pkg/apis/storage/validation (driver names,
// unique per node; node IDs up to 256 characters, as the strategy allows long IDs; topology keys present, unique
// and qualified; an existing driver entry immutable), and the kubectl columns. `drivers` and `topologyKeys` have
// no omitempty in Go, so an absent list reads back as null.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  duplicate,
  FieldPath,
  invalid,
  invalidEach,
  list,
  record,
  required,
  typeCheck,
} from '../../common/field-errors.ts';
import { isQualifiedName } from '../../common/name-rules.ts';
import { ALL_VERBS, section } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, spec, type TableColumn } from '../table-columns.ts';
import { canonical } from '../validation.ts';
import { validateCSIDriverName } from './csi-drivers.ts';

/** csiNodeIDLongerMaxLength: the registry validates with AllowLongNodeID. */
const NODE_ID_MAX = 256;

function validateDriver(raw: unknown, p: FieldPath, names: Set<string>): StatusCause[] {
  const typeErrs = typeCheck(p, raw, 'object');
  if (typeErrs.length) return typeErrs;
  const d = record(raw) ?? {};
  const causes = validateCSIDriverName(d.name, p.child('name'));
  const nodeID = d.nodeID;
  if (nodeID !== undefined && nodeID !== null && typeof nodeID !== 'string')
    causes.push(invalid(p.child('nodeID'), nodeID, 'must be a string'));
  else if (!nodeID) causes.push(required(p.child('nodeID')));
  else if (nodeID.length > NODE_ID_MAX)
    causes.push(invalid(p.child('nodeID'), nodeID, `must be ${NODE_ID_MAX} characters or less`));
  const count = record(d.allocatable)?.count;
  if (typeof count === 'number' && count < 0)
    causes.push(invalid(p.child('allocatable', 'count'), count, 'must be greater than or equal to 0'));
  const name = typeof d.name === 'string' ? d.name : '';
  if (names.has(name)) causes.push(duplicate(p.child('name'), name));
  names.add(name);
  causes.push(...typeCheck(p.child('topologyKeys'), d.topologyKeys, 'array'));
  const keys = new Set<string>();
  for (const rawKey of list(d.topologyKeys)) {
    const key = typeof rawKey === 'string' ? rawKey : '';
    // kube reports topology key errors at the driver's path, not at topologyKeys.
    if (key === '') causes.push(required(p));
    if (keys.has(key)) causes.push(duplicate(p, key));
    keys.add(key);
    causes.push(...invalidEach(p, key, isQualifiedName(key)));
  }
  return causes;
}

/** CSINode: every driver valid and named once; on update a driver already present may not change. */
export function validateCSINode(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const drivers = record(obj.spec)?.drivers;
  const causes = typeCheck(p.child('drivers'), drivers, 'array');
  const names = new Set<string>();
  list(drivers).forEach((d, i) => causes.push(...validateDriver(d, p.child('drivers').index(i), names)));
  if (old !== undefined) {
    const before = new Map(list(record(old.spec)?.drivers).map((d) => [record(d)?.name, d] as const));
    for (const d of list(drivers)) {
      const prev = before.get(record(d)?.name);
      if (prev !== undefined && JSON.stringify(canonical(d)) !== JSON.stringify(canonical(prev))) {
        causes.push(invalid(p.child('drivers'), d, 'field is immutable'));
      }
    }
  }
  return causes;
}

function defaultCSINode(o: KubeObject): void {
  const s = section(o as Record<string, unknown>, 'spec');
  if (s.drivers === undefined) s.drivers = null;
  for (const d of list(s.drivers)) {
    const driver = record(d);
    if (driver && driver.topologyKeys === undefined) driver.topologyKeys = null;
  }
}

const csiNodeColumns: TableColumn[] = [
  nameColumn,
  column(
    'Drivers',
    'Drivers indicates the number of CSI drivers registered on the node',
    (o) => list(spec(o).drivers).length,
    0,
    'integer',
  ),
  ageColumn,
];

export const CSI_NODES: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1',
  resource: 'csinodes',
  kind: 'CSINode',
  listKind: 'CSINodeList',
  namespaced: false,
  singular: 'csinode',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateCSINode(o, old),
  defaults: defaultCSINode,
  fieldSelectors: {},
  // Its REST store sets ReturnDeletedObject (pkg/registry/storage/*/storage/storage.go).
  returnDeletedObject: true,
  columns: csiNodeColumns,
};
