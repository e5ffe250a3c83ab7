// The hostile-input table: StorageClasses and claims a tenant (or a careless admin) can create, each with
// what the provisioner must answer. Claims the API accepts end Bound with their directory inside the root,
// or refused with a ProvisioningFailed Warning whose message says what is wrong. Objects the API itself
// must reject are listed separately with the Status code expected.
import { ANN_SELECTED_NODE } from '../../src/types/annotations.ts';
import type { PersistentVolumeClaim } from '../../src/types/k8s.ts';

/** A class name -> its parameters (all point at the shared root unless listed in NODE_LOCAL_CLASSES). */
export const CLASSES: Record<string, Record<string, string> | undefined> = {
  plain: undefined,
  'by-label': { pathPattern: '${.PVC.labels.dir}/${.PV.name}' },
  'by-annotation': { pathPattern: '${.PVC.annotations.dir}/${.PV.name}' },
  'pattern-dotdot': { pathPattern: '../${.PV.name}' },
  'pattern-absolute': { pathPattern: '/etc/${.PV.name}' },
  'pattern-trailing-dotdot': { pathPattern: '${.PV.name}/..' },
  'pattern-no-pv-name': { pathPattern: '${.PVC.namespace}/${.PVC.name}' },
  'pattern-go-no-pv-name': { pathPattern: 'go/{{ .PVC.Namespace }}/{{ .PVC.Name }}' },
  'by-sub': { pathPattern: 'sub/${.PV.name}' },
  'stable-dir': { pathPattern: 'stable/${.PVC.annotations.dir}' },
  // local-path's own test class: a trailing slash, which local-path cleans with filepath.Join.
  'custom-path-pattern': { pathPattern: '{{ .PVC.Namespace }}/custom/{{ .PVC.Name }}/' },
  'pattern-syntax': { pathPattern: '${.PVC.name/${.PV.name}' },
  'pattern-reserved': { pathPattern: '.kube-provisioner/${.PV.name}' },
  'pattern-go-unknown': { pathPattern: '{{ .PVC.Spec }}/{{ .PV.Name }}' },
  'param-unknown': { frobnicate: 'yes' },
  'param-unsafe-opt-out': { allowUnsafePathPattern: 'true', pathPattern: '../${.PV.name}' },
  'param-mode': { mode: '99999' },
  'param-uid': { uid: '-1' },
  'param-node-path-outside': { nodePath: '/etc' },
  'param-node-path-unnormalised': { nodePath: '/tmp/../etc' },
  'param-on-delete': { onDelete: 'shred' },
  'node-local': undefined,
};

/** Classes served by node-local paths (WaitForFirstConsumer). */
export const NODE_LOCAL_CLASSES = ['node-local'];
/** A class the provisioner's configuration does not list: refused, never guessed. */
export const UNLISTED_CLASS = 'unlisted';

/** What must happen to a claim the API accepted. */
export type Expectation =
  /** Bound, directory inside the root (real directories all the way down). */
  | { bound: true }
  /** A ProvisioningFailed Warning from the provisioner whose message matches; nothing on disk. */
  | { refused: RegExp }
  /** Either of the above (inputs where both answers are safe), but never anything outside the root. */
  | { contained: true };

export interface ClaimRow {
  name: string;
  why: string;
  className: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  spec?: Partial<PersistentVolumeClaim['spec']>;
  expect: Expectation;
  /** A known defect: the row runs as a node:test `todo` (reported, does not fail the suite). */
  knownBug?: string;
}

export const CLAIM_ROWS: ClaimRow[] = [
  { name: 'good-first', why: 'a well-formed claim', className: 'plain', expect: { bound: true } },
  // Tenant input through labels (the API refuses "..", "." and "/" in label values: see REJECTED_ROWS).
  {
    name: 'label-missing',
    why: 'pattern key the claim does not set',
    className: 'by-label',
    expect: { refused: /needs the claim's label "dir", which is not set/ },
  },
  {
    name: 'label-empty',
    why: 'empty label value',
    className: 'by-label',
    labels: { dir: '' },
    expect: { refused: /label "dir", which is empty/ },
  },
  {
    name: 'label-nested',
    why: 'label value with dots only inside',
    className: 'by-label',
    labels: { dir: 'a..b' },
    expect: { bound: true },
  },
  // Tenant input through annotations (free text).
  {
    name: 'ann-traversal',
    why: '../../ in an annotation',
    className: 'by-annotation',
    annotations: { dir: '../../outside' },
    expect: { refused: /"\.\." segments are not allowed/ },
  },
  {
    name: 'ann-absolute',
    why: 'absolute path in an annotation',
    className: 'by-annotation',
    annotations: { dir: '/etc' },
    expect: { refused: /must be relative to the base path/ },
  },
  {
    name: 'ann-nul',
    why: 'NUL byte',
    className: 'by-annotation',
    annotations: { dir: 'a\u0000b' },
    expect: { refused: /control character/ },
  },
  {
    name: 'ann-newline',
    why: 'newline',
    className: 'by-annotation',
    annotations: { dir: 'a\nb' },
    expect: { refused: /control character/ },
  },
  {
    name: 'ann-bidi',
    why: 'right-to-left override',
    className: 'by-annotation',
    annotations: { dir: 'evil\u202egpj.exe' },
    expect: { refused: /control character/ },
  },
  {
    name: 'ann-lone-surrogate',
    why: 'malformed UTF-16',
    className: 'by-annotation',
    annotations: { dir: 'x\ud800y' },
    expect: { contained: true },
  },
  {
    name: 'ann-backslash',
    why: 'Windows separators',
    className: 'by-annotation',
    annotations: { dir: '..\\..\\etc' },
    expect: { refused: /backslashes are not allowed/ },
  },
  {
    name: 'ann-double-slash',
    why: 'empty segment',
    className: 'by-annotation',
    annotations: { dir: 'a//b' },
    expect: { refused: /empty segment/ },
  },
  {
    name: 'ann-percent',
    why: 'URL-encoded dots are literal names',
    className: 'by-annotation',
    annotations: { dir: '%2e%2e/%2e%2e' },
    expect: { contained: true },
  },
  {
    name: 'ann-fullwidth-dots',
    why: 'U+FF0E fullwidth full stops are not dots',
    className: 'by-annotation',
    annotations: { dir: '\uff0e\uff0e' },
    expect: { contained: true },
  },
  {
    name: 'ann-unicode',
    why: 'ordinary unicode',
    className: 'by-annotation',
    annotations: { dir: 'données/日本語' },
    expect: { bound: true },
  },
  {
    name: 'ann-reserved',
    why: "the provisioner's own records directory",
    className: 'by-annotation',
    annotations: { dir: '.kube-provisioner' },
    expect: { refused: /reserved/ },
  },
  {
    name: 'ann-archived',
    why: 'the archive prefix',
    className: 'by-annotation',
    annotations: { dir: 'archived-x' },
    expect: { refused: /reserved/ },
  },
  {
    name: 'ann-long-segment',
    why: 'a 300-byte segment',
    className: 'by-annotation',
    annotations: { dir: 'x'.repeat(300) },
    expect: { refused: /longer than 255 bytes/ },
  },
  {
    name: 'ann-deep',
    why: '40 levels',
    className: 'by-annotation',
    annotations: { dir: 'd/'.repeat(40) + 'e' },
    expect: { refused: /more than 32 segments/ },
  },
  {
    name: 'ann-path-too-long',
    why: 'a path longer than PATH_MAX',
    className: 'by-annotation',
    annotations: { dir: ('y'.repeat(250) + '/').repeat(17) + 'z' },
    expect: { refused: /longer than 4095 bytes/ },
  },
  {
    name: 'ann-huge-used',
    why: 'a 200 KB annotation used in the pattern',
    className: 'by-annotation',
    annotations: { dir: 'h'.repeat(200_000) },
    expect: { refused: /longer than 255 bytes/ },
  },
  {
    name: 'ann-huge-unused',
    why: 'a 200 KB annotation the pattern ignores',
    className: 'plain',
    annotations: { note: 'n'.repeat(200_000) },
    expect: { bound: true },
  },
  // Values a shell or a glob reads as syntax (local-path's older stock teardown ran `rm -rf ${absolutePath}`: a `*`
  // Bound at BASE/* wiped every volume on the path when it was deleted).
  {
    name: 'ann-glob',
    why: 'a glob "*"',
    className: 'by-annotation',
    annotations: { dir: '*' },
    expect: { refused: /annotation "dir" contains "\*" \(U\+002A\), a glob or shell metacharacter/ },
  },
  {
    name: 'ann-glob-class',
    why: 'a glob "?" inside a name',
    className: 'by-annotation',
    annotations: { dir: 'a?c' },
    expect: { refused: /"\?" \(U\+003F\).*pathPattern/ },
  },
  {
    name: 'ann-command',
    why: 'a command substitution',
    className: 'by-annotation',
    annotations: { dir: '$(reboot)' },
    expect: { refused: /"\$" \(U\+0024\)/ },
  },
  {
    name: 'ann-space',
    why: 'whitespace',
    className: 'by-annotation',
    annotations: { dir: 'my data' },
    expect: { refused: /contains whitespace \(U\+0020\)/ },
  },
  {
    name: 'ann-semicolon',
    why: 'a command separator',
    className: 'by-annotation',
    annotations: { dir: 'x;rm' },
    expect: { refused: /";" \(U\+003B\)/ },
  },
  {
    name: 'ann-symlinked-parent',
    why: 'a parent that is a symlink to outside the root',
    className: 'by-annotation',
    annotations: { dir: 'linked' },
    expect: { refused: /is a symlink; refusing to follow it/ },
  },
  // Hostile or broken classes.
  {
    name: 'pattern-dotdot',
    why: 'class pattern with ..',
    className: 'pattern-dotdot',
    expect: { refused: /"\.\." segments are not allowed/ },
  },
  {
    name: 'pattern-absolute',
    why: 'class pattern with an absolute path',
    className: 'pattern-absolute',
    expect: { refused: /must be relative/ },
  },
  {
    name: 'pattern-trailing-dotdot',
    why: 'class pattern ending in ..',
    className: 'pattern-trailing-dotdot',
    expect: { refused: /"\.\." segments are not allowed/ },
  },
  {
    name: 'pattern-no-pv-name',
    why: 'nfs-subdir syntax without the PV name (stable names)',
    className: 'pattern-no-pv-name',
    expect: { bound: true },
  },
  {
    name: 'custom-path-pattern',
    why: "local-path's custom-path-pattern class: a trailing slash",
    className: 'custom-path-pattern',
    expect: { bound: true },
  },
  {
    name: 'pattern-go-no-pv-name',
    why: 'local-path syntax without the PV name (stable names)',
    className: 'pattern-go-no-pv-name',
    expect: { bound: true },
  },
  {
    name: 'in-sub',
    why: 'a volume below a shared parent "sub" (the forged PV "sub" aims at that parent)',
    className: 'by-sub',
    expect: { bound: true },
  },
  {
    name: 'pattern-syntax',
    why: 'unterminated ${',
    className: 'pattern-syntax',
    expect: { refused: /invalid pathPattern/ },
  },
  {
    name: 'pattern-reserved',
    why: 'pattern into the records directory',
    className: 'pattern-reserved',
    expect: { refused: /reserved/ },
  },
  {
    name: 'pattern-go-unknown',
    why: 'a Go template field we do not know',
    className: 'pattern-go-unknown',
    expect: { refused: /invalid pathPattern/ },
  },
  {
    name: 'param-unknown',
    why: 'unknown parameter',
    className: 'param-unknown',
    expect: { refused: /"frobnicate": unknown parameter/ },
  },
  {
    name: 'param-unsafe-opt-out',
    why: "local-path's opt-out of the traversal fix",
    className: 'param-unsafe-opt-out',
    expect: { refused: /allowUnsafePathPattern.*is not supported/ },
  },
  {
    name: 'param-mode',
    why: 'mode out of range',
    className: 'param-mode',
    expect: { refused: /"mode": "99999" must be an octal/ },
  },
  {
    name: 'param-uid',
    why: 'negative uid',
    className: 'param-uid',
    expect: { refused: /"uid": "-1" must be a numeric id/ },
  },
  {
    name: 'param-node-path-outside',
    why: 'nodePath not configured',
    className: 'param-node-path-outside',
    expect: { refused: /nodePath \/etc is not a configured path/ },
  },
  {
    name: 'param-node-path-unnormalised',
    why: 'nodePath with ..',
    className: 'param-node-path-unnormalised',
    expect: { refused: /"nodePath".*must be an absolute, normalised path/ },
  },
  { name: 'param-on-delete', why: 'unknown onDelete', className: 'param-on-delete', expect: { refused: /"onDelete"/ } },
  {
    name: 'unlisted-class',
    why: 'class missing from storageClassConfigs',
    className: UNLISTED_CLASS,
    expect: { refused: /is not listed in the hostpath configuration/ },
  },
  // Sizes, modes, shapes.
  {
    name: 'size-absurd',
    why: '8 EiB',
    className: 'plain',
    spec: { resources: { requests: { storage: '8Ei' } } },
    expect: { refused: /more than the capacity of any configured path/ },
  },
  // Huge exponents ("1e999999") are left out: parsing them is a known defect (docs/reliability.md, Known defects 4).
  {
    name: 'size-exponent',
    why: 'storage 1e30',
    className: 'plain',
    spec: { resources: { requests: { storage: '1e30' } } },
    expect: { refused: /more than the capacity of any configured path/ },
  },
  {
    name: 'size-fractional',
    why: 'a fractional byte count',
    className: 'plain',
    spec: { resources: { requests: { storage: '0.5' } } },
    expect: { contained: true },
  },
  {
    name: 'block',
    why: 'volumeMode Block',
    className: 'plain',
    spec: { volumeMode: 'Block' },
    expect: { refused: /does not support block volume provisioning/ },
  },
  {
    name: 'selector',
    why: 'a label selector',
    className: 'plain',
    spec: { selector: { matchLabels: { tier: 'gold' } } },
    expect: { refused: /Selector is not supported/ },
  },
  {
    name: 'data-source',
    why: 'clone from another claim',
    className: 'plain',
    spec: { dataSource: { kind: 'PersistentVolumeClaim', name: 'good-first' } },
    expect: { refused: /dataSource/ },
  },
  {
    name: 'rwx-node-local',
    why: 'ReadWriteMany on a node path',
    className: 'node-local',
    annotations: { [ANN_SELECTED_NODE]: 'node-1' },
    spec: { accessModes: ['ReadWriteMany'] },
    expect: { refused: /ReadWriteMany is not possible on node-local paths/ },
  },
  {
    name: 'hostile-node-name',
    why: 'tenant-set selected-node "../../etc"',
    className: 'node-local',
    annotations: { [ANN_SELECTED_NODE]: '../../etc' },
    expect: { refused: /selected node "\.\.\/\.\.\/etc" is not a valid node name/ },
  },
  {
    name: 'rwop',
    why: 'ReadWriteOncePod on the shared path',
    className: 'plain',
    spec: { accessModes: ['ReadWriteOncePod'] },
    expect: { bound: true },
  },
];

/** A request body the API must refuse, and the Status code it must answer with. */
export interface RejectedRow {
  name: string;
  why: string;
  kind: 'claim' | 'class' | 'volume';
  body: Record<string, unknown>;
  codes: number[];
}

const pvc = (name: string, spec: Record<string, unknown>, metadata: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, ...metadata },
  spec,
});
const okSpec = {
  accessModes: ['ReadWriteOnce'],
  resources: { requests: { storage: '1Mi' } },
  storageClassName: 'plain',
};

export const REJECTED_ROWS: RejectedRow[] = [
  {
    name: 'bad-label',
    why: 'label value ../../etc',
    kind: 'claim',
    body: pvc('bad-label', okSpec, { labels: { dir: '../../etc' } }),
    codes: [422],
  },
  {
    name: 'label-dotdot',
    why: 'label value ..',
    kind: 'claim',
    body: pvc('label-dotdot', okSpec, { labels: { dir: '..' } }),
    codes: [422],
  },
  {
    name: 'label-dot',
    why: 'label value .',
    kind: 'claim',
    body: pvc('label-dot', okSpec, { labels: { dir: '.' } }),
    codes: [422],
  },
  {
    name: 'too-many-annotations',
    why: 'annotations over 256 KiB in total',
    kind: 'claim',
    body: pvc('too-many-annotations', okSpec, { annotations: { a: 'x'.repeat(200_000), b: 'y'.repeat(100_000) } }),
    codes: [422],
  },
  {
    name: 'no-resources',
    why: 'spec.resources missing',
    kind: 'claim',
    body: pvc('no-resources', { accessModes: ['ReadWriteOnce'], storageClassName: 'plain' }),
    codes: [422],
  },
  {
    name: 'no-access-modes',
    why: 'spec.accessModes empty',
    kind: 'claim',
    body: pvc('no-access-modes', { ...okSpec, accessModes: [] }),
    codes: [422],
  },
  {
    name: 'unknown-access-mode',
    why: 'ReadWriteSometimes',
    kind: 'claim',
    body: pvc('unknown-access-mode', { ...okSpec, accessModes: ['ReadWriteSometimes'] }),
    codes: [422],
  },
  {
    name: 'quantity-garbage',
    why: 'storage "lots"',
    kind: 'claim',
    body: pvc('quantity-garbage', { ...okSpec, resources: { requests: { storage: 'lots' } } }),
    codes: [400, 422],
  },
  {
    name: 'quantity-negative',
    why: 'storage -1Gi',
    kind: 'claim',
    body: pvc('quantity-negative', { ...okSpec, resources: { requests: { storage: '-1Gi' } } }),
    codes: [422],
  },
  {
    name: 'quantity-zero',
    why: 'storage 0',
    kind: 'claim',
    body: pvc('quantity-zero', { ...okSpec, resources: { requests: { storage: '0' } } }),
    codes: [422],
  },
  {
    name: 'volume-dotdot',
    why: 'PV hostPath with ..',
    kind: 'volume',
    body: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'volume-dotdot' },
      spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, hostPath: { path: '/srv/a/../../etc' } },
    },
    codes: [422],
  },
  {
    name: 'bad-volume-mode',
    why: 'volumeMode Tape',
    kind: 'claim',
    body: pvc('bad-volume-mode', { ...okSpec, volumeMode: 'Tape' }),
    codes: [422],
  },
  { name: 'name-traversal', why: 'claim name ../etc', kind: 'claim', body: pvc('../etc', okSpec), codes: [400, 422] },
  {
    name: 'no-spec',
    why: 'claim without spec',
    kind: 'claim',
    body: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'no-spec' } },
    codes: [422],
  },
  {
    name: 'class-no-provisioner',
    why: 'StorageClass without provisioner',
    kind: 'class',
    body: { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'no-provisioner' } },
    codes: [422],
  },
  {
    name: 'class-bad-binding-mode',
    why: 'volumeBindingMode Sometimes',
    kind: 'class',
    body: {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'bad-binding' },
      provisioner: 'x.io/y',
      volumeBindingMode: 'Sometimes',
    },
    codes: [422],
  },
  {
    name: 'volume-no-capacity',
    why: 'PV without capacity',
    kind: 'volume',
    body: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'no-capacity' },
      spec: { accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } },
    },
    codes: [422],
  },
  {
    name: 'volume-no-source',
    why: 'PV without a volume source',
    kind: 'volume',
    body: {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'no-source' },
      spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
    },
    codes: [422],
  },
];

/**
 * A Released, Delete-policy PV naming our provisioner, forged to make delete or archive hit something that is
 * not its own directory. `path` is computed from the live test tree; every row but `expect: 'deleted'` must be
 * refused with a VolumeFailedDelete event and nothing touched.
 */
export interface ForgedRow {
  name: string;
  why: string;
  path: (t: { shared: string; outside: string; nodes: string; goodPath: string }) => string;
  /** Set our base-path annotation to this root (`shared`, `nodes`, `outside`). */
  base?: 'shared' | 'nodes' | 'outside';
  onDelete?: 'archive' | 'delete';
  /** `deleted`: a leaf with no record and no other volume: an older or adopted volume, deleted as asked. */
  expect?: 'refused' | 'deleted';
}

export const FORGED_ROWS: ForgedRow[] = [
  { name: 'forged-outside', why: 'a directory outside every root', path: (t) => `${t.outside}/victim` },
  {
    name: 'forged-base-annotation',
    why: 'outside, with a base-path annotation naming it',
    path: (t) => `${t.outside}/victim`,
    base: 'outside',
  },
  { name: 'forged-sibling', why: "another volume's directory", path: (t) => t.goodPath },
  {
    name: 'forged-under-other-root',
    why: 'a path under a root other than its annotation',
    path: (t) => `${t.nodes}/pvc-forged`,
    base: 'shared',
  },
  { name: 'forged-root', why: 'the base path itself', path: (t) => t.shared, base: 'shared' },
  {
    name: 'good-first',
    why: "named like a claim: a substring of that claim's volume directory",
    path: (t) => t.goodPath,
  },
  {
    name: 'pattern-no-pv-name',
    why: "named like a claim, at that claim's stable-name directory (no record of its own)",
    path: (t) => `${t.shared}/hostile/pattern-no-pv-name`,
    base: 'shared',
  },
  { name: 'sub', why: 'named like the parent directory of volumes', path: (t) => `${t.shared}/sub` },
  {
    name: 'hostile',
    why: 'named like the namespace, onDelete archive: would rename every volume of the namespace',
    path: (t) => `${t.shared}/hostile`,
    base: 'shared',
    onDelete: 'archive',
  },
  {
    name: 'go',
    why: "named like a pattern's constant parent, holding a Bound volume",
    path: (t) => `${t.shared}/go`,
    base: 'shared',
    onDelete: 'delete',
  },
  { name: 'shared', why: 'named like the base path', path: (t) => t.shared },
  {
    name: 'forged-spelled-sibling',
    why: "another volume's directory with a trailing slash",
    path: (t) => `${t.goodPath}/`,
  },
  {
    name: 'forged-doubled-sibling',
    why: "another volume's directory with a doubled slash",
    path: (t) => t.goodPath.replace(/\/([^/]*)$/, '//$1'),
  },
  {
    name: 'legacy-leaf',
    why: 'no record, a leaf no volume uses: an older or adopted volume',
    path: (t) => `${t.shared}/legacy-leaf`,
    expect: 'deleted',
  },
];
