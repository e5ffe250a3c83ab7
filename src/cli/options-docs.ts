// The generated tables of the docs: the controller's options (per section of docs/configuration.md, and every
// option with its library path in docs/writing-a-provisioner.md) and the hostpath StorageClass parameters, each
// rendered from its table. `npm run gen:docs` writes them between their markers; the docs tests fail when one is
// stale, so a new row shows up in the docs by itself.
import { CONTROLLER_OPTIONS, formatDuration } from '../controller/option-table.ts';
import { flatRows, type OptionRow, type OptionSection } from '../controller/option-spec.ts';
import { CLASS_PARAMETERS } from '../hostpath/config/class-parameters.ts';
import { controllerFlagRows, envName, placeholderOf } from './options.ts';

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
function meaningCell(row: OptionRow, variant: string | undefined): string {
  return `${variant ? `(\`${variant}\`) ` : ''}${row.doc ?? row.help}`;
}

/** The markdown table of the `run hostpath` flags of the controller options of one section of docs/configuration.md. */
export function controllerOptionsTable(section: OptionSection): string {
  const lines = ['| Flag | Environment | Default | Meaning |', '|---|---|---|---|'];
  for (const { row, variant } of controllerFlagRows().filter((r) => r.section === section)) {
    lines.push(
      `| \`--${row.flag} ${placeholderOf(row)}\` | \`${envName(row.flag)}\` | ${defaultCell(row)} | ${meaningCell(row, variant)} |`,
    );
  }
  return lines.join('\n');
}

/** Every controller option by its path in ProvisionControllerOptions, with its flag (docs/writing-a-provisioner.md). */
export function libraryOptionsTable(): string {
  const lines = ['| Option | Default | Flag | Meaning |', '|---|---|---|---|'];
  for (const { path, row, variant } of flatRows(CONTROLLER_OPTIONS)) {
    lines.push(
      `| \`${path}\` | ${defaultCell(row, true)} | ${row.flag ? `\`--${row.flag}\`` : ''} | ${meaningCell(row, variant)} |`,
    );
  }
  return lines.join('\n');
}

/** The StorageClass parameters of the hostpath provisioner (docs/configuration.md). */
export function classParametersTable(): string {
  const lines = ['| Parameter | Default | Meaning |', '|---|---|---|'];
  for (const row of CLASS_PARAMETERS) lines.push(`| \`${row.name}\` | ${row.docDefault} | ${row.doc} |`);
  return lines.join('\n');
}

/** One generated table: the file, the marker comment that precedes it, and its rendering. */
export interface GeneratedTable {
  file: string;
  marker: string;
  render(): string;
}

/** Every generated table of the docs. */
export const GENERATED_TABLES: readonly GeneratedTable[] = [
  {
    file: 'docs/configuration.md',
    marker: 'controller-options:leader-election',
    render: () => controllerOptionsTable('leader-election'),
  },
  { file: 'docs/configuration.md', marker: 'controller-options:work', render: () => controllerOptionsTable('work') },
  { file: 'docs/configuration.md', marker: 'storageclass-parameters', render: classParametersTable },
  { file: 'docs/writing-a-provisioner.md', marker: 'library-options', render: libraryOptionsTable },
];

/**
 * `text` with the table after `<!-- marker ... -->` replaced by `table` (the table is the run of lines starting
 * with `|` right after the marker line). Throws when the marker is missing.
 */
export function replaceTable(text: string, marker: string, table: string): string {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`<!-- ${marker} `) || l === `<!-- ${marker} -->`);
  if (at < 0) throw new Error(`no <!-- ${marker} --> marker`);
  let end = at + 1;
  while (end < lines.length && lines[end].startsWith('|')) end++;
  return [...lines.slice(0, at + 1), table, ...lines.slice(end)].join('\n');
}
