// The `fieldValidation` directive of create, update and patch, as kube-apiserver's strict decoders apply it:
// unknown fields (against the generated schema) are always pruned; duplicate JSON keys keep the last value.
// Strict turns them into an error (400 `... cannot be handled as a ...: strict decoding error: ...` for a body,
// 422 `patch: Invalid value: ...` for a patch), Warn (the default) into `Warning: 299` headers, Ignore into nothing.
import type { ServerResponse } from 'node:http';
import { badRequest, invalid, type ClusterApiError } from '../common/api-errors.ts';
import { countObjectKeys } from '../common/json-safety.ts';
import { pruneUnknown } from './schema.ts';
import { normalizeTimes } from './time-encoding.ts';

export type FieldValidation = 'Strict' | 'Warn' | 'Ignore';

/** The directive of a request; absent or empty means Warn (handlers/rest.go fieldValidation). */
export function fieldValidationOf(query: URLSearchParams): FieldValidation {
  const v = query.get('fieldValidation');
  return v === 'Strict' || v === 'Ignore' ? v : 'Warn';
}

interface Frame {
  array: boolean;
  path: string;
  keys: Set<string>;
  index: number;
  key: string;
  expectKey: boolean;
}

/**
 * Paths of repeated object keys in a JSON text that already parsed, in document order, written as the strict
 * decoder does (`metadata.name`, `spec.containers[0].name`).
 */
export function duplicateFields(text: string): string[] {
  const out: string[] = [];
  const stack: Frame[] = [];
  const childPath = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return '';
    if (top.array) return `${top.path}[${top.index}]`;
    return top.path ? `${top.path}.${top.key}` : top.key;
  };
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (top && !top.array && top.expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) out.push(top.path ? `${top.path}.${key}` : key);
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
      i = j;
    } else if (ch === '{' || ch === '[') {
      stack.push({ array: ch === '[', path: childPath(), keys: new Set(), index: 0, key: '', expectKey: ch === '{' });
    } else if (ch === '}' || ch === ']') {
      stack.pop();
    } else if (ch === ',') {
      const top = stack[stack.length - 1];
      if (top?.array) top.index++;
      else if (top) top.expectKey = true;
    }
  }
  return out;
}

/** Go's YAML strict error split into one warning per line, as handlers/rest.go parseYAMLWarnings does. */
export function yamlWarnings(error: string): string[] {
  return error
    .replace(/^yaml: unmarshal errors:\n/, '')
    .split('\n')
    .map((l) => l.trim());
}

const NO_ERRORS: readonly string[] = Object.freeze([]);

/** The strict decoding errors of a decoded body, pruning unknown fields from `obj` in place. */
export function strictErrors(
  obj: Record<string, unknown>,
  model: string | undefined,
  duplicates: readonly string[],
): readonly string[] {
  return strictErrorsOf(model ? pruneUnknown(obj, model) : [], duplicates);
}

/** The strict decoding errors of a body whose unknown fields were pruned (pruneUnknown's paths) and repeated ones found. */
export function strictErrorsOf(unknown: readonly string[], duplicates: readonly string[]): readonly string[] {
  // A body without unknown or repeated fields (nearly every one) allocates no message array.
  if (unknown.length === 0 && duplicates.length === 0) return NO_ERRORS;
  return [...unknown.map((p) => `unknown field "${p}"`), ...duplicates.map((p) => `duplicate field "${p}"`)];
}

/**
 * kube-apiserver's warning recorder (k8s.io/apiserver pkg/endpoints/filters/warning.go): texts are deduplicated
 * and written whole while their total stays within 4,096 runes; the warning that would pass it starts truncation,
 * which replays every warning so far cut to 256 runes, and after it warnings (cut to 256) are added only while the
 * total is under 4,096. A response thus carries at most about 4,350 runes of warnings however many are recorded.
 */
export const WARNING_TOTAL_RUNES = 4 * 1024;
export const WARNING_ITEM_RUNES = 256;
/**
 * Beyond kube-apiserver: the Warning header lines stop at 12 KiB on the wire, so with the rest of the headers they
 * stay under Node's default 16 KiB header limit (a rune is up to 4 bytes of UTF-8, and quotes are escaped), and
 * @kubernetes/client-node can always read the answer. ASCII warnings within the rune limits never reach it.
 */
const WARNING_HEADER_BYTES = 12 * 1024;

interface WarningRecorder {
  recorded: Set<string>;
  ordered: string[];
  /** Runes of text written as headers. */
  written: number;
  truncating: boolean;
  headers: string[];
  headerBytes: number;
}

const recorders = new WeakMap<ServerResponse, WarningRecorder>();

/**
 * Adds one `Warning: 299 - "..."` response header per message, bounded and deduplicated as kube-apiserver does.
 * The messages are taken one by one only until the bound: 300,000 unknown fields cost no pass over them all here.
 */
export function addWarnings(res: ServerResponse, messages: Iterable<string>): void {
  let r = recorders.get(res);
  for (const text of messages) {
    if (!r)
      recorders.set(
        res,
        (r = { recorded: new Set(), ordered: [], written: 0, truncating: false, headers: [], headerBytes: 0 }),
      );
    // Past the limit while truncating, every further warning is dropped.
    if (r.written >= WARNING_TOTAL_RUNES && r.truncating) break;
    recordWarning(r, text);
  }
  if (r && r.headers.length > 0) res.setHeader('Warning', r.headers);
}

/** The warnings of strict errors: a YAML error's lines each, every other error as it is; made as they are taken. */
function* warningsOf(errors: readonly string[]): Generator<string> {
  for (const e of errors) {
    if (e.startsWith('yaml: ')) yield* yamlWarnings(e);
    else yield e;
  }
}

function recordWarning(r: WarningRecorder, text: string): void {
  if (text.length === 0 || r.recorded.has(text)) return;
  r.recorded.add(text);
  r.ordered.push(text);
  if (!r.truncating) {
    const length = runeCount(text);
    if (r.written + length <= WARNING_TOTAL_RUNES) return writeWarning(r, text, length);
    // Start truncating: the warnings so far are written again, each cut to the item limit.
    r.truncating = true;
    r.written = 0;
    r.headers = [];
    r.headerBytes = 0;
    for (const w of r.ordered) writeWarning(r, ...truncated(w));
    return;
  }
  writeWarning(r, ...truncated(text));
}

function writeWarning(r: WarningRecorder, text: string, length: number): void {
  const header = warningHeader(text);
  // 'Warning: ' and CRLF around each value.
  const bytes = header.length + 11;
  if (r.headerBytes + bytes > WARNING_HEADER_BYTES) return;
  r.written += length;
  r.headerBytes += bytes;
  r.headers.push(header);
}

/** Runes (code points) of `text`, as Go's utf8.RuneCountInString counts them. */
function runeCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** `text` cut to WARNING_ITEM_RUNES runes (on a code point boundary), with its rune count. */
function truncated(text: string): [string, number] {
  if (text.length <= WARNING_ITEM_RUNES) return [text, runeCount(text)];
  const points = Array.from(text);
  return points.length > WARNING_ITEM_RUNES
    ? [points.slice(0, WARNING_ITEM_RUNES).join(''), WARNING_ITEM_RUNES]
    : [text, points.length];
}

/**
 * net.NewWarningHeader(299, "-", text): the text quoted with `"` and `\\` escaped. Only printable ASCII is sent:
 * control characters (which Node refuses in a header; Go's server writes CR and LF as spaces) become spaces, and
 * every other character outside ASCII a `?`, because Node writes a header string as latin1 or as UTF-8 depending on
 * how the body is written, so no byte sequence for it would reach every client as the same text.
 */
function warningHeader(text: string): string {
  const safe = text
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, ' ')
    .replace(/[^\t\u0020-\u007e]/gu, '?')
    .replace(/[\\"]/g, (c) => `\\${c}`);
  return `299 - "${safe}"`;
}

/**
 * Applies the directive to a create/update body's strict errors.
 * @throws ClusterApiError 400 under Strict when there are any
 */
export function enforceOnBody(
  directive: FieldValidation,
  errors: readonly string[],
  kind: string,
  version: string,
  res: ServerResponse,
): void {
  if (errors.length === 0 || directive === 'Ignore') return;
  if (directive === 'Warn') return addWarnings(res, warningsOf(errors));
  throw badRequest(
    `${kind} in version "${version}" cannot be handled as a ${kind}: strict decoding error: ${errors.join(', ')}`,
  );
}

/**
 * Applies the directive to a patch's strict errors. Under Strict, kube-apiserver answers 422 with the patch
 * (Go `%+v` of the patch map for strategic merge, the patched JSON otherwise) as the invalid value.
 * @throws ClusterApiError 422 under Strict when there are any
 */
export function enforceOnPatch(
  directive: FieldValidation,
  errors: readonly string[],
  shownValue: () => string,
  res: ServerResponse,
): void {
  if (errors.length === 0 || directive === 'Ignore') return;
  if (directive === 'Warn') return addWarnings(res, errors);
  throw patchStrictError(shownValue(), errors);
}

function patchStrictError(shownValue: string, errors: readonly string[]): ClusterApiError {
  return invalid({ group: '', resource: '', kind: '' }, '', [
    {
      reason: 'FieldValueInvalid',
      field: 'patch',
      message: `Invalid value: ${JSON.stringify(shownValue)}: strict decoding error: ${errors.join(', ')}`,
    },
  ]);
}

/** Go's `%+v` of a decoded JSON value (maps with sorted keys: `map[a:1 b:[x y]]`). */
export function goValueString(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goValueString).join(' ')}]`;
  if (typeof v === 'object') {
    const entries = Object.keys(v as object)
      .sort()
      .map((k) => `${k}:${goValueString((v as Record<string, unknown>)[k])}`);
    return `map[${entries.join(' ')}]`;
  }
  return String(v);
}

/**
 * The field validation of a patch, run on the patched object before it is stored: duplicates in the patch itself
 * (`json patch duplicate field` for JSON patches), then unknown fields of the patched object, which are pruned
 * whatever the directive; then time fields are re-encoded.
 */
export function patchFieldValidation(
  query: URLSearchParams,
  res: ServerResponse,
  type: 'json' | 'merge' | 'strategic',
  raw: Buffer,
  decoded: { patch: unknown; keysInText: number },
  model: string | undefined,
): (patched: Record<string, unknown>) => void {
  const directive = fieldValidationOf(query);
  const { patch } = decoded;
  // The scan that names repeated fields runs only when the text has more keys than the value kept.
  const repeats = directive !== 'Ignore' && decoded.keysInText !== countObjectKeys(patch);
  const duplicates = repeats ? duplicateFields(raw.toString('utf8')) : [];
  return (patched) => {
    // Written out only for a Strict error: for a large patch it costs as much as applying it.
    const shown = () => (type === 'strategic' ? goValueString(patch) : JSON.stringify(patched));
    const dupErrors = duplicates.map((p) => `${type === 'json' ? 'json patch ' : ''}duplicate field "${p}"`);
    if (type === 'json' && directive !== 'Ignore') dupErrors.push(...unknownOperationFields(patch));
    const unknown = strictErrors(patched, model, []);
    enforceOnPatch(directive, [...dupErrors, ...unknown], shown, res);
    if (model) normalizeTimes(patched, model);
  };
}

const OPERATION_FIELDS = new Set(['op', 'path', 'from', 'value']);

/** Keys of JSON patch operations outside jsonPatchOp {op, path, from, value}, as the strict decoder names them. */
function unknownOperationFields(patch: unknown): string[] {
  if (!Array.isArray(patch)) return [];
  const out: string[] = [];
  patch.forEach((op, i) => {
    if (op === null || typeof op !== 'object' || Array.isArray(op)) return;
    for (const k of Object.keys(op)) if (!OPERATION_FIELDS.has(k)) out.push(`json patch unknown field "[${i}].${k}"`);
  });
  return out;
}
