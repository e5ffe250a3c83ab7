// storage.k8s.io/v1 VolumeAttachment: its registry entry (status subresource; client status dropped on create),
// validation after k/k pkg/apis/storage/validation (attacher a CSI driver name, exactly one source, node name;
// attachment metadata and error sizes; the spec immutable), and the kubectl columns. `status.attached` has no
// omitempty in Go, so every object reads back with a status.
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
  type JsonRecord,
} from '../../common/field-errors.ts';
import { isDNS1123Subdomain } from '../../common/name-rules.ts';
import { ALL_VERBS, section, setDefault } from '../registry-fields.ts';
import type { ResourceType } from '../resource-type.ts';
import { ageColumn, column, nameColumn, rec, spec, status, str, type TableColumn } from '../table-columns.ts';
import { byteLength, canonical } from '../validation.ts';
import { validateCSIDriverName } from './csi-drivers.ts';

const MAX_METADATA_BYTES = 256 * 1024;
const MAX_ERROR_MESSAGE = 1024;
const ONE_OF_SOURCES = 'must specify exactly one of inlineVolumeSpec and persistentVolumeName';

/** The inline (migrated in-tree) PersistentVolumeSpec: a CSI source, and none of the fields only a PV has. */
function validateInlineSpec(inline: JsonRecord, p: FieldPath): StatusCause[] {
  const causes: StatusCause[] = [];
  if (inline.claimRef != null)
    causes.push(forbidden(p.child('claimRef'), 'may not be specified in the context of inline volumes'));
  if (inline.capacity != null && Object.keys(record(inline.capacity) ?? {}).length > 0) {
    causes.push(forbidden(p.child('capacity'), 'may not be specified in the context of inline volumes'));
  }
  const csi = record(inline.csi);
  if (!csi) return [...causes, required(p.child('csi'), 'has to be specified in the context of inline volumes')];
  if (!csi.driver) causes.push(required(p.child('csi', 'driver')));
  if (!csi.volumeHandle) causes.push(required(p.child('csi', 'volumeHandle')));
  return causes;
}

function validateSource(source: unknown, p: FieldPath): StatusCause[] {
  const typeErrs = typeCheck(p, source, 'object');
  if (typeErrs.length) return typeErrs;
  const s = record(source) ?? {};
  const hasInline = s.inlineVolumeSpec !== undefined && s.inlineVolumeSpec !== null;
  const hasPv = s.persistentVolumeName !== undefined && s.persistentVolumeName !== null;
  if (!hasInline && !hasPv) return [required(p, ONE_OF_SOURCES)];
  if (hasInline && hasPv) return [forbidden(p, ONE_OF_SOURCES)];
  if (hasPv)
    return s.persistentVolumeName === ''
      ? [required(p.child('persistentVolumeName'), 'must specify non empty persistentVolumeName')]
      : [];
  const inline = record(s.inlineVolumeSpec);
  return inline
    ? validateInlineSpec(inline, p.child('inlineVolumeSpec'))
    : typeCheck(p.child('inlineVolumeSpec'), s.inlineVolumeSpec, 'object');
}

function validateVolumeError(e: unknown, p: FieldPath): StatusCause[] {
  const err = record(e);
  if (!err) return typeCheck(p, e, 'object');
  const causes: StatusCause[] = [];
  // kube reports the metadata limit here, not the message limit it checks.
  if (typeof err.message === 'string' && err.message.length > MAX_ERROR_MESSAGE)
    causes.push(tooLong(p.child('message'), MAX_METADATA_BYTES));
  if (typeof err.errorCode === 'number' && err.errorCode < 0) {
    causes.push(invalid(p.child('errorCode'), err.errorCode, 'must be between 0 and 2147483647, inclusive'));
  }
  return causes;
}

function validateStatus(st: JsonRecord, p: FieldPath): StatusCause[] {
  const causes = typeCheck(p.child('attached'), st.attached, 'boolean');
  let size = 0;
  for (const [k, v] of Object.entries(record(st.attachmentMetadata) ?? {}))
    size += byteLength(k) + (typeof v === 'string' ? byteLength(v) : 0);
  if (size > MAX_METADATA_BYTES) causes.push(tooLong(p.child('attachmentMetadata'), MAX_METADATA_BYTES));
  causes.push(...validateVolumeError(st.attachError, p.child('attachError')));
  causes.push(...validateVolumeError(st.detachError, p.child('detachError')));
  return causes;
}

/** ValidateVolumeAttachment + ValidateVolumeAttachmentV1; on update ValidateVolumeAttachmentUpdate's spec immutability. */
export function validateVolumeAttachment(obj: KubeObject, old?: KubeObject): StatusCause[] {
  const p = FieldPath.root('spec');
  const typeErrs = typeCheck(p, obj.spec, 'object');
  if (typeErrs.length) return typeErrs;
  const s = record(obj.spec) ?? {};
  const causes: StatusCause[] = [];
  if (!s.attacher) causes.push(required(p.child('attacher')));
  causes.push(...validateSource(s.source, p.child('source')));
  const nodeName = typeof s.nodeName === 'string' ? s.nodeName : '';
  causes.push(...invalidEach(p.child('nodeName'), nodeName, isDNS1123Subdomain(nodeName)));
  causes.push(...validateStatus(record(obj.status) ?? {}, FieldPath.root('status')));
  // The v1-only checks come after the shared ones, as in the strategy.
  causes.push(...validateCSIDriverName(s.attacher, p.child('attacher')));
  const pvName = record(s.source)?.persistentVolumeName;
  if (typeof pvName === 'string' && pvName !== '') {
    causes.push(...invalidEach(p.child('source', 'persistentVolumeName'), pvName, isDNS1123Subdomain(pvName)));
  }
  if (old !== undefined && JSON.stringify(canonical(obj.spec)) !== JSON.stringify(canonical(old.spec))) {
    causes.push(invalid(p, obj.spec, 'field is immutable'));
  }
  return causes;
}

const volumeAttachmentColumns: TableColumn[] = [
  nameColumn,
  {
    ...column(
      'Attacher',
      'attacher indicates the name of the volume driver that MUST handle this request. This is the name returned by GetPluginName().',
      (o) => str(spec(o).attacher),
    ),
    format: 'name',
  },
  column('PV', 'persistentVolumeName represents the name of the persistent volume to attach.', (o) =>
    str(rec(spec(o).source).persistentVolumeName),
  ),
  column('Node', 'nodeName represents the node that the volume should be attached to.', (o) => str(spec(o).nodeName)),
  column(
    'Attached',
    'attached indicates the volume is successfully attached. This field must only be set by the entity completing the attach operation, i.e. the external-attacher.',
    (o) => status(o).attached === true,
    0,
    'boolean',
  ),
  ageColumn,
];

export const VOLUME_ATTACHMENTS: ResourceType = {
  group: 'storage.k8s.io',
  version: 'v1',
  resource: 'volumeattachments',
  kind: 'VolumeAttachment',
  listKind: 'VolumeAttachmentList',
  namespaced: false,
  singular: 'volumeattachment',
  verbs: ALL_VERBS,
  hasStatus: true,
  validate: (o, old) => validateVolumeAttachment(o, old),
  defaults(o) {
    setDefault(section(o as Record<string, unknown>, 'status'), 'attached', false);
  },
  prepareForCreate(o) {
    // Only the external attacher reports attachment, through /status.
    o.status = { attached: false };
  },
  fieldSelectors: {},
  // Its REST store sets ReturnDeletedObject (pkg/registry/storage/*/storage/storage.go).
  returnDeletedObject: true,
  columns: volumeAttachmentColumns,
};
