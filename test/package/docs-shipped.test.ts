// What the packaged user docs name must be in the package, or they stop naming it: every examples/, deploy/, src/
// and docs/ path they mention is in `npm pack`'s file list, and they name no file of this repository's test/,
// bench/ or scripts/ (which the package does not ship). Paths that are not in this repository (the files of the
// guide's own example project) are the reader's. The guide's code itself is checked by the pack test.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { ROOT } from '../cli/cli-helpers.ts';
import { fencedBlocks, GUIDE } from './doc-project.ts';

const USER_DOCS = [
  'README.md',
  'docs/writing-a-provisioner.md',
  'docs/configuration.md',
  'docs/metrics.md',
  'docs/migrating.md',
];

function packedFiles(): Promise<Set<string>> {
  return new Promise((done, fail) => {
    execFile(
      'npm',
      ['pack', '--dry-run', '--json', '--ignore-scripts'],
      { cwd: ROOT, maxBuffer: 32 << 20 },
      (err, stdout) => {
        if (err) return fail(err);
        done(
          new Set(
            (JSON.parse(stdout.slice(stdout.indexOf('['))) as Array<{ files: Array<{ path: string }> }>)[0].files.map(
              (f) => f.path,
            ),
          ),
        );
      },
    );
  });
}

it('the user docs name only what the package ships', async () => {
  const shipped = await packedFiles();
  const problems: string[] = [];
  for (const doc of USER_DOCS) {
    const text = readFileSync(join(ROOT, doc), 'utf8').replace(/<!--[\s\S]*?-->/g, '');
    for (const m of text.matchAll(/\b((?:examples|deploy|src|docs|test|bench|scripts)\/[A-Za-z0-9_./-]*)(?!<)/g)) {
      const path = m[1].replace(/[.,]+$/, '');
      // Generated, a bare top-level folder (the reader's `test/` too), or the reader's own file.
      if (path.startsWith('docs/api') || /^[a-z]+\/$/.test(path) || !existsSync(join(ROOT, path))) continue;
      const inPackage =
        shipped.has(path) || [...shipped].some((f) => f.startsWith(path.endsWith('/') ? path : `${path}/`));
      if (!inPackage) problems.push(`${doc} names ${path}, which the package does not ship`);
    }
  }
  assert.deepEqual(problems, []);
});

it('the guide names its project files and gives a strict tsconfig', () => {
  const files = fencedBlocks(GUIDE, 'ts').map((b) => /^\/\/ file: (\S+)\n/.exec(b)?.[1]);
  for (const f of ['src/my-provisioner.ts', 'src/main.ts', 'test/my-provisioner.test.ts', 'test/conformance.test.ts'])
    assert.ok(files.includes(f), f);
  assert.match(fencedBlocks(GUIDE, 'json')[0], /"strict": true/);
});
