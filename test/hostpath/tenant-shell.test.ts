// Tenant input never reaches a shell as syntax. Annotation values rendered into a path that carry glob or shell
// metacharacters, whitespace or control characters are refused, naming the character and the parameter; a script
// is never handed a path holding one (a directory an older version created as `*` would be `rm -rf BASE/*` to
// local-path's older stock teardown, which expands its argument unquoted).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { HostPathProvisioner } from '../../src/hostpath/hostpath-provisioner.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';
import { InfeasibleError } from '../../src/controller/provisioner.ts';
import type { PersistentVolume } from '../../src/types/k8s.ts';
import { claim, storageClass, provisionOptions, tempTree, snapshot, signal } from './provisioner-helpers.ts';

let tmp: string;
before(async () => {
  tmp = await fsp.realpath(await tempTree('kp-shell-'));
});
after(async () => {
  await fsp.rm(tmp, { recursive: true, force: true });
});

// local-path's teardown before it quoted its variables (v0.0.2x): the path is expanded unquoted.
const OLD_STOCK_TEARDOWN = [
  'while getopts "m:s:p:a:" opt; do',
  '  case $opt in',
  '    p) absolutePath=$OPTARG ;;',
  '  esac',
  'done',
  'rm -rf ${absolutePath}',
].join('\n');

const STABLE = storageClass('stable', { pathPattern: '${.PVC.annotations.nfs.io/storage-path}', onDelete: 'delete' });

test('annotation values with glob or shell metacharacters, whitespace or control characters are refused, naming the character and the parameter', async () => {
  const root = path.join(tmp, 'refuse');
  await fsp.mkdir(root);
  const p = new HostPathProvisioner({ config: validateHostPathConfig({ sharedFileSystemPath: root }) });
  const cases: Array<[string, RegExp]> = [
    ['*', /"\*"/],
    ['a?b', /"\?"/],
    ['[ab]', /"\["/],
    ['{a,b}', /"\{"/],
    ['~root', /"~"/],
    ['$(id)', /"\$"/],
    ['`id`', /"`"/],
    ['a;b', /";"/],
    ['a|b', /"\|"/],
    ['a&b', /"&"/],
    ['a>b', /">"/],
    ["it's", /"'"/],
    ['a"b', /"\\""/],
    ['a b', /whitespace/],
    ['a\tb', /whitespace|control/],
    // Red team variants: the other metacharacters, a newline or NUL, Unicode whitespace and a bidi override.
    ['#x', /"#"/],
    ['!x', /"!"/],
    ['a^b', /"\^"/],
    ['a<b', /"<"/],
    ['a(b', /"\("/],
    ['a\nb', /U\+000A/],
    ['a\u0000b', /U\+0000/],
    ['a\u00a0b', /U\+00A0/],
    ['a\u2028b', /U\+2028/],
    ['a\ufeffb', /U\+FEFF/],
    ['\u202ex', /U\+202E/],
  ];
  for (const [i, [value, char]] of cases.entries()) {
    const o = provisionOptions(
      claim({
        name: `c${i}`,
        namespace: 'tenant',
        modes: ['ReadWriteMany'],
        annotations: { 'nfs.io/storage-path': value },
      }),
      STABLE,
    );
    await assert.rejects(
      p.provision(o, signal()),
      (e: unknown) =>
        e instanceof InfeasibleError &&
        char.test(e.message) &&
        e.message.includes('nfs.io/storage-path') &&
        e.message.includes('pathPattern'),
      value,
    );
  }
  assert.deepEqual(await snapshot(root), [], 'nothing created');
});

test('a directory named "*" left by an older version is never handed to local-path\'s older stock teardown', async () => {
  const root = path.join(tmp, 'glob');
  for (const d of ['*', 'alice', 'bob']) {
    await fsp.mkdir(path.join(root, d), { recursive: true });
    await fsp.writeFile(path.join(root, d, 'data'), `${d}'s data`);
  }
  const pv = (name: string, dir: string, phase: 'Bound' | 'Released'): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'stable',
      hostPath: { path: `${root}/${dir}` },
      claimRef: { namespace: 't', name, uid: `uid-${name}` },
    },
    status: { phase },
  });
  const live = [pv('alice', 'alice', 'Bound'), pv('bob', 'bob', 'Bound')];
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }, 'config', { teardown: OLD_STOCK_TEARDOWN }),
    knownVolumes: () => live,
    storageClass: async () => STABLE,
  });
  const outcome = await p.delete(pv('star', '*', 'Released'), signal()).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.equal(await fsp.readFile(path.join(root, 'alice', 'data'), 'utf8').catch(() => 'gone'), "alice's data");
  assert.match(String(outcome), /"\*"/);
  assert.equal(await fsp.readFile(path.join(root, 'bob', 'data'), 'utf8'), "bob's data");
  assert.equal(
    await fsp.readFile(path.join(root, '*', 'data'), 'utf8'),
    "*'s data",
    'kept for an admin to remove by hand',
  );
});

test('a class whose own pattern puts whitespace in the path never hands it to a setup script', async () => {
  const root = path.join(tmp, 'setup');
  await fsp.mkdir(root);
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }, 'config', { setup: 'mkdir -p $VOL_DIR' }),
  });
  const o = provisionOptions(
    claim({ name: 'c', namespace: 'tenant', modes: ['ReadWriteMany'] }),
    storageClass('spaced', { pathPattern: 'my data/${.PV.name}' }),
  );
  await assert.rejects(
    p.provision(o, signal()),
    (e: unknown) => e instanceof InfeasibleError && /whitespace/.test(e.message) && /setup/.test(e.message),
  );
  assert.deepEqual(await snapshot(root), [], 'nothing created');
});

test('a value with a leading "-" reaches a script only inside an absolute path (never as an option)', async () => {
  const root = path.join(tmp, 'dash');
  await fsp.mkdir(root);
  const out = path.join(tmp, 'dash-args');
  const p = new HostPathProvisioner({
    config: validateHostPathConfig({ sharedFileSystemPath: root }, 'config', {
      setup: `printf '%s\\n' "$@" "$VOL_DIR" > ${out}`,
    }),
  });
  const o = provisionOptions(
    claim({
      name: 'dash',
      namespace: 'tenant',
      modes: ['ReadWriteMany'],
      annotations: { 'nfs.io/storage-path': '-rf' },
    }),
    STABLE,
  );
  const { volume } = await p.provision(o, signal());
  assert.equal(volume.spec.hostPath?.path, `${root}/-rf`);
  const args = (await fsp.readFile(out, 'utf8')).trimEnd().split('\n');
  assert.deepEqual(
    args.filter((a) => a.includes('-rf')),
    [`${root}/-rf`, `${root}/-rf`],
    'as -p and VOL_DIR only',
  );
});
