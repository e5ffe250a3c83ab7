// YAML request bodies: one decode function, run on the event loop for small bodies and in a worker thread for
// large ones. Both paths run decodeYamlText, so the value, the Status text of a parse error and Go's strict error
// for repeated keys are the same whichever path a body takes.
//
// The parser is js-yaml (one recursive-descent pass straight to plain values, 0.1-0.3 s for the worst 3 MiB
// body; the `yaml` library used before built a CST and a document first and took 3-13 s, see docs/benchmarks.md).
// What kube-apiserver's decoder does and js-yaml does not is done in one listener over js-yaml's node events
// (YamlBodyWatcher), in the same pass and in linear time:
// - nesting: js-yaml recurses once per level, so the listener refuses a collection past MAX_YAML_DEPTH when its
//   first child opens (or when it closes, for an empty one), before anything deeper is read, with go-yaml's text;
// - repeated keys: each key that closes is added to its map's Set, and each one already there gives a line of
//   Go's strict error (js-yaml with `json: true` keeps the last value silently, as Go's non-strict decoder does);
// - a map or a sequence as a key: refused, as go-yaml refuses it (js-yaml would make a string of it);
// - aliases: their expanded size is counted and bounded as go-yaml bounds it ("excessive aliasing"), and an
//   alias to a collection that is still open (a cycle) is refused.
// The scalars are resolved by YAML_CORE_SCHEMA, the YAML 1.2 core schema as the `yaml` library resolved it.
import { FAILSAFE_SCHEMA, load, Type, YAMLException, type LoadOptions, type State } from 'js-yaml';
import { LARGE_MAP_KEYS } from '../common/json-safety.ts';

/**
 * The deepest nesting of collections (maps and sequences, flow or block) a YAML body may have; deeper is a 400
 * before anything deeper is parsed. kube-apiserver's YAML path (go-yaml under sigs.k8s.io/yaml) stops at 10,000
 * flow or indent levels, but js-yaml recurses about three frames per level on a 984 KB stack (the event loop's,
 * and the worker's, see YAML_WORKER_STACK_MB in http/decode-worker-pool.ts). 200 is far above what manifests use (a CRD's openAPIV3Schema
 * nests about 2 levels per schema level) and was the limit with the `yaml` library before, so no body changed
 * from accepted to refused.
 */
export const MAX_YAML_DEPTH = 200;

// ---------------------------------------------------------------------------------------------------------
// Scalars: the YAML 1.2 core schema, exactly as the `yaml` library (the decoder before js-yaml) resolved it.
// js-yaml's own CORE_SCHEMA differs at the edges (`0b101` is 5 there, `1e400` a string); these types keep
// what clients got before. An explicit core tag whose text does not match (`!!int x`, `!!float 1`) keeps the
// text, and any other tag (`!foo`, `!!binary`, `!!timestamp`, `!!set`) keeps the node as written: a string,
// a sequence or a map (the `yaml` library kept local tags the same way).

interface CoreScalar {
  tag: string;
  test: RegExp;
  resolve: (text: string) => unknown;
}

const CORE_SCALARS: CoreScalar[] = [
  { tag: 'null', test: /^(?:~|[Nn]ull|NULL)?$/, resolve: () => null },
  { tag: 'bool', test: /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/, resolve: (s) => s[0] === 't' || s[0] === 'T' },
  { tag: 'int', test: /^0o[0-7]+$/, resolve: (s) => parseInt(s.substring(2), 8) },
  { tag: 'int', test: /^[-+]?[0-9]+$/, resolve: (s) => parseInt(s, 10) },
  { tag: 'int', test: /^0x[0-9a-fA-F]+$/, resolve: (s) => parseInt(s.substring(2), 16) },
  {
    tag: 'float',
    test: /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
    resolve: (s) => (s.slice(-3).toLowerCase() === 'nan' ? NaN : s[0] === '-' ? -Infinity : Infinity),
  },
  { tag: 'float', test: /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/, resolve: (s) => parseFloat(s) },
  { tag: 'float', test: /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/, resolve: (s) => parseFloat(s) },
];

/**
 * The core form a plain scalar has, or undefined for a string. js-yaml asks each implicit type in turn (null,
 * bool, int, float) and then constructs with the one that matched, so the answer for the last text is kept; most
 * texts (names, words) are turned away by their first character without a regular expression.
 */
function coreForm(text: string): CoreScalar | undefined {
  if (text === lastText) return lastForm;
  lastText = text;
  const c = text.charCodeAt(0);
  // `~`, n/N, t/T, f/F, digits, `+`, `-`, `.`, or empty (NaN for charCodeAt): what a core form can start with.
  const possible =
    text.length === 0 ||
    c === 0x7e ||
    c === 0x6e ||
    c === 0x4e ||
    c === 0x74 ||
    c === 0x54 ||
    c === 0x66 ||
    c === 0x46 ||
    (c >= 0x30 && c <= 0x39) ||
    c === 0x2b ||
    c === 0x2d ||
    c === 0x2e;
  lastForm = possible ? CORE_SCALARS.find((f) => f.test.test(text)) : undefined;
  return lastForm;
}
let lastText: string | undefined;
let lastForm: CoreScalar | undefined;

/** The core scalars of one tag, as js-yaml types: the implicit one (plain scalars) and the explicit one. */
function coreTypes(tag: string): { implicit: Type; explicit: Type } {
  const scalars = CORE_SCALARS.filter((c) => c.tag === tag);
  const implicit = new Type(`tag:yaml.org,2002:${tag}`, {
    kind: 'scalar',
    resolve: (data: string | null) => data !== null && coreForm(data)?.tag === tag,
    construct: (data: string) => coreForm(data)!.resolve(data),
  });
  const explicit = new Type(`tag:yaml.org,2002:${tag}`, {
    kind: 'scalar',
    resolve: () => true,
    construct: (data: string | null) => {
      const text = data ?? '';
      const found = scalars.find((c) => c.test.test(text));
      return found ? found.resolve(text) : text;
    },
  });
  return { implicit, explicit };
}

const CORE = ['null', 'bool', 'int', 'float'].map(coreTypes);
/** Any other tag (a prefix of every tag, as a js-yaml multi type): the node as written. */
const keepAsWritten = (kind: 'scalar' | 'sequence' | 'mapping', empty: () => unknown) =>
  new Type('', { kind, multi: true, construct: (data: unknown) => data ?? empty() });

/** The schema of YAML request bodies: see CORE_SCALARS. */
export const YAML_CORE_SCHEMA = FAILSAFE_SCHEMA.extend({
  implicit: CORE.map((c) => c.implicit),
  explicit: [
    ...CORE.map((c) => c.explicit),
    keepAsWritten('scalar', () => ''),
    keepAsWritten('sequence', () => []),
    keepAsWritten('mapping', () => ({})),
  ],
});

// ---------------------------------------------------------------------------------------------------------
// The listener.

/** What the listener reads of js-yaml's parser state (its typings leave out `depth` and `anchor`). */
type ParserState = State & { depth: number; anchor: string | null };

/** A refusal found by the listener; thrown through js-yaml (which does not catch it) to decodeYamlText. */
class YamlRefusal extends Error {}

/** How a node with children holds them; known when its first child opens. */
const enum Style {
  /** no child yet */
  None,
  /** a block map's first implicit key is open: a map if a `:` follows it, else the node is that child */
  Uncertain,
  BlockMap,
  BlockSeq,
  FlowMap,
  FlowSeq,
  /** the first child was not a key: the node is that child (js-yaml tried a block map and kept the node) */
  Kept,
}

/** What an alias of a scalar (or of an empty node) counts: one node, no height. */
const SCALAR_ANCHOR = { nodes: 1, height: 0 } as const;

/** go-yaml's limit on aliases (yaml.v2 decode.go, allowedAliasRatio): the share of decoded nodes from aliases. */
function allowedAliasRatio(decoded: number): number {
  if (decoded <= 400_000) return 0.99;
  if (decoded >= 4_000_000) return 0.1;
  return 0.99 - 0.89 * ((decoded - 400_000) / 3_600_000);
}

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const HASH = 0x23;
const COLON = 0x3a;
const QUESTION = 0x3f;

const work = { steps: 0, keysRemembered: 0 };

/**
 * What the listener has done since the process started: one step per node event and per character its own
 * scans look at (a test compares it at two body sizes to prove the work linear; it has no other use).
 */
export function yamlDecodeSteps(): number {
  return work.steps;
}

/** How many map keys this thread's listeners have kept in a Set to find repeated ones (tests read it). */
export function yamlKeysRemembered(): number {
  return work.keysRemembered;
}

/**
 * Watches js-yaml's `open`/`close` events (composeNode: one per node, keys included; `state.depth` is the node's
 * depth, 1 for the document's root) and keeps, per depth, what the open node at that depth is. Every array is
 * indexed by depth and reused, so the work per event is constant apart from the short scans of the text between
 * a node's start and its content (properties, spaces, comments), each over text no other node scans.
 */
class YamlBodyWatcher {
  private readonly openPos: Int32Array;
  private readonly openLine: Int32Array;
  private readonly openLineStart: Int32Array;
  private readonly style: Uint8Array;
  /** Collections (counted nesting levels) among the node and its ancestors; [0] is 0. */
  private readonly levels: Int32Array;
  /** The node is a key known as one when it opened (an explicit `? ` key, an entry of a flow map). */
  private readonly knownKey: Uint8Array;
  /** A flow collection's next child is the value of the key before it. */
  private readonly expectValue: Uint8Array;
  /** Nodes decoded under each open node so far, aliases expanded (go-yaml's decodeCount). */
  private readonly nodes: Float64Array;
  /** The deepest nesting of collections among the children closed so far, aliases expanded (the value's). */
  private readonly height: Float64Array;
  /** Where each open node's own keys start in keyNames (the keys of its children's maps are gone by its close). */
  private readonly keyStart: Int32Array;
  /** The keys of the open maps, in the text's order: a stack, each map's own cut off when it closes. */
  private readonly keyNames: string[] = [];
  /** For each key in keyNames: where it opened (position, line, line start), to name its line if repeated. */
  private readonly keyPlaces: number[] = [];
  /** Each repeated key's line of Go's error, with where its node opened (maps report as they close). */
  private readonly repeated: Array<{ pos: number; line: string }> = [];
  /** A value JSON gives back exactly with no alias (no NaN, no infinity, no -0, no object from a tag). */
  private inexact = false;
  /** Keys met so far in each open map (repeated ones included). */
  private readonly keyCount: Int32Array;
  /** A map of LARGE_MAP_KEYS keys or more closed, anywhere in the value. */
  private largeMapSeen = false;
  /** The top-level map's keys, as they came (without `repeats`) or its Object.keys (with): rootKeys. */
  private rootTextKeys: string[] | undefined;
  private rootOwnKeys: string[] | undefined;
  /**
   * The anchors of collections: their value (to tell a closed one from one still open) and its size. An anchor of
   * a scalar or an empty node is not kept (it counts 1 node of height 0): a body of 190,000 scalar anchors spent
   * a tenth of its decode keeping them.
   */
  private anchors = new Map<string, { value: unknown; nodes: number; height: number }>();
  private documents = 0;
  private decoded = 0;
  private aliased = 0;
  private lastRepeated: string | undefined;
  private lastRepeatedText = '';

  /**
   * `limit`: the text's nesting; `valueLimit`: the value's (deeper than the text through aliases). Positions are
   * in state.input, js-yaml's copy of the text (BOM stripped, a line break and a NUL appended).
   */
  constructor(
    private readonly limit: number,
    private readonly valueLimit: number,
    /** Whether repeated keys are looked for (each key kept in its map's Set); field validation Ignore does not. */
    private readonly repeats = true,
  ) {
    // js-yaml's maxDepth (see parseYamlBody) bounds the depth of its events.
    const n = limit + 16;
    this.openPos = new Int32Array(n);
    this.openLine = new Int32Array(n);
    this.openLineStart = new Int32Array(n);
    this.style = new Uint8Array(n);
    this.levels = new Int32Array(n);
    this.knownKey = new Uint8Array(n);
    this.expectValue = new Uint8Array(n);
    this.nodes = new Float64Array(n);
    this.height = new Float64Array(n);
    this.keyStart = new Int32Array(n);
    this.keyCount = new Int32Array(n);
  }

  /** Whether the value has a large map (as sendsAsJson looks for one): known from the parse, no walk of it. */
  largeMap(): boolean {
    return this.largeMapSeen;
  }

  /** The top-level map's keys, when it is a map with keys: known from the parse, no enumeration of the value. */
  rootKeys(): RootKeys | undefined {
    if (this.rootOwnKeys) return { keys: this.rootOwnKeys, exact: true };
    return this.rootTextKeys && { keys: this.rootTextKeys, exact: false };
  }

  /** The lines of Go's strict error for the repeated keys, in the text's order. */
  duplicates(): string[] {
    // A map reports its repeated keys as it closes, after those of the maps inside it.
    return this.repeated.sort((a, b) => a.pos - b.pos).map((r) => r.line);
  }

  /**
   * Whether JSON.parse(JSON.stringify(value)) is the value, exactly, as the text decodes without an alias: no
   * number JSON cannot write (NaN, an infinity, -0) and no object a tag made. An alias (which may repeat a long
   * scalar past any bound of the text) leaves the answer to isJsonExact's walk.
   */
  jsonPlain(): boolean {
    return this.aliased === 0 && !this.inexact;
  }

  readonly listener = (event: 'open' | 'close', state: State): void => {
    work.steps++;
    const s = state as ParserState;
    if (event === 'open') this.open(s.depth, s);
    else this.close(s.depth, s);
  };

  private open(e: number, state: ParserState): void {
    if (e === 1) {
      if (++this.documents > 1)
        this.refuse(`expected a single document in the stream, but found more`, state.position, state);
      this.anchors = new Map();
    }
    this.openPos[e] = state.position;
    this.openLine[e] = state.line;
    this.openLineStart[e] = state.lineStart;
    this.style[e] = Style.None;
    this.knownKey[e] = 0;
    this.nodes[e] = 0;
    this.height[e] = 0;
    this.keyStart[e] = this.keyNames.length;
    this.keyCount[e] = 0;
    if (e === 1) return;
    const j = e - 1;
    const input = state.input;
    if (this.style[j] === Style.None) this.classify(j, state.position, input);
    if (this.levels[j] > this.limit) this.tooDeep(j, input);
    const style = this.style[j];
    if (style === Style.FlowMap) this.knownKey[e] = this.expectValue[j] ^ 1;
    else if (style === Style.BlockMap && input.charCodeAt(state.position - 1) === QUESTION) this.knownKey[e] = 1;
  }

  /** What node j is, now that its first child opens at `p`. */
  private classify(j: number, p: number, input: string): void {
    const start = this.contentStart(this.openPos[j], input);
    let style: Style;
    if (p <= start) style = Style.Uncertain;
    else {
      const ch = input.charCodeAt(start);
      style = ch === 0x5b ? Style.FlowSeq : ch === 0x7b ? Style.FlowMap : ch === 0x2d ? Style.BlockSeq : Style.BlockMap; // `? ` (an explicit key first)
    }
    this.style[j] = style;
    this.expectValue[j] = 0;
    this.levels[j] = this.levels[j - 1] + (style === Style.Uncertain ? 0 : 1);
  }

  private close(e: number, state: ParserState): void {
    const input = state.input;
    const kind = state.kind as string | null;
    const result: unknown = state.result;
    const own = this.style[e];
    if (this.keyNames.length > this.keyStart[e]) this.closeKeys(e, kind, result, input);
    if (kind === 'mapping' && this.keyCount[e] >= LARGE_MAP_KEYS) this.largeMapSeen = true;
    if (typeof result === 'number') {
      if (!Number.isFinite(result) || Object.is(result, -0)) this.inexact = true;
    } else if (typeof result === 'object' && result !== null && kind !== 'mapping' && kind !== 'sequence') {
      this.inexact = true;
    }
    let nodes = 1 + this.nodes[e];
    let height = this.height[e];
    if (kind === 'mapping' || kind === 'sequence') {
      if (own === Style.None && this.levels[e - 1] + 1 > this.limit) {
        // An empty collection: its level was never looked at by a child.
        this.levels[e] = this.levels[e - 1] + 1;
        this.tooDeep(e, input);
      }
      // A node that kept its only child is that child, not one more level.
      if (own !== Style.Kept) height++;
    } else if (kind === null && own === Style.None) {
      // No content of its own: an empty node or an alias. An empty node stops where its skipping did (at the
      // next node's text); an alias reads past its name.
      const start = this.contentStart(this.openPos[e], input);
      if (input.charCodeAt(start) === 0x2a && start < state.position) {
        const anchor = this.alias(e, start, result, input);
        nodes = 1 + anchor.nodes;
        height = anchor.height;
      }
    }
    if (height > this.valueLimit) throw new YamlRefusal(`exceeded max depth of ${this.valueLimit}`);
    this.decoded += nodes - this.nodes[e];
    // An alias that js-yaml resolves to a scalar is counted without a look here (see alias).
    if (state.anchor !== null && result !== null && typeof result === 'object')
      this.anchors.set(state.anchor, { value: result, nodes, height });
    if (e === 1) return;
    const j = e - 1;
    this.nodes[j] += nodes;
    if (height > this.height[j]) this.height[j] = height;
    const style = this.style[j];
    let isKey: boolean;
    if (style === Style.BlockMap) {
      isKey = this.knownKey[e] === 1 || this.implicitKey(e, state);
    } else if (style === Style.FlowMap) {
      isKey = this.knownKey[e] === 1;
      this.expectValue[j] = isKey && this.nextInFlow(state.position, input) === COLON ? 1 : 0;
    } else if (style === Style.Uncertain) {
      isKey = this.implicitKey(e, state);
      this.style[j] = isKey ? Style.BlockMap : Style.Kept;
      if (isKey) this.levels[j]++;
    } else if (style === Style.FlowSeq) {
      if (this.expectValue[j] === 1) {
        this.expectValue[j] = 0;
        return;
      }
      // `[k: v]`: a map of one pair in a sequence; its key is checked as a key, no Set needed.
      isKey = this.nextInFlow(state.position, input) === COLON;
      this.expectValue[j] = isKey ? 1 : 0;
    } else return;
    if (!isKey) return;
    if (result !== null && typeof result === 'object') this.complexKey(e, input, state);
    if (style === Style.FlowSeq) return;
    this.keyCount[j]++;
    if (!this.repeats) {
      // The top-level map's keys as they come (the repeated ones again), for the worker's prune.
      if (j === 1) (this.rootTextKeys ??= []).push(String(result));
      return;
    }
    // Kept in the map's list, looked at when the map closes (closeKeys).
    this.keyNames.push(String(result));
    this.keyPlaces.push(this.openPos[e], this.openLine[e], this.openLineStart[e]);
    work.keysRemembered++;
  }

  /**
   * Node e closes with keys of its own (it is a map): a map with as many own properties as keys repeats none
   * (js-yaml stores each key under String(key) in it, the name kept here), so a Set is built only for a map
   * that does repeat one, where each key met again gives a line of Go's error. A Set per map, filled as keys
   * came, cost as much again as js-yaml's own storing of them. Either way the map's keys are then dropped.
   */
  private closeKeys(e: number, kind: string | null, result: unknown, input: string): void {
    const names = this.keyNames;
    const from = this.keyStart[e];
    const count = names.length - from;
    const distinct = kind === 'mapping' && result !== null && typeof result === 'object' && !Array.isArray(result);
    const own = distinct ? Object.keys(result) : undefined;
    // The top-level map's keys, kept: the worker's prune enumerates it no more.
    if (e === 1 && own) this.rootOwnKeys = own;
    if (own?.length !== count) {
      const seen = new Set<string>();
      const places = this.keyPlaces;
      for (let i = from; i < names.length; i++) {
        const name = names[i];
        if (!seen.has(name)) {
          seen.add(name);
          continue;
        }
        const pos = places[3 * i];
        const start = this.contentStart(pos, input);
        const line =
          start === pos
            ? places[3 * i + 1] + 1
            : this.locateFrom(pos, places[3 * i + 1], places[3 * i + 2], start, input).line;
        // One key repeated throughout a body is the common case: its quoted form is made once.
        if (name !== this.lastRepeated) {
          this.lastRepeated = name;
          this.lastRepeatedText = ` key ${JSON.stringify(name)} already set in map`;
        }
        this.repeated.push({ pos, line: `line ${line}:${this.lastRepeatedText}` });
      }
    }
    names.length = from;
    this.keyPlaces.length = 3 * from;
  }

  /** An alias node closes: its expansion counted (go-yaml's rule), a cycle refused. Returns its anchor. */
  private alias(e: number, start: number, result: unknown, input: string): { nodes: number; height: number } {
    let end = start + 1;
    for (
      let c = input.charCodeAt(end);
      !isSpaceOrBreak(c) && !isFlowIndicator(c) && c !== 0;
      c = input.charCodeAt(++end)
    );
    work.steps += end - start;
    const name = input.slice(start + 1, end);
    // js-yaml resolved the alias (it refuses an unknown name): a scalar's anchor, or a collection's.
    if (result === null || typeof result !== 'object') {
      this.countAlias(e, start, input, SCALAR_ANCHOR.nodes);
      return SCALAR_ANCHOR;
    }
    const anchor = this.anchors.get(name);
    if (!anchor || !Object.is(anchor.value, result)) {
      // js-yaml resolved it to a collection that has not closed yet: the value would contain itself.
      const { line, col } = this.locate(e, start, input);
      throw new YamlRefusal(`anchor "${name}" value contains itself at line ${line}, column ${col}`);
    }
    this.countAlias(e, start, input, anchor.nodes);
    return anchor;
  }

  /** Counts an alias's expansion against go-yaml's ratio. */
  private countAlias(e: number, start: number, input: string, nodes: number): void {
    this.aliased += nodes;
    const decoded = this.decoded + 1 + nodes;
    if (this.aliased > 100 && decoded > 1000 && this.aliased / decoded > allowedAliasRatio(decoded)) {
      const { line, col } = this.locate(e, start, input);
      throw new YamlRefusal(`document contains excessive aliasing at line ${line}, column ${col}`);
    }
  }

  /**
   * A map or a sequence as a key (node e): refused, as go-yaml does (`invalid map key`). Reported at the
   * outermost key that contains it and was known as a key when it opened, so `? ? ? v` names its first key.
   */
  private complexKey(e: number, input: string, state: State): never {
    let k = e;
    for (let i = 2; i < e; i++) {
      if (this.knownKey[i]) {
        k = i;
        break;
      }
    }
    const start = this.contentStart(this.openPos[k], input);
    let what: string;
    if (k === e) what = Array.isArray(state.result) ? 'sequence' : 'map';
    else {
      const ch = input.charCodeAt(start);
      what = ch === 0x5b || ch === 0x2d ? 'sequence' : 'map';
    }
    const { line, col } = this.locate(k, start, input);
    throw new YamlRefusal(`invalid map key: a ${what} at line ${line}, column ${col}`);
  }

  /** Node j is a collection past the limit: go-yaml's text, where j's content starts. */
  private tooDeep(j: number, input: string): never {
    const start = this.contentStart(this.openPos[j], input);
    const ch = input.charCodeAt(start);
    const level = ch === 0x5b || ch === 0x7b ? 'flow' : 'indent';
    const { line, col } = this.locate(j, start, input);
    throw new YamlRefusal(
      `while increasing ${level} level at line ${line}, column ${col}: exceeded max depth of ${this.limit}`,
    );
  }

  private refuse(message: string, position: number, state: State): never {
    throw new YamlRefusal(`${message} at line ${state.line + 1}, column ${position - state.lineStart + 1}`);
  }

  /** Where a node's content starts: past spaces, line breaks, comments and its properties (`!tag`, `&anchor`). */
  private contentStart(p: number, input: string): number {
    const from = p;
    for (;;) {
      const c = input.charCodeAt(p);
      if (c === SPACE || c === TAB || c === LF || c === CR) p++;
      else if (c === HASH) {
        for (
          let d = input.charCodeAt(++p);
          d !== LF && d !== CR && d !== 0 && p < input.length;
          d = input.charCodeAt(++p)
        );
      } else if (c === 0x21) {
        // A tag: `!<verbatim>` to its `>`, any other to the next space.
        if (input.charCodeAt(p + 1) === 0x3c) {
          const end = input.indexOf('>', p);
          p = end < 0 ? input.length : end + 1;
        } else {
          for (
            let d = input.charCodeAt(++p);
            !isSpaceOrBreak(d) && d !== 0 && p < input.length;
            d = input.charCodeAt(++p)
          );
        }
      } else if (c === 0x26) {
        for (
          let d = input.charCodeAt(++p);
          !isSpaceOrBreak(d) && !isFlowIndicator(d) && d !== 0 && p < input.length;
          d = input.charCodeAt(++p)
        );
      } else break;
    }
    work.steps += p - from;
    return p;
  }

  /**
   * Node e, in a block map, is an implicit key: it ends on the line it started on and a `:` follows on that line
   * (js-yaml's own test). A collection that closes stands at the next line's text, which may be a `:x` key.
   */
  private implicitKey(e: number, state: ParserState): boolean {
    return state.line === this.openLine[e] && this.nextOnLine(state.position, state.input) === COLON;
  }

  /** The next character on this line past spaces and tabs. */
  private nextOnLine(p: number, input: string): number {
    let c = input.charCodeAt(p);
    while (c === SPACE || c === TAB) c = input.charCodeAt(++p);
    return c;
  }

  /** The next character past spaces, line breaks and comments (inside a flow collection). */
  private nextInFlow(p: number, input: string): number {
    const from = p;
    let c = input.charCodeAt(p);
    for (;;) {
      if (c === SPACE || c === TAB || c === LF || c === CR) c = input.charCodeAt(++p);
      else if (c === HASH) {
        while (c !== LF && c !== CR && p < input.length) c = input.charCodeAt(++p);
      } else break;
    }
    work.steps += p - from;
    return c;
  }

  /** Line and column (1-based) of position p, counted from where node e opened (p is at or past it). */
  private locate(e: number, p: number, input: string): { line: number; col: number } {
    return this.locateFrom(this.openPos[e], this.openLine[e], this.openLineStart[e], p, input);
  }

  /** Line and column (1-based) of position p, counted from `from`, on (0-based) `line` starting at `lineStart`. */
  private locateFrom(
    from: number,
    line: number,
    lineStart: number,
    p: number,
    input: string,
  ): { line: number; col: number } {
    for (let i = from; i < p; i++) {
      const c = input.charCodeAt(i);
      if (c === LF || (c === CR && input.charCodeAt(i + 1) !== LF)) {
        line++;
        lineStart = i + 1;
      }
    }
    work.steps += p - from;
    return { line: line + 1, col: p - lineStart + 1 };
  }
}

function isSpaceOrBreak(c: number): boolean {
  return c === SPACE || c === TAB || c === LF || c === CR;
}

function isFlowIndicator(c: number): boolean {
  return c === 0x2c || c === 0x5b || c === 0x5d || c === 0x7b || c === 0x7d;
}

/**
 * The keys of a body's top-level map as the parse learnt them: `exact`, its Object.keys (when repeated keys are
 * looked for, each map's keys are compared with them anyway); else every key in the text's order, repeated ones
 * again and index keys where they stand, a list that copies the map's fields but does not name them as
 * Object.keys would (field validation Ignore names none). A 300,000-key map's Object.keys took 75-105 ms here.
 */
export interface RootKeys {
  keys: readonly string[];
  exact: boolean;
}

/** A YAML body parsed: its value and Go's strict error for its repeated keys, or the first error as one line. */
export type YamlParsed =
  | {
      value: unknown;
      duplicateError: string | undefined;
      /** JSON gives the value back exactly and no alias made it longer than the text allows (jsonPlain). */
      jsonPlain: boolean;
      /** It has a large map, as sendsAsJson looks for one. */
      largeMap: boolean;
      rootKeys: RootKeys | undefined;
    }
  | { error: string };

/**
 * Parses a YAML body (one document, YAML_CORE_SCHEMA) and finds its repeated keys in the text of Go's strict YAML
 * decoder (`line 4: key "name" already set in map`, joined as its single error, in the text's order), in one pass
 * linear in the body: js-yaml keeps the last value of a repeated key (`json: true`), the listener puts every key
 * of every map in that map's Set. (A strict first pass that would stop at the first repeated key was measured
 * slower for the worst bodies: a key repeated at the end is parsed twice, and js-yaml's error snippet indexes
 * every line of the text.) Nesting past `depthLimit` is refused before anything deeper is read (see
 * MAX_YAML_DEPTH), and a value nested deeper than `valueDepthLimit` through aliases is refused too.
 */
export function parseYamlBody(
  text: string,
  depthLimit = MAX_YAML_DEPTH,
  valueDepthLimit = depthLimit,
  repeats = true,
): YamlParsed {
  const watcher = new YamlBodyWatcher(depthLimit, valueDepthLimit, repeats);
  let value: unknown;
  try {
    value = load(text, {
      schema: YAML_CORE_SCHEMA,
      json: true,
      listener: watcher.listener,
      // js-yaml's own bound (composeNode calls, a few more than collections): only a backstop for the listener's.
      maxDepth: depthLimit + 8,
    } as LoadOptions);
  } catch (err) {
    if (err instanceof YamlRefusal) return { error: err.message };
    if (err instanceof YAMLException) {
      const { reason, mark } = err as YAMLException & { mark?: { line: number; column: number } };
      return { error: mark ? `${reason} at line ${mark.line + 1}, column ${mark.column + 1}` : reason };
    }
    throw err;
  }
  const duplicates = watcher.duplicates();
  const duplicateError = duplicates.length ? `yaml: unmarshal errors:\n  ${duplicates.join('\n  ')}` : undefined;
  // An empty body (no document) is null, as an empty document is.
  return {
    value: value === undefined ? null : value,
    duplicateError,
    jsonPlain: watcher.jsonPlain(),
    largeMap: watcher.largeMap(),
    rootKeys: watcher.rootKeys(),
  };
}

/** Go's strict YAML error for the repeated keys of a YAML text; undefined when there are none. */
export function yamlDuplicateError(text: string): string | undefined {
  const parsed = parseYamlBody(text);
  return 'error' in parsed ? undefined : parsed.duplicateError;
}

/** What decoding a YAML body gives: its value and repeated-key error, or the message of its 400 answer. */
export type YamlDecoded =
  { ok: true; value: unknown; duplicateError: string | undefined } | { ok: false; message: string };

/**
 * Decodes a YAML request body as kube-apiserver answers it: the value (the last of repeated keys), Go's strict
 * error for the repeated keys, or the message of the 400 (`couldn't get version/kind; yaml parse error: ...`)
 * for a parse error, a refusal of the listener, or nesting over MAX_YAML_DEPTH or `depthLimit` in the text, or over
 * `depthLimit` in the value (aliases can make it deeper than the text). Runs on either thread.
 */
export function decodeYamlText(text: string, depthLimit: number, repeats = true): YamlDecoded {
  return decodeYamlTextForWire(text, depthLimit, repeats).decoded;
}

/**
 * decodeYamlText, with whether the value is jsonPlain and has a large map (then the worker sends it
 * as JSON without walking it), and its top-level keys (the worker prunes with them).
 * @internal for the worker
 */
export function decodeYamlTextForWire(
  text: string,
  depthLimit: number,
  repeats = true,
): { decoded: YamlDecoded; jsonPlain: boolean; largeMap: boolean; rootKeys?: RootKeys } {
  // The value's depth (aliases included) was measured while parsing, so the value is not walked again.
  const parsed = parseYamlBody(text, Math.min(depthLimit, MAX_YAML_DEPTH), depthLimit, repeats);
  if ('error' in parsed) {
    const message = `couldn't get version/kind; yaml parse error: ${parsed.error.split('\n')[0]}`;
    return { decoded: { ok: false, message }, jsonPlain: false, largeMap: false };
  }
  return {
    decoded: { ok: true, value: parsed.value, duplicateError: parsed.duplicateError },
    jsonPlain: parsed.jsonPlain,
    largeMap: parsed.largeMap,
    rootKeys: parsed.rootKeys,
  };
}

/**
 * A decoded YAML body as the worker sends it back: a value with a large map that JSON gives back exactly
 * (sendsAsJson) comes as its JSON text, so the event loop can parse it in slices with turns
 * between (parseLargeJsonText) where the structured clone of a 300,000-key map is rebuilt in one native step.
 */
export type YamlWire = YamlDecoded | { ok: true; json: string; duplicateError: string | undefined };

/**
 * Whether JSON.parse(JSON.stringify(value)) is `value` again, exactly: plain objects and arrays, strings,
 * booleans, null and finite numbers other than -0 (not a Buffer of a YAML 1.1 binary, NaN, Infinity); and, when
 * `maxChars` is given, whether its strings and keys hold at most that many characters, a lower bound of its
 * JSON's length. The walk stops there: aliases to one long scalar are legal YAML (go-yaml's alias ratio counts
 * an alias as one node, whatever it names), and their JSON could be longer than V8's longest string.
 */
export function isJsonExact(value: unknown, maxChars = Infinity): boolean {
  return walkForWire(value, maxChars) !== 'no';
}

/**
 * Whether the worker sends a value as JSON text: it has a large map (LARGE_MAP_KEYS keys) anywhere, which
 * parseLargeJsonText parses in slices where a structured clone rebuilds it in one step (only then is its JSON
 * worth more to the loop than a clone: a list of 300,000 strings is cloned in a third of the time JSON.parse
 * takes), and it is
 * isJsonExact within `maxChars`. One walk for both: each was a pass over the 300,000 keys of the largest body.
 */
export function sendsAsJson(value: unknown, maxChars: number): boolean {
  return walkForWire(value, maxChars) === 'large';
}

/** isJsonExact's walk: 'no' if not exact (or past maxChars), else whether it has a large map. */
function walkForWire(value: unknown, maxChars: number): 'no' | 'exact' | 'large' {
  const stack: unknown[] = [value];
  let chars = 0;
  let large = false;
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      chars += v.length;
      if (chars > maxChars) return 'no';
      continue;
    }
    if (v === null || typeof v === 'boolean') continue;
    if (typeof v === 'number') {
      if (!Number.isFinite(v) || Object.is(v, -0)) return 'no';
      continue;
    }
    if (typeof v !== 'object') return 'no';
    const proto = Object.getPrototypeOf(v) as unknown;
    if (Array.isArray(v)) {
      if (proto !== Array.prototype) return 'no';
      // A hole reads as undefined, which JSON writes as null.
      for (let i = 0; i < v.length; i++) stack.push(v[i]);
      continue;
    }
    if (proto !== Object.prototype) return 'no';
    // Own keys (`__proto__` included); a key's own value shadows what the prototype has.
    const keys = Object.keys(v);
    if (keys.length >= LARGE_MAP_KEYS) large = true;
    for (const k of keys) {
      chars += k.length;
      stack.push((v as Record<string, unknown>)[k]);
    }
    if (chars > maxChars) return 'no';
  }
  return large ? 'large' : 'exact';
}

const counts = { inThread: 0, offThread: 0, protobufOffThread: 0, jsonOffThread: 0 };

/**
 * How many YAML bodies were decoded on the event loop and in the worker thread, and protobuf bodies in the worker
 * thread (tests and benchmarks read it; the worker pool, http/decode-worker-pool.ts, counts its own).
 */
export function yamlDecodeCounts(): {
  inThread: number;
  offThread: number;
  protobufOffThread: number;
  jsonOffThread: number;
} {
  return { ...counts };
}

/** Counts one body decoded where `where` says (yamlDecodeCounts). */
export function countDecoded(where: keyof typeof counts): void {
  counts[where]++;
}
