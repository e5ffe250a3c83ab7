// The StorageClass parameter table: each row's default is what a class without parameters gets, and an unknown
// parameter is refused naming every row. (docs/configuration.md's table is rendered from the rows: test/cli/docs.test.ts.)
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  CLASS_PARAMETERS,
  DEFAULT_VOLUME_MODE_BITS,
  onDeleteFor,
  parseClassParameters,
  StorageClassParameterError,
} from '../../src/hostpath/config/class-parameters.ts';

describe('StorageClass parameter table', () => {
  it("gives a class without parameters the rows' defaults, and knows exactly the rows' names", () => {
    // onDelete has no row default: it depends on the path kind (onDeleteFor), as nfs-subdir archives and local-path deletes.
    assert.deepEqual(parseClassParameters(undefined), {
      mode: DEFAULT_VOLUME_MODE_BITS,
      nodeAffinityKey: 'kubernetes.io/hostname',
    });
    assert.equal(onDeleteFor(parseClassParameters(undefined), true), 'archive');
    assert.equal(onDeleteFor(parseClassParameters(undefined), false), 'delete');
    assert.equal(onDeleteFor(parseClassParameters({ archiveOnDelete: 'F' }), true), 'delete');
    assert.equal(onDeleteFor(parseClassParameters({ archiveOnDelete: 'false', onDelete: 'retain' }), false), 'retain');
    assert.throws(
      () => parseClassParameters({ noSuchParameter: 'x' }),
      (e: unknown) =>
        e instanceof StorageClassParameterError &&
        Object.keys(CLASS_PARAMETERS).every((name) => e.message.includes(name)),
    );
  });
});
