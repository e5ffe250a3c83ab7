// Consistent paginated lists: kube-apiserver's continue tokens (base64url JSON {"v","rv","start"}, checked as
// storage.DecodeContinue does) and the state of a resource as of an older resourceVersion, rebuilt from the
// current objects and the watch cache's bounded event ring. Nothing is kept per list or per token: a page at
// an RV the ring no longer reaches is a 410 Expired, exactly when etcd would have compacted it.
import { posix } from 'node:path';
import { badRequest, type ClusterApiError } from '../common/api-errors.ts';
import type { ResourceTable } from './store.ts';
import type { CompiledFilter } from './store-filter.ts';
import type { StoredEntry } from './stored-entry.ts';

/**
 * A decoded continue token: the list's resourceVersion (an int64, as Go decodes it; below 0: continue at the
 * latest) and the key to start after.
 */
export interface ContinueToken {
  rv: bigint;
  startAfterKey: string;
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** JSON text with every number outside strings turned into a string of its digits, as written. */
function numbersAsText(text: string): string {
  return text.replace(/("(?:[^"\\]|\\.)*")|(-?\d[\d.eE+-]*)/g, (m, quoted?: string) => quoted ?? `"${m}"`);
}

/** EncodeContinue: base64url (unpadded) JSON with the key just after the last returned one. */
export function encodeContinue(rv: number, lastKey: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start: `${lastKey}\u0000` })).toString('base64url');
}

function invalidToken(detail: string): ClusterApiError {
  return badRequest(`invalid continue token: ${detail}`);
}

/**
 * storage.DecodeContinue with its error texts, wrapped as the list path does (400 `invalid continue token: ...`).
 * @throws ClusterApiError 400
 */
export function decodeContinue(token: string): ContinueToken {
  if (!/^[A-Za-z0-9_-]*$/.test(token) || token.length % 4 === 1) {
    const at = token.search(/[^A-Za-z0-9_-]/);
    throw invalidToken(
      `continue key is not valid: illegal base64 data at input byte ${at < 0 ? token.length - 1 : at}`,
    );
  }
  const text = Buffer.from(token, 'base64url').toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalidToken(`continue key is not valid: ${(err as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw invalidToken('continue key is not valid: not a JSON object');
  const { v, rv, start } = parsed as { v?: unknown; rv?: unknown; start?: unknown };
  if (v !== 'meta.k8s.io/v1') {
    throw invalidToken(
      `continue key is not valid: server does not recognize this encoded version ${typeof v === 'string' ? v : ''}`,
    );
  }
  // encoding/json into an int64 field: the number's digits as written (a double cannot hold them all), refused
  // when they are not an integer (1.0, 1e3) or lie outside int64.
  let rvValue = 0n;
  if (rv !== undefined && rv !== null) {
    if (typeof rv !== 'number') {
      const type = Array.isArray(rv) ? 'array' : typeof rv === 'boolean' ? 'bool' : typeof rv;
      throw invalidToken(
        `continue key is not valid: json: cannot unmarshal ${type} into Go struct field continueToken.rv of type int64`,
      );
    }
    const digits = (JSON.parse(numbersAsText(text)) as { rv: string }).rv;
    if (!/^-?\d+$/.test(digits) || BigInt(digits) < INT64_MIN || BigInt(digits) > INT64_MAX)
      throw invalidToken(
        `continue key is not valid: json: cannot unmarshal number ${digits} into Go struct field continueToken.rv of type int64`,
      );
    rvValue = BigInt(digits);
  }
  if (start !== undefined && typeof start !== 'string')
    throw invalidToken('continue key is not valid: start is not a string');
  if (rvValue === 0n)
    throw invalidToken('continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  if (!start) throw invalidToken('continue key is not valid: encoded start key empty (version meta.k8s.io/v1)');
  // Path traversal defence as in DecodeContinue: the key must already be clean.
  const key = start.startsWith('/') ? start : `/${start}`;
  const cleaned = posix.normalize(key).replace(/(.)\/$/, '$1');
  if (cleaned !== key) throw invalidToken(`continue key is not valid: ${start}`);
  return { rv: rvValue, startAfterKey: start.endsWith('\u0000') ? start.slice(0, -1) : start };
}

/**
 * The entries of a resource as they were at `rv`, sorted by key, or undefined when the event ring no longer
 * reaches back to `rv` (history compacted). Cost: one pass over the current keys plus the newer events.
 */
export function entriesAt(table: ResourceTable, rv: number): Array<[string, StoredEntry]> | undefined {
  const newer = table.ring.since(rv);
  if (!newer) return undefined;
  // The first event after rv for each key tells its state at rv: absent (ADDED) or the event's previous version.
  const older = new Map<string, StoredEntry | undefined>();
  for (const ev of newer) {
    const key = ev.key;
    if (older.has(key)) continue;
    if (ev.type !== 'ADDED' && !ev.prev) return undefined;
    older.set(key, ev.type === 'ADDED' ? undefined : ev.prev);
  }
  const out: Array<[string, StoredEntry]> = [];
  for (const [key, e] of table.items) if (!older.has(key)) out.push([key, e]);
  for (const [key, e] of older) if (e) out.push([key, e]);
  return out.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** One page over a sorted snapshot, with the same contract as ClusterStore.listEntries. */
export function pageOf(
  sorted: Array<[string, StoredEntry]>,
  filter: CompiledFilter,
  limit: number,
  startAfterKey: string | undefined,
): { entries: StoredEntry[]; nextKey: string | undefined; remaining: number } {
  const prefix = filter.namespace !== undefined ? `${filter.namespace}/` : undefined;
  const entries: StoredEntry[] = [];
  let nextKey: string | undefined;
  let remaining = 0;
  let lastKey: string | undefined;
  for (const [key, e] of sorted) {
    if (prefix !== undefined && !key.startsWith(prefix)) continue;
    if (startAfterKey !== undefined && key <= startAfterKey) continue;
    if (filter.matches && !filter.matches(e.obj)) continue;
    if (nextKey !== undefined) {
      remaining++;
      continue;
    }
    if (limit > 0 && entries.length === limit) {
      nextKey = lastKey;
      remaining = 1;
      continue;
    }
    entries.push(e);
    lastKey = key;
  }
  return { entries, nextKey, remaining };
}
