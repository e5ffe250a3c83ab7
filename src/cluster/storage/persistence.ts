// SQLite persistence for the cluster store (better-sqlite3): one row per live object plus the last
// resourceVersion handed out, so a restarted cluster has every object and its resourceVersions keep growing.
// WAL + synchronous=NORMAL: each write is one small transaction (one statement for creates and updates) that
// survives a process crash. The database holds every Secret: its files are 0600 (tightened at every start,
// also on files an older version created), and a row that cannot be read stops the start with an error that
// says which file, which object and what to do.
import type BetterSqlite3 from 'better-sqlite3';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { requireOptional } from '../common/optional-deps.ts';
import type { StoreBackend } from './store.ts';

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
  const meta = obj !== null && typeof obj === 'object' ? (obj as { metadata?: { name?: unknown } }).metadata : undefined;
  if (!meta || typeof meta !== 'object' || typeof meta.name !== 'string') {
    throw new StoreLoadError(file, row.resource, row.key, 'the object has no metadata.name');
  }
  return obj;
}

/** Opens (creating if needed) the SQLite file at `file` as a store backend. */
export function openSqliteBackend(file: string): StoreBackend {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // Loaded here, not at import: only a persistent cluster needs the native module (an optional peer dependency).
  const Database = requireOptional<typeof BetterSqlite3>('better-sqlite3', 'the embedded cluster\'s persistence (--data-dir)');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
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
  const upsert = db.prepare('INSERT INTO objects (resource, key, rv, json) VALUES (?, ?, ?, ?) ON CONFLICT (resource, key) DO UPDATE SET rv = excluded.rv, json = excluded.json');
  const remove = db.prepare('DELETE FROM objects WHERE resource = ? AND key = ?');
  const setRv = db.prepare("INSERT INTO meta (name, value) VALUES ('resourceVersion', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
  const getRv = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE name = 'resourceVersion'");
  const all = db.prepare<[], { resource: string; key: string; rv: number; json: string }>('SELECT resource, key, rv, json FROM objects');
  // The last resourceVersion is max(meta value, newest object rv): writes of live objects need one statement,
  // only deletions (which leave no row behind) record their revision in `meta`.
  const del = db.transaction((resource: string, key: string, rv: number) => {
    remove.run(resource, key);
    setRv.run(String(rv));
  });
  let closed = false;
  return {
    load() {
      const rows = all.all();
      let resourceVersion = Number(getRv.get()?.value ?? 0);
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
    close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}
