// The precedence of the garbage collector's finalizers on DELETE (store.go deletionFinalizersForGarbageCollection)
// and the image tag behind the default imagePullPolicy (parsers.ParseImageName), as pure functions.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deletionFinalizers, type PropagationOptions } from '../../src/cluster/writes/deletion-finalizers.ts';
import { defaultPullPolicy, imageTag } from '../../src/cluster/registry/core/pod-defaults.ts';
import type { GarbageCollectionPolicy } from '../../src/cluster/registry/resource-type.ts';

test('deletion finalizers: options, then the object, then the kind', () => {
  const cases: Array<[GarbageCollectionPolicy | undefined, string[], PropagationOptions, string[] | undefined]> = [
    [undefined, [], {}, undefined],
    [undefined, [], { propagationPolicy: 'Background' }, undefined],
    [undefined, [], { propagationPolicy: 'Foreground' }, ['foregroundDeletion']],
    [undefined, [], { propagationPolicy: 'Orphan' }, ['orphan']],
    ['DeleteDependents', [], {}, undefined],
    ['OrphanDependents', [], {}, ['orphan']],
    ['OrphanDependents', [], { propagationPolicy: 'Background' }, undefined],
    ['OrphanDependents', ['foregroundDeletion'], {}, undefined],
    ['Unsupported', [], { propagationPolicy: 'Foreground' }, undefined],
    ['Unsupported', ['x', 'orphan'], { orphanDependents: true }, ['x']],
    [undefined, ['x', 'foregroundDeletion'], { propagationPolicy: 'Orphan' }, ['x', 'orphan']],
    [undefined, ['orphan'], {}, undefined],
    [undefined, ['orphan'], { propagationPolicy: 'Background' }, []],
    [undefined, [], { orphanDependents: true }, ['orphan']],
    [undefined, ['orphan'], { orphanDependents: false }, []],
    [undefined, ['foregroundDeletion'], { orphanDependents: false }, []],
    [undefined, ['foregroundDeletion', 'x'], { propagationPolicy: 'Foreground' }, undefined],
  ];
  for (const [policy, finalizers, opts, want] of cases) {
    assert.deepEqual(
      deletionFinalizers(policy, finalizers, opts),
      want,
      `${policy} ${JSON.stringify(finalizers)} ${JSON.stringify(opts)}`,
    );
  }
});

test('image tags and pull policies as ParseImageName reads references', () => {
  const digest = `sha256:${'ab'.repeat(32)}`;
  const cases: Array<[string, string]> = [
    ['nginx', 'latest'],
    ['nginx:latest', 'latest'],
    ['nginx:1.27', '1.27'],
    ['library/nginx:1.27-alpine', '1.27-alpine'],
    ['localhost:5000/app', 'latest'],
    ['localhost:5000/app:v1', 'v1'],
    ['registry.example.com/team/app', 'latest'],
    ['Example.com/app', 'latest'],
    [`quay.io/app@${digest}`, ''],
    [`quay.io/app:v2@${digest}`, 'v2'],
    ['quay.io/app@sha256:abc', ''],
    ['Nginx', ''],
    ['docker.io/Library/nginx', ''],
    ['nginx:', ''],
    ['ab'.repeat(32), ''],
  ];
  for (const [image, tag] of cases) assert.equal(imageTag(image), tag, image);
  assert.equal(defaultPullPolicy('nginx'), 'Always');
  assert.equal(defaultPullPolicy('nginx:1'), 'IfNotPresent');
  assert.equal(defaultPullPolicy(`nginx@${digest}`), 'IfNotPresent');
  assert.equal(defaultPullPolicy(undefined), 'IfNotPresent');
});
