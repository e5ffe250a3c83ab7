// The option room's readers: durations both ways, each kind read from text with the row's bounds (the same check a
// value given in code meets), flag rows set back at their paths, and a table read whole from text (StorageClass
// parameters). Pure functions: no commander, no environment.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { resolveOptions, ConfigurationError } from '../../src/controller/options/controller-options.ts';
import { formatDuration, parseDuration } from '../../src/controller/options/option-format.ts';
import {
  controllerFlagRows,
  optionsFromFlags,
  parseKindText,
  parseRowText,
  parseTextTable,
} from '../../src/controller/options/option-parse.ts';
import {
  boolean,
  checkValue,
  choice,
  durationBounds,
  duration,
  integer,
  OptionValueError,
  outOfBounds,
  text,
  TIMER_MAX_MS,
} from '../../src/controller/options/option-spec.ts';
import { CONTROLLER_OPTIONS } from '../../src/controller/options/option-table.ts';

describe('option room: durations as text', () => {
  it('parseDuration reads what formatDuration writes', () => {
    for (const ms of [0, 1, 250, 1000, 1500, 15_000, 60_000, 90_000, 3_600_000, 7_200_000, TIMER_MAX_MS])
      assert.equal(parseDuration(formatDuration(ms)), ms, formatDuration(ms));
    assert.equal(formatDuration(15_000), '15s');
    assert.equal(formatDuration(3_600_000), '1h');
    assert.equal(parseDuration('1h2m3s'), 3_723_000);
    for (const bad of ['', '15', 's', '1d', '1s junk', '-1s'])
      assert.throws(() => parseDuration(bad), OptionValueError, bad);
  });
});

describe('option room: reading text', () => {
  it('checks bounds with the one check a value given in code meets (outOfBounds), below and above', () => {
    const kinds = [
      { type: 'duration', min: 1 },
      { type: 'duration', max: 10 },
      { type: 'integer', min: 1 },
      { type: 'integer', min: 0, max: 7 },
      { type: 'number', min: 0.5 },
    ] as const;
    for (const kind of kinds) {
      const row = { entry: 'option', kind } as const;
      for (const n of [-1, 0, 0.5, 1, 7, 8, 10, 11]) {
        if (kind.type === 'integer' && !Number.isInteger(n)) continue;
        const textual = kind.type === 'duration' ? `${n}ms` : String(n);
        if (kind.type === 'duration' && n < 0) continue; // not a duration's syntax at all
        const fromText = (() => {
          try {
            parseKindText(kind, textual);
            return true;
          } catch {
            return false;
          }
        })();
        const fromCode = (() => {
          try {
            checkValue('x', row, n);
            return true;
          } catch {
            return false;
          }
        })();
        assert.equal(fromText, outOfBounds(kind, n) === undefined, `${JSON.stringify(kind)} ${textual}`);
        assert.equal(fromText, fromCode, `${JSON.stringify(kind)} ${n}: text and code agree`);
      }
    }
  });

  it('every controller flag refuses exactly what resolveOptions refuses at its bounds', () => {
    let checked = 0;
    for (const { path, row } of controllerFlagRows()) {
      const k = row.kind;
      if (k.type !== 'duration' && k.type !== 'integer' && k.type !== 'number') continue;
      const min = k.type === 'duration' ? (k.min ?? 0) : k.min;
      const below = k.type === 'number' ? min / 2 : min - 1;
      const textOf = (n: number) => (k.type === 'duration' ? `${n}ms` : String(n));
      const options = (n: number) => {
        const keys = path.split('.');
        const o: Record<string, unknown> = {};
        let at = o;
        for (const key of keys.slice(0, -1)) at = at[key] = {} as Record<string, unknown>;
        at[keys[keys.length - 1]] = n;
        return o;
      };
      const refusedBoth = (n: number) => {
        assert.throws(() => parseRowText(path, row, textOf(n)), OptionValueError, `${path} ${n} as text`);
        assert.throws(
          () => resolveOptions(options(n), {}),
          (e: unknown) => e instanceof ConfigurationError && e.option === path,
          `${path} ${n} in code`,
        );
        checked++;
      };
      // "-1ms" is not a duration's syntax at all: a duration from 0 has no "below" to compare.
      if (below >= 0 || k.type !== 'duration') refusedBoth(below);
      if (k.type === 'duration') refusedBoth(durationBounds(k)[1] + 1);
      assert.equal(parseRowText(path, row, textOf(min)), min, `${path} ${min} as text`);
    }
    assert.ok(checked >= 25, `${checked} refusals checked both ways`);
  });

  it('names the row in a refusal, and reads with the row’s own parse when it has one', () => {
    assert.throws(
      () => parseRowText('--lease-duration', duration({ min: 1, help: 'h' }), '0'),
      (e: unknown) =>
        e instanceof OptionValueError && e.option === '--lease-duration' && /shorter than 1ms/.test(e.message),
    );
    const upper = text({ parse: (v) => v.toUpperCase() });
    assert.equal(parseRowText('u', upper, 'ab'), 'AB');
    assert.deepEqual(parseKindText({ type: 'list' }, ' a, ,b '), ['a', 'b']);
    assert.equal(parseKindText({ type: 'boolean' }, 'off'), false);
    assert.throws(() => parseKindText({ type: 'choice', values: ['a', 'b'] }, 'c'), /"c" is not one of a, b/);
  });

  it('sets flag values back at their paths, and refuses a given flag of a mode not chosen', () => {
    const values: Record<string, unknown> = { 'worker-threads': 8, 'lease-duration': 20_000, 'volume-save': 'retry' };
    const o = optionsFromFlags(
      CONTROLLER_OPTIONS,
      (flag) => values[flag],
      () => false,
    );
    assert.deepEqual(o, { threadiness: 8, leaderElection: { leaseDurationMs: 20_000 }, volumeSave: { mode: 'retry' } });
    const background = { 'volume-save': 'background', 'volume-save-retries': 3 } as Record<string, unknown>;
    assert.throws(
      () =>
        optionsFromFlags(
          CONTROLLER_OPTIONS,
          (flag) => background[flag],
          (flag) => flag === 'volume-save-retries',
        ),
      (e: unknown) => e instanceof OptionValueError && e.option === '--volume-save-retries',
    );
  });
});

describe('option room: a table read whole from text (StorageClass parameters)', () => {
  const table = {
    size: integer({ min: 1, max: 9, default: 3, doc: 'size' }),
    colour: choice(['red', 'blue'], { doc: 'colour' }),
    loud: boolean({ doc: 'loud' }),
  };
  const read = (given: Record<string, unknown> | undefined) =>
    parseTextTable(table, given, { noun: 'parameter', refused: { legacy: 'is not supported' } });

  it('gives the defaults, reads each given value by its row, and leaves out what is neither', () => {
    assert.deepEqual(read(undefined), { size: 3 });
    assert.deepEqual(read({ colour: 'blue', loud: 'yes', size: '9' }), { size: 9, colour: 'blue', loud: true });
  });

  it('refuses unknown names (naming every row), refused names with their reason, non-strings and bad values', () => {
    const refusal = (given: Record<string, unknown>, option: string, message: RegExp) =>
      assert.throws(
        () => read(given),
        (e: unknown) => e instanceof OptionValueError && e.option === option && message.test(e.message),
        JSON.stringify(given),
      );
    refusal({ shade: 'x' }, 'shade', /^unknown parameter \(known: size, colour, loud\)$/);
    refusal({ legacy: 'x' }, 'legacy', /^is not supported$/);
    refusal({ size: 4 }, 'size', /^must be a string$/);
    refusal({ size: '10' }, 'size', /^"10" is not an integer from 1 to 9$/);
    refusal({ colour: 'green' }, 'colour', /^"green" is not one of red, blue$/);
    refusal({ toString: 'x' }, 'toString', /^unknown parameter/);
  });
});
