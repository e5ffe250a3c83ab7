// The package as a user gets it, from one `npm pack` (which builds dist/ through `prepack`):
// - installed as a dependency into an ESM project and into the CommonJS project `npm init -y` writes (npm 11:
//   "type": "commonjs"): a plain .mjs consumer (its cluster decodes a large YAML body in the worker thread, so the
//   worker's file resolves from dist/), a `require()` consumer and a `tsc --noEmit` consumer (skipLibCheck
//   false, kube-provisioner/testing included) run against it, and the install prints no warning;
// - installed globally into a temporary prefix: `kube-provisioner dev` serves a claim from it, in memory with a
//   notice when no SQLite driver loads, persistent across a restart when better-sqlite3 loads; `cluster` serves too;
// - run through `npx` from the tarball;
// - the guide (docs/writing-a-provisioner.md) followed from `npm init -y`: its files type-check under its strict
//   tsconfig with skipLibCheck false, README's snippet too, and its tests, the conformance suite included, pass.
// Installs use `--ignore-scripts` or `--omit=optional`, so the optional native better-sqlite3 is never compiled
// here (minutes of node-gyp); the persistent run borrows this repository's compiled copy instead. The slow file.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { configMaps, KubeClient, loadKubeConfig, namespaces, persistentVolumeClaims } from 'kube-provisioner';
import { waitFor } from '../support/wait.ts';
import { writeDocProject } from './doc-project.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NPM_ENV = {
  ...process.env,
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = NPM_ENV,
  timeoutMs = 180_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env, timeout: timeoutMs, maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      done({
        code: err ? (typeof err.code === 'number' ? err.code : 1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      });
    });
  });
}

/**
 * npm's warnings in an install's output, leaving out npm 11's install-scripts notice when the only package it names
 * is protobufjs (a dependency of @grpc/grpc-js, the CSI transport), whose postinstall is a JavaScript version note.
 */
function npmWarnings(stderr: string): string[] {
  const lines = stderr.split('\n').filter((l) => /npm warn/i.test(l));
  const scripts = lines.filter((l) => /npm warn install-scripts/i.test(l));
  const named = scripts
    .map((l) => /install-scripts\s+(\S+@\S+)\s+\(/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined);
  const onlyProtobufjs = named.length > 0 && named.every((n) => n.startsWith('protobufjs@'));
  return onlyProtobufjs ? lines.filter((l) => !scripts.includes(l)) : lines;
}

const UNREACHABLE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network request .* failed/i;

const MJS_CONSUMER = `
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import { KubeClient, loadKubeConfig, persistentVolumes, namespaces, ProvisionController, IgnoredError, ApiError, explainClaim, formatExplanation } from 'kube-provisioner';
import { Informer, WorkQueue, LeaderElector } from 'kube-provisioner/runtime';
import { HostPathProvisioner, validateHostPathConfig } from 'kube-provisioner/hostpath';
import { startCluster, provisionerConformance, waitFor, conditions } from 'kube-provisioner/testing';

for (const v of [KubeClient, ProvisionController, IgnoredError, ApiError, Informer, WorkQueue, LeaderElector, HostPathProvisioner, startCluster, provisionerConformance, waitFor, explainClaim, formatExplanation]) {
  assert.equal(typeof v, 'function');
}
assert.equal(persistentVolumes.kind, 'PersistentVolume');
assert.equal(typeof conditions.claimBound, 'function');
writeFileSync('kubeconfig', 'apiVersion: v1\\nkind: Config\\nclusters:\\n- name: c\\n  cluster:\\n    server: https://127.0.0.1:1\\nusers:\\n- name: u\\n  user:\\n    token: t\\ncontexts:\\n- name: x\\n  context:\\n    cluster: c\\n    user: u\\ncurrent-context: x\\n');
const { kubeConfig } = loadKubeConfig({ path: 'kubeconfig' });
new KubeClient({ kubeConfig }).close();
validateHostPathConfig({ sharedFileSystemPath: '/tmp' });
// The test kit needs nothing but the package: its TLS dependencies are regular (pure JavaScript) dependencies.
const cluster = await startCluster();
assert.ok((await cluster.client.list(namespaces)).items.some((n) => n.metadata.name === 'default'));
// A YAML body this large is decoded in a worker thread, whose file must resolve from dist/.
const yaml = 'apiVersion: v1\\nkind: ConfigMap\\nmetadata:\\n  name: big-yaml\\ndata:\\n' + Array.from({ length: 4000 }, (_, i) => '  k' + i + ': v\\n').join('');
const created = await new Promise((resolve, reject) => {
  const headers = { authorization: 'Bearer ' + cluster.token, 'content-type': 'application/yaml' };
  const req = https.request(cluster.url + '/api/v1/namespaces/default/configmaps', { method: 'POST', headers, rejectUnauthorized: false }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode));
  });
  req.on('error', reject);
  req.end(yaml);
});
assert.equal(created, 201);
await cluster.stop();
console.log('consumer ok');
`;

// What a CommonJS project (npm 11's \`npm init -y\`) does: require() the ES module package (require(esm), Node >= 20.19).
const CJS_CONSUMER = `
const assert = require('node:assert/strict');
const { ProvisionController, persistentVolumes } = require('kube-provisioner');
const { startCluster, waitFor } = require('kube-provisioner/testing');
const { HostPathProvisioner } = require('kube-provisioner/hostpath');
const { Informer } = require('kube-provisioner/runtime');
assert.equal(typeof ProvisionController, 'function');
assert.equal(typeof HostPathProvisioner, 'function');
assert.equal(typeof Informer, 'function');
assert.equal(typeof waitFor, 'function');
assert.equal(persistentVolumes.kind, 'PersistentVolume');
startCluster().then((c) => c.stop()).then(() => console.log('cjs consumer ok'));
`;

const TS_CONSUMER = `
import { KubeClient, mergeOptions, persistentVolumes, persistentVolumeClaims, defineResource, ProvisionController, explainClaim, formatExplanation, type PersistentVolume, type Provisioner, type KubeObject, type ProvisionControllerOptions, type ResolvedOptions } from 'kube-provisioner';
import { Informer } from 'kube-provisioner/runtime';
import { HostPathProvisioner } from 'kube-provisioner/hostpath';
import { startCluster, waitFor, conditions, provisionerConformance, type TestCluster } from 'kube-provisioner/testing';

export async function volume(client: KubeClient): Promise<PersistentVolume> {
  const pv = await client.get(persistentVolumes, 'x'); // typed by the descriptor, no cast
  const size: string | undefined = pv.spec.capacity?.storage;
  void size;
  return pv;
}
interface Widget extends KubeObject { spec: { size: number } }
export const widgets = defineResource<Widget>('example.com', 'v1', 'widgets', 'Widget', true);
export async function widgetSize(client: KubeClient): Promise<number> {
  return (await client.get(widgets, 'w', { namespace: 'default' })).spec.size;
}
export const p: Provisioner = { provision: async () => { throw new Error('no'); }, delete: async () => {} };
export type I = Informer<PersistentVolume>;
export type H = HostPathProvisioner;
// The option types are derived from the option table: grouped fields are typed, a flat name from before is not.
export const options: ProvisionControllerOptions = mergeOptions<ProvisionControllerOptions>({ leaderElection: { mode: 'none' } }, { retry: { backoffBaseMs: 20 } });
// @ts-expect-error leaseDurationMs moved to leaderElection.leaseDurationMs
export const flat: ProvisionControllerOptions = { leaseDurationMs: 1 };
export const retries: ResolvedOptions['retry']['failedProvisionThreshold'] = 15;
export type Mode = ProvisionController['options']['leaderElection']['mode'];
// The test kit, typed without any other package (no @kubernetes/client-node, no @types/ws).
export async function kit(): Promise<string> {
  const cluster: TestCluster = await startCluster();
  try {
    const bound = await waitFor(cluster.client, persistentVolumeClaims, 'c', (c) => c?.status?.phase === 'Bound', { namespace: 'default' });
    await waitFor(cluster.client, persistentVolumeClaims, 'c', conditions.claimBound(), { namespace: 'default' });
    const e = await explainClaim(cluster.client, 'default', 'c', { provisioner: p });
    return \`\${bound?.metadata.name} \${formatExplanation(e)}\`;
  } finally {
    await cluster.stop();
  }
}
export const suite: typeof provisionerConformance = provisionerConformance;
`;

/** A `kube-provisioner` process and its output so far. */
function startCommand(command: string[], cwd: string, env: NodeJS.ProcessEnv) {
  // Its own process group: Ctrl-C in a terminal signals the whole group (npx's child included), and so do we.
  const child = spawn(command[0], command.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  let status: number | string | undefined;
  const exited = new Promise<number | string>((done) =>
    child.on('exit', (code, signal) => done((status = code ?? signal ?? 'unknown'))),
  );
  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, sig);
    } catch {
      // already gone
    }
  };
  return { child, stdout: () => out, stderr: () => err, exited, status: () => status, signalGroup };
}

/** Runs `dev` (the command given) until it serves, hands its client to `use`, then stops it with SIGINT. */
async function withDev(
  command: string[],
  cwd: string,
  use: (client: KubeClient, stdout: string) => Promise<void>,
  env: NodeJS.ProcessEnv = NPM_ENV,
): Promise<void> {
  const dev = startCommand([...command, 'dev', '--port', '0'], cwd, env);
  try {
    await waitFor('dev serving', () => dev.stdout().includes('Ctrl-C to stop') || dev.child.exitCode !== null, 60_000);
    assert.ok(dev.stdout().includes('Ctrl-C to stop'), `dev did not serve:\n${dev.stdout()}${dev.stderr()}`);
    const client = new KubeClient({
      kubeConfig: loadKubeConfig({ path: join(cwd, '.kube-provisioner', 'kubeconfig') }).kubeConfig,
      qps: 0,
    });
    try {
      await use(client, dev.stdout());
    } finally {
      client.close();
    }
  } finally {
    dev.signalGroup('SIGINT');
    try {
      await waitFor('dev stopped after SIGINT', () => dev.status() !== undefined, 30_000);
    } finally {
      dev.signalGroup('SIGKILL');
    }
    // npx (npm exec) reports the interrupt of the command it ran as its own; dev itself stops cleanly.
    assert.ok(
      dev.status() === 0 || (command[0] === 'npx' && (dev.status() === 'SIGINT' || dev.status() === 130)),
      `exit ${dev.status()}: ${dev.stderr()}`,
    );
    assert.match(dev.stderr(), /received SIGINT, shutting down/);
  }
}

let dir = '';
let tarball = '';
let skipReason: string | undefined;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kp-pack-'));
  const pack = await run('npm', ['pack', '--json', '--pack-destination', dir], ROOT);
  assert.equal(pack.code, 0, `npm pack failed: ${pack.stderr}`);
  tarball = join(dir, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0].filename);
});
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Installs the tarball into a new project with this package.json type; undefined, or why the tests skip. */
async function installInto(app: string, type: 'module' | 'commonjs'): Promise<void> {
  await mkdir(app);
  await writeFile(
    join(app, 'package.json'),
    JSON.stringify({ name: `consumer-${type}`, version: '1.0.0', private: true, type }),
  );
  const install = await run(
    'npm',
    ['install', '-D', '--prefer-offline', '--omit=optional', '--no-package-lock', tarball],
    app,
  );
  if (install.code !== 0 && UNREACHABLE.test(install.stderr))
    skipReason = `the npm registry is unreachable: ${install.stderr.split('\n')[0]}`;
  else {
    assert.equal(install.code, 0, `npm install of the tarball failed: ${install.stderr}`);
    assert.deepEqual(
      npmWarnings(install.stderr),
      [],
      'the install prints no warning (no prepare or other install script of ours)',
    );
  }
}

// The three installs and what runs on them are independent (each its own directory, port 0, the npm cache is safe to
// share): they run side by side, each describe's steps in order. One after the other they were the suite's longest
// file by far (about 3 minutes of a 10-minute CI run, most of it waiting on npm and tsc).
describe('the packed package', { concurrency: true }, () => {
  describe('the packed package, installed as a dependency', { concurrency: false }, () => {
    before(async () => {
      await installInto(join(dir, 'app'), 'module');
      if (!skipReason) await installInto(join(dir, 'cjs'), 'commonjs');
    });

    it('ships dist (JS, declarations, maps), the examples the docs link to, and none of the build-time packages', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const pkg = join(dir, 'app', 'node_modules', 'kube-provisioner');
      for (const f of [
        'dist/index.js',
        'dist/index.d.ts',
        'dist/index.js.map',
        'dist/runtime/index.js',
        'dist/hostpath/index.js',
        'dist/csi/index.js',
        'dist/testing/index.js',
        'bin/kube-provisioner.js',
        'examples/pvc.yaml',
        'examples/directory-provisioner/provisioner.ts',
      ]) {
        assert.ok(existsSync(join(pkg, f)), `${f} is in the package`);
      }
      // Nothing of ours runs at install time (npm 11 warns about a dependency's install scripts, `prepare` included).
      const manifest = JSON.parse(await readFile(join(pkg, 'package.json'), 'utf8')) as {
        scripts?: Record<string, string>;
      };
      const atInstall = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'].filter(
        (k) => manifest.scripts?.[k] !== undefined,
      );
      assert.deepEqual(atInstall, [], 'the published package.json has no install-time script');
      assert.ok(!existsSync(join(pkg, 'binding.gyp')), 'no binding.gyp (npm would run node-gyp for it)');
      const installed = await readdir(join(dir, 'app', 'node_modules'));
      for (const absent of ['tsx', 'better-sqlite3', 'typescript', '@kubernetes'])
        assert.ok(!installed.includes(absent), `${absent} is not installed`);
    });

    it('runs a plain .mjs consumer, the test kit included, and the command, without tsx', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const app = join(dir, 'app');
      await writeFile(join(app, 'consumer.mjs'), MJS_CONSUMER);
      const r = await run(process.execPath, ['consumer.mjs'], app);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /consumer ok/);
      const version = await run(
        process.execPath,
        [join(app, 'node_modules', '.bin', 'kube-provisioner'), '--version'],
        app,
      );
      assert.equal(version.stdout.trim(), '0.1.0', version.stderr);
    });

    it('require()s it from a CommonJS project, as `npm init -y` makes one', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const app = join(dir, 'cjs');
      await writeFile(join(app, 'consumer.js'), CJS_CONSUMER);
      const r = await run(process.execPath, ['consumer.js'], app);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /cjs consumer ok/);
    });

    it('type-checks a TypeScript consumer of every entry point, kube-provisioner/testing included, with skipLibCheck false', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const app = join(dir, 'app');
      await writeFile(join(app, 'consumer.ts'), TS_CONSUMER);
      await writeFile(
        join(app, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            noEmit: true,
            // @types/node is the only types package: borrowed from this repository, as any Node project has its own.
            types: ['node'],
            typeRoots: [join(ROOT, 'node_modules', '@types')],
            skipLibCheck: false,
          },
          files: ['consumer.ts'],
        }),
      );
      const r = await run(
        process.execPath,
        [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', '.'],
        app,
      );
      assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    });
  });

  describe('the packed package, installed globally', { concurrency: false }, () => {
    let prefix = '';
    let bin = '';
    before(async () => {
      if (skipReason) return;
      prefix = join(dir, 'global');
      // --ignore-scripts: better-sqlite3 lands unbuilt, as where its install script is blocked or its build failed.
      const install = await run(
        'npm',
        ['install', '-g', '--prefix', prefix, '--prefer-offline', '--ignore-scripts', tarball],
        dir,
      );
      if (install.code !== 0 && UNREACHABLE.test(install.stderr))
        skipReason = `the npm registry is unreachable: ${install.stderr.split('\n')[0]}`;
      else assert.equal(install.code, 0, `npm install -g failed: ${install.stderr}`);
      bin = join(prefix, 'bin', 'kube-provisioner');
    });

    it('`kube-provisioner dev` serves a claim without a SQLite driver, in memory, and says so', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const cwd = join(dir, 'no-sqlite');
      await mkdir(cwd);
      await withDev([bin], cwd, async (client, stdout) => {
        assert.match(
          stdout,
          /^notice: the cluster keeps its objects in memory only.*better-sqlite3 is installed but its native addon cannot be loaded/m,
        );
        await client.create(persistentVolumeClaims, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: 'data', namespace: 'default' },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Mi' } } },
        });
        await waitFor(
          'Bound',
          async () =>
            (await client.get(persistentVolumeClaims, 'data', { namespace: 'default' })).status?.phase === 'Bound',
          30_000,
        );
      });
    });

    it('`kube-provisioner cluster` serves too, in memory with the notice', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const cwd = join(dir, 'cluster');
      await mkdir(cwd);
      const cluster = startCommand([bin, 'cluster', '--port', '0'], cwd, NPM_ENV);
      try {
        // The notice is on stderr, the ready line on stdout: two pipes, read in no set order, so both are waited for
        // (a fresh clone's CI under load read stderr empty right after the ready line).
        await waitFor(
          'cluster ready, and its notice',
          () =>
            (/ready at https:/.test(cluster.stdout()) && /^notice: /m.test(cluster.stderr())) ||
            cluster.child.exitCode !== null,
          60_000,
        );
        assert.match(
          cluster.stdout(),
          /^kube-provisioner cluster ready at https:\/\/127\.0\.0\.1:\d+ /m,
          cluster.stderr(),
        );
        assert.match(cluster.stderr(), /^notice: the cluster keeps its objects in memory only/m);
        const client = new KubeClient({
          kubeConfig: loadKubeConfig({ path: join(cwd, '.kube-provisioner', 'cluster', 'kubeconfig') }).kubeConfig,
          qps: 0,
        });
        try {
          assert.ok((await client.list(namespaces)).items.some((n) => n.metadata.name === 'default'));
        } finally {
          client.close();
        }
      } finally {
        cluster.signalGroup('SIGINT');
        try {
          await waitFor('cluster stopped after SIGINT', () => cluster.status() !== undefined, 30_000);
        } finally {
          cluster.signalGroup('SIGKILL');
        }
      }
      assert.equal(cluster.status(), 0, cluster.stderr());
    });

    it('keeps the objects across a restart once better-sqlite3 loads', async (t) => {
      if (skipReason) return t.skip(skipReason);
      const installed = join(prefix, 'lib', 'node_modules', 'kube-provisioner', 'node_modules', 'better-sqlite3');
      await rm(installed, { recursive: true, force: true });
      await symlink(join(ROOT, 'node_modules', 'better-sqlite3'), installed, 'dir');
      const cwd = join(dir, 'sqlite');
      await mkdir(cwd);
      await withDev([bin], cwd, async (client, stdout) => {
        assert.doesNotMatch(stdout, /notice:/);
        await client.create(configMaps, {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'kept', namespace: 'default' },
          data: { a: '1' },
        });
      });
      await withDev([bin], cwd, async (client) => {
        assert.deepEqual((await client.get(configMaps, 'kept', { namespace: 'default' })).data, { a: '1' });
      });
    });

    it('`npx kube-provisioner dev` from the tarball serves', async (t) => {
      if (skipReason) return t.skip(skipReason);
      // Its own npm cache, so npx leaves nothing behind; packages come from the registry.
      const env = {
        ...NPM_ENV,
        npm_config_cache: join(dir, 'npx-cache'),
        npm_config_ignore_scripts: 'true',
        npm_config_yes: 'true',
      };
      const version = await run('npx', ['--package', tarball, '--', 'kube-provisioner', '--version'], dir, env);
      if (version.code !== 0 && UNREACHABLE.test(version.stderr))
        return t.skip(`the npm registry is unreachable: ${version.stderr.split('\n')[0]}`);
      assert.equal(version.stdout.trim(), '0.1.0', version.stderr);
      const cwd = join(dir, 'npx');
      await mkdir(cwd);
      await withDev(
        ['npx', '--package', tarball, '--', 'kube-provisioner'],
        cwd,
        async (client) => {
          assert.ok((await client.list(configMaps, { namespace: 'default' })).items !== undefined);
        },
        env,
      );
    });
  });

  describe("the guide's project, from `npm init -y`, against the packed package", { concurrency: false }, () => {
    let project = '';
    let files: string[] = [];
    before(async () => {
      if (skipReason) return;
      project = join(dir, 'my-provisioner');
      await mkdir(project);
      for (const args of [
        ['init', '-y'],
        ['pkg', 'set', 'type=module'],
      ]) {
        const r = await run('npm', args, project);
        assert.equal(r.code, 0, r.stderr);
      }
      const install = await run('npm', ['install', '--prefer-offline', '--omit=optional', tarball], project);
      // Side by side with the other installs: this one may be the first to find the registry unreachable.
      if (install.code !== 0 && UNREACHABLE.test(install.stderr)) {
        skipReason = `the npm registry is unreachable: ${install.stderr.split('\n')[0]}`;
        return;
      }
      assert.equal(install.code, 0, install.stderr);
      assert.deepEqual(npmWarnings(install.stderr), []);
      // typescript, tsx and @types/node come from this checkout (the guide installs them from the registry).
      files = await writeDocProject(project, {
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        skipLibCheck: false,
      });
    });

    it("type-checks every block of the guide and README under the guide's strict tsconfig (skipLibCheck false)", async (t) => {
      if (skipReason) return t.skip(skipReason);
      const r = await run(
        process.execPath,
        [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'],
        project,
      );
      assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    });

    it("runs the guide's tests, and they pass, the conformance suite included", async (t) => {
      if (skipReason) return t.skip(skipReason);
      const tests = files.filter((f) => f.startsWith('test/'));
      // Not as a subtest of this run: the child is a test run of its own.
      const { NODE_TEST_CONTEXT: _nested, ...env } = process.env;
      const r = await run(process.execPath, ['--import', import.meta.resolve('tsx'), '--test', ...tests], project, env);
      assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /^# fail 0$/m);
      assert.match(r.stdout, /^ok \d+ - my provisioner$/m, 'the conformance suite ran');
    });
  });
});
