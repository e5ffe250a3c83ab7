// Checks the snapshot CRDs share for their status: the `error` object and `format: date-time` timestamps, with
// the messages of kube-openapi's schema validation.
import type { StatusCause } from '../../../types/k8s.ts';
import { FieldPath, invalid, record } from '../../common/field-errors.ts';
import { schemaType } from './custom-resource.ts';

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A `format: date-time` string: `<path> in body must be of type date-time: "<value>"` otherwise. */
export function validateTimestamp(p: FieldPath, v: unknown): StatusCause[] {
  const typeErrs = schemaType(p, v, 'string');
  if (typeErrs.length || typeof v !== 'string' || RFC3339.test(v)) return typeErrs;
  return [invalid(p, v, `${p.toString()} in body must be of type date-time: ${JSON.stringify(v)}`)];
}

/** VolumeSnapshotError: `message` a string, `time` a date-time. */
export function validateSnapshotError(p: FieldPath, v: unknown): StatusCause[] {
  const typeErrs = schemaType(p, v, 'object');
  const e = record(v);
  if (typeErrs.length || !e) return typeErrs;
  return [...schemaType(p.child('message'), e.message, 'string'), ...validateTimestamp(p.child('time'), e.time)];
}
