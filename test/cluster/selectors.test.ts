import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseLabelSelector,
  labelSelectorToPredicate,
  parseFieldSelector,
  SelectorError,
} from '../../src/cluster/common/selectors.ts';
import type { LabelSelector } from '../../src/types/k8s.ts';

const L = (o: Record<string, string>) => o;

test('label selector: matching table', () => {
  const cases: Array<[string, Record<string, string> | undefined, boolean]> = [
    ['', {}, true],
    ['   ', undefined, true],
    ['a=b', L({ a: 'b' }), true],
    ['a=b', L({ a: 'c' }), false],
    ['a=b', undefined, false],
    ['a==b', L({ a: 'b' }), true],
    ['a!=b', L({ a: 'b' }), false],
    ['a!=b', L({ a: 'c' }), true],
    ['a!=b', L({}), true],
    ['a in (x,y)', L({ a: 'y' }), true],
    ['a in (x,y)', L({ a: 'z' }), false],
    ['a in (x,y)', L({}), false],
    ['a notin (x)', L({ a: 'x' }), false],
    ['a notin (x)', L({ a: 'q' }), true],
    ['a notin (x)', L({}), true],
    ['a', L({ a: '' }), true],
    ['a', L({ b: '' }), false],
    ['!a', L({ b: '1' }), true],
    ['!a', L({ a: '1' }), false],
    ['a=b,c', L({ a: 'b', c: 'x' }), true],
    ['a=b,c', L({ a: 'b' }), false],
    [' a = b , ! c ', L({ a: 'b' }), true],
    ['a=', L({ a: '' }), true],
    ['a=', L({ a: 'x' }), false],
    ['a=,b', L({ a: '', b: 'x' }), true],
    ['a in ()', L({ a: '' }), true],
    ['a in (,x)', L({ a: '' }), true],
    ['a in (x,)', L({ a: '' }), true],
    ['a in (x,)', L({ a: 'x' }), true],
    ['in in (in, notin)', L({ in: 'notin' }), true],
    ['a>5', L({ a: '6' }), true],
    ['a>5', L({ a: '5' }), false],
    ['a>5', L({ a: 'x' }), false],
    ['a>5', L({}), false],
    ['a<5', L({ a: '-1' }), true],
    ['example.com/app=web', L({ 'example.com/app': 'web' }), true],
    ['a\tin\n(x)', L({ a: 'x' }), true],
  ];
  for (const [sel, labels, want] of cases) {
    assert.equal(parseLabelSelector(sel)(labels), want, `${JSON.stringify(sel)} on ${JSON.stringify(labels)}`);
  }
});

test('label selector: errors carry kube messages', () => {
  const cases: Array<[string, RegExp]> = [
    ['a=b c', /^found 'c', expected: ',' or 'end of string'$/],
    ['a b', /^unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt$/],
    ['a=b,', /^found '', expected: identifier after ','$/],
    [',a', /^found ',', expected: !, identifier, or 'end of string'$/],
    ['a in x', /^unable to parse requirement: found 'x' expected: '\('$/],
    ['a in (x', /^unable to parse requirement: found '', expected: ',' or '\)'$/],
    ['a=(b)', /^unable to parse requirement: found '\(', expected: identifier$/],
    [
      '-a=b',
      /^unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of alphanumeric characters, '-', '_' or '\.', and must start and end with an alphanumeric character \(e\.g\. 'MyName', {2}or 'my\.name', {2}or '123-abc', regex used/,
    ],
    ['a/b/c=d', /a qualified name must consist/],
    ['Bad_Prefix/x=y', /prefix part a lowercase RFC 1123 subdomain/],
    [`${'k'.repeat(64)}=v`, /name part must be no more than 63 characters/],
    [
      `a=${'v'.repeat(64)}`,
      /^unable to parse requirement: values\[0\]\[a\]: Invalid value: "v{64}": must be no more than 63 characters$/,
    ],
    ['a=-x', /values\[0\]\[a\]: Invalid value: "-x": a valid label must be an empty string/],
    ['a>x', /for 'Gt', 'Lt' operators, the value must be an integer/],
    ['!a=b', /^found '=', expected: ',' or 'end of string'$/],
  ];
  for (const [sel, re] of cases) {
    assert.throws(
      () => parseLabelSelector(sel),
      (e: unknown) => e instanceof SelectorError && re.test(e.message),
      sel,
    );
  }
  assert.equal(parseLabelSelector('a==')({ a: '' }), true);
});

test('label selector object: matchLabels and matchExpressions', () => {
  const sel: LabelSelector = {
    matchLabels: { tier: 'db' },
    matchExpressions: [
      { key: 'zone', operator: 'In', values: ['a', 'b'] },
      { key: 'env', operator: 'NotIn', values: ['prod'] },
      { key: 'ssd', operator: 'Exists' },
      { key: 'legacy', operator: 'DoesNotExist' },
    ],
  };
  const p = labelSelectorToPredicate(sel);
  assert.equal(p({ tier: 'db', zone: 'a', ssd: '' }), true);
  assert.equal(p({ tier: 'db', zone: 'a', ssd: '', env: 'prod' }), false);
  assert.equal(p({ tier: 'db', zone: 'c', ssd: '' }), false);
  assert.equal(p({ tier: 'db', zone: 'a' }), false);
  assert.equal(p({ tier: 'db', zone: 'a', ssd: '', legacy: 'y' }), false);
  assert.equal(p(undefined), false);
  assert.equal(labelSelectorToPredicate({})(undefined), true, 'empty selector matches everything');
  assert.equal(labelSelectorToPredicate(undefined)({ x: 'y' }), true, 'undefined selector matches everything');
  assert.throws(
    () => labelSelectorToPredicate({ matchExpressions: [{ key: 'a', operator: 'In', values: [] }] }),
    SelectorError,
  );
  assert.throws(
    () => labelSelectorToPredicate({ matchExpressions: [{ key: 'a', operator: 'Exists', values: ['x'] }] }),
    SelectorError,
  );
  assert.throws(
    () => labelSelectorToPredicate({ matchExpressions: [{ key: 'a', operator: 'Gt' as 'In', values: ['1'] }] }),
    (e: unknown) => e instanceof SelectorError && e.message === '"Gt" is not a valid label selector operator',
  );
  assert.throws(() => labelSelectorToPredicate({ matchLabels: { 'bad key': 'x' } }), SelectorError);
});

test('field selector: matching, escaping and errors', () => {
  const supported = new Set(['metadata.name', 'metadata.namespace', 'spec.nodeName', 'reason']);
  const fields: Record<string, string> = { 'metadata.name': 'pv-1', 'metadata.namespace': '', reason: 'a,b=c\\' };
  const get = (p: string) => fields[p];
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['metadata.name=pv-1', true],
    ['metadata.name==pv-1', true],
    ['metadata.name!=pv-1', false],
    ['metadata.name=pv-2', false],
    ['metadata.name=pv-1,metadata.namespace=', true],
    ['spec.nodeName=', true],
    ['spec.nodeName!=', false],
    ['reason=a\\,b\\=c\\\\', true],
    ['metadata.name=pv-1,', true],
  ];
  for (const [sel, want] of cases) assert.equal(parseFieldSelector(sel, supported)(get), want, sel);

  const errors: Array<[string, string]> = [
    ['status.phase=Bound', 'field label not supported: status.phase'],
    ['metadata.name', "invalid selector: 'metadata.name'; can't understand 'metadata.name'"],
    ['metadata.name=a=b', 'invalid field selector: unescaped character in value: 61'],
    ['metadata.name=a\\x', 'invalid field selector: invalid escape sequence: \\x'],
    ['metadata.name=a\\', 'invalid field selector: invalid escape sequence: \\'],
  ];
  for (const [sel, msg] of errors) {
    assert.throws(
      () => parseFieldSelector(sel, supported),
      (e: unknown) => e instanceof SelectorError && e.message === msg,
      sel,
    );
  }
});

// Property test: a randomly generated selector string and the equivalent LabelSelector object agree on random labels.
test('property: string and object selectors agree on random label sets', () => {
  let seed = 12345;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const keys = ['a', 'b', 'x.io/c'];
  const vals = ['1', '2', 'v'];
  for (let iter = 0; iter < 500; iter++) {
    const parts: string[] = [];
    const sel: LabelSelector = { matchExpressions: [] };
    const nReq = 1 + rnd(3);
    for (let i = 0; i < nReq; i++) {
      const k = keys[rnd(keys.length)];
      const vs = [...new Set([vals[rnd(3)], vals[rnd(3)]])];
      switch (rnd(5)) {
        case 0:
          parts.push(`${k} in (${vs.join(',')})`);
          sel.matchExpressions!.push({ key: k, operator: 'In', values: vs });
          break;
        case 1:
          parts.push(`${k} notin (${vs.join(', ')})`);
          sel.matchExpressions!.push({ key: k, operator: 'NotIn', values: vs });
          break;
        case 2:
          parts.push(k);
          sel.matchExpressions!.push({ key: k, operator: 'Exists' });
          break;
        case 3:
          parts.push(`!${k}`);
          sel.matchExpressions!.push({ key: k, operator: 'DoesNotExist' });
          break;
        default:
          parts.push(`${k}=${vs[0]}`);
          sel.matchExpressions!.push({ key: k, operator: 'In', values: [vs[0]] });
      }
    }
    const fromString = parseLabelSelector(parts.join(rnd(2) ? ',' : ' , '));
    const fromObject = labelSelectorToPredicate(sel);
    for (let j = 0; j < 10; j++) {
      const labels: Record<string, string> = {};
      for (const k of keys) if (rnd(2)) labels[k] = vals[rnd(3)];
      assert.equal(fromString(labels), fromObject(labels), `${parts.join(',')} on ${JSON.stringify(labels)}`);
    }
  }
});
