// The rows of a table as the Markdown tables of the docs: a flag table per docs section, the library table, the
// StorageClass parameter table. The docs are rendered from the same rows that check and parse the values, so a new
// row shows up in them by itself (`npm run gen:docs`; src/cli/generated-docs.ts says which table goes where).
import { formatDuration } from './option-format.ts';
import { envName, placeholderOf, type FlagRow } from './option-parse.ts';
import { flatRows, type OptionRow, type OptionTable } from './option-spec.ts';

/** The Default column of one row: as a flag writes it, or (`library`) as a value in code, durations in ms. */
function defaultCell(row: OptionRow, library = false): string {
  if (row.docDefault !== undefined) return row.docDefault;
  const d = row.default;
  if (d === undefined || (Array.isArray(d) && d.length === 0)) return 'none';
  if (row.kind.type === 'duration')
    return library ? `\`${String(d)}\` (${formatDuration(d as number)})` : `\`${formatDuration(d as number)}\``;
  return `\`${library && typeof d === 'string' ? `'${d}'` : String(d)}\``;
}

/** The Meaning column: the row's doc (or help), after the mode it belongs to. */
function meaningCell(row: OptionRow, variant?: string): string {
  return `${variant ? `(\`${variant}\`) ` : ''}${row.doc ?? row.help ?? ''}`;
}

/** The Markdown table of some flag rows: flag, environment variable, default, meaning (docs/configuration.md). */
export function flagTable(rows: readonly FlagRow[]): string {
  const lines = ['| Flag | Environment | Default | Meaning |', '|---|---|---|---|'];
  for (const { row, variant } of rows) {
    lines.push(
      `| \`--${row.flag} ${placeholderOf(row)}\` | \`${envName(row.flag)}\` | ${defaultCell(row)} | ${meaningCell(row, variant)} |`,
    );
  }
  return lines.join('\n');
}

/** Every row of `table` by its dotted path, with its flag (docs/writing-a-provisioner.md). */
export function libraryTable(table: OptionTable): string {
  const lines = ['| Option | Default | Flag | Meaning |', '|---|---|---|---|'];
  for (const { path, row, variant } of flatRows(table)) {
    lines.push(
      `| \`${path}\` | ${defaultCell(row, true)} | ${row.flag ? `\`--${row.flag}\`` : ''} | ${meaningCell(row, variant)} |`,
    );
  }
  return lines.join('\n');
}

/** The rows of a table read from text (StorageClass parameters): name, default, meaning. */
export function parameterTable(table: OptionTable): string {
  const lines = ['| Parameter | Default | Meaning |', '|---|---|---|'];
  for (const { path, row } of flatRows(table))
    lines.push(`| \`${path}\` | ${defaultCell(row)} | ${meaningCell(row)} |`);
  return lines.join('\n');
}
