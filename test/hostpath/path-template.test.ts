import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compilePathPattern,
  renderPathPattern,
  defaultVolumeDirName,
  DEFAULT_PATH_PATTERN,
  TemplateSyntaxError,
  MissingTemplateKeyError,
  PathTemplateError,
  type PathTemplateData,
} from '../../src/hostpath/paths/path-template.ts';

const data: PathTemplateData = {
  pvName: 'pvc-1234',
  claim: {
    namespace: 'team-a',
    name: 'data',
    labels: { app: 'web', 'app.kubernetes.io/name': 'shop' },
    annotations: { 'nfs.io/storage-path': 'sub/dir', empty: '' },
  },
};

test('nfs-subdir form renders every variable', () => {
  assert.equal(renderPathPattern('${.PVC.namespace}/${.PVC.name}/${.PV.name}', data), 'team-a/data/pvc-1234');
  assert.equal(renderPathPattern('${.PVC.labels.app}-${.PVC.labels.app.kubernetes.io/name}', data), 'web-shop');
  assert.equal(renderPathPattern('${.PVC.namespace}/${.PVC.annotations.nfs.io/storage-path}', data), 'team-a/sub/dir');
  assert.equal(renderPathPattern('x-${ .PVC.name }-y', data), 'x-data-y', 'whitespace tolerant');
});

test('local-path form renders every variable, whitespace and trim markers tolerated', () => {
  assert.equal(renderPathPattern('{{ .PVC.Namespace }}/{{.PVC.Name}}/{{  .PV.Name  }}', data), 'team-a/data/pvc-1234');
  assert.equal(renderPathPattern('{{ .PVName }}', data), 'pvc-1234');
  assert.equal(
    renderPathPattern('{{ .PVC.Labels.app }}/{{ .PVC.Annotations.nfs.io/storage-path }}', data),
    'web/sub/dir',
  );
  assert.equal(renderPathPattern('{{ index .PVC.Labels "app.kubernetes.io/name" }}', data), 'shop');
  assert.equal(renderPathPattern('{{ index .PVC.Annotations `nfs.io/storage-path` }}', data), 'sub/dir');
  assert.equal(renderPathPattern('a  {{- .PVC.Name -}}  b', data), 'adatab');
  assert.equal(renderPathPattern(DEFAULT_PATH_PATTERN, data), 'pvc-1234_team-a_data');
});

test('referencesPvName tells whether the unique component is in the pattern', () => {
  assert.equal(compilePathPattern('${.PVC.namespace}/${.PV.name}').referencesPvName, true);
  assert.equal(compilePathPattern('{{ .PVName }}').referencesPvName, true);
  assert.equal(compilePathPattern('${.PVC.namespace}/${.PVC.name}').referencesPvName, false);
});

test('a missing or empty key is a typed error, never "<no value>" or an empty segment', () => {
  for (const pattern of [
    '${.PVC.labels.nope}',
    '{{ .PVC.Labels.nope }}',
    '${.PVC.annotations.nope}',
    '{{ index .PVC.Annotations "nope" }}',
  ]) {
    assert.throws(
      () => renderPathPattern(pattern, data),
      (e: unknown) => e instanceof MissingTemplateKeyError && e.reason === 'missing' && e.key === 'nope',
      pattern,
    );
  }
  assert.throws(
    () => renderPathPattern('${.PVC.annotations.empty}', data),
    (e: unknown) => e instanceof MissingTemplateKeyError && e.reason === 'empty',
  );
  const noMaps: PathTemplateData = { pvName: 'pv', claim: { namespace: 'n', name: 'c' } };
  assert.throws(() => renderPathPattern('{{ .PVC.Labels.app }}', noMaps), MissingTemplateKeyError);
  // Prototype keys are not values.
  for (const k of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
    assert.throws(() => renderPathPattern(`\${.PVC.labels.${k}}`, data), MissingTemplateKeyError, k);
  }
});

test('unknown or malformed syntax is an error', () => {
  const bad = [
    '${.PVC.uid}',
    '${.PVC.Namespace}',
    '${PVC.name}',
    '${.PVC.labels.}',
    '${.PVC.name',
    '{{ .PVC.Name',
    '}} x',
    '{{ .PVC.UID }}',
    '{{ .PVC.namespace }}',
    '{{ if .PVC.Name }}x{{ end }}',
    '{{ printf "%s" .PVC.Name }}',
    '{{ index .PVC.Labels app }}',
    '{{ index .PVC.Labels "a }}',
    '{{}}',
    '${}',
    '{{ .PVC.Labels.a b }}',
  ];
  for (const pattern of bad) {
    assert.throws(
      () => compilePathPattern(pattern),
      (e: unknown) => e instanceof TemplateSyntaxError && e instanceof PathTemplateError,
      pattern,
    );
  }
});

test('plain text, lone $ and braces are literal', () => {
  assert.equal(renderPathPattern('a$b{c}d', data), 'a$b{c}d');
});

test('default directory name keeps the PV name whole and fits 255 bytes', () => {
  const long: PathTemplateData = {
    pvName: 'pvc-0123456789abcdef0123456789abcdef0123',
    claim: { namespace: 'n'.repeat(63), name: 'é'.repeat(253) },
  };
  const name = defaultVolumeDirName(long);
  assert.ok(Buffer.byteLength(name) <= 255);
  assert.ok(name.startsWith(`${long.pvName}_${'n'.repeat(63)}_é`));
  assert.equal(defaultVolumeDirName(data), 'pvc-1234_team-a_data');
});
