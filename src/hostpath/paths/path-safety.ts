// Lexical path safety: the rules a rendered volume path must pass before anything touches the disk (listed
// under `pathPattern` in docs/configuration.md). PVC labels and annotations are tenant input, so every rule fails
// closed. What the lexical rules cannot see (symlinked parents, swaps between check and use) is handled
// by disk/volume-dirs.ts, which never follows a symlink below a base path.
import path from 'node:path';
import { shortenText, MAX_QUOTED_INPUT_BYTES } from '../../types/text.ts';

/** Linux NAME_MAX: the most bytes one path component may have. */
export const MAX_SEGMENT_BYTES = 255;
/** Linux PATH_MAX (4096) minus the terminating NUL: the most bytes a full volume path may have. */
export const MAX_PATH_BYTES = 4095;
/** The deepest relative path we accept (deeper is never a sensible layout, and costs fds on delete). */
export const MAX_DEPTH = 32;
/** Names the provisioner keeps for itself in a base path: never produced by a pattern. */
export const RESERVED_PREFIXES = ['.kube-provisioner', 'archived-'] as const;

/** Which rule a path broke: stable codes for tests, events and metrics. */
export type UnsafePathRule =
  | 'empty'
  | 'absolute'
  | 'control-character'
  | 'malformed-unicode'
  | 'backslash'
  | 'dot-segment'
  | 'empty-segment'
  | 'segment-too-long'
  | 'path-too-long'
  | 'too-deep'
  | 'reserved-name'
  | 'invalid-base-path'
  | 'outside-root'
  | 'is-base-path'
  | 'overlaps-volume'
  | 'symlink'
  | 'not-directory'
  | 'shell-unsafe';

/** A path that must not be used. `rule` says why; never match on the message. */
export class UnsafePathError extends Error {
  override name = 'UnsafePathError';
  constructor(
    readonly rule: UnsafePathRule,
    readonly path: string,
    readonly detail: string,
  ) {
    // The path can be 200 KB of tenant input: the message (and so the claim's event) quotes at most 1 KiB of it.
    super(`unsafe volume path ${shortenText(JSON.stringify(path), MAX_QUOTED_INPUT_BYTES)}: ${detail}`);
  }
}

// C0 and C1 controls, DEL, and the bidi overrides that make names display differently from their bytes.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;
// A lone surrogate would be written as U+FFFD: two different strings, one directory.
const LONE_SURROGATE_RE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

// What a shell or a glob gives a meaning to: local-path's older stock scripts expand their path argument unquoted
// (`rm -rf ${absolutePath}`), so one of these in a volume path is syntax, not a name. A backslash is refused by the
// path rules already (with their own message).
const SHELL_META_RE = /[*?[\]{}~$`'"|&;<>()!#^]/u;
const WHITESPACE_RE = /\s/u;

/** A character that must not reach a shell: which one, and what it is. */
export interface ShellUnsafeCharacter {
  char: string;
  kind: 'glob or shell metacharacter' | 'whitespace' | 'control character';
}

/** The first character of `s` a shell could read as syntax (metacharacter, whitespace, control), or undefined. */
export function shellUnsafeCharacter(s: string, o: { backslash?: boolean } = {}): ShellUnsafeCharacter | undefined {
  for (const char of s) {
    if (CONTROL_RE.test(char)) return { char, kind: 'control character' };
    if (WHITESPACE_RE.test(char)) return { char, kind: 'whitespace' };
    if (SHELL_META_RE.test(char) || (o.backslash && char === '\\'))
      return { char, kind: 'glob or shell metacharacter' };
  }
  return undefined;
}

/** `"*" (U+002A), a glob or shell metacharacter`: how messages name an unsafe character. */
export function describeCharacter(c: ShellUnsafeCharacter): string {
  const code = `U+${(c.char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
  if (c.kind === 'glob or shell metacharacter')
    return `${JSON.stringify(c.char)} (${code}), a glob or shell metacharacter`;
  return c.kind === 'whitespace' ? `whitespace (${code})` : `a control character (${code})`;
}

/**
 * Refuses a volume path a setup or teardown script would be handed when its part below the base path (the part a
 * pattern and tenants wrote; the base path is the administrator's) holds a character a shell reads as syntax:
 * scripts get the path as an argument and in VOL_DIR, and older stock scripts expand those unquoted.
 */
export function checkScriptPath(script: 'setup' | 'teardown', base: string, p: string): void {
  const c = shellUnsafeCharacter(isStrictlyUnder(base, p) ? p.slice(base.length + 1) : p, { backslash: true });
  if (c)
    throw new UnsafePathError(
      'shell-unsafe',
      p,
      `contains ${describeCharacter(c)}; refusing to hand it to the ${script} script (a script that expands its path unquoted would read it as syntax)`,
    );
}

/**
 * Limits of a relative path. The PV name is not required in it: two live volumes never share a directory
 * because placement checks the live volumes (VolumePathIndex), and delete proves identity (delete-identity.ts).
 */
export interface RelativePathRules {
  maxSegmentBytes?: number;
  maxDepth?: number;
}

/**
 * Checks a rendered relative volume path (e.g. `ns/claim/pvc-123`) and returns its segments.
 * Throws UnsafePathError for: empty, absolute, control characters or malformed unicode, backslashes,
 * `.`/`..`/empty segments, over-long segments, too many segments, reserved names.
 */
export function checkRelativeVolumePath(rel: string, rules: RelativePathRules = {}): string[] {
  if (typeof rel !== 'string' || rel === '') throw new UnsafePathError('empty', String(rel), 'the path is empty');
  if (CONTROL_RE.test(rel)) throw new UnsafePathError('control-character', rel, 'contains a control character');
  if (LONE_SURROGATE_RE.test(rel)) throw new UnsafePathError('malformed-unicode', rel, 'contains malformed unicode');
  if (rel.startsWith('/')) throw new UnsafePathError('absolute', rel, 'must be relative to the base path');
  if (rel.includes('\\')) throw new UnsafePathError('backslash', rel, 'backslashes are not allowed');
  const segments = rel.split('/');
  const maxDepth = rules.maxDepth ?? MAX_DEPTH;
  if (segments.length > maxDepth) throw new UnsafePathError('too-deep', rel, `more than ${maxDepth} segments`);
  const maxBytes = rules.maxSegmentBytes ?? MAX_SEGMENT_BYTES;
  for (const seg of segments) {
    if (seg === '') throw new UnsafePathError('empty-segment', rel, 'has an empty segment (a missing value or "//")');
    if (seg === '.' || seg === '..') throw new UnsafePathError('dot-segment', rel, `"${seg}" segments are not allowed`);
    if (Buffer.byteLength(seg, 'utf8') > maxBytes) {
      throw new UnsafePathError('segment-too-long', rel, `a segment is longer than ${maxBytes} bytes`);
    }
    // Case-insensitively (and after Unicode compatibility folding, K -> k): on a case-insensitive filesystem
    // (ext4 casefold, CIFS, vfat) `.KUBE-PROVISIONER` is the records directory.
    const folded = seg.normalize('NFKC').toLowerCase();
    if (RESERVED_PREFIXES.some((p) => folded.startsWith(p))) {
      throw new UnsafePathError(
        'reserved-name',
        rel,
        `segments starting with ${RESERVED_PREFIXES.map((p) => `"${p}"`).join(' or ')} are reserved`,
      );
    }
  }
  return segments;
}

/** Checks a configured base path lexically: absolute, normalised, not `/`, no control characters. */
export function checkBasePath(base: string): void {
  if (typeof base !== 'string' || !path.isAbsolute(base))
    throw new UnsafePathError('invalid-base-path', String(base), 'must be absolute');
  if (base === '/') throw new UnsafePathError('invalid-base-path', base, 'must not be the filesystem root');
  if (path.normalize(base) !== base || base.endsWith('/')) {
    throw new UnsafePathError(
      'invalid-base-path',
      base,
      `must be normalised (${JSON.stringify(path.normalize(base).replace(/\/$/, ''))})`,
    );
  }
  if (CONTROL_RE.test(base) || LONE_SURROGATE_RE.test(base))
    throw new UnsafePathError('invalid-base-path', base, 'contains a control character');
}

/** True when `p` is strictly below `root` (lexically; both absolute and normalised). */
export function isStrictlyUnder(root: string, p: string): boolean {
  if (root === '/') return p.length > 1 && p.startsWith('/');
  return p.length > root.length + 1 && p.startsWith(root) && p[root.length] === '/';
}

/**
 * Joins a base path and a checked relative path, and re-verifies the result lexically:
 * strictly under the base, within PATH_MAX.
 */
export function resolveVolumePath(
  base: string,
  rel: string,
  rules: RelativePathRules = {},
): { path: string; segments: string[] } {
  checkBasePath(base);
  const segments = checkRelativeVolumePath(rel, rules);
  const full = `${base}/${segments.join('/')}`;
  if (path.normalize(full) !== full || !isStrictlyUnder(base, full))
    throw new UnsafePathError('outside-root', full, `not under ${base}`);
  if (Buffer.byteLength(full, 'utf8') > MAX_PATH_BYTES)
    throw new UnsafePathError('path-too-long', full, `longer than ${MAX_PATH_BYTES} bytes`);
  return { path: full, segments };
}

/**
 * Checks a volume path taken from a PV (delete time): absolute, normalised, strictly under `base`, and its
 * relative part passes the same rules as at provision time. Returns the segments below the base. Whose
 * directory it is, is a separate question (delete-identity.ts).
 */
export function checkExistingVolumePath(base: string, volumePath: string): string[] {
  checkBasePath(base);
  if (typeof volumePath !== 'string' || volumePath !== path.normalize(volumePath) || !path.isAbsolute(volumePath)) {
    throw new UnsafePathError('outside-root', String(volumePath), 'not an absolute normalised path');
  }
  if (volumePath === base) throw new UnsafePathError('is-base-path', volumePath, 'is the base path itself');
  if (!isStrictlyUnder(base, volumePath)) throw new UnsafePathError('outside-root', volumePath, `not under ${base}`);
  return checkRelativeVolumePath(volumePath.slice(base.length + 1));
}
