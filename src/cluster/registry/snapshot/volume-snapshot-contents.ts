// snapshot.storage.k8s.io/v1 VolumeSnapshotContent, served as external-snapshotter's CRD defines it:
// cluster-scoped, short names `vsc`/`vscs`, a status subresource, deletionPolicy/driver/source/volumeSnapshotRef
// required, its CEL rules (exactly one of volumeHandle and snapshotHandle, both immutable and required once set;
// the snapshot reference names its namespace; sourceVolumeMode immutable), CRD generation semantics, and its
// additionalPrinterColumns.
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, invalid, record } from '../../common/field-errors.ts';
import { ALL_VERBS } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import {
  crdAgeColumn,
  crdNameColumn,
  customResourceStrategy,
  immutableOnceSet,
  printerColumn,
  requiredOnceSet,
  ruleFailed,
  schemaEnum,
  schemaRequired,
  schemaType,
  validateOneOfSource,
} from './custom-resource.ts';
import { validateSnapshotError } from './snapshot-status.ts';
import { DELETION_POLICIES } from './volume-snapshot-classes.ts';
import { VOLUME_SNAPSHOT_CONTENT_SCHEMA } from './snapshot-schemas.ts';

const ONE_HANDLE = 'exactly one of volumeHandle and snapshotHandle must be set';

const validateSource = (source: unknown, oldSource: unknown, p: FieldPath): StatusCause[] =>
  validateOneOfSource(
    p,
    source,
    oldSource,
    ['volumeHandle', 'snapshotHandle'],
    ['snapshotHandle', 'volumeHandle'],
    ONE_HANDLE,
  );

function validateRef(ref: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = schemaType(p, ref, 'object');
  const r = record(ref);
  if (typeErrs.length || !r) return typeErrs;
  const causes: StatusCause[] = [];
  for (const f of ['apiVersion', 'fieldPath', 'kind', 'name', 'namespace', 'resourceVersion', 'uid'])
    causes.push(...schemaType(p.child(f), r[f], 'string'));
  if (r.name === undefined || r.namespace === undefined) {
    causes.push(
      ruleFailed(p, 'object', 'both spec.volumeSnapshotRef.name and spec.volumeSnapshotRef.namespace must be set'),
    );
  }
  return causes;
}

function validateStatus(status: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = schemaType(p, status, 'object');
  const s = record(status);
  if (typeErrs.length || !s) return typeErrs;
  const causes = [
    ...schemaType(p.child('creationTime'), s.creationTime, 'integer'),
    ...validateSnapshotError(p.child('error'), s.error),
    ...schemaType(p.child('readyToUse'), s.readyToUse, 'boolean'),
    ...schemaType(p.child('restoreSize'), s.restoreSize, 'integer'),
    ...schemaType(p.child('snapshotHandle'), s.snapshotHandle, 'string'),
    ...schemaType(p.child('volumeGroupSnapshotHandle'), s.volumeGroupSnapshotHandle, 'string'),
  ];
  if (typeof s.restoreSize === 'number' && s.restoreSize < 0) {
    const path = p.child('restoreSize');
    causes.push(invalid(path, s.restoreSize, `${path.toString()} in body should be greater than or equal to 0`));
  }
  return causes;
}

/** VolumeSnapshotContent: the CRD's structural schema and CEL rules. */
export function validateVolumeSnapshotContent(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const causes = schemaRequired(obj, FieldPath.root(''), ['spec']);
  const p = FieldPath.root('spec');
  const typeErrs = schemaType(p, obj.spec, 'object');
  const s = record(obj.spec);
  if (typeErrs.length || !s) return [...causes, ...typeErrs];
  const prev = record(old?.spec);
  causes.push(...schemaRequired(s, p, ['deletionPolicy', 'driver', 'source', 'volumeSnapshotRef']));
  causes.push(...schemaType(p.child('deletionPolicy'), s.deletionPolicy, 'string'));
  causes.push(...schemaEnum(p.child('deletionPolicy'), s.deletionPolicy, DELETION_POLICIES));
  causes.push(...schemaType(p.child('driver'), s.driver, 'string'));
  causes.push(...validateSource(s.source, prev?.source, p.child('source')));
  causes.push(...schemaType(p.child('sourceVolumeMode'), s.sourceVolumeMode, 'string'));
  causes.push(
    ...immutableOnceSet(
      p.child('sourceVolumeMode'),
      s.sourceVolumeMode,
      prev?.sourceVolumeMode,
      'sourceVolumeMode is immutable',
    ),
  );
  causes.push(...requiredOnceSet(p, s, prev, 'sourceVolumeMode', 'sourceVolumeMode is required once set'));
  causes.push(...schemaType(p.child('volumeSnapshotClassName'), s.volumeSnapshotClassName, 'string'));
  causes.push(...validateRef(s.volumeSnapshotRef, p.child('volumeSnapshotRef')));
  causes.push(...validateStatus(obj.status, FieldPath.root('status')));
  return causes;
}

export const VOLUME_SNAPSHOT_CONTENTS: ResourceType = {
  group: 'snapshot.storage.k8s.io',
  version: 'v1',
  resource: 'volumesnapshotcontents',
  kind: 'VolumeSnapshotContent',
  listKind: 'VolumeSnapshotContentList',
  namespaced: false,
  shortNames: ['vsc', 'vscs'],
  singular: 'volumesnapshotcontent',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validateVolumeSnapshotContent(o, old),
  ...customResourceStrategy(true),
  fieldSelectors: {},
  customSchema: VOLUME_SNAPSHOT_CONTENT_SCHEMA,
  columns: [
    crdNameColumn,
    printerColumn(
      'ReadyToUse',
      'boolean',
      '.status.readyToUse',
      'Whether the snapshot can be used to restore a volume.',
    ),
    printerColumn('RestoreSize', 'integer', '.status.restoreSize', 'The full size of the snapshot, in bytes.'),
    printerColumn(
      'DeletionPolicy',
      'string',
      '.spec.deletionPolicy',
      "Whether the storage system's snapshot is deleted with this object's VolumeSnapshot.",
    ),
    printerColumn('Driver', 'string', '.spec.driver', 'The CSI driver that took the snapshot.'),
    printerColumn(
      'VolumeSnapshotClass',
      'string',
      '.spec.volumeSnapshotClassName',
      'The VolumeSnapshotClass of this snapshot.',
    ),
    printerColumn(
      'VolumeSnapshot',
      'string',
      '.spec.volumeSnapshotRef.name',
      'The VolumeSnapshot this content is bound to.',
    ),
    printerColumn(
      'VolumeSnapshotNamespace',
      'string',
      '.spec.volumeSnapshotRef.namespace',
      'The namespace of the VolumeSnapshot this content is bound to.',
    ),
    crdAgeColumn,
  ],
};
