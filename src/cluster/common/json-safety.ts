// JSON that a hostile client controls, handled without trusting its shape: a nesting limit checked on the raw
// text before parsing (apimachinery's decoder stops at 10,000 levels), an iterative measure of a value's depth
// and serialized size (nothing here recurses, so no input can exhaust the stack), serialization that turns a
// too-deep or too-large value into a typed error, and own-property access so that `__proto__`, `constructor`
// and `prototype` stay plain keys and no prototype is ever read or replaced.
import { randomUUID } from 'node:crypto';
import { isValidConfigMapKey } from './identifier-validation.ts';

/** kube-apiserver's request body limit (3 MiB); also bounds what one JSON patch may copy. */
export const MAX_BODY_BYTES = 3 * 1024 * 1024;

/** apimachinery's JSON decoding limit (Go encoding/json maxNestingDepth). */
export const MAX_JSON_DEPTH = 10_000;

/** V8's maximum string length on 64-bit platforms. */
const MAX_STRING_LENGTH = 2 ** 29 - 24;

/** A document nested deeper than the limit. */
export class JsonTooDeepError extends Error {
  override name = 'JsonTooDeepError';
  constructor(
    readonly limit: number,
    message = `exceeded max depth of ${limit}`,
  ) {
    super(message);
  }
}

/** A value whose serialization exceeds a byte limit. */
export class JsonTooLargeError extends Error {
  override name = 'JsonTooLargeError';
  constructor(readonly limit: number) {
    super(`the object exceeds the limit of ${limit} bytes`);
  }
}

const passes = {
  textScanned: 0,
  keysCounted: 0,
  largeMapEnumerations: 0,
  keySlices: 0,
  largestKeySlice: 0,
  largestParse: 0,
  /** Times the span scan cut its stacks back as a container closed (scanJsonTextForSpans). */
  scanCutBacks: 0,
};

/**
 * Objects with at least this many own keys are large maps (a ConfigMap's data of a large body). V8 keeps such an
 * object as a hash table, and every enumeration of it (Object.keys, for-in, JSON.stringify) collects and sorts all
 * its keys: each costs about as much as parsing it.
 */
export const LARGE_MAP_KEYS = 4096;

/** A request's pass over a large map handles at most this many keys between two turns of the event loop. */
export const KEY_SLICE = 8192;

/** Counts a run of keys handled without a turn of the event loop between them (jsonCheckWork). */
export function keySlice(keys: number): void {
  passes.keySlices++;
  if (keys > passes.largestKeySlice) passes.largestKeySlice = keys;
}

/** Object.keys, with the enumerations of large maps counted (jsonCheckWork: tests count them per request). */
export function ownKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  if (keys.length >= LARGE_MAP_KEYS) passes.largeMapEnumerations++;
  return keys;
}

/**
 * The work this thread's checks of JSON bodies have done since the process started: characters scanned by
 * checkJsonTextDepth, keys counted by countObjectKeys, enumerations of large maps by ownKeys, the runs of keys
 * counted without a turn between them and the longest (tests read it: whether a request made these passes).
 */
export function jsonCheckWork(): typeof passes {
  return { ...passes };
}

/** The closing quote of the JSON string opening at `i` (one preceded by an even number of backslashes), or -1. */
function closingQuote(text: string, i: number): number {
  let end = text.indexOf('"', i + 1);
  while (end >= 0) {
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === 0x5c) slashes++;
    if (slashes % 2 === 0) return end;
    end = text.indexOf('"', end + 1);
  }
  return -1;
}

/**
 * Scans JSON text for its nesting depth without parsing it, and counts the object keys written in it (a key
 * repeated in one object counts twice, where the parsed value keeps it once: see countObjectKeys).
 * @throws JsonTooDeepError past `limit` levels.
 */
export function checkJsonTextDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let keys = 0;
  const n = text.length;
  passes.textScanned += n;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      // A string: jump to its closing quote.
      const end = closingQuote(text, i);
      if (end < 0) return keys; // unterminated: JSON.parse reports it
      i = end;
      let k = end + 1;
      for (let c = text.charCodeAt(k); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(++k));
      if (text.charCodeAt(k) === 0x3a) keys++;
    } else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > limit) throw new JsonTooDeepError(limit);
    } else if (ch === 0x7d || ch === 0x5d) depth--;
  }
  return keys;
}

/**
 * The number of own keys over every object in a parsed JSON value (iterative: no input can exhaust the stack); a
 * map or list parsed in slices counts what its parse counted.
 */
export function countObjectKeys(value: unknown): number {
  let keys = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    const known = sliceCounts.get(v);
    if (known !== undefined) {
      keys += known;
      continue;
    }
    if (Array.isArray(v)) {
      for (const item of v) if (item !== null && typeof item === 'object') stack.push(item);
      continue;
    }
    const names = ownKeys(v); // own keys, as JSON.parse makes them (for-in also walks the prototype chain)
    keys += names.length;
    for (const k of names) {
      const item = (v as Record<string, unknown>)[k];
      if (item !== null && typeof item === 'object') stack.push(item);
    }
  }
  passes.keysCounted += keys;
  return keys;
}

/** What countObjectKeysInSlices learnt of a large map, in the same slices as its count. */
export interface LargeMap {
  keys: string[];
  /** Whether every value is a string, and the UTF-16 units of those that are. */
  stringValues: boolean;
  stringChars: number;
  /** Whether every key is a valid ConfigMap/Secret data key (isValidConfigMapKey). */
  configMapKeys: boolean;
  /** Its keys and those of the objects in it (countObjectKeys), when it was parsed in slices. */
  count?: number;
}

/** The large maps counted by countObjectKeysInSlices, each kept for the next enumeration (largeMapOnce). */
const largeMaps = new WeakMap<object, LargeMap>();

/**
 * countObjectKeys for a large body's value, in slices: at most KEY_SLICE keys and items between two calls of
 * `turn` (a turn of the event loop), so no other request waits for the whole pass. The key list of each large map
 * (LARGE_MAP_KEYS) is kept for the next enumeration of the same object, the data-key validation's (largeMapOnce),
 * with what that validation asks of each key and value, found in the same slices: one enumeration of a
 * 300,000-key map costs about as much as parsing it, and the count and the validation share it.
 * The request's value is its own, and between the count and the validation nothing adds or removes a key of a
 * map of scalars (pruning walks only models' fields), so the list is still the map's.
 */
export async function countObjectKeysInSlices(value: unknown, turn: () => Promise<void>): Promise<number> {
  let keys = 0;
  const slices = new KeySlices(turn);
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    // A map or a list parsed in slices was counted then (parseLargeJsonText).
    const known = sliceCounts.get(v);
    if (known !== undefined) {
      keys += known;
      continue;
    }
    if (Array.isArray(v)) {
      for (const item of v) {
        if (item !== null && typeof item === 'object') stack.push(item);
        if (slices.full()) await slices.turn();
      }
      continue;
    }
    const names = ownKeys(v);
    keys += names.length;
    if (names.length >= LARGE_MAP_KEYS) {
      await keepLargeMap(v as Record<string, unknown>, names, slices, stack);
      continue;
    }
    for (const k of names) {
      const item = (v as Record<string, unknown>)[k];
      if (item !== null && typeof item === 'object') stack.push(item);
      if (slices.full()) await slices.turn();
    }
  }
  slices.end();
  passes.keysCounted += keys;
  return keys;
}

/**
 * For a large body whose keys are not counted (fieldValidation=Ignore, YAML, protobuf): the large maps directly
 * under the top level (a ConfigMap's data) are enumerated here instead of by validation, and their keys and
 * values looked at in slices as countObjectKeysInSlices does. No other object is walked: it would be a pass as
 * long as the parse for a body of many small objects.
 */
export async function keepLargeMapsInSlices(value: unknown, turn: () => Promise<void>): Promise<void> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const slices = new KeySlices(turn);
  // The top level parsed in slices (300,000 members): its keys as the parse saw them, looked at in slices.
  for (const field of largeMaps.get(value)?.keys ?? Object.keys(value)) {
    if (slices.full()) await slices.turn();
    const v = (value as Record<string, unknown>)[field];
    if (v === null || typeof v !== 'object' || Array.isArray(v) || largeMaps.has(v)) continue;
    const names = ownKeys(v);
    if (names.length >= LARGE_MAP_KEYS) await keepLargeMap(v as Record<string, unknown>, names, slices);
  }
  slices.end();
}

/** Runs of at most KEY_SLICE keys or items, with a turn of the event loop after each. */
class KeySlices {
  private run = 0;
  constructor(private readonly loopTurn: () => Promise<void>) {}

  /** Counts one key or item; true when the run is full and a turn is due. */
  full(): boolean {
    return ++this.run >= KEY_SLICE;
  }

  async turn(): Promise<void> {
    this.end();
    await this.loopTurn();
  }

  end(): void {
    keySlice(this.run);
    this.run = 0;
  }
}

/** Looks at every key and value of a large map in slices and keeps what it found (largeMapOnce). */
async function keepLargeMap(
  v: Record<string, unknown>,
  names: string[],
  slices: KeySlices,
  stack?: unknown[],
): Promise<void> {
  const map: LargeMap = { keys: names, stringValues: true, stringChars: 0, configMapKeys: true };
  for (const k of names) {
    const item = v[k];
    if (typeof item === 'string') map.stringChars += item.length;
    else {
      map.stringValues = false;
      if (stack && item !== null && typeof item === 'object') stack.push(item);
    }
    if (map.configMapKeys && !isValidConfigMapKey(k)) map.configMapKeys = false;
    if (slices.full()) await slices.turn();
  }
  largeMaps.set(v, map);
}

/** What the count or the sliced parse learnt of `obj` if it is a large map, leaving it for largeMapOnce. */
export function largeMapSeen(obj: object): LargeMap | undefined {
  return largeMaps.get(obj);
}

/** What countObjectKeysInSlices learnt of `obj` if it was a large map, given once (the next enumeration's). */
export function largeMapOnce(obj: object): LargeMap | undefined {
  const map = largeMaps.get(obj);
  if (map !== undefined) largeMaps.delete(obj);
  return map;
}

/** The longest run of keys handled without a turn since the last call (tests read it per request). */
export function largestKeySliceSince(): number {
  const largest = passes.largestKeySlice;
  passes.largestKeySlice = 0;
  return largest;
}

/** A map or a list of at least this many characters of text, at any depth (the top level included), is parsed in
 * slices by parseLargeJsonText. */
export const LARGE_SPAN_CHARS = 128 * 1024;

/** A slice of such a map ends at the first member after this many characters of its text... */
export const SLICE_CHARS = 64 * 1024;

/** ...or after this many members (fewer than LARGE_MAP_KEYS: no slice is itself a large map). */
export const SLICE_MEMBERS = LARGE_MAP_KEYS - 96;

/**
 * A large map or list found by the text scan: where its slices start and end, and the large maps and lists
 * inside it, each parsed in its own slices and put in its place (a tree: a large container holds every large
 * one inside it).
 */
interface Span {
  /** The position of its `{` or `[`, of each comma where a slice ends, and of its `}` or `]`. */
  bounds: number[];
  /**
   * For each slice, its members in the text when no whitespace is written between its tokens (its text may then
   * be as JSON.stringify writes it: the size of the map is added up without serializing it), else -1.
   */
  compact: number[];
  /** A list rather than a map: its slices are runs of items. */
  list: boolean;
  /** The large containers directly inside it, in the order of the text. */
  children: Span[];
}

/**
 * checkJsonTextDepth, also finding the large maps and lists (LARGE_SPAN_CHARS), at any depth, each with its slice
 * boundaries: commas between its members, one after each SLICE_CHARS characters or SLICE_MEMBERS members.
 * Returns the keys written in the text and the outermost large container, if any (the top level when it is
 * large). The state of each open container is kept by depth, and the cuts of all open ones on one stack that
 * each container cuts back to when it closes, so the scan does constant work per character.
 */
function scanJsonTextForSpans(text: string, limit: number): { keys: number; root: Span | undefined } {
  let depth = 0;
  let keys = 0;
  const n = text.length;
  passes.textScanned += n;
  // Whitespace outside strings seen so far: a slice is compact when none was seen since its start.
  let ws = 0;
  const start: number[] = [];
  const isList: boolean[] = [];
  const members: number[] = [];
  const lastCut: number[] = [];
  const wsAtCut: number[] = [];
  const cutsFrom: number[] = [];
  const childrenFrom: number[] = [];
  const cuts: number[] = [];
  const compacts: number[] = [];
  // The large containers closed whose parent is still open, in the order of the text.
  const closed: Span[] = [];
  // A `[` closed by `}` or a `{` by `]`: each slice of such a container can be JSON when the text is not.
  let mismatched = false;
  for (let i = 0; i < n; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22) {
      const end = closingQuote(text, i);
      if (end < 0) break; // unterminated: JSON.parse reports it
      i = end;
      let k = end + 1;
      for (let c = text.charCodeAt(k); c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = text.charCodeAt(++k));
      if (text.charCodeAt(k) === 0x3a) keys++;
    } else if (ch === 0x7b || ch === 0x5b) {
      if (++depth > limit) throw new JsonTooDeepError(limit);
      start[depth] = i;
      isList[depth] = ch === 0x5b;
      members[depth] = 0;
      lastCut[depth] = i;
      wsAtCut[depth] = ws;
      cutsFrom[depth] = cuts.length;
      childrenFrom[depth] = closed.length;
    } else if (ch === 0x7d || ch === 0x5d) {
      if (depth === 0) break; // JSON.parse reports it
      if ((ch === 0x5d) !== isList[depth]) mismatched = true;
      const from = cutsFrom[depth];
      const children = childrenFrom[depth];
      if (i - start[depth] >= LARGE_SPAN_CHARS) {
        const span: Span = {
          bounds: [start[depth], ...cuts.slice(from), i],
          compact: [...compacts.slice(from), ws > wsAtCut[depth] ? -1 : members[depth] + 1],
          list: isList[depth],
          children: closed.splice(children),
        };
        closed.push(span);
      } else if (closed.length !== children) {
        // Never for well-formed text (a container holding a large one is large itself): the guard keeps the tree.
        passes.scanCutBacks++;
        closed.length = children;
      }
      // Only when it holds cuts: setting an array's length on every close cost more than the rest of the scan
      // (250,000 tiny containers made it as long as one JSON.parse of the text; review of H5).
      if (cuts.length !== from) {
        passes.scanCutBacks++;
        cuts.length = from;
        compacts.length = from;
      }
      depth--;
    } else if (ch === 0x2c) {
      if (depth > 0 && (++members[depth] >= SLICE_MEMBERS || i - lastCut[depth] >= SLICE_CHARS)) {
        cuts.push(i);
        compacts.push(ws > wsAtCut[depth] ? -1 : members[depth]);
        members[depth] = 0;
        lastCut[depth] = i;
        wsAtCut[depth] = ws;
      }
    } else if (ch === 0x20 || ch === 0x0a || ch === 0x0d || ch === 0x09) ws++;
  }
  // The top level, when it is a large container that closed (anything else is JSON.parse's to judge).
  return { keys, root: depth === 0 && closed.length === 1 && !mismatched ? closed[0] : undefined };
}

/** The compact JSON of each map of strings parsed in slices (serializedJsonOf). */
const sizedMaps = new WeakMap<object, SizedMap>();

/** A map of strings parsed in slices: its compact JSON, slice by slice without the braces, and its UTF-8 bytes. */
interface SizedMap {
  parts: string[];
  bytes: number;
}

/** Notes the characters one JSON.parse of a large body's text was given (jsonCheckWork: largestParse). */
function parsed(chars: number): void {
  if (chars > passes.largestParse) passes.largestParse = chars;
}

/** The longest text given to one JSON.parse of a large body since the last call (tests read it per request). */
export function largestParseSince(): number {
  const largest = passes.largestParse;
  passes.largestParse = 0;
  return largest;
}

/** Whether `k` is an array index, a key V8 orders before every other key of an object. */
function isArrayIndex(k: string): boolean {
  const c = k.charCodeAt(0);
  if (c < 0x30 || c > 0x39) return false;
  if (!/^(?:0|[1-9]\d{0,9})$/.test(k)) return false;
  return Number(k) < 2 ** 32 - 1;
}

/**
 * Parses a large body's JSON text (checked as checkJsonTextDepth checks it, with its keys counted) so that no
 * single pass holds the event loop for a whole large map or list, wherever it is: each large container (the top
 * level included) is parsed in slices of at most SLICE_CHARS characters or SLICE_MEMBERS members with a turn
 * before each, every large container inside a slice standing in its text as a placeholder string until it is
 * parsed (the same way, recursively) and put in its place. Each slice's keys are added to the map in the order
 * of the text, a key already there keeping its place and taking the later value: the value is the one JSON.parse
 * gives. What the slices show of each map (its key list, its key count, whether its keys are data keys and its
 * values strings) is kept for the count and the validation, as countObjectKeysInSlices keeps it, and for a map
 * of strings its compact JSON, slice by slice, for the store's size check and stored text (serializedJsonOf). A
 * large container whose key is named again later in its map is parsed all the same (for its errors) and left
 * out, as JSON.parse leaves it. A text a slice cannot be parsed from (a syntax error) is left to one JSON.parse
 * of the whole text, which gives the error.
 * @throws JsonTooDeepError, SyntaxError
 */
export async function parseLargeJsonText(
  text: string,
  turn: () => Promise<void>,
  depthLimit = MAX_JSON_DEPTH,
): Promise<{ value: unknown; keysInText: number }> {
  const { keys: keysInText, root } = scanJsonTextForSpans(text, depthLimit);
  if (root !== undefined && onlySpaceAround(text, root)) {
    // Unguessable (not Math.random, whose outputs can be predicted): a string of the body equal to it would be
    // taken for a placeholder.
    const token = `\u0000parsed-in-slices-${randomUUID()}-`;
    const value = await parseSpan(text, root, token, turn);
    if (value !== undefined) return { value, keysInText };
  }
  if (syntaxErrorOf !== undefined && text.length >= LARGE_SPAN_CHARS) {
    // One JSON.parse of the whole text builds every map that closes before the error: 150-170 ms for a 3 MiB
    // map followed by a stray token (review of H5). It runs off the loop; the message is the same V8's.
    const message = await syntaxErrorOf(text);
    if (message !== undefined) throw new SyntaxError(message);
  }
  parsed(text.length);
  return { value: JSON.parse(text) as unknown, keysInText };
}

/** Where a large text's SyntaxError is found off the loop (findSyntaxErrorsWith). */
let syntaxErrorOf: ((text: string) => Promise<string | undefined>) | undefined;

/**
 * Lets parseLargeJsonText find the SyntaxError of a large text it cannot parse in slices with `find` (yaml-decode.ts
 * gives its worker thread's JSON.parse): the message, or undefined when the text is JSON or `find` cannot say.
 */
export function findSyntaxErrorsWith(find: (text: string) => Promise<string | undefined>): void {
  syntaxErrorOf = find;
}

/** Whether nothing but JSON's whitespace stands before and after the top-level container. */
function onlySpaceAround(text: string, root: Span): boolean {
  return /^[ \t\n\r]*$/.test(text.slice(0, root.bounds[0])) && /^[ \t\n\r]*$/.test(text.slice(root.bounds.at(-1)! + 1));
}

/** One large container of the text parsed in slices with a turn before each; undefined if a slice is not JSON. */
function parseSpan(text: string, span: Span, token: string, turn: () => Promise<void>): Promise<unknown> {
  const slices = new SpanSlices(text, span, token, turn);
  return span.list ? parseListInSlices(slices) : parseMapInSlices(slices, span);
}

/** The slices of a large container: their texts (each large container inside one as a placeholder) and values. */
class SpanSlices {
  /** The index in span.children of the next child not yet in a slice. */
  private next = 0;
  /** The children of the slice parsed last that its value holds: each index given once. */
  private pending = new Set<number>();

  constructor(
    private readonly text: string,
    private readonly span: Span,
    private readonly token: string,
    private readonly turn: () => Promise<void>,
  ) {}

  get count(): number {
    return this.span.bounds.length - 1;
  }

  /** Slice j's members as text, each large child as its placeholder (a JSON string). */
  members(j: number): { members: string; children: boolean } {
    const { bounds, children } = this.span;
    const end = bounds[j + 1];
    let from = bounds[j] + 1;
    if (this.next >= children.length || children[this.next].bounds[0] >= end) {
      return { members: this.text.slice(from, end), children: false };
    }
    const parts: string[] = [];
    while (this.next < children.length && children[this.next].bounds[0] < end) {
      const child = children[this.next];
      parts.push(this.text.slice(from, child.bounds[0]), JSON.stringify(this.token + this.next));
      this.pending.add(this.next);
      from = child.bounds.at(-1)! + 1;
      this.next++;
    }
    parts.push(this.text.slice(from, end));
    return { members: parts.join(''), children: true };
  }

  /** Whether a slice's key is a placeholder: a large container written where a key goes, not JSON. */
  isPlaceholder(k: string): boolean {
    return k.startsWith(this.token);
  }

  /** A turn of the event loop. */
  pause(): Promise<void> {
    return this.turn();
  }

  /** A turn, before every slice but the first. */
  async before(j: number): Promise<void> {
    if (j > 0) await this.turn();
  }

  /**
   * The value a slice's member has: a placeholder is replaced by its child, parsed in its own slices (after a
   * turn); undefined if that child is not JSON.
   */
  async resolve(v: unknown): Promise<{ value: unknown } | undefined> {
    if (typeof v !== 'string' || !v.startsWith(this.token)) return { value: v };
    const index = Number(v.slice(this.token.length));
    this.pending.delete(index);
    await this.turn();
    const value = await parseSpan(this.text, this.span.children[index], this.token, this.turn);
    return value === undefined ? undefined : { value };
  }

  /**
   * The children of the slice just merged that its value did not hold (a key named again later in the same
   * slice): parsed all the same, for their errors, and left out. False if one is not JSON.
   */
  async unheld(): Promise<boolean> {
    for (const index of this.pending) {
      await this.turn();
      if ((await parseSpan(this.text, this.span.children[index], this.token, this.turn)) === undefined) return false;
    }
    this.pending.clear();
    return true;
  }
}

/** countObjectKeys without counting the work (a slice's values, counted by the caller as part of its map). */
function keysIn(value: unknown): number {
  const before = passes.keysCounted;
  const keys = countObjectKeys(value);
  passes.keysCounted = before;
  return keys;
}

/** The keys in every object of each container parsed in slices, itself included (countObjectKeysInSlices). */
const sliceCounts = new WeakMap<object, number>();

/** One large list of the text, parsed slice by slice with a turn between (parseLargeJsonText). */
async function parseListInSlices(slices: SpanSlices): Promise<unknown[] | undefined> {
  const list: unknown[] = [];
  let count = 0;
  for (let j = 0; j < slices.count; j++) {
    await slices.before(j);
    const { members } = slices.members(j);
    const part = `[${members}]`;
    parsed(part.length);
    let slice: unknown[];
    try {
      slice = JSON.parse(part) as unknown[];
    } catch {
      return undefined;
    }
    // `[1,]`: a slice without an item is a comma JSON.parse of the whole text refuses.
    if (slice.length === 0) return undefined;
    keySlice(slice.length);
    for (const item of slice) {
      const resolved = await slices.resolve(item);
      if (resolved === undefined) return undefined;
      list.push(resolved.value);
      if (resolved.value !== null && typeof resolved.value === 'object') count += keysIn(resolved.value);
    }
  }
  sliceCounts.set(list, count);
  return list;
}

/** One large map of the text, parsed slice by slice with a turn between (parseLargeJsonText). */
async function parseMapInSlices(slices: SpanSlices, { compact }: Span): Promise<Record<string, unknown> | undefined> {
  const map: Record<string, unknown> = {};
  const seen: LargeMap = { keys: [], stringValues: true, stringChars: 0, configMapKeys: true };
  let count = 0;
  const parts: string[] = [];
  let bytes = 2; // the braces; a comma between two slices is added with the second
  let repeated = false;
  // Array-index keys ("0", "42"): V8 keeps them first, in numeric order, in the map as in JSON.parse's value.
  const indexKeys: string[] = [];
  for (let j = 0; j < slices.count; j++) {
    await slices.before(j);
    const { members, children } = slices.members(j);
    const part = `{${members}}`;
    parsed(part.length);
    let slice: Record<string, unknown>;
    try {
      slice = JSON.parse(part) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    const names = Object.keys(slice);
    // `{"a": 1,}`: a slice without a member is a comma JSON.parse of the whole text refuses.
    if (names.length === 0) return undefined;
    keySlice(names.length);
    for (const k of names) {
      let v = slice[k];
      if (children) {
        if (slices.isPlaceholder(k)) return undefined;
        const resolved = await slices.resolve(v);
        if (resolved === undefined) return undefined;
        v = resolved.value;
      }
      // The map's own value, if an earlier slice gave the key: a JSON value is never undefined nor a function,
      // what a key the map lacks reads (from Object.prototype), but for `__proto__`.
      const old = k === '__proto__' ? getOwn(map, k) : map[k];
      if (old !== undefined && typeof old !== 'function') {
        // Repeated in an earlier slice: the key keeps its place, the later value wins (JSON.parse's answer).
        repeated = true;
        if (typeof old === 'string') seen.stringChars -= old.length;
        else if (old !== null && typeof old === 'object') count -= keysIn(old);
        count--;
      } else if (isArrayIndex(k)) indexKeys.push(k);
      else seen.keys.push(k);
      if (k === '__proto__') setOwn(map, k, v);
      else map[k] = v;
      count++;
      if (typeof v === 'string') seen.stringChars += v.length;
      else {
        seen.stringValues = false;
        if (v !== null && typeof v === 'object') count += keysIn(v);
      }
      if (seen.configMapKeys && !isValidConfigMapKey(k)) seen.configMapKeys = false;
    }
    if (children && !(await slices.unheld())) return undefined;
    if (seen.stringValues && !repeated && indexKeys.length === 0) {
      // Keys and values all strings, no whitespace, no key repeated in it, no escape, no lone surrogate: the
      // slice's text is what JSON.stringify would write (a third of the cost of writing it).
      const json =
        compact[j] === names.length && !members.includes('\\') && isWellFormed(members)
          ? members
          : JSON.stringify(slice).slice(1, -1);
      parts.push(json);
      bytes += Buffer.byteLength(json) + (j > 0 ? 1 : 0);
    }
  }
  seen.count = count;
  sliceCounts.set(map, count);
  if (indexKeys.length > 0) {
    // A typed array's native numeric sort (no comparator call per pair); index keys are canonical, below 2^32 - 1.
    // Their conversions to numbers and back are done KEY_SLICE at a time with a turn between (one run of each
    // took 60-100 ms for 270,000 keys; review of H5).
    const n = indexKeys.length;
    const sorted = new Uint32Array(n);
    for (let from = 0; from < n; from += KEY_SLICE) {
      if (from > 0) await slices.pause();
      const to = Math.min(from + KEY_SLICE, n);
      for (let i = from; i < to; i++) sorted[i] = Number(indexKeys[i]);
      keySlice(to - from);
    }
    sorted.sort();
    const first = new Array<string>(n);
    for (let from = 0; from < n; from += KEY_SLICE) {
      await slices.pause();
      const to = Math.min(from + KEY_SLICE, n);
      for (let i = from; i < to; i++) first[i] = String(sorted[i]);
      keySlice(to - from);
    }
    seen.keys = first.concat(seen.keys);
  }
  largeMaps.set(map, seen);
  if (seen.stringValues) {
    // With an index key (V8 puts those first) or a key repeated slices apart (its later value in its first place)
    // the slices' texts are not the map's JSON: it is written again from the map, in slices with a turn before
    // each. Left to the store, one JSON.stringify of a 3 MiB map held the loop about 100 ms (review of H5).
    sizedMaps.set(
      map,
      repeated || indexKeys.length > 0 ? await jsonInSlices(map, seen.keys, slices) : { parts, bytes },
    );
  }
  return map;
}

/** The compact JSON of a map of strings, SLICE_MEMBERS keys at a time in the order of `keys`, a turn before each. */
async function jsonInSlices(map: Record<string, unknown>, keys: string[], slices: SpanSlices): Promise<SizedMap> {
  const parts: string[] = [];
  let bytes = 2;
  for (let from = 0; from < keys.length; from += SLICE_MEMBERS) {
    await slices.pause();
    // A run of the map's keys in its order (index keys, which come first, in theirs): JSON.stringify writes it so.
    const run: Record<string, unknown> = {};
    for (let i = from; i < Math.min(from + SLICE_MEMBERS, keys.length); i++) setOwn(run, keys[i], getOwn(map, keys[i]));
    const json = JSON.stringify(run).slice(1, -1);
    parts.push(json);
    bytes += Buffer.byteLength(json) + (from > 0 ? 1 : 0);
  }
  return { parts, bytes };
}

/** String.prototype.isWellFormed (Node 20; not in this TypeScript lib): no lone surrogate. */
function isWellFormed(s: string): boolean {
  return (s as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** The fields whose maps are sized: a ConfigMap's and a Secret's data, maps of strings nothing prunes. */
const SIZED_FIELDS = ['data', 'binaryData'] as const;

/**
 * The compact JSON of a ConfigMap or Secret about to be committed whose data map was parsed in slices
 * (parseLargeJsonText), and its UTF-8 bytes, without a JSON.stringify of that map (one pass as long as parsing
 * it): the map's JSON was kept slice by slice, and the rest of the object is serialized with a mark in its place.
 * Undefined when no such map is in it. Each map is given once: the request's value is its own, and nothing
 * between its decoding and its commit changes a ConfigMap's or a Secret's data map in place (a Secret's
 * stringData makes a new one).
 */
export function serializedJsonOf(obj: Record<string, unknown>): { bytes: number; json(): string } | undefined {
  if (obj.kind !== 'ConfigMap' && obj.kind !== 'Secret') return undefined;
  const maps: Array<{ field: string; mark: string; map: SizedMap }> = [];
  for (const field of SIZED_FIELDS) {
    const v = getOwn(obj, field);
    const map = v !== null && typeof v === 'object' ? sizedMaps.get(v) : undefined;
    if (map === undefined) continue;
    sizedMaps.delete(v as object);
    maps.push({ field, mark: `\u0000${field}-${randomUUID()}`, map });
  }
  if (maps.length === 0) return undefined;
  const rest: Record<string, unknown> = { ...obj };
  for (const { field, mark } of maps) rest[field] = mark;
  const restJson = JSON.stringify(rest);
  let bytes = Buffer.byteLength(restJson);
  for (const { mark, map } of maps) bytes += map.bytes - Buffer.byteLength(JSON.stringify(mark));
  return {
    bytes,
    json(): string {
      let json = restJson;
      for (const { mark, map } of maps) {
        const quoted = JSON.stringify(mark);
        const at = json.indexOf(quoted);
        json = `${json.slice(0, at)}{${map.parts.join(',')}}${json.slice(at + quoted.length)}`;
      }
      return json;
    },
  };
}

/** Parses JSON text after checking its depth. @throws JsonTooDeepError, SyntaxError */
export function parseJsonText(text: string, depthLimit = MAX_JSON_DEPTH): unknown {
  checkJsonTextDepth(text, depthLimit);
  return JSON.parse(text) as unknown;
}

/** Characters a string has in JSON, quotes included: JSON.stringify's only for a string it escapes something in. */
function jsonStringLength(s: string): number {
  // A control character, a quote, a backslash or a surrogate (a lone one is escaped): JSON.stringify decides.
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s).length : s.length + 2;
}
// eslint-disable-next-line no-control-regex -- control characters are what JSON escapes
const NEEDS_ESCAPE = /[\u0000-\u001f"\\\ud800-\udfff]/;

/** Serialized length (UTF-16 units of compact JSON) of a scalar, or undefined for values JSON omits. */
function scalarLength(v: unknown): number | undefined {
  if (v === null) return 4;
  switch (typeof v) {
    case 'string':
      return jsonStringLength(v);
    case 'number':
      return Number.isFinite(v) ? String(v).length : 4;
    case 'boolean':
      return v ? 4 : 5;
    default:
      return undefined;
  }
}

/**
 * Walks a parsed JSON value iteratively and checks its depth and compact serialized size, stopping as soon as a
 * limit is passed (so a value built by amplification is never walked, nor serialized, in full).
 * @throws JsonTooDeepError, JsonTooLargeError
 */
export function checkJsonValue(value: unknown, limits: { maxDepth?: number; maxBytes?: number }): number {
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  const maxBytes = limits.maxBytes ?? Infinity;
  let size = 0;
  // Two stacks, not an object per value: the walk of a 100,000-key map allocated one per key.
  const stack: unknown[] = [value];
  const depths: number[] = [0];
  while (stack.length > 0) {
    const v = stack.pop();
    const depth = depths.pop()!;
    if (v !== null && typeof v === 'object') {
      if (depth + 1 > maxDepth) throw new JsonTooDeepError(maxDepth);
      if (Array.isArray(v)) {
        size += 2 + Math.max(0, v.length - 1);
        for (const item of v) {
          stack.push(item === undefined ? null : item);
          depths.push(depth + 1);
        }
      } else {
        const keys = Object.keys(v);
        size += 2 + Math.max(0, keys.length - 1);
        for (const k of keys) {
          const item = (v as Record<string, unknown>)[k];
          if (item === undefined || typeof item === 'function') continue;
          size += jsonStringLength(k) + 1;
          stack.push(item);
          depths.push(depth + 1);
        }
      }
    } else {
      size += scalarLength(v) ?? 0;
    }
    if (size > maxBytes) throw new JsonTooLargeError(maxBytes);
  }
  return size;
}

/**
 * JSON.stringify, with the failures a hostile value can cause (stack exhaustion on deep nesting, a string past
 * V8's length limit) turned into typed errors. Bounded values pay only the native call.
 * @throws JsonTooDeepError, JsonTooLargeError
 */
export function serializeJson(value: unknown, depthLimit = MAX_JSON_DEPTH): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    // Which limit was hit: a string past V8's maximum length, or nesting too deep for this stack.
    checkJsonValue(value, { maxDepth: depthLimit, maxBytes: MAX_STRING_LENGTH });
    throw new JsonTooDeepError(
      depthLimit,
      `nested too deeply to be serialized (the decoding limit is ${depthLimit} levels)`,
    );
  }
}

/** Whether `key` is an own property of `obj` (never one inherited from a prototype). */
export function hasOwn(obj: object, key: string): boolean {
  return Object.prototype.hasOwnProperty.call(obj, key);
}

/** The own property `key` of `obj`, or undefined: `obj["__proto__"]` must not return Object.prototype. */
export function getOwn(obj: Record<string, unknown>, key: string): unknown {
  return hasOwn(obj, key) ? obj[key] : undefined;
}

/**
 * Sets `key` as an own data property, so `__proto__` becomes a key instead of replacing the prototype. Only
 * `__proto__` needs defineProperty (an accessor of Object.prototype); on the plain objects JSON gives, assigning
 * any other key makes or replaces an own data property, and costs a fraction of defineProperty.
 */
export function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}
