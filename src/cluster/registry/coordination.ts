// The coordination.k8s.io/v1 group: Lease, with its registry entry, validation and kubectl columns. Leases are
// what leader election writes: PUT on a missing Lease creates it, and an update must name its resourceVersion.
import type { KubeObject, StatusCause } from '../../types/k8s.ts';
import { FieldPath, forbidden, invalid, notSupported, record, typeCheck } from '../common/field-errors.ts';
import { ALL_VERBS } from './registry-fields.ts';
import type { ResourceType } from './resource-type.ts';
import { ageColumn, column, nameColumn, spec, str, type TableColumn } from './table-columns.ts';

/** Lease (coordination.k8s.io/v1): positive duration, non-negative transitions, preferredHolder needs strategy. */
export function validateLease(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const spec = record(obj.spec) ?? {};
  const causes: StatusCause[] = [];
  for (const f of ['leaseDurationSeconds', 'leaseTransitions'])
    causes.push(...typeCheck(p.child(f), spec[f], 'number'));
  for (const f of ['holderIdentity', 'strategy', 'preferredHolder'])
    causes.push(...typeCheck(p.child(f), spec[f], 'string'));
  if (typeof spec.leaseDurationSeconds === 'number' && spec.leaseDurationSeconds <= 0) {
    causes.push(invalid(p.child('leaseDurationSeconds'), spec.leaseDurationSeconds, 'must be greater than 0'));
  }
  if (typeof spec.leaseTransitions === 'number' && spec.leaseTransitions < 0) {
    causes.push(invalid(p.child('leaseTransitions'), spec.leaseTransitions, 'must be greater than or equal to 0'));
  }
  if (spec.preferredHolder && !spec.strategy) {
    causes.push(forbidden(p.child('preferredHolder'), 'preferredHolder can only be set if strategy is set'));
  }
  if (spec.strategy && spec.strategy !== 'OldestEmulationVersion') {
    causes.push(notSupported(p.child('strategy'), spec.strategy, ['OldestEmulationVersion']));
  }
  return causes;
}

const leaseColumns: TableColumn[] = [
  nameColumn,
  column('Holder', 'holderIdentity contains the identity of the holder of a current lease.', (o) =>
    str(spec(o).holderIdentity),
  ),
  ageColumn,
];

export const LEASES: ResourceType = {
  group: 'coordination.k8s.io',
  version: 'v1',
  resource: 'leases',
  kind: 'Lease',
  listKind: 'LeaseList',
  namespaced: true,
  singular: 'lease',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateLease(o, old),
  fieldSelectors: {},
  allowCreateOnUpdate: true,
  allowUnconditionalUpdate: false,
  microTimeFields: ['spec.acquireTime', 'spec.renewTime'],
  columns: leaseColumns,
};
