// The machinery of option tables: a table is an object whose entries are options (one row each), groups of rows
// (`leaderElection: {…}`), or variants selected by a `mode` row (`volumeSave`). The option types a caller writes
// and the resolved types the controller reads are derived from the table (`OptionsOf`, `ResolvedOf`), and the
// TSDoc written on a row shows on the derived field; `resolveTable` checks and defaults a caller's object against
// it; `flatRows` lists the rows with their dotted paths for flags and docs. The same row describes a controller
// option and a StorageClass parameter (src/hostpath/config/class-parameters.ts): name (its key), kind with its bounds,
// default, docs text, and how it is read from text (option-parse.ts). Nothing here knows a particular option.
import { isJsonObject } from '../../types/json.ts';

/** How an option's value is read and checked. */
export type OptionKind =
  | { type: 'duration'; min?: number; max?: number }
  | { type: 'integer'; min: number; max?: number }
  | { type: 'number'; min: number }
  | { type: 'boolean' }
  | { type: 'choice'; values: readonly string[] }
  | { type: 'list' }
  | { type: 'string' }
  | { type: 'function' }
  /** A value only the row's own `parse` makes from text (a compiled path pattern); never checked as given. */
  | { type: 'parsed' };

/** Which table of docs/configuration.md lists a row (StorageClass parameters have their own table). */
export type OptionSection = 'leader-election' | 'work';

/** What a row says besides its value: its flag, help and documentation. */
export interface RowText {
  /** The flag of `run hostpath` without dashes; none for options the command does not expose. */
  flag?: string;
  /** The value placeholder in the flag (`<mode>`); derived from the kind when absent. */
  placeholder?: string;
  /** One line for `--help` (every row with a flag has one: test/cli/hostpath-options.test.ts checks it). */
  help?: string;
  /** The documentation's Meaning column (defaults to help). */
  doc?: string;
  /** The documentation's Default column when the default is computed or worth explaining. */
  docDefault?: string;
}

/** One option. `T` is its value type (carried for the derived types only). */
export interface OptionRow<T = unknown> extends RowText {
  readonly entry: 'option';
  kind: OptionKind;
  /** The default; undefined when there is none or it is computed by a rule (the Lease namespace). */
  default?: T;
  /**
   * Reads the value from text (a StorageClass parameter), checks included; throws OptionValueError (its `option`
   * is filled in by the caller). Absent: the kind's reading (parseKindText in option-parse.ts).
   */
  parse?: (text: string) => T;
  /** Phantom: never set. */
  readonly value?: T;
}

/** Rows that belong together, given as one object (`leaderElection: { mode, leaseDurationMs }`). */
export interface OptionGroup<R extends OptionTable = OptionTable> {
  readonly entry: 'group';
  rows: R;
  /** The docs table of every row inside (default: the parent's). */
  section?: OptionSection;
}

/** Alternatives chosen by a `mode` row; each has rows of its own, refused under the other modes. */
export interface OptionVariants<V extends Record<string, OptionTable> = Record<string, OptionTable>> {
  readonly entry: 'variants';
  mode: OptionRow<keyof V & string>;
  variants: V;
}

export type OptionEntry = OptionRow<unknown> | OptionGroup | OptionVariants;
export interface OptionTable {
  readonly [key: string]: OptionEntry;
}

/** The options a caller writes: every field optional. */
export type OptionsOf<T> = {
  -readonly [K in keyof T]?: T[K] extends OptionRow<infer V>
    ? V
    : T[K] extends OptionGroup<infer R>
      ? OptionsOf<R>
      : T[K] extends OptionVariants<infer V>
        ? { [M in keyof V]: { mode: M } & OptionsOf<V[M]> }[keyof V]
        : never;
};

/** The options with every default applied, as the controller reads them. */
export type ResolvedOf<T> = {
  -readonly [K in keyof T]-?: T[K] extends OptionRow<infer V>
    ? V
    : T[K] extends OptionGroup<infer R>
      ? ResolvedOf<R>
      : T[K] extends OptionVariants<infer V>
        ? { [M in keyof V]: { mode: M } & ResolvedOf<V[M]> }[keyof V]
        : never;
};

type RowInit<T> = RowText & { default?: T; parse?: (text: string) => T };

function row<T>(kind: OptionKind, init: RowInit<T>): OptionRow<T> {
  return { entry: 'option', kind, ...init };
}

/** The longest delay a Node timer holds: above it, setTimeout and AbortSignal.timeout fire after 1 ms. */
export const TIMER_MAX_MS = 2 ** 31 - 1;

/**
 * Milliseconds, written `15s`, `1m30s` as a flag. At most TIMER_MAX_MS unless `max` says otherwise (a duration
 * that is only compared, never a timer).
 */
export const duration = (init: RowInit<number> & { min?: number; max?: number }): OptionRow<number> => {
  const { min, max, ...rest } = init;
  return row({ type: 'duration', min, max }, rest);
};

/** The bounds of a duration row: [min, max]. */
export function durationBounds(k: { min?: number; max?: number }): [number, number] {
  return [k.min ?? 0, k.max ?? TIMER_MAX_MS];
}

type BoundedKind = Extract<OptionKind, { type: 'duration' | 'integer' | 'number' }>;

/**
 * The one bounds check of a number against its kind: `below`, `above`, or undefined when it fits. Values given in
 * code (checkValue) and read from text (a flag, an environment variable, a StorageClass parameter) both use it; only
 * the wording of the refusal differs (the value in code, or the text as written).
 */
export function outOfBounds(k: BoundedKind, n: number): 'below' | 'above' | undefined {
  const [min, max] = k.type === 'duration' ? durationBounds(k) : [k.min, k.type === 'integer' ? k.max : undefined];
  if (n < min) return 'below';
  if (max !== undefined && n > max) return 'above';
  return undefined;
}

/** A value as an error message shows it: strings quoted, arrays and objects as JSON. */
function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'object' && v !== null) {
    try {
      return JSON.stringify(v);
    } catch {
      return Object.prototype.toString.call(v);
    }
  }
  return String(v);
}
export const integer = (init: RowInit<number> & { min: number; max?: number }): OptionRow<number> => {
  const { min, max, ...rest } = init;
  return row(max === undefined ? { type: 'integer', min } : { type: 'integer', min, max }, rest);
};
export const number = (init: RowInit<number> & { min: number }): OptionRow<number> => {
  const { min, ...rest } = init;
  return row({ type: 'number', min }, rest);
};
export const boolean = (init: RowInit<boolean>): OptionRow<boolean> => row({ type: 'boolean' }, init);
export const choice = <T extends string>(values: readonly T[], init: RowInit<T>): OptionRow<T> =>
  row({ type: 'choice', values }, init);
export const list = (init: RowInit<string[]>): OptionRow<string[]> => row({ type: 'list' }, init);
export const text = (init: RowInit<string>): OptionRow<string> => row({ type: 'string' }, init);
/** A value that only the row's `parse` makes from text (a StorageClass parameter compiled on reading). */
export const parsed = <T>(init: RowInit<T> & { parse: (text: string) => T }): OptionRow<T> =>
  row({ type: 'parsed' }, init);
/** A function-valued option (a hook); never a flag. */
export const hook = <F extends (...args: never[]) => unknown>(init: RowInit<F> & { flag?: never }): OptionRow<F> =>
  row({ type: 'function' }, init);
export const group = <R extends OptionTable>(rows: R, section?: OptionSection): OptionGroup<R> => ({
  entry: 'group',
  rows,
  section,
});
export const variants = <V extends Record<string, OptionTable>>(
  mode: OptionRow<keyof V & string>,
  alternatives: V,
): OptionVariants<V> => ({
  entry: 'variants',
  mode,
  variants: alternatives,
});

/** One row with where it sits: its dotted path, docs section and (inside variants) the mode it belongs to. */
export interface FlatRow {
  path: string;
  row: OptionRow;
  section: OptionSection;
  /** The variant this row belongs to (`retry` for `volumeSave.retryCount`). */
  variant?: string;
}

/** Every row of `table` in table order, depth first. */
export function flatRows(table: OptionTable, prefix = '', section: OptionSection = 'work'): FlatRow[] {
  const out: FlatRow[] = [];
  for (const [key, e] of Object.entries(table)) {
    const path = `${prefix}${key}`;
    if (e.entry === 'option') out.push({ path, row: e, section });
    else if (e.entry === 'group') out.push(...flatRows(e.rows, `${path}.`, e.section ?? section));
    else {
      out.push({ path: `${path}.mode`, row: e.mode, section });
      for (const [mode, rows] of Object.entries(e.variants)) {
        out.push(...flatRows(rows, `${path}.`, section).map((r) => ({ ...r, variant: mode })));
      }
    }
  }
  return out;
}

/** A value refused by its row; `option` is the dotted path (or the parameter's name, or the flag). */
export class OptionValueError extends Error {
  constructor(
    readonly option: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** `value` (or the row's default) checked against the row's kind. */
export function checkValue(path: string, r: OptionRow, value: unknown): unknown {
  const v = value ?? r.default;
  const k = r.kind;
  const fail = (expected: string): never => {
    throw new OptionValueError(path, `expected ${expected}, got ${shown(v)}`);
  };
  if (v === undefined) return v;
  switch (k.type) {
    case 'duration': {
      const [min, max] = durationBounds(k);
      if (typeof v !== 'number' || !Number.isFinite(v) || outOfBounds(k, v))
        fail(`a number of milliseconds from ${min} to ${max}`);
      break;
    }
    case 'number':
      if (typeof v !== 'number' || !Number.isFinite(v) || outOfBounds(k, v)) fail(`a finite number >= ${k.min}`);
      break;
    case 'integer':
      if (typeof v !== 'number' || !Number.isInteger(v) || outOfBounds(k, v))
        fail(k.max === undefined ? `an integer >= ${k.min}` : `an integer from ${k.min} to ${k.max}`);
      break;
    case 'choice':
      if (typeof v !== 'string' || !k.values.includes(v)) fail(`one of ${k.values.join(', ')}`);
      break;
    case 'boolean':
      if (typeof v !== 'boolean') fail('true or false');
      break;
    case 'list':
      if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) fail('an array of strings');
      return [...(v as string[])];
    case 'string':
      if (typeof v !== 'string') fail('a string');
      break;
    case 'function':
      if (typeof v !== 'function') fail('a function');
      break;
    case 'parsed':
      break;
  }
  return v;
}

/**
 * Checks `input` against `table` and applies the defaults. Unknown keys are refused except `allowed`, which the
 * caller keeps for itself. Throws OptionValueError naming the option.
 */
export function resolveTable(
  table: OptionTable,
  input: unknown,
  prefix = '',
  allowed: ReadonlySet<string> = new Set(),
): Record<string, unknown> {
  if (input != null && !isJsonObject(input)) throw new OptionValueError(prefix.slice(0, -1), 'expected an object');
  const given = input ?? {};
  for (const key of Object.keys(given)) {
    if (Object.hasOwn(table, key) || allowed.has(key) || given[key] === undefined) continue;
    throw new OptionValueError(`${prefix}${key}`, `unknown option (known: ${Object.keys(table).join(', ')})`);
  }
  const out: Record<string, unknown> = {};
  for (const [key, e] of Object.entries(table)) {
    const path = `${prefix}${key}`;
    if (e.entry === 'option') out[key] = checkValue(path, e, given[key]);
    else if (e.entry === 'group') out[key] = resolveTable(e.rows, given[key], `${path}.`);
    else out[key] = resolveVariant(e, given[key], path);
  }
  return out;
}

function resolveVariant(e: OptionVariants, input: unknown, path: string): Record<string, unknown> {
  if (input != null && !isJsonObject(input)) throw new OptionValueError(path, 'expected an object');
  const { mode: given, ...rest } = input ?? {};
  const mode = checkValue(`${path}.mode`, e.mode, given) as string;
  const mine = e.variants[mode];
  for (const key of Object.keys(rest)) {
    if (Object.hasOwn(mine, key) || rest[key] === undefined) continue;
    const owner = Object.keys(e.variants).find((m) => Object.hasOwn(e.variants[m], key));
    if (owner) throw new OptionValueError(path, `${key} belongs to mode '${owner}', not '${mode}'`);
    throw new OptionValueError(
      `${path}.${key}`,
      `unknown option (known for mode '${mode}': mode, ${Object.keys(mine).join(', ')})`,
    );
  }
  return { mode, ...resolveTable(mine, rest, `${path}.`) };
}
