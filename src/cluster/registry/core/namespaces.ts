// core/v1 Namespace: its registry entry (the kubernetes finalizer, phase Active), validation (spec.finalizers,
// status.phase) after k/k pkg/apis/core/validation, and its kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, record, typeCheck } from '../../common/field-errors.ts';
import { path, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, status, str as cellText, type TableColumn } from '../table-columns.ts';
import { validateFinalizerName } from '../validation.ts';

const NAMESPACE_PHASES = ['Active', 'Terminating'];

/** Namespace: spec.finalizers are qualified names; status.phase Active|Terminating. */
export function validateNamespace(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = record(obj.spec);
  const finalizers = spec?.finalizers;
  causes.push(...typeCheck(FieldPath.root('spec', 'finalizers'), finalizers, 'array'));
  if (Array.isArray(finalizers)) {
    for (const f of finalizers) causes.push(...validateFinalizerName(f, FieldPath.root('spec', 'finalizers')));
  }
  const phase = record(obj.status)?.phase;
  if (phase !== undefined && phase !== '' && !NAMESPACE_PHASES.includes(phase as string)) {
    causes.push({
      reason: 'FieldValueNotSupported',
      field: 'status.phase',
      message: `Unsupported value: ${JSON.stringify(phase)}: supported values: "Active", "Terminating"`,
    });
  }
  return causes;
}

const namespaceColumns: TableColumn[] = [
  nameColumn,
  column('Status', 'The status of the namespace', (o) => cellText(status(o).phase, 'Active')),
  ageColumn,
];

export const NAMESPACES: ResourceType = {
  group: '',
  version: 'v1',
  resource: 'namespaces',
  kind: 'Namespace',
  listKind: 'NamespaceList',
  namespaced: false,
  shortNames: ['ns'],
  singular: 'namespace',
  verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
  hasStatus: true,
  nameRule: 'dns1123label',
  validate: (o, old) => validateNamespace(o, old),
  defaults(o) {
    const spec = section(o, 'spec');
    if (!Array.isArray(spec.finalizers)) spec.finalizers = ['kubernetes'];
    setDefault(section(o, 'status'), 'phase', 'Active');
  },
  prepareForCreate(o) {
    o.status = { phase: 'Active' };
  },
  fieldSelectors: { 'status.phase': path('status.phase') },
  returnDeletedObject: true,
  columns: namespaceColumns,
};
