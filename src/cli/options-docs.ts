// The tables of docs/configuration.md that list the controller's options, rendered from the option table: the
// docs test compares them with the file, so a new row shows up in the docs (or fails the test) by itself.
import { formatDuration, type OptionRow } from '../controller/option-table.ts';
import { controllerFlagRows, envName } from './options.ts';

/** The Default column of one row. */
function defaultCell(row: OptionRow): string {
  if (row.docDefault !== undefined) return row.docDefault;
  if (row.default === undefined) return 'none';
  return `\`${row.kind.type === 'duration' ? formatDuration(row.default as number) : String(row.default)}\``;
}

/** The markdown table of the controller options of one section of docs/configuration.md. */
export function controllerOptionsTable(section: OptionRow['section']): string {
  const lines = ['| Flag | Environment | Default | Meaning |', '|---|---|---|---|'];
  for (const row of controllerFlagRows().filter((r) => r.section === section)) {
    const k = row.kind;
    const placeholder = row.placeholder ?? (k.type === 'duration' ? '<duration>' : k.type === 'boolean' ? '[bool]' : '<n>');
    lines.push(`| \`--${row.flag} ${placeholder}\` | \`${envName(row.flag)}\` | ${defaultCell(row)} | ${row.doc ?? row.help} |`);
  }
  return lines.join('\n');
}
