// pathPattern rendering: the two template dialects users bring from other provisioners (nfs-subdir's
// `${.PVC.namespace}` and local-path's Go-template `{{ .PVC.Namespace }}`), parsed strictly. Unlike both
// originals, a missing or empty value is an error (never `<no value>` or an empty segment, which made
// volumes share a directory), and anything we do not understand is an error rather than literal text. Values
// taken from the claim are tenant input: one holding a glob or shell metacharacter, whitespace or a control
// character is refused (a setup or teardown script that expands its path unquoted would read it as syntax).
// The result is only a candidate: path-safety.ts decides whether it may be used.
import { describeCharacter, shellUnsafeCharacter, type ShellUnsafeCharacter } from './path-safety.ts';

/** The fields a pattern can reference. */
export type TemplateField = 'pvc.namespace' | 'pvc.name' | 'pvc.label' | 'pvc.annotation' | 'pv.name';

/** The values a pattern is rendered with. Labels and annotations are tenant input. */
export interface PathTemplateData {
  pvName: string;
  claim: {
    namespace: string;
    name: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

/** Base class of every pathPattern error. */
export class PathTemplateError extends Error {
  override name = 'PathTemplateError';
  constructor(
    message: string,
    readonly pattern: string,
  ) {
    super(message);
  }
}

/** The pattern itself is malformed or uses syntax we do not support. */
export class TemplateSyntaxError extends PathTemplateError {
  override name = 'TemplateSyntaxError';
  constructor(
    message: string,
    pattern: string,
    readonly position: number,
  ) {
    super(`invalid pathPattern ${JSON.stringify(pattern)} at offset ${position}: ${message}`, pattern);
  }
}

/** A referenced value is absent (`reason: 'missing'`) or the empty string (`reason: 'empty'`). */
export class MissingTemplateKeyError extends PathTemplateError {
  override name = 'MissingTemplateKeyError';
  constructor(
    pattern: string,
    readonly field: TemplateField,
    readonly key: string | undefined,
    readonly reason: 'missing' | 'empty',
  ) {
    const what = key === undefined ? field : `${field === 'pvc.label' ? 'label' : 'annotation'} ${JSON.stringify(key)}`;
    super(
      `pathPattern ${JSON.stringify(pattern)} needs the claim's ${what}, which is ${reason === 'missing' ? 'not set' : 'empty'}`,
      pattern,
    );
  }
}

/** A value taken from the claim holds a character a shell or a glob reads as syntax. */
export class UnsafeTemplateValueError extends PathTemplateError {
  override name = 'UnsafeTemplateValueError';
  constructor(
    pattern: string,
    readonly field: TemplateField,
    readonly key: string | undefined,
    readonly character: ShellUnsafeCharacter,
  ) {
    super(
      `the claim's ${describeField(field, key)} contains ${describeCharacter(character)}: the StorageClass parameter pathPattern ` +
        `(${JSON.stringify(pattern)}) takes no glob or shell metacharacters, whitespace or control characters from a claim`,
      pattern,
    );
  }
}

function describeField(field: TemplateField, key: string | undefined): string {
  if (key !== undefined) return `${field === 'pvc.label' ? 'label' : 'annotation'} ${JSON.stringify(key)}`;
  return field === 'pvc.namespace' ? 'namespace' : field === 'pvc.name' ? 'name' : field;
}

type Part = { kind: 'text'; text: string } | { kind: 'ref'; field: TemplateField; key?: string };

/** A parsed pattern: render it many times, ask which fields it uses. */
export interface CompiledPathPattern {
  readonly source: string;
  /** True when the pattern references the PV name (the unique component path-safety requires). */
  readonly referencesPvName: boolean;
  render(data: PathTemplateData): string;
}

/** local-path's default directory name: `<pv>_<namespace>_<claim>`. */
export const DEFAULT_PATH_PATTERN = '{{ .PVName }}_{{ .PVC.Namespace }}_{{ .PVC.Name }}';

/** Parses `pattern` once; throws TemplateSyntaxError for anything malformed or unknown. */
export function compilePathPattern(pattern: string): CompiledPathPattern {
  const parts = parse(pattern);
  return {
    source: pattern,
    referencesPvName: parts.some((p) => p.kind === 'ref' && p.field === 'pv.name'),
    render: (data) => parts.map((p) => (p.kind === 'text' ? p.text : lookup(pattern, p.field, p.key, data))).join(''),
  };
}

/** Convenience: compile and render in one call. */
export function renderPathPattern(pattern: string, data: PathTemplateData): string {
  return compilePathPattern(pattern).render(data);
}

function lookup(pattern: string, field: TemplateField, key: string | undefined, data: PathTemplateData): string {
  let value: string | undefined;
  switch (field) {
    case 'pvc.namespace':
      value = data.claim.namespace;
      break;
    case 'pvc.name':
      value = data.claim.name;
      break;
    case 'pv.name':
      value = data.pvName;
      break;
    case 'pvc.label':
      value = own(data.claim.labels, key!);
      break;
    case 'pvc.annotation':
      value = own(data.claim.annotations, key!);
      break;
  }
  if (value === undefined || value === null) throw new MissingTemplateKeyError(pattern, field, key, 'missing');
  if (typeof value !== 'string') throw new MissingTemplateKeyError(pattern, field, key, 'missing');
  if (value === '') throw new MissingTemplateKeyError(pattern, field, key, 'empty');
  if (field !== 'pv.name') {
    const unsafe = shellUnsafeCharacter(value);
    if (unsafe) throw new UnsafeTemplateValueError(pattern, field, key, unsafe);
  }
  return value;
}

// Only own properties: a label named `constructor` or `__proto__` must not resolve to Object.prototype's.
function own(map: Record<string, string> | undefined, key: string): string | undefined {
  return map && Object.prototype.hasOwnProperty.call(map, key) ? map[key] : undefined;
}

function parse(pattern: string): Part[] {
  const parts: Part[] = [];
  let text = '';
  let trimNextLeading = false;
  let i = 0;
  const flush = () => {
    if (text) parts.push({ kind: 'text', text });
    text = '';
  };
  while (i < pattern.length) {
    if (pattern.startsWith('${', i)) {
      const end = pattern.indexOf('}', i + 2);
      if (end < 0) throw new TemplateSyntaxError('unterminated "${"', pattern, i);
      flush();
      parts.push(parseDollar(pattern, pattern.slice(i + 2, end), i));
      i = end + 1;
      trimNextLeading = false;
      continue;
    }
    if (pattern.startsWith('{{', i)) {
      const end = pattern.indexOf('}}', i + 2);
      if (end < 0) throw new TemplateSyntaxError('unterminated "{{"', pattern, i);
      let inner = pattern.slice(i + 2, end);
      // Go's trim markers: "{{- " trims the text before, " -}}" the text after.
      if (/^-\s/.test(inner)) {
        text = text.replace(/\s+$/, '');
        inner = inner.slice(1);
      }
      let trimAfter = false;
      if (/\s-$/.test(inner)) {
        trimAfter = true;
        inner = inner.slice(0, -1);
      }
      flush();
      parts.push(parseAction(pattern, inner, i));
      i = end + 2;
      trimNextLeading = trimAfter;
      continue;
    }
    if (pattern.startsWith('}}', i)) throw new TemplateSyntaxError('"}}" without a matching "{{"', pattern, i);
    const ch = pattern[i];
    if (trimNextLeading && /\s/.test(ch)) {
      i++;
      continue;
    }
    trimNextLeading = false;
    text += ch;
    i++;
  }
  flush();
  return parts;
}

// nfs-subdir: ${.PVC.namespace} ${.PVC.name} ${.PVC.labels.K} ${.PVC.annotations.K}, plus our ${.PV.name}.
function parseDollar(pattern: string, raw: string, at: number): Part {
  const inner = raw.trim();
  if (inner === '.PVC.namespace') return { kind: 'ref', field: 'pvc.namespace' };
  if (inner === '.PVC.name') return { kind: 'ref', field: 'pvc.name' };
  if (inner === '.PV.name') return { kind: 'ref', field: 'pv.name' };
  const m = /^\.PVC\.(labels|annotations)\.(\S+)$/.exec(inner);
  if (m) return { kind: 'ref', field: m[1] === 'labels' ? 'pvc.label' : 'pvc.annotation', key: m[2] };
  throw new TemplateSyntaxError(
    `unknown variable "\${${raw}}" (known: \${.PVC.namespace}, \${.PVC.name}, \${.PVC.labels.KEY}, \${.PVC.annotations.KEY}, \${.PV.name})`,
    pattern,
    at,
  );
}

// local-path (Go text/template): {{ .PVC.Namespace }} {{ .PVC.Name }} {{ .PVC.Labels.K }}
// {{ .PVC.Annotations.K }} {{ .PV.Name }} {{ .PVName }} and {{ index .PVC.Labels "K" }}.
function parseAction(pattern: string, raw: string, at: number): Part {
  const inner = raw.trim();
  if (inner === '.PVC.Namespace') return { kind: 'ref', field: 'pvc.namespace' };
  if (inner === '.PVC.Name') return { kind: 'ref', field: 'pvc.name' };
  if (inner === '.PV.Name' || inner === '.PVName') return { kind: 'ref', field: 'pv.name' };
  const dotted = /^\.PVC\.(Labels|Annotations)\.(\S+)$/.exec(inner);
  if (dotted) return { kind: 'ref', field: dotted[1] === 'Labels' ? 'pvc.label' : 'pvc.annotation', key: dotted[2] };
  const indexed = /^index\s+\.PVC\.(Labels|Annotations)\s+("(?:[^"\\]|\\.)*"|`[^`]*`)$/.exec(inner);
  if (indexed) {
    return {
      kind: 'ref',
      field: indexed[1] === 'Labels' ? 'pvc.label' : 'pvc.annotation',
      key: unquote(pattern, indexed[2], at),
    };
  }
  throw new TemplateSyntaxError(
    `unsupported action "{{${raw}}}" (known: {{ .PVC.Namespace }}, {{ .PVC.Name }}, {{ .PVC.Labels.KEY }}, {{ .PVC.Annotations.KEY }}, {{ .PV.Name }}, {{ .PVName }}, {{ index .PVC.Labels "KEY" }})`,
    pattern,
    at,
  );
}

function unquote(pattern: string, literal: string, at: number): string {
  if (literal.startsWith('`')) return literal.slice(1, -1);
  try {
    const value: unknown = JSON.parse(literal);
    if (typeof value === 'string') return value;
  } catch {
    // fall through to the syntax error
  }
  throw new TemplateSyntaxError(`invalid string literal ${literal}`, pattern, at);
}

/**
 * The default directory name, local-path's `<pv>_<namespace>_<claim>`, cut to fit one 255-byte segment:
 * the PV name (the unique part) always survives whole; the claim name is shortened first.
 */
export function defaultVolumeDirName(data: PathTemplateData, maxBytes = 255): string {
  const head = `${data.pvName}_${data.claim.namespace}_`;
  let tail = data.claim.name;
  while (tail && Buffer.byteLength(head + tail, 'utf8') > maxBytes) tail = Array.from(tail).slice(0, -1).join('');
  const name = tail ? head + tail : data.pvName;
  return Buffer.byteLength(name, 'utf8') > maxBytes ? data.pvName : name;
}

/**
 * nfs-subdir's directory name, `<namespace>-<claim>-<pv>`: the default on a shared path published as NFS, so a
 * migrated nfs-subdir class keeps its naming. Shortened like defaultVolumeDirName (the PV name is kept).
 */
export function nfsSubdirVolumeDirName(data: PathTemplateData, maxBytes = 255): string {
  const tail = `-${data.pvName}`;
  let head = `${data.claim.namespace}-${data.claim.name}`;
  while (head && Buffer.byteLength(head + tail, 'utf8') > maxBytes) head = Array.from(head).slice(0, -1).join('');
  return head ? head + tail : data.pvName;
}
