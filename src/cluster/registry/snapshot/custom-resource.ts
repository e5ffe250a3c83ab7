// What kube-apiserver does for every custom resource, for the snapshot kinds (CRDs on a real cluster, built in
// here): the CRD strategy (status dropped on create with a status subresource, generation 1 on create and +1 on
// any change outside metadata and status), the error shapes of structural-schema and CEL validation (`Required
// value`, `Unsupported value`, `Invalid value: "string": <rule message>`), and additionalPrinterColumns (a
// missing value is a null cell, a `date` column prints the age of its timestamp).
import type { KubeObject, StatusCause } from '../../../types/k8s.ts';
import { FieldPath, invalid, notSupported, record, required } from '../../common/field-errors.ts';
import { readPath } from '../../common/meta.ts';
import type { ResourceType } from '../resource-type.ts';
import { age, nameColumn, type TableColumn } from '../table-columns.ts';
import { canonical } from '../validation.ts';

/** The JSON-schema types the snapshot CRDs use. */
export type SchemaType = 'string' | 'boolean' | 'integer' | 'object';

function typeOfValue(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** The structural schema's type check: `<path> in body must be of type <type>: "<actual>"`. */
export function schemaType(p: FieldPath, v: unknown, type: SchemaType): StatusCause[] {
  if (v === undefined || v === null) return [];
  const actual = typeOfValue(v);
  if (actual === type || (type === 'object' && record(v))) return [];
  return [invalid(p, actual, `${p.toString()} in body must be of type ${type}: ${JSON.stringify(actual)}`)];
}

/** `required:` of an object schema. */
export function schemaRequired(obj: Record<string, unknown>, p: FieldPath, fields: readonly string[]): StatusCause[] {
  return fields.filter((f) => obj[f] === undefined || obj[f] === null).map((f) => required(p.child(f)));
}

/** `enum:` of a string schema (values listed as the CRD lists them). */
export function schemaEnum(p: FieldPath, v: unknown, values: readonly string[]): StatusCause[] {
  return typeof v === 'string' && !values.includes(v) ? [notSupported(p, v, values)] : [];
}

/** A failed x-kubernetes-validations rule: the value shown is the schema type of the node carrying the rule. */
export function ruleFailed(p: FieldPath, type: SchemaType, message: string): StatusCause {
  return invalid(p, type, message);
}

/** `self == oldSelf` on a field (immutable once set); evaluated only when the old object had the field. */
export function immutableOnceSet(p: FieldPath, next: unknown, prev: unknown, message: string): StatusCause[] {
  if (prev === undefined || prev === null || next === undefined || next === null) return [];
  return JSON.stringify(next) === JSON.stringify(prev) ? [] : [ruleFailed(p, 'string', message)];
}

/** `!has(oldSelf.f) || has(self.f)` on an object. */
export function requiredOnceSet(
  p: FieldPath,
  next: Record<string, unknown> | undefined,
  prev: Record<string, unknown> | undefined,
  field: string,
  message: string,
): StatusCause[] {
  if (!prev || !next || prev[field] === undefined || prev[field] === null) return [];
  return next[field] === undefined || next[field] === null ? [ruleFailed(p, 'object', message)] : [];
}

/**
 * A snapshot `source`: an object of two string fields of which exactly one is set, each immutable and required once
 * set. The causes come in the CRD's rule order: the types of `fields`, immutability in `immutableOrder`, then
 * required-once-set of `fields`, then the one-of rule (`oneOfMessage`).
 */
export function validateOneOfSource(
  p: FieldPath,
  source: unknown,
  oldSource: unknown,
  fields: readonly [string, string],
  immutableOrder: readonly [string, string],
  oneOfMessage: string,
): StatusCause[] {
  const typeErrs = schemaType(p, source, 'object');
  const s = record(source);
  if (typeErrs.length || !s) return typeErrs;
  const prev = record(oldSource);
  const causes = [
    ...fields.flatMap((f) => schemaType(p.child(f), s[f], 'string')),
    ...immutableOrder.flatMap((f) => immutableOnceSet(p.child(f), s[f], prev?.[f], `${f} is immutable`)),
    ...fields.flatMap((f) => requiredOnceSet(p, s, prev, f, `${f} is required once set`)),
  ];
  const set = fields.filter((f) => s[f] !== undefined && s[f] !== null);
  if (set.length !== 1) causes.push(ruleFailed(p, 'object', oneOfMessage));
  return causes;
}

/** Everything but metadata (and status, when it has its own subresource): what the generation counts. */
function generationContent(o: KubeObject, hasStatus: boolean): string {
  const { metadata: _m, ...rest } = o;
  if (hasStatus) delete rest.status;
  return canonicalJson(rest);
}

/** customResourceStrategy's PrepareForCreate / PrepareForUpdate. */
export function customResourceStrategy(
  hasStatus: boolean,
): Pick<ResourceType, 'prepareForCreate' | 'prepareForUpdate'> {
  return {
    prepareForCreate(o) {
      if (hasStatus) delete o.status;
      o.metadata.generation = 1;
    },
    prepareForUpdate(o, old) {
      const before = old.metadata.generation ?? 1;
      o.metadata.generation = before;
      if (generationContent(o, hasStatus) !== generationContent(old, hasStatus)) o.metadata.generation = before + 1;
    },
  };
}

/** JSON text with object keys sorted at every level and absent members dropped, for semantic equality. */
function canonicalJson(v: unknown): string {
  return JSON.stringify(canonical(v));
}

/** One additionalPrinterColumn: `jsonPath` is a dotted path from the object root. */
export function printerColumn(
  name: string,
  type: 'string' | 'boolean' | 'integer' | 'date',
  jsonPath: string,
  description = '',
  priority = 0,
): TableColumn {
  return {
    name,
    type,
    description,
    priority,
    cell(o, now) {
      const v = readPath(o, jsonPath.replace(/^\./, ''));
      if (v === undefined || v === null) return null;
      return type === 'date' ? age(v, now) : v;
    },
  };
}

/** The Age column every snapshot CRD declares (`.metadata.creationTimestamp`, type date, no description). */
export const crdAgeColumn: TableColumn = {
  ...printerColumn('Age', 'date', '.metadata.creationTimestamp'),
  description: '',
};

/** The Name column the CRD table convertor always puts first. */
export const crdNameColumn: TableColumn = nameColumn;
