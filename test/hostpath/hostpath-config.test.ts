import { test } from 'node:test';
import assert from 'node:assert/strict';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  parseHostPathConfig,
  checkConfigPaths,
  pathSetForClass,
  nodeBasePaths,
  localBasePaths,
  allBasePaths,
  ConfigError,
  DEFAULT_NODE,
} from '../../src/hostpath/config/hostpath-config.ts';
import { ConfigFileSource } from '../../src/hostpath/config/config-file-source.ts';
import { parseClassParameters, StorageClassParameterError } from '../../src/hostpath/config/class-parameters.ts';
import { waitFor as poll } from '../support/wait.ts';

test('parses local-path JSON as-is, with our per-path capacity extension', () => {
  const c = parseHostPathConfig(
    JSON.stringify({
      nodePathMap: [
        { node: DEFAULT_NODE, paths: ['/opt/local-path-provisioner'] },
        { node: 'n1', paths: ['/data1', { path: '/data2', capacity: '100Gi' }] },
        { node: 'n2', paths: [] },
      ],
      setupCommand: '/manager',
    }),
  );
  assert.deepEqual(nodeBasePaths(c, 'n1'), [{ path: '/data1' }, { path: '/data2', capacity: 100n << 30n }]);
  assert.deepEqual(nodeBasePaths(c, 'other'), [{ path: '/opt/local-path-provisioner' }]);
  assert.deepEqual(nodeBasePaths(c, 'n2'), [], 'an empty list means: no volumes on this node');
  assert.equal(c.warnings.length, 1, 'helper-pod keys are accepted with a warning');
  assert.equal(pathSetForClass(c, 'any'), c);
  assert.deepEqual(allBasePaths(c).sort(), ['/data1', '/data2', '/opt/local-path-provisioner']);
});

test('top-level paths beside storageClassConfigs are the default for every class it does not list', () => {
  const c = parseHostPathConfig(
    JSON.stringify({
      sharedFileSystemPath: '/mnt/default',
      storageClassConfigs: { fast: { sharedFileSystemPath: '/mnt/fast' } },
    }),
  );
  assert.equal(pathSetForClass(c, 'fast')?.sharedFileSystemPath?.path, '/mnt/fast', 'a listed class keeps its own');
  assert.equal(
    pathSetForClass(c, 'mine')?.sharedFileSystemPath?.path,
    '/mnt/default',
    'a class created later gets the default',
  );
  assert.equal(pathSetForClass(c, 'constructor')?.sharedFileSystemPath?.path, '/mnt/default');
});

test('parses YAML with sharedFileSystemPath and storageClassConfigs', () => {
  const c = parseHostPathConfig(`
storageClassConfigs:
  fast:
    nodePathMap:
      - node: ${DEFAULT_NODE}
        paths: [/nvme]
  shared:
    sharedFileSystemPath: { path: /mnt/nfs, capacity: 1Ti }
`);
  assert.equal(pathSetForClass(c, 'shared')?.sharedFileSystemPath?.capacity, 1n << 40n);
  assert.equal(pathSetForClass(c, 'unlisted'), undefined, 'with storageClassConfigs, unlisted classes are refused');
  assert.equal(pathSetForClass(c, 'constructor'), undefined);
  assert.deepEqual(
    localBasePaths(c, 'n1')
      .map((p) => p.path)
      .sort(),
    ['/mnt/nfs', '/nvme'],
  );
  assert.deepEqual(
    localBasePaths(c).map((p) => p.path),
    ['/mnt/nfs'],
    'without a node name only shared paths are ours',
  );
});

test('every invalid configuration is refused with an issue naming the key', () => {
  const bad: Array<[string, RegExp]> = [
    ['{', /not valid JSON or YAML/],
    ['[]', /must be an object/],
    ['{}', /no paths/],
    ['{"nodePathMap":[{"node":"a","paths":["relative"]}]}', /nodePathMap\[0\]\.paths\[0\]/],
    ['{"nodePathMap":[{"node":"a","paths":["/"]}]}', /paths\[0\]/],
    ['{"nodePathMap":[{"node":"a","paths":["/a/../b"]}]}', /normalised/],
    ['{"nodePathMap":[{"node":"a","paths":["/a","/a"]}]}', /listed twice/],
    ['{"nodePathMap":[{"node":"a","paths":["/a"]},{"node":"a","paths":["/b"]}]}', /node a is listed twice/],
    ['{"nodePathMap":[{"node":"a","paths":["/a","/a/b"]}]}', /nested/],
    [
      '{"nodePathMap":[{"node":"a","paths":["/a"]}],"storageClassConfigs":{"x":{"sharedFileSystemPath":"/a/nfs"}}}',
      /nested/,
    ],
    ['{"nodePathMap":[{"node":"a","paths":["/a"]}],"sharedFileSystemPath":"/s"}', /exclusive/],
    ['{"nodePathMap":[{"node":"a","paths":[{"path":"/a","capacity":"lots"}]}]}', /capacity/],
    ['{"nodePathMap":[{"node":"a","paths":[{"path":"/a","capacity":"-1Gi"}]}]}', /capacity/],
    ['{"nodePathMap":[{"node":"a"}]}', /must be a list/],
    ['{"nodePathMap":[{"paths":["/a"]}]}', /needs a non-empty "node"/],
    ['{"nodePathMap":[],"sharedFileSystemPath":"/s","typo":1}', /typo: unknown key/],
    ['{"storageClassConfigs":{"x":{}}}', /storageClassConfigs\.x: needs/],
    [
      '{"storageClassConfigs":{"x":{"sharedFileSystemPath":"/s","nodePath":"/s"}}}',
      /storageClassConfigs\.x\.nodePath: unknown key/,
    ],
  ];
  for (const [text, re] of bad) {
    assert.throws(
      () => parseHostPathConfig(text),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => re.test(i)),
      text,
    );
  }
});

test('filesystem checks: symlinks, files and uncreatable paths are refused; missing-but-creatable is fine', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-config-'));
  try {
    await fsp.mkdir(path.join(tmp, 'real'));
    await fsp.symlink(path.join(tmp, 'real'), path.join(tmp, 'link'));
    await fsp.writeFile(path.join(tmp, 'file'), '');
    const cfg = (p: string) => parseHostPathConfig(JSON.stringify({ nodePathMap: [{ node: 'n', paths: [p] }] }));
    await checkConfigPaths(cfg(path.join(tmp, 'real')), { nodeName: 'n' });
    await checkConfigPaths(cfg(path.join(tmp, 'missing/deeper')), { nodeName: 'n' });
    await assert.rejects(
      checkConfigPaths(cfg(path.join(tmp, 'link')), { nodeName: 'n' }),
      (e: unknown) => e instanceof ConfigError && /symlink/.test(e.message),
    );
    await assert.rejects(
      checkConfigPaths(cfg(path.join(tmp, 'file')), { nodeName: 'n' }),
      (e: unknown) => e instanceof ConfigError && /not a directory/.test(e.message),
    );
    await assert.rejects(
      checkConfigPaths(cfg(path.join(tmp, 'file/sub')), { nodeName: 'n' }),
      (e: unknown) => e instanceof ConfigError && /cannot be created/.test(e.message),
    );
    await checkConfigPaths(cfg(path.join(tmp, 'link')), {
      nodeName: 'other-node-is-not-checked-here-but-default-is-absent',
    });
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});

test('ConfigFileSource hot-reloads, keeps the last good config on error, reports each bad version once', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-config-src-'));
  const file = path.join(tmp, 'config.json');
  // Atomic replace, as kubelet updates a mounted ConfigMap.
  const put = async (text: string) => {
    await fsp.writeFile(`${file}.tmp`, text);
    await fsp.rename(`${file}.tmp`, file);
  };
  const write = (paths: string[]) => put(JSON.stringify({ nodePathMap: [{ node: DEFAULT_NODE, paths }] }));
  await write(['/a']);
  const changes: string[][] = [];
  const invalid: Error[] = [];
  const src = new ConfigFileSource({
    path: file,
    pollIntervalMs: 50,
    settleMs: 20,
    onChange: (c) => changes.push(c.nodePathMap[0].paths.map((p) => p.path)),
    onInvalid: (e) => invalid.push(e),
  });
  try {
    assert.deepEqual((await src.start()).nodePathMap[0].paths, [{ path: '/a' }]);
    await write(['/b']);
    await waitFor(() => changes.length === 1);
    assert.deepEqual(src.current().nodePathMap[0].paths, [{ path: '/b' }]);
    await put('{"nodePathMap": [{"node": "x", "paths": ["relative"]}]}');
    await waitFor(() => invalid.length === 1);
    assert.ok(invalid[0] instanceof ConfigError);
    assert.deepEqual(src.current().nodePathMap[0].paths, [{ path: '/b' }], 'last good config kept');
    assert.equal(await src.reload(), false);
    assert.equal(invalid.length, 1, 'the same bad content is reported once');
    await write(['/c']);
    await src.reload(); // applies at once (unless the watch or the poll was even faster)
    assert.deepEqual(src.current().nodePathMap[0].paths, [{ path: '/c' }]);
    await fsp.rm(file);
    await waitFor(() => invalid.length === 2);
    assert.deepEqual(src.current().nodePathMap[0].paths, [{ path: '/c' }]);
  } finally {
    src.stop();
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});

test('ConfigFileSource without watch or poll: reload() applies and says whether anything changed', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-config-src-'));
  const file = path.join(tmp, 'config.json');
  await fsp.writeFile(file, JSON.stringify({ sharedFileSystemPath: '/a' }));
  const changes: string[] = [];
  const src = new ConfigFileSource({
    path: file,
    watch: false,
    pollIntervalMs: 0,
    settleMs: 0,
    onChange: (c) => changes.push(c.sharedFileSystemPath!.path),
  });
  try {
    await src.start();
    assert.equal(await src.reload(), false, 'unchanged');
    await fsp.writeFile(file, JSON.stringify({ sharedFileSystemPath: '/b' }));
    assert.equal(await src.reload(), true);
    assert.deepEqual(changes, ['/b']);
    assert.equal(src.current().sharedFileSystemPath?.path, '/b');
  } finally {
    src.stop();
    await fsp.rm(tmp, { recursive: true, force: true });
  }
});

test('ConfigFileSource.start() fails on an invalid first version', async () => {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'kp-config-src-'));
  const file = path.join(tmp, 'config.yaml');
  await fsp.writeFile(file, 'nodePathMap: 3');
  const src = new ConfigFileSource({ path: file });
  await assert.rejects(src.start(), ConfigError);
  src.stop();
  await fsp.rm(tmp, { recursive: true, force: true });
});

async function waitFor(cond: () => boolean): Promise<void> {
  await poll('the condition', cond, 10_000, 25);
}

test('class parameters: defaults, every parameter, nfs-subdir archiveOnDelete', () => {
  const d = parseClassParameters(undefined);
  assert.deepEqual(
    { ...d },
    { mode: 0o777, nodeAffinityKey: 'kubernetes.io/hostname' },
    'no onDelete: the path kind decides',
  );
  const p = parseClassParameters({
    nodePath: '/data',
    pathPattern: '${.PVC.namespace}/${.PV.name}',
    onDelete: 'archive',
    mode: '2770',
    uid: '1000',
    gid: '0',
    volumeType: 'hostPath',
    nodeAffinityKey: 'topology.kubernetes.io/zone',
  });
  assert.equal(p.nodePath, '/data');
  assert.equal(p.pathPattern?.render({ pvName: 'pv', claim: { namespace: 'n', name: 'c' } }), 'n/pv');
  assert.equal(p.onDelete, 'archive');
  assert.equal(p.mode, 0o2770);
  assert.equal(p.uid, 1000);
  assert.equal(p.gid, 0);
  assert.equal(p.volumeType, 'hostPath');
  assert.equal(p.nodeAffinityKey, 'topology.kubernetes.io/zone');
  assert.equal(parseClassParameters({ archiveOnDelete: 'true' }).onDelete, 'archive');
  assert.equal(parseClassParameters({ archiveOnDelete: 'false' }).onDelete, 'delete');
  assert.equal(
    parseClassParameters({ archiveOnDelete: 'true', onDelete: 'retain' }).onDelete,
    'retain',
    'onDelete wins',
  );
  // strconv.ParseBool, exactly: nfs-subdir users write "True" and "1".
  for (const v of ['1', 't', 'T', 'TRUE', 'true', 'True'])
    assert.equal(parseClassParameters({ archiveOnDelete: v }).onDelete, 'archive', v);
  for (const v of ['0', 'f', 'F', 'FALSE', 'false', 'False'])
    assert.equal(parseClassParameters({ archiveOnDelete: v }).onDelete, 'delete', v);
  assert.equal(parseClassParameters({ mode: '0755' }).mode, 0o755);
});

test('class parameters: every invalid value is a typed error naming the parameter', () => {
  const bad: Array<[Record<string, string>, string]> = [
    [{ foo: 'bar' }, 'foo'],
    [{ allowUnsafePathPattern: 'true' }, 'allowUnsafePathPattern'],
    [{ nodePath: 'relative' }, 'nodePath'],
    [{ nodePath: '/' }, 'nodePath'],
    [{ pathPattern: '{{ .PVC.UID }}' }, 'pathPattern'],
    [{ pathPattern: 'x'.repeat(1025) }, 'pathPattern'],
    [{ onDelete: 'shred' }, 'onDelete'],
    [{ archiveOnDelete: 'yes' }, 'archiveOnDelete'],
    [{ archiveOnDelete: 'tRUE' }, 'archiveOnDelete'],
    [{ archiveOnDelete: ' true' }, 'archiveOnDelete'],
    [{ archiveOnDelete: '' }, 'archiveOnDelete'],
    [{ mode: '777x' }, 'mode'],
    [{ mode: '8' }, 'mode'],
    [{ mode: '07777777' }, 'mode'],
    [{ mode: 'rwx' }, 'mode'],
    [{ uid: '-1' }, 'uid'],
    [{ uid: '1.5' }, 'uid'],
    [{ gid: '4294967295' }, 'gid'],
    [{ gid: 'root' }, 'gid'],
    [{ volumeType: 'nfs' }, 'volumeType'],
    [{ nodeAffinityKey: 'bad key' }, 'nodeAffinityKey'],
  ];
  for (const [params, name] of bad) {
    assert.throws(
      () => parseClassParameters(params),
      (e: unknown) => e instanceof StorageClassParameterError && e.parameter === name,
      JSON.stringify(params),
    );
  }
});

test('local-path compatibility: keys match case-insensitively (Go encoding/json), scripts and helperPod.yaml from the ConfigMap', () => {
  const c = parseHostPathConfig(
    JSON.stringify({
      NodePathMap: [],
      storageClassConfigs: {
        shared: { sharedFilesystemPath: '/mnt/shared' },
        local: { nodepathmap: [{ NODE: DEFAULT_NODE, Paths: ['/opt/lp'] }] },
      },
      CmdTimeoutSeconds: 5,
    }),
    'config',
    { setup: '#!/bin/sh\nmkdir -m 0777 -p "$VOL_DIR"', teardown: '  ', 'helperPod.yaml': 'apiVersion: v1\nkind: Pod' },
  );
  assert.equal(pathSetForClass(c, 'shared')?.sharedFileSystemPath?.path, '/mnt/shared');
  assert.deepEqual(nodeBasePaths(pathSetForClass(c, 'local')!, 'n'), [{ path: '/opt/lp' }]);
  assert.equal(c.scripts.timeoutMs, 5000);
  assert.match(c.scripts.setup ?? '', /mkdir/);
  assert.equal(c.scripts.teardown, undefined, 'a blank script is no script');
  assert.deepEqual(c.warnings.filter((w) => /helperPod\.yaml/.test(w)).length, 1);
  assert.equal(parseHostPathConfig('{"sharedFileSystemPath":"/s"}').scripts.timeoutMs, 120_000, "local-path's default");
  const bad: Array<[string, RegExp]> = [
    ['{"sharedFileSystemPath":"/s","sharedfilesystempath":"/t"}', /given twice/],
    ['{"sharedFileSystemPath":"/s","cmdTimeoutSeconds":"10"}', /cmdTimeoutSeconds/],
    [
      '{"nodePathMap":[{"node":"a","paths":["/a"]}],"nfs":{"server":"s","path":"/e"}}',
      /nfs: needs sharedFileSystemPath/,
    ],
    ['{"sharedFileSystemPath":"/s","nfs":{"server":"s","path":"e"}}', /nfs: path/],
    ['{"sharedFileSystemPath":"/s","nfs":{"server":"s","path":"/e/../f"}}', /nfs: path/],
    ['{"sharedFileSystemPath":"/s","nfs":{"server":"","path":"/e"}}', /nfs: server/],
    ['{"sharedFileSystemPath":"/s","nfs":{"server":"s","path":"/e","opts":1}}', /nfs\.opts: unknown key/],
  ];
  for (const [text, re] of bad) {
    assert.throws(
      () => parseHostPathConfig(text),
      (e: unknown) => e instanceof ConfigError && e.issues.some((i) => re.test(i)),
      text,
    );
  }
  assert.throws(
    () => parseHostPathConfig('{"sharedFileSystemPath":"/s"}', 'config', { setup: 'x'.repeat(70_000) }),
    /larger than/,
  );
  const nfs = parseHostPathConfig(
    '{"sharedFileSystemPath":"/persistentvolumes","NFS":{"Server":"10.0.0.5","Path":"/"}}',
  );
  assert.deepEqual(nfs.nfs, { server: '10.0.0.5', path: '/' });
});
