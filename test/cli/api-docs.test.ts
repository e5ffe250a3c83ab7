// Every symbol the package exports (the five entry points of package.json `exports`) has a TSDoc comment: the
// TypeScript compiler reads the entry points and the test lists each export whose declarations carry none.
// (`npm run docs` turns these comments into the TypeDoc reference; typedoc itself does not run in tests.)
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';
import { ROOT } from './cli-helpers.ts';

const ENTRY_POINTS = [
  'src/index.ts',
  'src/runtime/index.ts',
  'src/hostpath/index.ts',
  'src/csi/index.ts',
  'src/testing/index.ts',
];

/** `entry: name` of every export without documentation. */
function undocumentedExports(): string[] {
  const files = ENTRY_POINTS.map((f) => join(ROOT, f));
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    noEmit: true,
    strict: true,
    skipLibCheck: true,
    types: ['node'],
  });
  const checker = program.getTypeChecker();
  const missing: string[] = [];
  for (const [i, file] of files.entries()) {
    const source = program.getSourceFile(file);
    const moduleSymbol = source && checker.getSymbolAtLocation(source);
    assert.ok(moduleSymbol, `${ENTRY_POINTS[i]} is a module`);
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const documented =
        symbol.getDocumentationComment(checker).length > 0 ||
        (symbol.declarations ?? []).some((d) => ts.getJSDocCommentsAndTags(d).length > 0);
      if (!documented) missing.push(`${ENTRY_POINTS[i]}: ${exported.name}`);
    }
  }
  return missing;
}

test('every exported symbol of the package has a TSDoc comment', () => {
  const missing = undocumentedExports();
  assert.deepEqual(missing, [], `exports without a TSDoc comment:\n  ${missing.join('\n  ')}`);
});
