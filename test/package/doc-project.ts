// The guide's project as its code blocks give it: every ```ts block of docs/writing-a-provisioner.md and README.md
// (a block whose first line is `// file: PATH` is that file of the guide's project; the others are standalone
// snippets), and the guide's tsconfig.json with the given extra compiler options. Used by the pack test, which
// type-checks and runs it against the packed package.
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ROOT } from '../cli/cli-helpers.ts';

/** The fenced blocks of one language in a markdown file, in order. */
export function fencedBlocks(markdown: string, lang: string): string[] {
  const blocks: string[] = [];
  const re = new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm');
  for (let m = re.exec(markdown); m; m = re.exec(markdown)) blocks.push(m[1]);
  return blocks;
}

export const GUIDE = readFileSync(join(ROOT, 'docs', 'writing-a-provisioner.md'), 'utf8');
export const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** Writes the guide's files, README's snippets and tsconfig.json under `dir`; returns the files written. */
export async function writeDocProject(dir: string, compilerOptions: Record<string, unknown>): Promise<string[]> {
  const files: string[] = [];
  const blocks = [
    ...fencedBlocks(GUIDE, 'ts').map((b) => ({ b, from: 'guide' })),
    ...fencedBlocks(README, 'ts').map((b) => ({ b, from: 'readme' })),
  ];
  for (const [i, { b, from }] of blocks.entries()) {
    const named = /^\/\/ file: (\S+)\n/.exec(b);
    const file = named ? named[1] : `snippets/${from}-${i}.ts`;
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await writeFile(join(dir, file), b);
    files.push(file);
  }
  const [tsconfig] = fencedBlocks(GUIDE, 'json').map(
    (j) => JSON.parse(j) as { compilerOptions: Record<string, unknown>; include: string[] },
  );
  Object.assign(tsconfig.compilerOptions, compilerOptions);
  tsconfig.include.push('snippets');
  await writeFile(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
  return files;
}
