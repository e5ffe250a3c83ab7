// snapshot.storage.k8s.io/v1 VolumeSnapshot, served as external-snapshotter's CRD defines it (client/config/crd):
// namespaced, short name `vs`, a status subresource, the schema's required fields and types, its CEL rules
// (exactly one source; the source fields immutable and required once set; a class name never empty), CRD
// generation semantics, and its additionalPrinterColumns.
import { isQuantity } from '../../../types/quantity.ts';
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, invalid, record } from '../../common/field-errors.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  crdAgeColumn,
  crdNameColumn,
  customResourceStrategy,
  printerColumn,
  ruleFailed,
  schemaRequired,
  schemaType,
  validateOneOfSource,
} from './custom-resource.ts';
import { validateSnapshotError, validateTimestamp } from './snapshot-status.ts';
import { VOLUME_SNAPSHOT_SCHEMA } from './snapshot-schemas.ts';

const ONE_SOURCE = 'exactly one of volumeSnapshotContentName and persistentVolumeClaimName must be set';

const validateSource = (source: unknown, oldSource: unknown, p: FieldPath): StatusCause[] =>
  validateOneOfSource(
    p,
    source,
    oldSource,
    ['persistentVolumeClaimName', 'volumeSnapshotContentName'],
    ['persistentVolumeClaimName', 'volumeSnapshotContentName'],
    ONE_SOURCE,
  );

function validateStatus(status: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = schemaType(p, status, 'object');
  const s = record(status);
  if (typeErrs.length || !s) return typeErrs;
  const causes = [
    ...schemaType(p.child('boundVolumeSnapshotContentName'), s.boundVolumeSnapshotContentName, 'string'),
    ...validateTimestamp(p.child('creationTime'), s.creationTime),
    ...schemaType(p.child('readyToUse'), s.readyToUse, 'boolean'),
    ...validateSnapshotError(p.child('error'), s.error),
    ...schemaType(p.child('volumeGroupSnapshotName'), s.volumeGroupSnapshotName, 'string'),
  ];
  const size = s.restoreSize;
  if (size !== undefined && size !== null && !isQuantity(typeof size === 'number' ? String(size) : size)) {
    causes.push(
      invalid(
        p.child('restoreSize'),
        size,
        `${p.child('restoreSize').toString()} in body should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'`,
      ),
    );
  }
  return causes;
}

/** VolumeSnapshot: the CRD's structural schema and CEL rules. */
export function validateVolumeSnapshot(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = schemaRequired(obj, FieldPath.root(''), ['spec']);
  const p = FieldPath.root('spec');
  const typeErrs = schemaType(p, obj.spec, 'object');
  const s = record(obj.spec);
  if (typeErrs.length || !s) return [...causes, ...typeErrs];
  const prev = record(old?.spec);
  causes.push(...schemaRequired(s, p, ['source']));
  causes.push(...validateSource(s.source, prev?.source, p.child('source')));
  const className = s.volumeSnapshotClassName;
  causes.push(...schemaType(p.child('volumeSnapshotClassName'), className, 'string'));
  if (className === '')
    causes.push(
      ruleFailed(
        p.child('volumeSnapshotClassName'),
        'string',
        'volumeSnapshotClassName must not be the empty string when set',
      ),
    );
  causes.push(...validateStatus(obj.status, FieldPath.root('status')));
  return causes;
}

export const VOLUME_SNAPSHOTS: ResourceType = {
  group: 'snapshot.storage.k8s.io',
  version: 'v1',
  resource: 'volumesnapshots',
  kind: 'VolumeSnapshot',
  listKind: 'VolumeSnapshotList',
  namespaced: true,
  shortNames: ['vs'],
  singular: 'volumesnapshot',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validateVolumeSnapshot(o, old),
  ...customResourceStrategy(true),
  fieldSelectors: {},
  customSchema: VOLUME_SNAPSHOT_SCHEMA,
  columns: [
    crdNameColumn,
    printerColumn(
      'ReadyToUse',
      'boolean',
      '.status.readyToUse',
      'Whether the snapshot can be used to restore a volume.',
    ),
    printerColumn(
      'SourcePVC',
      'string',
      '.spec.source.persistentVolumeClaimName',
      'The claim a new snapshot is (or was) taken from.',
    ),
    printerColumn(
      'SourceSnapshotContent',
      'string',
      '.spec.source.volumeSnapshotContentName',
      'The existing VolumeSnapshotContent this snapshot stands for.',
    ),
    printerColumn(
      'RestoreSize',
      'string',
      '.status.restoreSize',
      'The smallest volume that can be restored from this snapshot.',
    ),
    printerColumn(
      'SnapshotClass',
      'string',
      '.spec.volumeSnapshotClassName',
      'The VolumeSnapshotClass this snapshot asks for.',
    ),
    printerColumn(
      'SnapshotContent',
      'string',
      '.status.boundVolumeSnapshotContentName',
      'The VolumeSnapshotContent this snapshot is bound to (check that both point at each other).',
    ),
    printerColumn('CreationTime', 'date', '.status.creationTime', 'When the storage system took the snapshot.'),
    crdAgeColumn,
  ],
};
