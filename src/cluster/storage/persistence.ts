// SQLite persistence for the cluster store (better-sqlite3 or node:sqlite, see sqlite.ts): one row per live object plus the last
// resourceVersion handed out, so a restarted cluster has every object and its resourceVersions keep growing.
// WAL + synchronous=NORMAL: the writes of a few event loop turns are one transaction (group commit, see store.ts:
// a commit costs more than the statements it holds, about 150 us against 30 us per put), committed at the end
// of the third turn and before any of them is answered; it survives a process crash.
// KUBE_PROVISIONER_GROUP_COMMIT=0 makes each write its own transaction again, =N keeps a transaction open for N
// loop turns (default 3; side-by-side measurements). The database holds every Secret: its files are 0600 (tightened at every start,
// also on files an older version created), and a row that cannot be read stops the start with an error that
// says which file, which object and what to do.
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { findSqliteDriver, SqliteUnavailableError, describeSqliteReasons, type SqliteDriverName } from './sqlite.ts';
import type { StoreBackend } from './store.ts';

/** Loop turns a transaction stays open by default (KUBE_PROVISIONER_GROUP_COMMIT overrides it; 0: one per write). */
const GROUP_COMMIT_TURNS = 3;

/** A stored row that cannot be loaded: the cluster refuses to start rather than silently drop an object. */
export class StoreLoadError extends Error {
  override name = 'StoreLoadError';
  constructor(
    readonly file: string,
    readonly resource: string,
    readonly key: string,
    readonly reason: string,
  ) {
    super(
      `cannot load ${resource} "${key}" from ${file}: ${reason}. The row is not a valid object; the file was probably ` +
        `damaged. Stop the cluster, then restore the data directory from a backup, or remove just that object with ` +
        `sqlite3 ${JSON.stringify(file)} "DELETE FROM objects WHERE resource = '${resource}' AND key = '${key.replace(/'/g, "''")}'" ` +
        `and start again.`,
    );
  }
}

/** Database files readable by their owner only. */
function tightenModes(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
}

function parseRow(file: string, row: { resource: string; key: string; json: string }): unknown {
  let obj: unknown;
  try {
    obj = JSON.parse(row.json);
  } catch (err) {
    throw new StoreLoadError(file, row.resource, row.key, `invalid JSON (${(err as Error).message})`);
  }
  const meta =
    obj !== null && typeof obj === 'object' ? (obj as { metadata?: { name?: unknown } }).metadata : undefined;
  if (!meta || typeof meta !== 'object' || typeof meta.name !== 'string') {
    throw new StoreLoadError(file, row.resource, row.key, 'the object has no metadata.name');
  }
  return obj;
}

/** A persistent backend and the driver that opened it, or why there is none. */
export type SqliteBackend =
  { backend: StoreBackend; driver: SqliteDriverName } | { backend: undefined; unavailable: string };

/**
 * Opens (creating if needed) the SQLite file at `file` as a store backend. Without a usable driver: no backend
 * and the reason when the file does not exist yet (the caller runs in memory and says so), SqliteUnavailableError
 * when it does (its objects must not look lost).
 */
export function openSqliteBackend(file: string): SqliteBackend {
  let driver: ReturnType<typeof findSqliteDriver>;
  try {
    driver = findSqliteDriver();
  } catch (err) {
    if (!(err instanceof SqliteUnavailableError)) throw err;
    if (!existsSync(file)) return { backend: undefined, unavailable: describeSqliteReasons(err.reasons) };
    throw new SqliteUnavailableError(
      err.reasons,
      `${file} holds a cluster's objects, and this process cannot open it: ${describeSqliteReasons(err.reasons)}. ` +
        'Run it with Node 22.13 or later (node:sqlite), or where better-sqlite3 installed with its native addon.',
    );
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const db = driver.open(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec(`
    CREATE TABLE IF NOT EXISTS objects (
      resource TEXT NOT NULL,
      key TEXT NOT NULL,
      rv INTEGER NOT NULL,
      json TEXT NOT NULL,
      PRIMARY KEY (resource, key)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  `);
  // After the first statements: WAL mode has created the -wal and -shm files by now.
  tightenModes(file);
  const upsert = db.prepare(
    'INSERT INTO objects (resource, key, rv, json) VALUES (?, ?, ?, ?) ON CONFLICT (resource, key) DO UPDATE SET rv = excluded.rv, json = excluded.json',
  );
  const remove = db.prepare('DELETE FROM objects WHERE resource = ? AND key = ?');
  const setRv = db.prepare(
    "INSERT INTO meta (name, value) VALUES ('resourceVersion', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
  );
  const getRv = db.prepare("SELECT value FROM meta WHERE name = 'resourceVersion'");
  const all = db.prepare('SELECT resource, key, rv, json FROM objects');
  // The last resourceVersion is max(meta value, newest object rv): writes of live objects need one statement,
  // only deletions (which leave no row behind) record their revision in `meta`.
  let inTransaction = false;
  // Three turns: in bench:dev (10,000 claims, side by side) dev's CPU per claim was 14.8 ms open for 3 turns,
  // 16.2 for 1, 18.7 with a transaction per write (docs/benchmarks.md, "group commit").
  const turnsSetting = Number(process.env.KUBE_PROVISIONER_GROUP_COMMIT ?? GROUP_COMMIT_TURNS);
  const groupTurns = Number.isInteger(turnsSetting) && turnsSetting >= 0 ? turnsSetting : GROUP_COMMIT_TURNS;
  const del = (resource: string, key: string, rv: number) => {
    if (inTransaction) {
      remove.run(resource, key);
      setRv.run(String(rv));
      return;
    }
    db.exec('BEGIN');
    try {
      remove.run(resource, key);
      setRv.run(String(rv));
      db.exec('COMMIT');
    } catch (err) {
      db.exec('ROLLBACK');
      throw err;
    }
  };
  let closed = false;
  const backend: StoreBackend = {
    load() {
      const rows = all.all() as Array<{ resource: string; key: string; rv: number; json: string }>;
      let resourceVersion = Number((getRv.get() as { value: string } | undefined)?.value ?? 0);
      for (const o of rows) if (o.rv > resourceVersion) resourceVersion = o.rv;
      try {
        const objects = rows.map((o) => ({ resource: o.resource, rv: o.rv, json: o.json, obj: parseRow(file, o) }));
        return { resourceVersion, objects };
      } catch (err) {
        closed = true;
        db.close();
        throw err;
      }
    },
    put(resource, key, rv, json) {
      upsert.run(resource, key, rv, json);
    },
    remove(resource, key, rv) {
      del(resource, key, rv);
    },
    ...(groupTurns === 0
      ? {}
      : {
          groupTurns,
          begin() {
            db.exec('BEGIN');
            inTransaction = true;
          },
          commit() {
            db.exec('COMMIT');
            inTransaction = false;
          },
          rollback() {
            inTransaction = false;
            try {
              db.exec('ROLLBACK');
            } catch {
              // no transaction left: SQLite rolled it back itself (a full disk, an I/O error)
            }
          },
        }),
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
  return { backend, driver: driver.name };
}
