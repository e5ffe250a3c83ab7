// The layering rule, read from the imports of every file under src/: cli -> hostpath (inside it, the rooms of HOSTPATH_ROOMS) | csi -> controller -> runtime ->
// types; cluster -> types (and inside cluster, the layers of CLUSTER_LAYERS); testing -> cluster + runtime + controller (the Provisioner contract, for the
// conformance suite) + csi (the stub CSI plugin speaks its wire format) (src/index.ts re-exports the library). Also fails on any
// import cycle between files that is not one of the known ones listed below (each with why it is still there).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';

const SRC = resolve(import.meta.dirname, '..', '..', 'src');

/** Which top-level folders each folder may import (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  types: [],
  runtime: ['types'],
  controller: ['runtime', 'types'],
  hostpath: ['controller', 'runtime', 'types'],
  // The CSI road is a backend like hostpath: a Provisioner on the controller, next to it, not under it.
  csi: ['controller', 'runtime', 'types'],
  cluster: ['types'],
  // The test kit's stub CSI plugin serves the CSI wire format with src/csi's descriptors and codec (one
  // description of the wire for both ends); nothing in csi imports testing.
  testing: ['cluster', 'runtime', 'controller', 'csi', 'types'],
  cli: ['hostpath', 'csi', 'controller', 'runtime', 'types', 'cluster', 'testing'],
  'index.ts': ['controller', 'runtime', 'types', 'hostpath'],
};

/** Edges that break the rule today, each with why; the list may only shrink. */
const EXCEPTIONS: ReadonlyArray<{ from: string; to: string; why: string }> = [];

/** Import cycles that exist today (files relative to src/, sorted); the list may only shrink. */
const KNOWN_CYCLES: ReadonlyArray<readonly string[]> = [];

/**
 * The layers inside src/cluster, and which other layers each may import. common (errors, metadata, JSON
 * safety, selectors, logger) is the floor; storage knows kinds only by plural/scope/field selectors, so it and
 * the registry (kinds, validation, columns) do not see each other; the write rules join them; HTTP serves them;
 * the cluster's own controllers work through the store; embedded-cluster.ts (the folder root) wires everything.
 */
const CLUSTER_LAYERS: Record<string, readonly string[]> = {
  common: [],
  schema: ['common'],
  patch: ['common', 'schema'],
  storage: ['common'],
  registry: ['common'],
  writes: ['common', 'schema', 'patch', 'storage', 'registry'],
  http: ['common', 'schema', 'patch', 'storage', 'registry', 'writes'],
  controllers: ['common', 'registry', 'storage', 'writes'],
  '(root)': ['common', 'schema', 'patch', 'storage', 'registry', 'writes', 'http', 'controllers'],
};

/**
 * The rooms of src/hostpath (docs/architecture.md), and which other rooms each may import. paths (lexical rules,
 * canonical form, templates) is the floor; config reads paths; disk (the fs facade, no-follow volume directories,
 * scripts) and records (on-disk records and path claims) touch the host; volume (the PV both ways) knows config and
 * paths only, so the ledger can read PVs without the PV code reading the ledger; provision, delete and expand are
 * the operations on top; usage stands alone; the folder root (the provisioner, its metrics, index.ts) wires them.
 */
const HOSTPATH_ROOMS: Record<string, readonly string[]> = {
  paths: [],
  config: ['paths'],
  disk: ['paths', 'config'],
  records: ['paths', 'disk'],
  volume: ['paths', 'config'],
  ledger: ['paths', 'config', 'disk', 'records', 'volume'],
  provision: ['paths', 'config', 'volume', 'ledger'],
  delete: ['paths', 'config', 'disk', 'records', 'volume', 'ledger'],
  expand: ['paths', 'config', 'disk', 'records', 'volume', 'ledger'],
  usage: [],
  '(root)': ['paths', 'config', 'disk', 'records', 'volume', 'ledger', 'provision', 'delete', 'expand', 'usage'],
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Relative imports of a file (static, re-exports and dynamic), resolved to absolute paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)].map((m) => m[1]);
  return specs.map((s) => resolve(dirname(file), s));
}

function folderOf(file: string): string {
  return relative(SRC, file).split('/')[0];
}

/** The layer of a file under src/cluster (its first folder there, or "(root)"). */
function clusterLayerOf(file: string): string {
  const parts = relative(join(SRC, 'cluster'), file).split('/');
  return parts.length > 1 ? parts[0] : '(root)';
}

/** The room of a file under src/hostpath (its first folder there, or "(root)"). */
function hostpathRoomOf(file: string): string {
  const parts = relative(join(SRC, 'hostpath'), file).split('/');
  return parts.length > 1 ? parts[0] : '(root)';
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f).filter((t) => t.startsWith(SRC))]));

/** Strongly connected components of more than one file (Tarjan), as sorted src-relative paths. */
function cycles(): string[][] {
  let index = 0;
  const stack: string[] = [];
  const meta = new Map<string, { index: number; low: number; onStack: boolean }>();
  const out: string[][] = [];
  const visit = (v: string) => {
    meta.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      const mw = meta.get(w);
      if (!mw) {
        visit(w);
        meta.get(v)!.low = Math.min(meta.get(v)!.low, meta.get(w)!.low);
      } else if (mw.onStack) meta.get(v)!.low = Math.min(meta.get(v)!.low, mw.index);
    }
    const mv = meta.get(v)!;
    if (mv.low === mv.index) {
      const component: string[] = [];
      for (;;) {
        const w = stack.pop()!;
        meta.get(w)!.onStack = false;
        component.push(relative(SRC, w));
        if (w === v) break;
      }
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const f of files) if (!meta.has(f)) visit(f);
  return out;
}

/** The re-export statements of one file's text. */
function relaysIn(text: string): string[] {
  const found = [...text.matchAll(/^export (?:type )?(?:\*|\{[^}]*\}) from '[^']+';/gm)].map((m) => m[0]);
  const imported = new Set(
    [...text.matchAll(/^import (?:type )?\{([^}]*)\} from/gm)].flatMap((m) =>
      m[1].split(',').map((s) =>
        s
          .replace(/^\s*type\s+/, '')
          .split(' as ')
          .pop()!
          .trim(),
      ),
    ),
  );
  for (const m of text.matchAll(/^export (?:type )?\{([^}]*)\};/gm)) {
    const names = m[1].split(',').map((s) =>
      s
        .replace(/^\s*type\s+/, '')
        .split(' as ')[0]
        .trim(),
    );
    if (names.some((n) => n !== '' && imported.has(n))) found.push(m[0]);
  }
  return found;
}

/** File names that say nothing of what they hold. */
const GRAB_BAG = /(?:^|-)(?:helpers?|utils?|misc|rules|stuff)\.ts$/;

describe('src/ layering', () => {
  it('every import goes down the layers (or is a listed exception)', () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      for (const target of targets) {
        const to = folderOf(target);
        if (to === from || ALLOWED[from]?.includes(to)) continue;
        if (EXCEPTIONS.some((e) => e.from === from && e.to === to)) continue;
        violations.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('inside src/cluster, every import goes down its layers', () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      if (folderOf(file) !== 'cluster') continue;
      const from = clusterLayerOf(file);
      assert.ok(CLUSTER_LAYERS[from], `src/cluster layer "${from}" has no rule`);
      for (const target of targets) {
        if (folderOf(target) !== 'cluster') continue;
        const to = clusterLayerOf(target);
        if (to !== from && !CLUSTER_LAYERS[from].includes(to))
          violations.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('inside src/hostpath, every import goes to a room below', () => {
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      if (folderOf(file) !== 'hostpath') continue;
      const from = hostpathRoomOf(file);
      assert.ok(HOSTPATH_ROOMS[from], `src/hostpath room "${from}" has no rule`);
      for (const target of targets) {
        if (folderOf(target) !== 'hostpath') continue;
        const to = hostpathRoomOf(target);
        if (to !== from && !HOSTPATH_ROOMS[from].includes(to))
          violations.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  it('has no import cycle besides the known ones', () => {
    const known = new Set(KNOWN_CYCLES.map((c) => c.join(' ')));
    const found = cycles().map((c) => c.join(' '));
    assert.deepEqual(
      found.filter((c) => !known.has(c)),
      [],
      'new import cycles',
    );
  });

  it('reads real imports (a check that finds nothing cannot fail)', () => {
    assert.ok(files.length > 50);
    assert.ok(
      (graph.get(join(SRC, 'controller', 'claim', 'claim-sync.ts')) ?? []).includes(join(SRC, 'controller', 'next.ts')),
    );
    assert.ok(
      (graph.get(join(SRC, 'cluster', 'writes', 'cluster-store.ts')) ?? []).includes(
        join(SRC, 'cluster', 'storage', 'store.ts'),
      ),
    );
    assert.ok(
      (graph.get(join(SRC, 'hostpath', 'delete', 'volume-delete.ts')) ?? []).includes(
        join(SRC, 'hostpath', 'ledger', 'record-store.ts'),
      ),
    );
  });
  it('re-exports only from index files: every name has one import path', () => {
    const offenders = files
      .filter((f) => basename(f) !== 'index.ts')
      .flatMap((f) => relaysIn(readFileSync(f, 'utf8')).map((r) => `${relative(SRC, f)}: ${r.split('\n')[0]}`));
    assert.deepEqual(offenders, []);
  });

  it('finds the relay shapes it forbids (a check that finds nothing cannot fail)', () => {
    assert.equal(relaysIn(`export { A } from './a.ts';`).length, 1);
    assert.equal(relaysIn(`export type {\n  A,\n  B,\n} from './a.ts';`).length, 1);
    assert.equal(relaysIn(`export * from './a.ts';`).length, 1);
    assert.equal(relaysIn(`import { a, type B } from './a.ts';\nexport { a };`).length, 1);
    assert.equal(relaysIn(`import type { B as C } from './a.ts';\nexport type { C };`).length, 1);
    assert.equal(relaysIn(`export function a() {}\nexport const b = 1;`).length, 0);
  });

  it('every file name says what it holds without its folder: no basename twice, no grab bag', () => {
    const byName = new Map<string, string[]>();
    for (const f of files) {
      if (basename(f) === 'index.ts') continue;
      byName.set(basename(f), [...(byName.get(basename(f)) ?? []), relative(SRC, f)]);
    }
    const shared = [...byName.values()].filter((paths) => paths.length > 1).map((paths) => paths.join(' & '));
    assert.deepEqual(shared, []);
    assert.deepEqual(
      files.map((f) => relative(SRC, f)).filter((f) => GRAB_BAG.test(basename(f))),
      [],
    );
  });
});
