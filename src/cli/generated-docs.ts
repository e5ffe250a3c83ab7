// Which generated table of the docs goes where: the controller's options (per section of docs/configuration.md,
// and every option with its library path in docs/writing-a-provisioner.md) and the hostpath StorageClass
// parameters, each rendered from its table by the option room (src/controller/options/option-docs.ts).
// `npm run gen:docs` writes them between their markers; the docs tests fail when one is stale, so a new row shows
// up in the docs by itself.
import { flagTable, libraryTable, parameterTable } from '../controller/options/option-docs.ts';
import { controllerFlagRows } from '../controller/options/option-parse.ts';
import type { OptionSection } from '../controller/options/option-spec.ts';
import { CONTROLLER_OPTIONS } from '../controller/options/option-table.ts';
import { CLASS_PARAMETERS } from '../hostpath/config/class-parameters.ts';

/** The `run hostpath` flags of the controller options of one section of docs/configuration.md. */
export function controllerOptionsTable(section: OptionSection): string {
  return flagTable(controllerFlagRows().filter((r) => r.section === section));
}

/** Every controller option by its path in ProvisionControllerOptions, with its flag (docs/writing-a-provisioner.md). */
export function libraryOptionsTable(): string {
  return libraryTable(CONTROLLER_OPTIONS);
}

/** The StorageClass parameters of the hostpath provisioner (docs/configuration.md). */
export function classParametersTable(): string {
  return parameterTable(CLASS_PARAMETERS);
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
