// The package as a user gets it: `npm pack` (which builds dist/ through `prepare`), the tarball installed into an
// empty project (one `npm install`, which fetches the runtime dependencies from the registry), then a plain
// .mjs consumer without tsx and a `tsc --noEmit` TypeScript consumer run against it. The one slow test.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const NPM_ENV = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

function run(cmd: string, args: string[], cwd: string, timeoutMs = 180_000): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env: NPM_ENV, timeout: timeoutMs, maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

const UNREACHABLE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ENETUNREACH|network request .* failed/i;

const MJS_CONSUMER = `
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { KubeClient, loadKubeConfig, persistentVolumes, ProvisionController, IgnoredError, ApiError } from 'kube-provisioner';
import { Informer, WorkQueue, LeaderElector } from 'kube-provisioner/runtime';
import { HostPathProvisioner, validateHostPathConfig } from 'kube-provisioner/hostpath';
import { startCluster, provisionerConformance, waitFor, conditions } from 'kube-provisioner/testing';

for (const v of [KubeClient, ProvisionController, IgnoredError, ApiError, Informer, WorkQueue, LeaderElector, HostPathProvisioner, startCluster, provisionerConformance, waitFor]) {
  assert.equal(typeof v, 'function');
}
assert.equal(persistentVolumes.kind, 'PersistentVolume');
assert.equal(typeof conditions.claimBound, 'function');
writeFileSync('kubeconfig', 'apiVersion: v1\\nkind: Config\\nclusters:\\n- name: c\\n  cluster:\\n    server: https://127.0.0.1:1\\nusers:\\n- name: u\\n  user:\\n    token: t\\ncontexts:\\n- name: x\\n  context:\\n    cluster: c\\n    user: u\\ncurrent-context: x\\n');
const { kubeConfig } = loadKubeConfig({ path: 'kubeconfig' });
new KubeClient({ kubeConfig }).close();
validateHostPathConfig({ sharedFileSystemPath: '/tmp' });
// The embedded cluster's TLS needs an optional peer dependency that a plain install does not bring.
await assert.rejects(startCluster(), (err) => err.name === 'MissingDependencyError' && err.message.includes('@peculiar/x509'));
console.log('consumer ok');
`;

const TS_CONSUMER = `
import { KubeClient, mergeOptions, persistentVolumes, defineResource, ProvisionController, type PersistentVolume, type Provisioner, type KubeObject, type ProvisionControllerOptions, type ResolvedOptions } from 'kube-provisioner';
import { Informer } from 'kube-provisioner/runtime';
import { HostPathProvisioner } from 'kube-provisioner/hostpath';

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
`;

describe('the packed package', () => {
  let dir: string;
  let tarball = '';
  let skipReason: string | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kp-pack-'));
    const pack = await run('npm', ['pack', '--json', '--pack-destination', dir], ROOT);
    assert.equal(pack.code, 0, `npm pack failed: ${pack.stderr}`);
    tarball = join(dir, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0].filename);
    const app = join(dir, 'app');
    await mkdir(app);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }));
    const install = await run('npm', ['install', '--prefer-offline', '--no-package-lock', tarball], app);
    if (install.code !== 0 && UNREACHABLE.test(install.stderr)) skipReason = `the npm registry is unreachable: ${install.stderr.split('\n')[0]}`;
    else assert.equal(install.code, 0, `npm install of the tarball failed: ${install.stderr}`);
  });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  it('ships dist (JS, declarations, maps) and none of the build-time packages', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const pkg = join(dir, 'app', 'node_modules', 'kube-provisioner');
    for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/index.js.map', 'dist/runtime/index.js', 'dist/hostpath/index.js', 'dist/csi/index.js', 'dist/testing/index.js', 'bin/kube-provisioner.js']) {
      assert.ok(existsSync(join(pkg, f)), `${f} is in the package`);
    }
    const installed = await readdir(join(dir, 'app', 'node_modules'));
    for (const absent of ['tsx', 'better-sqlite3', 'typescript', '@peculiar']) assert.ok(!installed.includes(absent), `${absent} is not installed`);
  });

  it('runs a plain .mjs consumer and the command, without tsx', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const app = join(dir, 'app');
    await writeFile(join(app, 'consumer.mjs'), MJS_CONSUMER);
    const r = await run(process.execPath, ['consumer.mjs'], app);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /consumer ok/);
    const version = await run(process.execPath, [join(app, 'node_modules', '.bin', 'kube-provisioner'), '--version'], app);
    assert.equal(version.stdout.trim(), '0.1.0', version.stderr);
  });

  it('type-checks a TypeScript consumer with tsc --noEmit', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const app = join(dir, 'app');
    await writeFile(join(app, 'consumer.ts'), TS_CONSUMER);
    await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true,
        types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')], skipLibCheck: false,
      },
      files: ['consumer.ts'],
    }));
    const r = await run(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '--noEmit', '-p', '.'], app);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
  });
});
