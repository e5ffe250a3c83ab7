// Durations as text, both ways: formatDuration writes milliseconds the way flags, `--help` and the docs show them,
// parseDuration reads them back from a flag or an environment variable. Kept together so that what one writes the
// other reads.
import { OptionValueError } from './option-spec.ts';

/** A duration as Go writes it in flags: `15s`, `15m`, `1h`, `1000s`, `0`. The inverse of parseDuration. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Go-style durations: `15s`, `1m30s`, `250ms`, `2h`, `0`. Returns milliseconds; throws OptionValueError (without an
 * option name: the caller knows it). The inverse of formatDuration.
 */
export function parseDuration(text: string): number {
  const s = text.trim();
  if (s === '0') return 0;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    matched = re.lastIndex;
  }
  if (matched === 0 || matched !== s.length)
    throw new OptionValueError('', `"${text}" is not a duration (e.g. 500ms, 15s, 1m30s, 2h)`);
  return total;
}
