// Label and field selectors, parsed the way k8s.io/apimachinery does (labels.Parse, fields.ParseSelector,
// metav1.LabelSelectorAsSelector) and compiled to predicates. Parse errors are SelectorError with kube's
// messages; the API server turns them into 400 BadRequest.

import type { KubeObject, LabelSelector } from '../../types/k8s.ts';
import { isQualifiedName, isValidLabelValue } from './identifier-validation.ts';

/** A selector string or object that does not parse/validate. Becomes 400 BadRequest. */
export class SelectorError extends Error {
  override name = 'SelectorError';
}

export type LabelPredicate = (labels: Record<string, string> | undefined) => boolean;
export type FieldPredicate = (getField: (path: string) => string | undefined) => boolean;

type Operator = 'in' | 'notin' | '=' | '==' | '!=' | 'exists' | '!' | 'gt' | 'lt';

interface Requirement {
  key: string;
  op: Operator;
  values: string[];
}

// ---------------------------------------------------------------------------------------------- lexer

type Tok = 'ident' | 'in' | 'notin' | '(' | ')' | ',' | '!' | '=' | '==' | '!=' | '>' | '<' | 'end';

const SYMBOLS = new Set(['!', '!=', '(', ')', ',', '=', '==', '>', '<']);
const isSpecial = (c: string) => '=!(),><'.includes(c);
const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';

interface Token {
  tok: Tok;
  lit: string;
}

function lex(s: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (isSpace(c)) {
      i++;
    } else if (isSpecial(c)) {
      // Longest run of special characters that is still a known symbol ("!=", "=="), as the Go lexer does.
      let buf = c;
      i++;
      while (i < s.length && isSpecial(s[i]) && SYMBOLS.has(buf + s[i])) buf += s[i++];
      out.push({ tok: buf as Tok, lit: buf });
    } else {
      let buf = '';
      while (i < s.length && !isSpace(s[i]) && !isSpecial(s[i])) buf += s[i++];
      out.push({ tok: buf === 'in' ? 'in' : buf === 'notin' ? 'notin' : 'ident', lit: buf });
    }
  }
  out.push({ tok: 'end', lit: '' });
  return out;
}

// --------------------------------------------------------------------------------------------- parser

const BINARY_OPERATORS = 'in, notin, =, ==, !=, gt, lt';

/** Recursive-descent parser mirroring labels.Parser; "Values" mode turns `in`/`notin` into identifiers. */
class LabelParser {
  private pos = 0;
  constructor(private readonly toks: Token[]) {}

  private peek(values = true): Token {
    const t = this.toks[this.pos];
    return values && (t.tok === 'in' || t.tok === 'notin') ? { tok: 'ident', lit: t.lit } : t;
  }

  private next(values = true): Token {
    const t = this.peek(values);
    if (this.pos < this.toks.length - 1) this.pos++;
    return t;
  }

  parse(): Requirement[] {
    const reqs: Requirement[] = [];
    for (;;) {
      const { tok, lit } = this.peek();
      if (tok === 'end') return reqs;
      if (tok !== 'ident' && tok !== '!')
        throw new SelectorError(`found '${lit}', expected: !, identifier, or 'end of string'`);
      try {
        reqs.push(this.parseRequirement());
      } catch (e) {
        if (e instanceof SelectorError) throw new SelectorError(`unable to parse requirement: ${e.message}`);
        throw e;
      }
      const t = this.next();
      if (t.tok === 'end') return reqs;
      if (t.tok !== ',') throw new SelectorError(`found '${t.lit}', expected: ',' or 'end of string'`);
      const t2 = this.peek();
      if (t2.tok !== 'ident' && t2.tok !== '!')
        throw new SelectorError(`found '${t2.lit}', expected: identifier after ','`);
    }
  }

  private parseRequirement(): Requirement {
    let op: Operator | undefined;
    let t = this.next();
    if (t.tok === '!') {
      op = '!';
      t = this.next();
    }
    if (t.tok !== 'ident') throw new SelectorError(`found '${t.lit}', expected: identifier`);
    const key = t.lit;
    const keyErrs = isQualifiedName(key);
    if (keyErrs.length > 0) throw new SelectorError(fieldInvalid('<nil>', key, keyErrs.join('; ')));
    const after = this.peek().tok;
    if (op === '!' || after === 'end' || after === ',') return newRequirement(key, op ?? 'exists', []);

    const o = this.next(false);
    switch (o.tok) {
      case 'in':
      case 'notin':
        return newRequirement(key, o.tok, this.parseValues());
      case '=':
      case '==':
      case '!=':
        return newRequirement(key, o.tok, this.parseExactValue());
      case '>':
        return newRequirement(key, 'gt', this.parseExactValue());
      case '<':
        return newRequirement(key, 'lt', this.parseExactValue());
      default:
        throw new SelectorError(`found '${o.lit}', expected: ${BINARY_OPERATORS}`);
    }
  }

  private parseValues(): string[] {
    const open = this.next();
    if (open.tok !== '(') throw new SelectorError(`found '${open.lit}' expected: '('`);
    const la = this.peek();
    if (la.tok === ')') {
      this.next();
      return [''];
    }
    if (la.tok !== 'ident' && la.tok !== ',')
      throw new SelectorError(`found '${la.lit}', expected: ',', ')' or identifier`);
    const set = this.parseIdentifiersList();
    if (this.next().tok !== ')') throw new SelectorError(`found '${la.lit}', expected: ')'`);
    return [...set].sort();
  }

  private parseIdentifiersList(): Set<string> {
    const set = new Set<string>();
    for (;;) {
      const t = this.next();
      if (t.tok === 'ident') {
        set.add(t.lit);
        const t2 = this.peek();
        if (t2.tok === ',') continue;
        if (t2.tok === ')') return set;
        throw new SelectorError(`found '${t2.lit}', expected: ',' or ')'`);
      } else if (t.tok === ',') {
        if (set.size === 0) set.add(''); // "(,"
        const t2 = this.peek();
        if (t2.tok === ')') {
          set.add(''); // ",)"
          return set;
        }
        if (t2.tok === ',') {
          this.next();
          set.add(''); // ",,"
        }
      } else {
        throw new SelectorError(`found '${t.lit}', expected: ',', or identifier`);
      }
    }
  }

  private parseExactValue(): string[] {
    const la = this.peek();
    if (la.tok === 'end' || la.tok === ',') return [''];
    const t = this.next();
    if (t.tok === 'ident') return [t.lit];
    throw new SelectorError(`found '${t.lit}', expected: identifier`);
  }
}

/** field.Error text: `<field>: Invalid value: "<v>": <detail>`. */
function fieldInvalid(path: string, value: string | string[], detail: string): string {
  const shown =
    typeof value === 'string' ? JSON.stringify(value) : `[]string{${value.map((v) => JSON.stringify(v)).join(', ')}}`;
  return `${path}: Invalid value: ${shown}: ${detail}`;
}

/** labels.NewRequirement: validates key, operator arity and values; aggregates errors like field.ErrorList. */
function newRequirement(key: string, op: Operator, values: string[]): Requirement {
  const errs: string[] = [];
  const keyErrs = isQualifiedName(key);
  if (keyErrs.length > 0) errs.push(fieldInvalid('key', key, keyErrs.join('; ')));
  if ((op === 'in' || op === 'notin') && values.length === 0) {
    errs.push(fieldInvalid('values', values, "for 'in', 'notin' operators, values set can't be empty"));
  } else if ((op === '=' || op === '==' || op === '!=') && values.length !== 1) {
    errs.push(fieldInvalid('values', values, 'exact-match compatibility requires one single value'));
  } else if ((op === 'exists' || op === '!') && values.length !== 0) {
    errs.push(fieldInvalid('values', values, 'values set must be empty for exists and does not exist'));
  } else if (op === 'gt' || op === 'lt') {
    if (values.length !== 1)
      errs.push(fieldInvalid('values', values, "for 'Gt', 'Lt' operators, exactly one value is required"));
    values.forEach((v, i) => {
      if (parseInt64(v) === undefined)
        errs.push(fieldInvalid(`values[${i}]`, v, "for 'Gt', 'Lt' operators, the value must be an integer"));
    });
  }
  values.forEach((v, i) => {
    const valErrs = isValidLabelValue(v);
    if (valErrs.length > 0) errs.push(fieldInvalid(`values[${i}][${key}]`, v, valErrs.join('; ')));
  });
  if (errs.length === 1) throw new SelectorError(errs[0]);
  if (errs.length > 1) throw new SelectorError(`[${[...new Set(errs)].join(', ')}]`);
  return { key, op, values };
}

const INT64_RE = /^[+-]?\d+$/;
const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/** strconv.ParseInt(s, 10, 64), or undefined. */
function parseInt64(s: string): bigint | undefined {
  if (!INT64_RE.test(s)) return undefined;
  const n = BigInt(s);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n;
}

function matches(r: Requirement, labels: Record<string, string> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels[r.key] : undefined;
  switch (r.op) {
    case 'in':
    case '=':
    case '==':
      return has && r.values.includes(value as string);
    case 'notin':
    case '!=':
      return !has || !r.values.includes(value as string);
    case 'exists':
      return has;
    case '!':
      return !has;
    case 'gt':
    case 'lt': {
      if (!has) return false;
      const lv = parseInt64(value as string);
      const rv = parseInt64(r.values[0]);
      if (lv === undefined || rv === undefined) return false;
      return r.op === 'gt' ? lv > rv : lv < rv;
    }
  }
}

function toPredicate(reqs: Requirement[]): LabelPredicate {
  if (reqs.length === 0) return () => true;
  return (labels) => reqs.every((r) => matches(r, labels));
}

/**
 * Parses a label selector string with labels.Parse semantics: `k=v`, `k==v`, `k!=v` (also matches a missing
 * key), `k in (a,b)`, `k notin (a)` (matches a missing key), `k`, `!k`, `k>N`, `k<N`; comma is AND; "" matches all.
 * @throws SelectorError with kube's message.
 */
export function parseLabelSelector(s: string): LabelPredicate {
  return toPredicate(new LabelParser(lex(s)).parse());
}

/**
 * metav1.LabelSelectorAsSelector as a predicate. An empty selector matches everything. An undefined selector also
 * matches everything here (kube's helper returns Nothing for nil, but every caller we serve, such as a PVC's
 * spec.selector, treats an absent selector as "no constraint").
 * @throws SelectorError for an invalid operator, key or value.
 */
export function labelSelectorToPredicate(sel: LabelSelector | undefined): LabelPredicate {
  if (sel === undefined || sel === null) return () => true;
  const reqs: Requirement[] = [];
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) reqs.push(newRequirement(k, '=', [v]));
  for (const expr of sel.matchExpressions ?? []) {
    const values = expr.values ?? [];
    switch (expr.operator) {
      case 'In':
        reqs.push(newRequirement(expr.key, 'in', values));
        break;
      case 'NotIn':
        reqs.push(newRequirement(expr.key, 'notin', values));
        break;
      case 'Exists':
        reqs.push(newRequirement(expr.key, 'exists', values));
        break;
      case 'DoesNotExist':
        reqs.push(newRequirement(expr.key, '!', values));
        break;
      default:
        throw new SelectorError(`${JSON.stringify(String(expr.operator))} is not a valid label selector operator`);
    }
  }
  return toPredicate(reqs);
}

// -------------------------------------------------------------------------------------- field selectors

/** fields.splitTerms: commas split terms unless backslash-escaped (the backslash is kept for unescaping). */
function splitTerms(s: string): string[] {
  if (s.length === 0) return [];
  const terms: string[] = [];
  let start = 0;
  let inSlash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inSlash) inSlash = false;
    else if (c === '\\') inSlash = true;
    else if (c === ',') {
      terms.push(s.slice(start, i));
      start = i + 1;
    }
  }
  terms.push(s.slice(start));
  return terms;
}

const TERM_OPERATORS = ['!=', '==', '='] as const;

function splitTerm(term: string): { lhs: string; op: (typeof TERM_OPERATORS)[number]; rhs: string } | undefined {
  for (let i = 0; i < term.length; i++) {
    for (const op of TERM_OPERATORS) {
      if (term.startsWith(op, i)) return { lhs: term.slice(0, i), op, rhs: term.slice(i + op.length) };
    }
  }
  return undefined;
}

/** fields.UnescapeValue: `\\`, `\,`, `\=` are escapes; bare `,`/`=` and other escapes are errors. */
function unescapeValue(s: string): string {
  if (!/[\\,=]/.test(s)) return s;
  let out = '';
  let inSlash = false;
  for (const c of s) {
    if (inSlash) {
      if (c !== '\\' && c !== ',' && c !== '=')
        throw new SelectorError(`invalid field selector: invalid escape sequence: \\${c}`);
      out += c;
      inSlash = false;
    } else if (c === '\\') {
      inSlash = true;
    } else if (c === ',' || c === '=') {
      // Go formats the rune with %v, i.e. as its code point number.
      throw new SelectorError(`invalid field selector: unescaped character in value: ${c.codePointAt(0)}`);
    } else {
      out += c;
    }
  }
  if (inSlash) throw new SelectorError('invalid field selector: invalid escape sequence: \\');
  return out;
}

/**
 * Parses a field selector (`f=v`, `f==v`, `f!=v`, comma = AND, backslash escapes) and checks each field against
 * `supported`. A field the object lacks compares as "".
 * @throws SelectorError: syntax errors, or `unknown(<f>)` (default `field label not supported: <f>`) for a field
 * outside `supported`.
 */
export function parseFieldSelector(
  s: string,
  supported: ReadonlySet<string>,
  unknown: (label: string) => string = (label) => `field label not supported: ${label}`,
): FieldPredicate {
  const terms: Array<{ field: string; value: string; negate: boolean }> = [];
  for (const part of splitTerms(s).sort()) {
    if (part === '') continue;
    const t = splitTerm(part);
    if (!t) throw new SelectorError(`invalid selector: '${s}'; can't understand '${part}'`);
    const value = unescapeValue(t.rhs);
    if (!supported.has(t.lhs)) throw new SelectorError(unknown(t.lhs));
    terms.push({ field: t.lhs, value, negate: t.op === '!=' });
  }
  if (terms.length === 0) return () => true;
  return (getField) => terms.every((t) => ((getField(t.field) ?? '') === t.value) !== t.negate);
}

/** Reads one field-selector field (`spec.nodeName`) of an object; undefined when absent. */
export type FieldGetter = (obj: KubeObject) => string | undefined;

/** What the field label conversion of kube-apiserver needs to know of a kind. */
export interface FieldSelectableKind {
  readonly namespaced: boolean;
  /** The kind's own field labels; a kind with none has no conversion function of its own. */
  readonly fieldSelectors: Record<string, FieldGetter>;
}

const META_NAME: FieldGetter = (o) => o.metadata?.name;
const META_NAMESPACE: FieldGetter = (o) => o.metadata?.namespace ?? '';

/**
 * The field labels a kind accepts, as kube-apiserver converts them. A kind without field labels of its own has
 * no conversion function: the default one accepts metadata.name and metadata.namespace (apimachinery
 * DefaultMetaV1FieldSelectorConversion). A kind with its own (k/k pkg/apis/core/v1/conversion.go: Pod, Node,
 * Namespace, Secret, Event) accepts them plus metadata.name, and metadata.namespace when it is namespaced (the
 * Node and Namespace conversions refuse it).
 */
export function fieldGetters(kind: FieldSelectableKind): Record<string, FieldGetter> {
  if (Object.keys(kind.fieldSelectors).length === 0)
    return { 'metadata.name': META_NAME, 'metadata.namespace': META_NAMESPACE };
  return {
    'metadata.name': META_NAME,
    ...(kind.namespaced ? { 'metadata.namespace': META_NAMESPACE } : {}),
    ...kind.fieldSelectors,
  };
}

/** The 400 message for a field label the kind does not accept, in the words of its conversion function. */
export function unknownFieldLabel(kind: FieldSelectableKind, label: string): string {
  if (Object.keys(kind.fieldSelectors).length > 0) return `field label not supported: ${label}`;
  return `${JSON.stringify(label)} is not a known field selector: only "metadata.name", "metadata.namespace"`;
}
