// snapshot.storage.k8s.io/v1 VolumeSnapshotClass, served as external-snapshotter's CRD defines it: cluster-scoped,
// short names `vsclass`/`vsclasses`, no status subresource, `driver` and `deletionPolicy` (Delete | Retain)
// required, string parameters, CRD generation semantics, and its additionalPrinterColumns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, record } from '../../common/field-errors.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  crdAgeColumn,
  crdNameColumn,
  customResourceStrategy,
  printerColumn,
  schemaEnum,
  schemaRequired,
  schemaType,
} from './custom-resource.ts';
import { VOLUME_SNAPSHOT_CLASS_SCHEMA } from './snapshot-schemas.ts';

/** The deletion policies of snapshot classes and contents, as the CRDs list them. */
export const DELETION_POLICIES = ['Delete', 'Retain'];

/** VolumeSnapshotClass: the CRD's structural schema. */
export function validateVolumeSnapshotClass(obj: KubeObject, _old?: KubeObject): StatusCause[] {
  const causes = schemaRequired(obj, FieldPath.root(''), ['deletionPolicy', 'driver']);
  causes.push(...schemaType(FieldPath.root('driver'), obj.driver, 'string'));
  causes.push(...schemaType(FieldPath.root('deletionPolicy'), obj.deletionPolicy, 'string'));
  causes.push(...schemaEnum(FieldPath.root('deletionPolicy'), obj.deletionPolicy, DELETION_POLICIES));
  causes.push(...schemaType(FieldPath.root('parameters'), obj.parameters, 'object'));
  for (const [k, v] of Object.entries(record(obj.parameters) ?? {}))
    causes.push(...schemaType(FieldPath.root('parameters').child(k), v, 'string'));
  return causes;
}

export const VOLUME_SNAPSHOT_CLASSES: ResourceType = {
  group: 'snapshot.storage.k8s.io',
  version: 'v1',
  resource: 'volumesnapshotclasses',
  kind: 'VolumeSnapshotClass',
  listKind: 'VolumeSnapshotClassList',
  namespaced: false,
  shortNames: ['vsclass', 'vsclasses'],
  singular: 'volumesnapshotclass',
  verbs: ALL_VERBS,
  hasStatus: false,
  validate: (o, old) => validateVolumeSnapshotClass(o, old),
  ...customResourceStrategy(false),
  fieldSelectors: {},
  customSchema: VOLUME_SNAPSHOT_CLASS_SCHEMA,
  columns: [
    crdNameColumn,
    printerColumn('Driver', 'string', '.driver'),
    printerColumn(
      'DeletionPolicy',
      'string',
      '.deletionPolicy',
      'Whether a VolumeSnapshotContent created through this class is deleted with its VolumeSnapshot.',
    ),
    crdAgeColumn,
  ],
};
