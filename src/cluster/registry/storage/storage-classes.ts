// The storage.k8s.io/v1 group: StorageClass, with its registry entry, defaulting, validation (provisioner,
// parameters <= 512 entries and 256 KiB, reclaimPolicy, volumeBindingMode, allowedTopologies; parameters,
// provisioner, reclaimPolicy and volumeBindingMode immutable) after k/k pkg/apis/storage/validation, and its
// kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { ANN_BETA_DEFAULT_STORAGE_CLASS, ANN_DEFAULT_STORAGE_CLASS } from '../../../types/annotations.ts';
import {
  FieldPath,
  forbidden,
  immutable,
  invalid,
  invalidEach,
  list,
  record,
  required,
  sorted,
  tooLong,
  typeCheck,
} from '../../common/field-errors.ts';
import { isQualifiedName, isValidLabelValue } from '../../common/name-rules.ts';
import { ALL_VERBS, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, nonEmpty, str, type TableColumn } from '../table-columns.ts';
import { canonical, validateOptionalEnum } from '../validation.ts';

const SC_RECLAIM_POLICIES = sorted(['Delete', 'Retain']);
const BINDING_MODES = sorted(['Immediate', 'WaitForFirstConsumer']);
const MAX_PARAMETERS = 512;
const MAX_PARAMETERS_SIZE = 256 * 1024;

function validateAllowedTopologies(terms: unknown, p: FieldPath): StatusCause[] {
  const causes = typeCheck(p, terms, 'array');
  list(terms).forEach((rawTerm, i) => {
    const exprs = list(record(rawTerm)?.matchLabelExpressions);
    const tp = p.index(i).child('matchLabelExpressions');
    if (exprs.length === 0) causes.push(required(tp, 'must have at least one label expression'));
    exprs.forEach((rawExpr, j) => {
      const expr = record(rawExpr) ?? {};
      const key = String(expr.key ?? '');
      causes.push(...invalidEach(tp.index(j).child('key'), key, isQualifiedName(key)));
      const values = list(expr.values);
      if (values.length === 0) causes.push(required(tp.index(j).child('values'), 'must specify as least one value'));
      const seen = new Set<unknown>();
      values.forEach((v, k) => {
        if (seen.has(v))
          causes.push({
            reason: 'FieldValueDuplicate',
            field: tp.index(j).child('values').index(k).toString(),
            message: `Duplicate value: ${JSON.stringify(v)}`,
          });
        seen.add(v);
        if (typeof v === 'string')
          causes.push(...invalidEach(tp.index(j).child('values').index(k), v, isValidLabelValue(v)));
      });
    });
  });
  return causes;
}

/** StorageClass: provisioner, parameters (<= 512, <= 256 KiB), reclaimPolicy, volumeBindingMode; immutable fields on update. */
export function validateStorageClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const provisioner = obj.provisioner;
  if (provisioner === undefined || provisioner === null || provisioner === '')
    causes.push(required(FieldPath.root('provisioner')));
  else if (typeof provisioner !== 'string')
    causes.push(invalid(FieldPath.root('provisioner'), provisioner, 'must be a string'));
  else
    causes.push(...invalidEach(FieldPath.root('provisioner'), provisioner, isQualifiedName(provisioner.toLowerCase())));
  const params = obj.parameters;
  causes.push(...typeCheck(FieldPath.root('parameters'), params, 'object'));
  const entries = Object.entries(record(params) ?? {});
  if (entries.length > MAX_PARAMETERS) causes.push(tooLong(FieldPath.root('parameters'), MAX_PARAMETERS));
  let size = 0;
  for (const [k, v] of entries) {
    if (k === '') causes.push(invalid(FieldPath.root('parameters'), params, 'key must not be empty'));
    if (typeof v !== 'string') causes.push(invalid(FieldPath.root('parameters').key(k), v, 'must be a string'));
    else size += k.length + v.length;
  }
  if (size > MAX_PARAMETERS_SIZE) causes.push(tooLong(FieldPath.root('parameters'), MAX_PARAMETERS_SIZE));
  causes.push(...validateOptionalEnum(obj.reclaimPolicy, FieldPath.root('reclaimPolicy'), SC_RECLAIM_POLICIES));
  if (obj.volumeBindingMode === undefined || obj.volumeBindingMode === null || obj.volumeBindingMode === '') {
    causes.push(required(FieldPath.root('volumeBindingMode')));
  } else {
    causes.push(...validateOptionalEnum(obj.volumeBindingMode, FieldPath.root('volumeBindingMode'), BINDING_MODES));
  }
  causes.push(...typeCheck(FieldPath.root('allowVolumeExpansion'), obj.allowVolumeExpansion, 'boolean'));
  causes.push(...typeCheck(FieldPath.root('mountOptions'), obj.mountOptions, 'array'));
  causes.push(...validateAllowedTopologies(obj.allowedTopologies, FieldPath.root('allowedTopologies')));
  if (old !== undefined) {
    if (JSON.stringify(canonical(obj.parameters ?? {})) !== JSON.stringify(canonical(old.parameters ?? {}))) {
      causes.push(forbidden(FieldPath.root('parameters'), 'updates to parameters are forbidden.'));
    }
    if (obj.provisioner !== old.provisioner)
      causes.push(forbidden(FieldPath.root('provisioner'), 'updates to provisioner are forbidden.'));
    if ((obj.reclaimPolicy ?? 'Delete') !== (old.reclaimPolicy ?? 'Delete')) {
      causes.push(forbidden(FieldPath.root('reclaimPolicy'), 'updates to reclaimPolicy are forbidden.'));
    }
    causes.push(...immutable(FieldPath.root('volumeBindingMode'), obj.volumeBindingMode, old.volumeBindingMode));
  }
  return causes;
}

function isDefaultClass(o: KubeObject): boolean {
  const a = o.metadata.annotations ?? {};
  return a[ANN_DEFAULT_STORAGE_CLASS] === 'true' || a[ANN_BETA_DEFAULT_STORAGE_CLASS] === 'true';
}

const storageClassColumns: TableColumn[] = [
  { ...nameColumn, cell: (o) => str(o.metadata.name) + (isDefaultClass(o) ? ' (default)' : '') },
  column('Provisioner', 'provisioner indicates the type of the provisioner.', (o) => str(o.provisioner)),
  column(
    'ReclaimPolicy',
    'reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.',
    (o) => nonEmpty(o.reclaimPolicy, 'Delete'),
  ),
  column(
    'VolumeBindingMode',
    'volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.',
    (o) => nonEmpty(o.volumeBindingMode, 'Immediate'),
  ),
  column(
    'AllowVolumeExpansion',
    'allowVolumeExpansion shows whether the storage class allow volume expand.',
    (o) => o.allowVolumeExpansion === true,
  ),
  ageColumn,
];

export const STORAGE_CLASSES: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1',
  resource: 'storageclasses',
  kind: 'StorageClass',
  listKind: 'StorageClassList',
  namespaced: false,
  shortNames: ['sc'],
  singular: 'storageclass',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateStorageClass(o, old),
  defaults(o) {
    const rec = o as Record<string, unknown>;
    setDefault(rec, 'reclaimPolicy', 'Delete');
    setDefault(rec, 'volumeBindingMode', 'Immediate');
  },
  fieldSelectors: {},
  returnDeletedObject: true,
  columns: storageClassColumns,
};
