// Builders for validation causes shaped like k8s.io/apimachinery/pkg/util/validation/field errors: the cause
// `reason` is the field.ErrorType ("FieldValueRequired"...), `message` its ErrorBody ("Required value",
// `Invalid value: "x": detail`...), `field` the dotted path with [i] / [key] subscripts. Also small readers
// for untyped JSON bodies, shared by the validators.

import type { StatusCause } from '../../types/k8s.ts';
import { isJsonObject } from '../../types/json.ts';

/** field.Path.String(): children joined by dots, indices and keys as subscripts. */
export class FieldPath {
  private constructor(private readonly text: string) {}
  static root(...names: string[]): FieldPath {
    return new FieldPath(names.join('.'));
  }
  child(...names: string[]): FieldPath {
    // Empty names are skipped; validators build a path for every field they check, valid or not, so no arrays.
    let text = this.text;
    for (const n of names) if (n !== '') text = text === '' ? n : `${text}.${n}`;
    return new FieldPath(text);
  }
  index(i: number): FieldPath {
    return new FieldPath(`${this.text}[${i}]`);
  }
  key(k: string): FieldPath {
    return new FieldPath(`${this.text}[${k}]`);
  }
  toString(): string {
    return this.text;
  }
}

/** Go's rendering of a bad value in ErrorBody: strings %q, numbers/bools bare, the rest %#v-like. */
export function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v) && v.every((x) => typeof x === 'string'))
    return `[]string{${v.map((x) => JSON.stringify(x)).join(', ')}}`;
  if (typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string')) {
    const entries = Object.entries(v as Record<string, string>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[string]string{${entries.map(([k, x]) => `${JSON.stringify(k)}:${JSON.stringify(x)}`).join(', ')}}`;
  }
  return JSON.stringify(v);
}

const cause = (reason: string, path: FieldPath, message: string): StatusCause => ({
  reason,
  message,
  field: path.toString(),
});
const withDetail = (body: string, detail: string | undefined) => (detail ? `${body}: ${detail}` : body);

export const required = (p: FieldPath, detail?: string) =>
  cause('FieldValueRequired', p, withDetail('Required value', detail));
export const forbidden = (p: FieldPath, detail?: string) =>
  cause('FieldValueForbidden', p, withDetail('Forbidden', detail));
export const invalid = (p: FieldPath, value: unknown, detail?: string) =>
  cause('FieldValueInvalid', p, withDetail(`Invalid value: ${formatValue(value)}`, detail));
export const duplicate = (p: FieldPath, value: unknown) =>
  cause('FieldValueDuplicate', p, `Duplicate value: ${formatValue(value)}`);
export const tooLong = (p: FieldPath, maxLength: number) =>
  cause('FieldValueTooLong', p, `Too long: may not be more than ${maxLength} bytes`);
export const tooMany = (p: FieldPath, actual: number, max: number) =>
  cause('FieldValueTooMany', p, `Too many: ${actual}: must have at most ${max} items`);
export const notSupported = (p: FieldPath, value: unknown, supported: readonly string[]) =>
  cause(
    'FieldValueNotSupported',
    p,
    `Unsupported value: ${formatValue(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  );
export const typeInvalid = (p: FieldPath, value: unknown, detail: string) =>
  cause('FieldValueTypeInvalid', p, `Invalid value: ${formatValue(value)}: ${detail}`);

/** One Invalid cause per message of a name-rule check (kube reports each rule violation separately). */
export function invalidEach(p: FieldPath, value: string, msgs: string[]): StatusCause[] {
  return msgs.map((m) => invalid(p, value, m));
}

/** ValidateImmutableField: `field is immutable` when the values differ (JSON-structurally). */
export function immutable(p: FieldPath, next: unknown, prev: unknown): StatusCause[] {
  return JSON.stringify(next ?? null) === JSON.stringify(prev ?? null) ? [] : [invalid(p, next, 'field is immutable')];
}

// ------------------------------------------------------------------------------------ untyped JSON readers

export type JsonRecord = Record<string, unknown>;

export function record(v: unknown): JsonRecord | undefined {
  return isJsonObject(v) ? v : undefined;
}

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A list, or an empty one when absent; a non-list is reported by the caller through `isListOrAbsent`. */
export function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** Checks that `v` is undefined/null or of the JSON type `kind`; returns a cause when it is not. */
export function typeCheck(
  p: FieldPath,
  v: unknown,
  kind: 'object' | 'array' | 'string' | 'number' | 'boolean',
): StatusCause[] {
  if (v === undefined || v === null) return [];
  const ok = kind === 'object' ? record(v) !== undefined : kind === 'array' ? Array.isArray(v) : typeof v === kind;
  return ok ? [] : [typeInvalid(p, v, `must be of type ${kind}`)];
}

/** Stable sort of a copy, for the supported-values lists kube prints sorted. */
export const sorted = (xs: readonly string[]) => [...xs].sort();
