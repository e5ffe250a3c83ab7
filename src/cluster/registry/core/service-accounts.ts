// core/v1 ServiceAccount: its registry entry, validation (kube checks only its metadata; here also the JSON
// types of its lists) and kubectl columns. No controller issues tokens for it; the cluster's own controllers
// create the default ServiceAccount of each namespace.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, typeCheck } from '../../common/field-errors.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, type TableColumn } from '../table-columns.ts';

/** ServiceAccount: only its metadata is validated by kube; here also the JSON types of its lists. */
export function validateServiceAccount(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  return [
    ...typeCheck(FieldPath.root('secrets'), obj.secrets, 'array'),
    ...typeCheck(FieldPath.root('imagePullSecrets'), obj.imagePullSecrets, 'array'),
    ...typeCheck(FieldPath.root('automountServiceAccountToken'), obj.automountServiceAccountToken, 'boolean'),
  ];
}

const serviceAccountColumns: TableColumn[] = [
  nameColumn,
  column(
    'Secrets',
    'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.',
    (o) => (Array.isArray(o.secrets) ? o.secrets.length : 0),
  ),
  ageColumn,
];

export const SERVICE_ACCOUNTS: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'serviceaccounts',
  kind: 'ServiceAccount',
  listKind: 'ServiceAccountList',
  namespaced: true,
  shortNames: ['sa'],
  singular: 'serviceaccount',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateServiceAccount(o, old),
  fieldSelectors: {},
  returnDeletedObject: true,
  columns: serviceAccountColumns,
};
