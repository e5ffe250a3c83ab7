// Writes the generated tables of the docs (controller options, library options, StorageClass parameters) from
// their tables in the code, between their markers. The docs test checks that this is a no-op.
//
//   npm run gen:docs
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_TABLES, replaceTable } from '../src/cli/generated-docs.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const files = new Map<string, string>();
for (const t of GENERATED_TABLES) {
  const path = join(root, t.file);
  files.set(path, replaceTable(files.get(path) ?? readFileSync(path, 'utf8'), t.marker, t.render()));
}
for (const [path, text] of files) {
  const changed = text !== readFileSync(path, 'utf8');
  if (changed) writeFileSync(path, text);
  console.log(`${changed ? 'wrote  ' : 'as was '} ${path.slice(root.length + 1)}`);
}
