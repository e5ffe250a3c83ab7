// storage.k8s.io/v1beta1 VolumeAttributesClass, at the version Kubernetes 1.32 serves it (beta there, and off
// unless the VolumeAttributesClass feature gate and the storage.k8s.io/v1beta1 API are enabled; it went GA as
// storage.k8s.io/v1 in 1.34): its registry entry, validation after k/k pkg/apis/storage/validation (driverName a
// qualified name, at least one parameter; driverName and parameters immutable), and the kubectl columns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import {
  FieldPath,
  forbidden,
  invalid,
  invalidEach,
  record,
  required,
  tooLong,
  typeCheck,
} from '../../common/field-errors.ts';
import { isQualifiedName } from '../../common/name-rules.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, str, type TableColumn } from '../table-columns.ts';
import { canonical } from '../validation.ts';

const MAX_PARAMETERS = 512;
const MAX_PARAMETERS_SIZE = 256 * 1024;

function validateParameters(params: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, params, 'object');
  if (typeErrs.length) return typeErrs;
  const entries = Object.entries(record(params) ?? {});
  if (entries.length > MAX_PARAMETERS) return [tooLong(p, MAX_PARAMETERS)];
  const causes: StatusCause[] = [];
  let size = 0;
  for (const [k, v] of entries) {
    if (k === '') causes.push(invalid(p, k, 'field can not be empty.'));
    if (typeof v !== 'string') causes.push(invalid(p.key(k), v, 'must be a string'));
    else size += k.length + v.length;
  }
  if (size > MAX_PARAMETERS_SIZE) causes.push(tooLong(p, MAX_PARAMETERS_SIZE));
  if (entries.length === 0) causes.push(required(p, 'must contain at least one key/value pair'));
  return causes;
}

/** VolumeAttributesClass: driverName and parameters; on update both are immutable (and re-validated). */
export function validateVolumeAttributesClass(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes: StatusCause[] = [];
  if (old !== undefined) {
    if (obj.driverName !== old.driverName)
      causes.push(forbidden(FieldPath.root('driverName'), 'updates to driverName are forbidden.'));
    if (JSON.stringify(canonical(obj.parameters ?? {})) !== JSON.stringify(canonical(old.parameters ?? {}))) {
      causes.push(forbidden(FieldPath.root('parameters'), 'updates to parameters are forbidden.'));
    }
  }
  const driver = obj.driverName;
  if (driver === undefined || driver === null || driver === '') causes.push(required(FieldPath.root('driverName')));
  else if (typeof driver !== 'string') causes.push(invalid(FieldPath.root('driverName'), driver, 'must be a string'));
  else causes.push(...invalidEach(FieldPath.root('driverName'), driver, isQualifiedName(driver.toLowerCase())));
  causes.push(...validateParameters(obj.parameters, FieldPath.root('parameters')));
  return causes;
}

const vacColumns: TableColumn[] = [
  nameColumn,
  column('DriverName', 'Name of the CSI driver This field is immutable.', (o) => str(o.driverName)),
  ageColumn,
];

export const VOLUME_ATTRIBUTES_CLASSES: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1beta1',
  resource: 'volumeattributesclasses',
  kind: 'VolumeAttributesClass',
  listKind: 'VolumeAttributesClassList',
  namespaced: false,
  shortNames: ['vac'],
  singular: 'volumeattributesclass',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateVolumeAttributesClass(o, old),
  fieldSelectors: {},
  columns: vacColumns,
};
