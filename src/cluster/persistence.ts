// SQLite persistence for the cluster store (better-sqlite3): one row per live object plus the last
// resourceVersion handed out, so a restarted cluster has every object and its resourceVersions keep growing.
// WAL + synchronous=NORMAL: each write is one small transaction (one statement for creates and updates) that
// survives a process crash.
import type BetterSqlite3 from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { requireOptional } from './optional-deps.ts';
import type { StoreBackend } from './store.ts';

/** Opens (creating if needed) the SQLite file at `file` as a store backend. */
export function openSqliteBackend(file: string): StoreBackend {
  mkdirSync(dirname(file), { recursive: true });
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
  const upsert = db.prepare('INSERT INTO objects (resource, key, rv, json) VALUES (?, ?, ?, ?) ON CONFLICT (resource, key) DO UPDATE SET rv = excluded.rv, json = excluded.json');
  const remove = db.prepare('DELETE FROM objects WHERE resource = ? AND key = ?');
  const setRv = db.prepare("INSERT INTO meta (name, value) VALUES ('resourceVersion', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value");
  const getRv = db.prepare<[], { value: string }>("SELECT value FROM meta WHERE name = 'resourceVersion'");
  const all = db.prepare<[], { resource: string; rv: number; json: string }>('SELECT resource, rv, json FROM objects');
  // The last resourceVersion is max(meta value, newest object rv): writes of live objects need one statement,
  // only deletions (which leave no row behind) record their revision in `meta`.
  const del = db.transaction((resource: string, key: string, rv: number) => {
    remove.run(resource, key);
    setRv.run(String(rv));
  });
  let closed = false;
  return {
    load() {
      const objects = all.all();
      let resourceVersion = Number(getRv.get()?.value ?? 0);
      for (const o of objects) if (o.rv > resourceVersion) resourceVersion = o.rv;
      return { resourceVersion, objects };
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
