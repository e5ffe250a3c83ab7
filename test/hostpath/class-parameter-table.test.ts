// The StorageClass parameter table: docs/configuration.md lists exactly its rows (name, default, meaning), and
// each row's default is what a class without parameters gets.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLASS_PARAMETERS, DEFAULT_VOLUME_MODE_BITS, onDeleteFor, parseClassParameters, StorageClassParameterError } from '../../src/hostpath/class-parameters.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The docs table the rows render to. */
function parameterTable(): string {
  const lines = ['| Parameter | Default | Meaning |', '|---|---|---|'];
  for (const row of CLASS_PARAMETERS) lines.push(`| \`${row.name}\` | ${row.docDefault} | ${row.doc} |`);
  return lines.join('\n');
}

describe('StorageClass parameter table', () => {
  it('is what docs/configuration.md lists', () => {
    const doc = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    const table = parameterTable();
    assert.ok(doc.includes(`\n${table}\n`), `docs/configuration.md's StorageClass parameter table differs from the rows; expected:\n${table}`);
  });

  it('gives a class without parameters the rows\' defaults, and knows exactly the rows\' names', () => {
    // onDelete has no row default: it depends on the path kind (onDeleteFor), as nfs-subdir archives and local-path deletes.
    assert.deepEqual(parseClassParameters(undefined), { mode: DEFAULT_VOLUME_MODE_BITS, nodeAffinityKey: 'kubernetes.io/hostname' });
    assert.equal(onDeleteFor(parseClassParameters(undefined), true), 'archive');
    assert.equal(onDeleteFor(parseClassParameters(undefined), false), 'delete');
    assert.equal(onDeleteFor(parseClassParameters({ archiveOnDelete: 'F' }), true), 'delete');
    assert.equal(onDeleteFor(parseClassParameters({ archiveOnDelete: 'false', onDelete: 'retain' }), false), 'retain');
    assert.throws(
      () => parseClassParameters({ noSuchParameter: 'x' }),
      (e: unknown) => e instanceof StorageClassParameterError && CLASS_PARAMETERS.every((r) => e.message.includes(r.name)),
    );
  });
});
