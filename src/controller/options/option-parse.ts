// Values from text: a flag or its environment variable (argv/env), and a StorageClass parameter. Each row is read
// by its own `parse` or by its kind (durations, integers, numbers, switches, lists, choices), and numbers are
// checked with the row's bounds through outOfBounds, the one check that values given in code go through too
// (checkValue). The flag rows of a table are set back at their dotted paths (optionsFromFlags), and a table of
// StorageClass parameters is read whole (parseTextTable). Refusals are OptionValueError naming the row; the
// command line turns them into commander's errors (src/cli/flags.ts). Nothing here reads process.env or argv.
import { formatDuration, parseDuration } from './option-format.ts';
import { CONTROLLER_OPTIONS } from './option-table.ts';
import {
  durationBounds,
  flatRows,
  OptionValueError,
  outOfBounds,
  TIMER_MAX_MS,
  type FlatRow,
  type OptionKind,
  type OptionRow,
  type OptionTable,
} from './option-spec.ts';

/** `KUBE_PROVISIONER_<FLAG>`: the environment fallback of a flag without a conventional variable. */
export function envName(flag: string): string {
  return `KUBE_PROVISIONER_${flag.replace(/-/g, '_').toUpperCase()}`;
}

/** A flag's value placeholder: the row's own, or one derived from its kind. */
export function placeholderOf(row: OptionRow): string {
  const t = row.kind.type;
  return row.placeholder ?? (t === 'duration' ? '<duration>' : t === 'boolean' ? '[bool]' : '<n>');
}

/** A row that has a flag. */
export type FlagRow = FlatRow & { row: { flag: string } };

/** The rows of `table` that have a flag, in table order. */
export function flagRows(table: OptionTable): FlagRow[] {
  return flatRows(table).filter((r): r is FlagRow => r.row.flag !== undefined);
}

/** The controller option rows that have a flag (the flags of `run hostpath`), in table order. */
export function controllerFlagRows(): FlagRow[] {
  return flagRows(CONTROLLER_OPTIONS);
}

const refuse = (message: string): never => {
  throw new OptionValueError('', message);
};

/** A duration from text, within [min, max] (the row's bounds; a timer's limit by default). */
export function parseDurationText(text: string, min = 0, max = TIMER_MAX_MS): number {
  const ms = parseDuration(text);
  const out = outOfBounds({ type: 'duration', min, max }, ms);
  if (out === 'below') refuse(`"${text}" is shorter than ${formatDuration(min)}`);
  if (out === 'above')
    refuse(
      `"${text}" is longer than ${max} ms${max === TIMER_MAX_MS ? ' (about 24.8 days, the longest timer Node keeps)' : ''}`,
    );
  return ms;
}

/** An integer from text, within the bounds of `kind`. */
export function parseIntegerText(text: string, kind: { min: number; max?: number }): number {
  const n = Number(text);
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || outOfBounds({ type: 'integer', ...kind }, n))
    refuse(
      kind.max === undefined
        ? `"${text}" is not an integer >= ${kind.min}`
        : `"${text}" is not an integer from ${kind.min} to ${kind.max}`,
    );
  return n;
}

/** A finite number from text, at least `min`. */
export function parseNumberText(text: string, min: number): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || outOfBounds({ type: 'number', min }, n))
    refuse(`"${text}" is not a number >= ${min}`);
  return n;
}

/** `true/false`, `1/0`, `yes/no`, `on/off`: switches take an optional value so that `ENV=false` means false. */
export function parseBooleanText(text: string): boolean {
  const t = text.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(t)) return true;
  if (['false', '0', 'no', 'off'].includes(t)) return false;
  return refuse(`"${text}" is not true or false`);
}

/** A comma-separated list; blanks around entries and empty entries are dropped. */
export function parseListText(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** A value of `kind` from text, bounds checked. Throws OptionValueError without an option name. */
export function parseKindText(kind: OptionKind, text: string): unknown {
  switch (kind.type) {
    case 'duration':
      return parseDurationText(text, ...durationBounds(kind));
    case 'integer':
      return parseIntegerText(text, kind);
    case 'number':
      return parseNumberText(text, kind.min);
    case 'boolean':
      return parseBooleanText(text);
    case 'list':
      return parseListText(text);
    case 'choice':
      if (!kind.values.includes(text)) refuse(`${JSON.stringify(text)} is not one of ${kind.values.join(', ')}`);
      return text;
    case 'string':
      return text;
    case 'function':
    case 'parsed':
      return refuse('cannot be read from text');
  }
}

/** A row's value from text: its own `parse`, else its kind's. Throws OptionValueError naming `name`. */
export function parseRowText<T>(name: string, row: OptionRow<T>, text: string): T {
  try {
    return row.parse ? row.parse(text) : (parseKindText(row.kind, text) as T);
  } catch (err) {
    if (err instanceof OptionValueError && err.option === '')
      throw new OptionValueError(name, err.message, err.cause === undefined ? undefined : { cause: err.cause });
    throw err;
  }
}

/**
 * The options that flag values set: each flag row's value at its dotted path. `valueOf(flag)` is the flag's value
 * (its default included; undefined when it has none), `given(flag)` whether it came from the command line or the
 * environment. A row of a variant the mode flag did not choose is left out when it only holds its default, and
 * refused (OptionValueError naming `--flag`) when it was given.
 */
export function optionsFromFlags(
  table: OptionTable,
  valueOf: (flag: string) => unknown,
  given: (flag: string) => boolean,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const rows = flagRows(table);
  const modeFlagOf = (path: string): string => rows.find((r) => r.path === `${path}.mode`)?.row.flag ?? '';
  for (const { path, row, variant } of rows) {
    const value = valueOf(row.flag);
    if (value === undefined) continue;
    const keys = path.split('.');
    if (variant !== undefined) {
      const modeFlag = modeFlagOf(keys.slice(0, -1).join('.'));
      const mode = valueOf(modeFlag);
      if (mode !== variant) {
        if (given(row.flag))
          throw new OptionValueError(`--${row.flag}`, `belongs to --${modeFlag} ${variant}, not ${String(mode)}`);
        continue;
      }
    }
    let at = out;
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[keys[keys.length - 1]] = value;
  }
  return out;
}

/** How parseTextTable names what it reads, and names it refuses outright. */
export interface TextTableOptions {
  /** What one entry is called in an unknown-key refusal (`parameter`). */
  noun: string;
  /** Names refused with their own reason (a parameter another provisioner has and this one rejects on purpose). */
  refused?: Readonly<Record<string, string>>;
}

/**
 * Reads a flat table from text values (a StorageClass's `parameters`): every key must be a row (or is refused
 * naming every row), every value a string; rows with a default get it, and each given value is read by its row, in
 * table order. Keys without a value and without a default are absent from the result. Throws OptionValueError
 * naming the key.
 */
export function parseTextTable(
  table: OptionTable,
  given: Readonly<Record<string, unknown>> | undefined,
  o: TextTableOptions,
): Record<string, unknown> {
  const rows = flatRows(table);
  const known = rows.map((r) => r.path);
  const p = given ?? {};
  for (const key of Object.keys(p)) {
    if (o.refused && Object.hasOwn(o.refused, key)) throw new OptionValueError(key, o.refused[key]);
    if (!known.includes(key)) throw new OptionValueError(key, `unknown ${o.noun} (known: ${known.join(', ')})`);
    if (typeof p[key] !== 'string') throw new OptionValueError(key, 'must be a string');
  }
  const out: Record<string, unknown> = {};
  for (const { path, row } of rows) if (row.default !== undefined) out[path] = row.default;
  for (const { path, row } of rows) {
    const text = p[path];
    if (typeof text === 'string') out[path] = parseRowText(path, row, text);
  }
  return out;
}
