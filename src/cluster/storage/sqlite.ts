// The SQLite driver of the cluster's persistence, whichever this process can load: better-sqlite3 (an optional
// dependency: a native addon, built at install time where its install script ran) or Node's own node:sqlite
// (Node >= 22.13, or 22.5 with --experimental-sqlite). Both read and write the same file format, so a data
// directory moves between them. Each is tried in memory first, so an unusable driver (absent, never built, built
// for another Node) is a reason recorded for the caller's notice, while an error opening the real file is not.
import { createRequire } from 'node:module';

/** A value bound to a statement parameter. */
export type SqliteValue = string | number | bigint | null;

/** The statement methods both drivers have. */
export interface SqliteStatement {
  run(...params: SqliteValue[]): unknown;
  get(...params: SqliteValue[]): unknown;
  all(...params: SqliteValue[]): unknown[];
}

/** The database methods both drivers have (better-sqlite3's `pragma` and `transaction` are not used). */
export interface SqliteDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
}

/** Which driver opened the database. */
export type SqliteDriverName = 'better-sqlite3' | 'node:sqlite';

/** No SQLite driver can be loaded; `reasons` says why, per driver. */
export class SqliteUnavailableError extends Error {
  override readonly name = 'SqliteUnavailableError';
  constructor(
    readonly reasons: Readonly<Record<SqliteDriverName, string>>,
    message?: string,
  ) {
    super(message ?? `no SQLite driver: ${describeSqliteReasons(reasons)}`);
  }
}

/** One line per driver, for notices and errors. */
export function describeSqliteReasons(reasons: Readonly<Record<SqliteDriverName, string>>): string {
  return `better-sqlite3 ${reasons['better-sqlite3']}; node:sqlite ${reasons['node:sqlite']}`;
}

type Open = (file: string) => SqliteDatabase;

const requireFromHere = createRequire(import.meta.url);

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0];
}

function betterSqlite3(): Open | string {
  let Database: new (file: string) => SqliteDatabase;
  try {
    Database = requireFromHere('better-sqlite3') as typeof Database;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return e.code === 'MODULE_NOT_FOUND' && e.message.includes("'better-sqlite3'")
      ? 'is not installed'
      : `cannot be loaded (${firstLine(err)})`;
  }
  try {
    // The addon loads on the first open: a package whose install script never ran has no binary to load.
    new Database(':memory:').close();
  } catch (err) {
    // Typically "Could not locate the bindings file. Tried: …": the install script was skipped or failed.
    const detail = firstLine(err).replace(/\s*Tried:\s*$/, '');
    return `is installed but its native addon cannot be loaded (${detail}: was its install script skipped or did its build fail?)`;
  }
  return (file) => new Database(file);
}

function nodeSqlite(): Open | string {
  let mod: { DatabaseSync?: new (file: string) => SqliteDatabase } | undefined;
  try {
    mod = process.getBuiltinModule?.('node:sqlite') as typeof mod;
  } catch (err) {
    return `cannot be loaded (${firstLine(err)})`;
  }
  const DatabaseSync = mod?.DatabaseSync;
  if (!DatabaseSync) return `is not in Node ${process.versions.node} (it is from Node 22.13 on)`;
  return (file) => new DatabaseSync(file);
}

/**
 * The first driver this process can use, or SqliteUnavailableError with the reason for each. The probes run once
 * per call; callers open one database per process.
 */
export function findSqliteDriver(): { name: SqliteDriverName; open: Open } {
  const better = betterSqlite3();
  if (typeof better !== 'string') return { name: 'better-sqlite3', open: better };
  const builtin = nodeSqlite();
  if (typeof builtin !== 'string') return { name: 'node:sqlite', open: builtin };
  throw new SqliteUnavailableError({ 'better-sqlite3': better, 'node:sqlite': builtin });
}
