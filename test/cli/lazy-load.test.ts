// The command loads only what a subcommand uses: the static import graph from each entry (dynamic imports are
// where loading stops) must not reach the embedded cluster, SQLite or x509 for --help, --version and explain,
// nor any cluster code for `run hostpath`. Also --version, the top-level help listing every subcommand with
// the description its module registers, and one message for a missing kubeconfig however it was named.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { SUBCOMMANDS, subcommandOf } from '../../src/cli/commands.ts';
import { ROOT, runCli } from './cli-helpers.ts';

/** Runtime imports of one source file: `import x from`, `export … from`, side-effect imports; not `import type`. */
function runtimeImports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs: string[] = [];
  const re = /^(?:import|export)\s+(?!type\b)(?:[^;'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gms;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const clause = text.slice(m.index, m.index + m[0].length);
    // `import { type A, type B } from` is erased by the compiler: only value specifiers keep the module.
    const named = /\{([^}]*)\}/.exec(clause)?.[1];
    if (
      named !== undefined &&
      !/^\s*import\s+\w/.test(clause) &&
      named
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .every((s) => s.startsWith('type '))
    )
      continue;
    specs.push(m[1]);
  }
  return specs;
}

/** Every module reached from `entry` through static runtime imports: project files (relative) and packages. */
function staticClosure(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [resolve(ROOT, entry)];
  while (todo.length) {
    const file = todo.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of runtimeImports(file)) {
      if (spec.startsWith('.')) todo.push(resolve(dirname(file), spec));
      else if (!spec.startsWith('node:')) seen.add(`package:${spec}`);
    }
  }
  return new Set([...seen].map((f) => (f.startsWith('package:') ? f : f.slice(ROOT.length))));
}

const heavy = (mods: Set<string>) =>
  [...mods].filter(
    (m) =>
      m.startsWith('src/cluster/') ||
      /better-sqlite3|@peculiar\/x509|reflect-metadata|@kubernetes\/client-node/.test(m),
  );

describe('lazy loading of subcommands', () => {
  it('--help and --version load only the command table and the version', () => {
    const mods = staticClosure('src/cli/main.ts');
    assert.deepEqual([...mods].filter((m) => !m.startsWith('package:')).sort(), [
      'src/cli/commands.ts',
      'src/cli/main.ts',
      'src/cli/version.ts',
    ]);
    assert.deepEqual(heavy(mods), []);
  });
  it('explain loads no cluster, SQLite, x509 or client-node', () => {
    const mods = staticClosure('src/cli/explain.ts');
    assert.ok(mods.has('src/controller/claim/explain-claim.ts'), 'the graph walk follows imports');
    assert.deepEqual(heavy(mods), []);
  });
  it('run hostpath loads no cluster code', () => {
    const mods = staticClosure('src/cli/run-hostpath.ts');
    assert.ok(mods.has('src/hostpath/hostpath-provisioner.ts'), 'the graph walk follows imports');
    assert.deepEqual(heavy(mods), []);
  });
  it('the package root loads no cluster code and no client-node', () => {
    assert.deepEqual(heavy(staticClosure('src/index.ts')), []);
    assert.deepEqual(heavy(staticClosure('src/runtime/index.ts')), []);
  });
  it('kube-provisioner/csi and the test kit load @grpc/grpc-js only when a client connects or a stub plugin starts', () => {
    for (const entry of ['src/index.ts', 'src/csi/index.ts', 'src/testing/index.ts']) {
      const mods = staticClosure(entry);
      assert.ok(!mods.has('package:@grpc/grpc-js'), `${entry} imports @grpc/grpc-js statically`);
    }
    assert.ok(staticClosure('src/csi/index.ts').has('src/csi/csi-client.ts'), 'the graph walk follows imports');
    assert.deepEqual(heavy(staticClosure('src/csi/index.ts')), [], 'the CSI entry reaches no cluster code');
  });
  it('the dev and cluster subcommands do reach the cluster (the walk can see it)', () => {
    assert.ok(heavy(staticClosure('src/cli/dev.ts')).includes('src/cluster/embedded-cluster.ts'));
  });
});

describe('the command table', () => {
  it('each description is the one its module registers', async () => {
    for (const entry of SUBCOMMANDS) {
      const program = new Command();
      (await entry.load())(program);
      const registered = program.commands.find((c) => c.name() === entry.name);
      assert.equal(registered?.description(), entry.description, entry.name);
    }
  });
  it('finds the subcommand, also after help', () => {
    assert.equal(subcommandOf(['run', 'hostpath', '--kubeconfig', 'x'])?.name, 'run');
    assert.equal(subcommandOf(['help', 'explain'])?.name, 'explain');
    assert.equal(subcommandOf(['--help']), undefined);
  });
});

describe('kube-provisioner', () => {
  it('--version prints the package version; --help lists every subcommand', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const v = await runCli(['--version']);
    assert.equal(v.code, 0);
    assert.equal(v.stdout.trim(), version);
    const h = await runCli(['--help']);
    assert.equal(h.code, 0);
    for (const c of SUBCOMMANDS) assert.match(h.stdout, new RegExp(`^  ${c.name} `, 'm'));
  });
  it('a missing kubeconfig gets the same message from --kubeconfig and from KUBECONFIG', async () => {
    const missing = join(ROOT, 'no-such-dir', 'kubeconfig');
    const byFlag = await runCli(['explain', 'pvc', 'default/x', '--kubeconfig', missing]);
    const byEnv = await runCli(['explain', 'pvc', 'default/x'], { env: { ...process.env, KUBECONFIG: missing } });
    assert.equal(byFlag.code, 1);
    assert.equal(byEnv.code, 1);
    assert.equal(byFlag.stderr.trim(), `kube-provisioner: kubeconfig ${missing} does not exist`);
    assert.equal(byEnv.stderr, byFlag.stderr);
  });
});
