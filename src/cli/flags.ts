// Command wiring of flags shared by the commands: one commander Option per flag with its environment variable
// (applied from an explicit environment, never read by commander), the parsers that turn the option room's
// readers (src/controller/options/option-parse.ts) into commander's, the flag of a table row, and the flags every
// command that talks to an API server has. What a value means and how it is checked is the room's; this file only
// connects it to commander.
import { Command, InvalidArgumentError, Option } from 'commander';
import {
  parseBooleanText,
  parseDurationText,
  parseIntegerText,
  parseNumberText,
  parseRowText,
  placeholderOf,
  envName,
} from '../controller/options/option-parse.ts';
import { parseDuration, formatDuration } from '../controller/options/option-format.ts';
import { OptionValueError, TIMER_MAX_MS, type OptionRow } from '../controller/options/option-spec.ts';
import { parseListenAddress } from '../runtime/health-server.ts';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Invalid or contradictory flags (after commander's own per-flag parsing). */
export class CliOptionError extends Error {
  override name = 'CliOptionError';
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
  }
}

/** A commander parser from a reader of the option room: its OptionValueError becomes commander's refusal. */
export function argParser<T>(read: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return read(text);
    } catch (err) {
      if (err instanceof OptionValueError) throw new InvalidArgumentError(err.message);
      throw err;
    }
  };
}

/** A commander parser of Go-style durations (`15s`, `1m30s`), without bounds. */
export const durationValue = argParser(parseDuration);

/** A commander parser of durations within [min, max]. */
export function durationArg(min: number, max: number): (v: string) => number {
  return argParser((v) => parseDurationText(v, min, max));
}

/** `--event-ttl` of `cluster` and `dev`: kube-apiserver's flag, a duration of at least 1s (default 1h). */
export const EVENT_TTL_DEFAULT_MS = 3_600_000;
export const eventTtlArg: (v: string) => number = durationArg(1000, TIMER_MAX_MS);

/** A commander parser of integers >= `min`. */
export function intArg(min: number): (v: string) => number {
  return argParser((v) => parseIntegerText(v, { min }));
}

/** A commander parser of finite numbers >= `min`. */
export function numberArg(min: number): (v: string) => number {
  return argParser((v) => parseNumberText(v, min));
}

/** `true/false`, `1/0`, `yes/no`: switches take an optional value so that `ENV=false` means false. */
export const parseBoolean = argParser(parseBooleanText);

/** The health and metrics listen addresses from `--health-address`/`--metrics-address` (`off` = none; metrics default to the health address). */
export function listenAddresses(f: { healthAddress: string; metricsAddress?: string }): {
  healthAddress?: string;
  metricsAddress?: string;
} {
  const healthAddress = f.healthAddress === 'off' ? undefined : f.healthAddress;
  const metricsAddress =
    f.metricsAddress === undefined ? healthAddress : f.metricsAddress === 'off' ? undefined : f.metricsAddress;
  return { healthAddress, metricsAddress };
}

/** A commander parser of listen addresses: `host:port`, `:port`, or `off` (also the empty string). */
export function addressArg(v: string): string {
  if (v === 'off' || v === '') return 'off';
  try {
    parseListenAddress(v);
  } catch {
    throw new InvalidArgumentError(`"${v}" is not host:port, :port or off`);
  }
  return v;
}

/** The environment variable of each option that has one (kept here, not in commander, which reads process.env). */
const ENV_VARS = new WeakMap<Option, string>();

/** The environment variable that sets `option`, if any. */
export function envVarOf(option: Option): string | undefined {
  return ENV_VARS.get(option);
}

/** One flag: `--name <value>` (or a boolean switch) with its env fallback. */
export function opt(flags: string, description: string, env?: string | false): Option {
  const name = /--([a-z0-9-]+)/.exec(flags)?.[1] ?? '';
  const variable = env === false ? undefined : (env ?? envName(name));
  const o = new Option(flags, variable ? `${description} (env: ${variable})` : description);
  if (variable) ENV_VARS.set(o, variable);
  return o;
}

/**
 * Fills options not given on the command line from `env` (flag wins), through each option's own parser and
 * choices. Called before the action runs, with process.env by the command and an explicit map by tests.
 */
export function applyEnvironment(cmd: Command, env: NodeJS.ProcessEnv): void {
  for (const o of cmd.options as Option[]) {
    const variable = ENV_VARS.get(o);
    const raw = variable ? env[variable] : undefined;
    if (raw === undefined || cmd.getOptionValueSource(o.attributeName()) === 'cli') continue;
    if (o.argChoices && !o.argChoices.includes(raw)) {
      throw new CliOptionError(variable ?? '', `"${raw}" is not one of ${o.argChoices.join(', ')}`);
    }
    let value: unknown = raw;
    try {
      if (o.parseArg) value = o.parseArg(raw, undefined);
    } catch (err) {
      throw new CliOptionError(variable ?? '', err instanceof Error ? err.message : String(err));
    }
    cmd.setOptionValueWithSource(o.attributeName(), value, 'env');
  }
}

/** Whether an option's value came from the command line or the environment (not its default). */
export type GivenFlag = (attribute: string) => boolean;

/** The GivenFlag of a parsed command. */
export function givenIn(cmd: Command): GivenFlag {
  return (attribute) => {
    const source = cmd.getOptionValueSource(attribute);
    return source === 'cli' || source === 'env';
  };
}

/** commander's attribute name of a flag (`worker-threads` -> `workerThreads`). */
export function attributeOf(flag: string): string {
  return flag.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** A commander parser that reads a value as `row` does (its kind and bounds, or its own parse). */
export function rowArg<T>(row: OptionRow<T>): (text: string) => T {
  return argParser((text) => parseRowText(row.flag ? `--${row.flag}` : '', row, text));
}

/** The flag of one table row: read by the row (bounds included), choices and default from the row. */
export function rowOption(row: OptionRow & { flag: string }): Option {
  const k = row.kind;
  const o = opt(`--${row.flag} ${placeholderOf(row)}`, row.help ?? '');
  if (k.type === 'choice') o.choices([...k.values]);
  else o.argParser(rowArg(row));
  if (row.default !== undefined && !(Array.isArray(row.default) && row.default.length === 0)) {
    if (k.type === 'duration') o.default(row.default, formatDuration(row.default as number));
    else o.default(row.default);
  }
  return o;
}

/** Adds the flags shared by commands that talk to an API server. */
export function addConnectionOptions(cmd: Command): Command {
  return cmd
    .addOption(
      opt('--kubeconfig <file>', 'kubeconfig file (default: $KUBECONFIG, ~/.kube/config, then in-cluster)', false),
    )
    .addOption(opt('--context <name>', 'kubeconfig context (default: its current-context)'))
    .addOption(
      opt('--kube-api-qps <n>', 'client-side request rate limit (0 = unlimited)').argParser(numberArg(0)).default(20),
    )
    .addOption(opt('--kube-api-burst <n>', 'client-side burst above the rate').argParser(intArg(1)).default(30))
    .addOption(
      opt('--kube-api-timeout <duration>', 'timeout of one API request')
        .argParser(durationArg(0, TIMER_MAX_MS))
        .default(30_000, '30s'),
    );
}
