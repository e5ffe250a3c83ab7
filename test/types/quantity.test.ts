import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseQuantity, isQuantity, formatBytes, QuantityError } from '../../src/types/quantity.ts';

test('parses binary, decimal, exponent and fractional quantities exactly', () => {
  assert.equal(parseQuantity('1Gi'), 1073741824n);
  assert.equal(parseQuantity('10G'), 10_000_000_000n);
  assert.equal(parseQuantity('1.5Gi'), 1610612736n);
  assert.equal(parseQuantity('500m'), 1n, 'fractions round up like Quantity.Value()');
  assert.equal(parseQuantity('1e3'), 1000n);
  assert.equal(parseQuantity('8Ei'), 8n << 60n, 'beyond 2^53 stays exact');
  assert.equal(parseQuantity('.5k'), 500n);
});

test('rejects what kube-apiserver rejects', () => {
  for (const bad of ['', 'Gi', '1GB', '1 Gi', '--1', '1.2.3', 'abc', '1iG']) {
    assert.equal(isQuantity(bad), false, bad);
    assert.throws(() => parseQuantity(bad), QuantityError, bad);
  }
});

test('formats with the largest exact binary unit', () => {
  assert.equal(formatBytes(1073741824n), '1Gi');
  assert.equal(formatBytes(1536n * 1024n * 1024n), '1536Mi');
  assert.equal(formatBytes(1000n), '1000');
});

test('hostile quantities are refused or bounded at once, never turned into huge numbers', () => {
  for (const bad of ['1e99999999', '9'.repeat(41), '1e41', '1Ei'.replace('1', '9'.repeat(30)), '1'.repeat(200)]) {
    assert.throws(() => parseQuantity(bad), QuantityError, bad);
    assert.equal(isQuantity(bad), false, bad);
  }
  assert.equal(parseQuantity('1e-99999999'), 1n, 'a positive sliver rounds up without computing 10^99999999');
  assert.equal(parseQuantity('0e-99999999'), 0n);
  assert.equal(parseQuantity('1e30'), 10n ** 30n, 'large but sane values still parse exactly');
  assert.equal(parseQuantity('0.5e1'), 5n);
});
