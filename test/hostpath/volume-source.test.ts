// The PV source both ways: the type chosen from local-path's annotations and the class, and the mapping of an
// nfs source back to the directory under the mounted export: in canonical form (`//`, `.`, a trailing `/`, the
// server's case and trailing dot do not matter), and failing closed on anything not below the export (other
// server, traversal, a sibling export with a common prefix); `..` is ambiguous, never mapped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chooseVolumeType,
  localPathOfNfsSource,
  localDirectoryOf,
  mountedExports,
  readVolumeDirectory,
  volumeSourceSpec,
  VolumeTypeAnnotationError,
} from '../../src/hostpath/volume/volume-source.ts';
import { validateHostPathConfig } from '../../src/hostpath/config/hostpath-config.ts';

const mount = { server: 'nfs.example.com', path: '/exports/k8s', mountPath: '/persistentvolumes' };

test('nfs source -> local directory: exactly below the export, or nothing', () => {
  const rows: Array<[{ server?: string; path?: string }, string | undefined]> = [
    [{ server: 'nfs.example.com', path: '/exports/k8s/default-data-pvc-1' }, '/persistentvolumes/default-data-pvc-1'],
    [{ server: 'NFS.example.com', path: '/exports/k8s/ns/claim' }, '/persistentvolumes/ns/claim'],
    [{ server: 'nfs.example.com', path: '/exports/k8s' }, '/persistentvolumes'],
    [{ server: 'other.example.com', path: '/exports/k8s/x' }, undefined],
    [{ server: 'nfs.example.com', path: '/exports/k8s/../etc' }, undefined],
    [{ server: 'nfs.example.com', path: '/exports/k8s/./x' }, '/persistentvolumes/x'],
    [{ server: 'nfs.example.com', path: '/exports/k8s//x' }, '/persistentvolumes/x'],
    [{ server: 'nfs.example.com', path: '/exports/k8s/x/' }, '/persistentvolumes/x'],
    [{ server: 'nfs.example.com.', path: '/exports//k8s/x' }, '/persistentvolumes/x'],
    [{ server: 'nfs.example.com', path: '/exports/k8s/x/../y' }, undefined],
    [{ server: 'nfs.example.com', path: '/exports/k8s-other/x' }, undefined],
    [{ server: 'nfs.example.com', path: '/exports' }, undefined],
    [{ server: 'nfs.example.com', path: 'exports/k8s/x' }, undefined],
    [{ server: 'nfs.example.com', path: '/exports/k8s/a\u0000b' }, undefined],
    [{ server: 'nfs.example.com' }, undefined],
    [{ path: '/exports/k8s/x' }, undefined],
  ];
  for (const [source, want] of rows) assert.equal(localPathOfNfsSource(source, mount), want, JSON.stringify(source));
  const root = { ...mount, path: '/' };
  assert.equal(
    localPathOfNfsSource({ server: mount.server, path: '/a/b' }, root),
    '/persistentvolumes/a/b',
    'an NFSv4 pseudo-root export',
  );
});

test('a PV maps through the configured exports; two mounts of one export are ambiguous and map to nothing', () => {
  const config = validateHostPathConfig({
    storageClassConfigs: {
      a: { sharedFileSystemPath: '/mnt/a', nfs: { server: 's', path: '/e' } },
      b: { sharedFileSystemPath: '/mnt/b', nfs: { server: 't', path: '/e' } },
      c: { sharedFileSystemPath: '/mnt/c', nfs: { server: 't', path: '/e' } },
    },
  });
  const exports = mountedExports(config);
  const pv = (server: string, p: string) => ({ metadata: { name: 'pv' }, spec: { nfs: { server, path: p } } });
  assert.equal(localDirectoryOf(pv('s', '/e/dir'), exports), '/mnt/a/dir');
  assert.equal(localDirectoryOf(pv('t', '/e/dir'), exports), undefined);
  assert.equal(localDirectoryOf({ metadata: {}, spec: { hostPath: { path: '/h' } } }, exports), '/h');
  assert.equal(localDirectoryOf({ metadata: {}, spec: { hostPath: { path: '/h//i/./' } } }, exports), '/h/i');
  assert.deepEqual(readVolumeDirectory(pv('t', '/e/dir'), exports), {
    kind: 'ambiguous',
    candidates: ['/mnt/b/dir', '/mnt/c/dir'],
    why: 'more than one configured export maps it',
  });
  assert.equal(
    readVolumeDirectory({ metadata: {}, spec: { hostPath: { path: '/h/a/../b' } } }, exports).kind,
    'ambiguous',
  );
  const dotdot = readVolumeDirectory(pv('s', '/e/a/../b'), exports);
  assert.deepEqual(
    dotdot.kind === 'ambiguous' && dotdot.candidates,
    ['/mnt/a/a', '/mnt/a/b'],
    'what it could mean: before the "..", and resolved',
  );
  assert.deepEqual(
    mountedExports(validateHostPathConfig({ sharedFileSystemPath: '/pv' }), { server: 'env', path: '/x' }),
    [{ server: 'env', path: '/x', mountPath: '/pv' }],
    'NFS_SERVER/NFS_PATH apply to the top-level shared path',
  );
});

test('volume type: claim annotation, class parameter, class annotation, then the path kind', () => {
  const base = { shared: false, nfs: false };
  assert.equal(chooseVolumeType(base), 'local');
  assert.equal(chooseVolumeType({ ...base, shared: true }), 'hostPath');
  assert.equal(chooseVolumeType({ ...base, shared: true, nfs: true }), 'nfs');
  assert.equal(
    chooseVolumeType({ shared: true, nfs: true, claimAnnotations: { volumeType: 'hostPath' } }),
    'nfs',
    'a tenant cannot turn an export into hostPath volumes',
  );
  assert.equal(chooseVolumeType({ shared: true, nfs: true, parameter: 'hostPath' }), 'hostPath', 'the class can');
  assert.equal(
    chooseVolumeType({ ...base, classAnnotations: { defaultVolumeType: 'hostPath' } }),
    'hostPath-or-create',
  );
  assert.equal(
    chooseVolumeType({ ...base, parameter: 'hostPath', classAnnotations: { defaultVolumeType: 'local' } }),
    'hostPath',
    'the parameter beats the class annotation',
  );
  assert.equal(
    chooseVolumeType({ ...base, parameter: 'hostPath', claimAnnotations: { volumeType: 'LOCAL' } }),
    'local',
    'the claim beats everything',
  );
  assert.throws(
    () => chooseVolumeType({ ...base, claimAnnotations: { volumeType: 'nfs' } }),
    (e: unknown) => e instanceof VolumeTypeAnnotationError && e.on === 'claim',
  );
  assert.throws(
    () => chooseVolumeType({ ...base, classAnnotations: { defaultVolumeType: '' } }),
    VolumeTypeAnnotationError,
  );
  assert.deepEqual(volumeSourceSpec('hostPath-or-create', '/d/x'), {
    hostPath: { path: '/d/x', type: 'DirectoryOrCreate' },
  });
  assert.deepEqual(volumeSourceSpec('hostPath', '/d/x'), { hostPath: { path: '/d/x', type: 'Directory' } });
  assert.deepEqual(volumeSourceSpec('nfs', '/persistentvolumes/ns/c', mount), {
    nfs: { server: 'nfs.example.com', path: '/exports/k8s/ns/c' },
  });
  assert.throws(() => volumeSourceSpec('nfs', '/elsewhere/c', mount));
  assert.throws(() => volumeSourceSpec('nfs', '/persistentvolumes', mount));
});

test("an nfs server written as another form of the export server's address maps to the export (as getaddrinfo reads it)", () => {
  const v4 = { server: '10.0.0.5', path: '/e', mountPath: '/mnt' };
  for (const server of [
    '10.0.0.05',
    '012.0.0.5',
    '0x0a000005',
    '0x0a.0.0.5',
    '10.5',
    '10.0.5',
    '167772165',
    '::ffff:10.0.0.5',
    '[::ffff:a00:5]',
  ])
    assert.equal(localPathOfNfsSource({ server, path: '/e/x' }, v4), '/mnt/x', server);
  for (const server of ['10.0.0.6', '010.0.0.5', '10.0.0.50', '0x0a000006', '10.0.0.5.1', '::ffff:10.0.0.6'])
    assert.equal(localPathOfNfsSource({ server, path: '/e/x' }, v4), undefined, server);
  const v6 = { server: 'fd00::5', path: '/e', mountPath: '/mnt' };
  for (const server of ['FD00::5', 'fd00:0:0:0:0:0:0:5', '[fd00::5]', 'fd00::0005', 'fd00:0000::5'])
    assert.equal(localPathOfNfsSource({ server, path: '/e/x' }, v6), '/mnt/x', server);
  for (const server of ['fd00::6', 'fd00::5:0', 'fd00::5%eth0'])
    assert.equal(localPathOfNfsSource({ server, path: '/e/x' }, v6), undefined, server);
  // The export written in another form: the same.
  assert.equal(localPathOfNfsSource({ server: '10.0.0.5', path: '/e/x' }, { ...v4, server: '10.5' }), '/mnt/x');
});
