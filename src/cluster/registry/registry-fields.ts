// The building blocks shared by the registry entries (core/*.ts, the group files): the standard verb
// list, defaulting helpers for untyped JSON and field-selector getters. (Pod spec defaults: core/pod-defaults.ts.)
import { fieldString, readPath } from '../common/meta.ts';
import type { FieldGetter } from '../common/selectors.ts';

/** How the store reads a field for field selectors; undefined compares as "". */

export const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** Sets `obj[key]` when it is absent, null or "" (kube's defaulting of unset scalar fields). */
export function setDefault(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (obj[key] === undefined || obj[key] === null || obj[key] === '') obj[key] = value;
}

/** The object at `obj[key]`, created (and stored) when absent or not an object. */
export function section(obj: Record<string, unknown>, key: string): Record<string, unknown> {
  let v = obj[key];
  if (v === undefined || v === null || typeof v !== 'object' || Array.isArray(v)) {
    v = {};
    obj[key] = v;
  }
  return v as Record<string, unknown>;
}

export const path =
  (p: string): FieldGetter =>
  (o) =>
    fieldString(readPath(o, p));

export const boolPath =
  (p: string): FieldGetter =>
  (o) =>
    readPath(o, p) === true ? 'true' : 'false';
